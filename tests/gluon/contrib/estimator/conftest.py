"""Every Estimator test starts from the same random state."""
import numpy as np
import pytest

import minigluon as mx


@pytest.fixture(autouse=True)
def _seeded():
    mx.random.seed(7)
    np.random.seed(7)
