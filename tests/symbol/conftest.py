"""Each test of the symbol package names its nodes with counters of its own
(``activation0``), whatever ran before it."""
import pytest

import minigluon as mx


@pytest.fixture(autouse=True)
def fresh_names():
    with mx.name.NameManager():
        yield
