"""Shared fixtures: ``ctx`` runs a test on cpu(0) and, when one is visible, on gpu(0)."""
import pytest

import minigluon as mx

_NO_GPU = 'no GPU: CuPy with a visible CUDA device is needed'


@pytest.fixture(params=[
    pytest.param(mx.cpu(0), id='cpu0'),
    pytest.param(mx.gpu(0), id='gpu0',
                 marks=pytest.mark.skipif(mx.num_gpus() == 0, reason=_NO_GPU)),
])
def ctx(request):
    """The device a test runs on: cpu(0), and gpu(0) where CuPy sees a GPU."""
    return request.param
