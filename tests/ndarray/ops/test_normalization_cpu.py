"""BatchNorm with its compiled CPU kernels against numpy's passes: outputs, the three
gradients and the moving statistics, in float64 to rounding and in float32 against
float64, for channels-last (convolution outputs), channels-first and 2-D data, with
gamma learned or fixed."""
import numpy as np
import pytest

from minigluon import autograd, nd
from minigluon.ndarray.ops import compiled

pytest.importorskip('numba', reason='the compiled kernels need numba: '
                    "`pip install numba` (a dependency of minigluon)")

CASES = [((16, 8, 5, 5), True), ((16, 8, 5, 5), False), ((64, 32), False),
         ((4, 3, 7), False), ((2, 33, 6, 6), True)]


def _batch_norm(mode, x, dtype, channels_last, fix_gamma, monkeypatch):
    """Output, gradients of data, gamma and beta, and the moving mean and variance."""
    monkeypatch.setenv(compiled.VARIABLE, mode)
    compiled.reset()
    c = x.shape[1]
    if channels_last:  # the memory order a convolution writes
        data = nd.array(np.moveaxis(x, 1, -1).copy(), dtype=dtype).transpose((0, 3, 1, 2))
    else:
        data = nd.array(x, dtype=dtype)
    gamma = nd.array(np.linspace(0.5, 1.5, c), dtype=dtype)
    beta = nd.array(np.linspace(-1, 1, c), dtype=dtype)
    moving_mean, moving_var = nd.zeros(c, dtype=dtype), nd.ones(c, dtype=dtype)
    head = nd.array(np.random.RandomState(5).standard_normal(x.shape), dtype=dtype)
    for a in (data, gamma, beta):
        a.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(data, gamma, beta, moving_mean, moving_var, fix_gamma=fix_gamma)
        loss = (y * head).sum()
    loss.backward()
    compiled.reset()
    return [a.asnumpy() for a in (y, data.grad, gamma.grad, beta.grad, moving_mean,
                                  moving_var)]


@pytest.mark.parametrize('fix_gamma', [False, True], ids=['gamma', 'fixed-gamma'])
@pytest.mark.parametrize('shape,channels_last', CASES, ids=str)
def test_batch_norm_kernels_match_numpy(shape, channels_last, fix_gamma, monkeypatch):
    # far from zero mean: the centred sums must not cancel
    x = np.random.RandomState(0).standard_normal(shape) * 3 + 10
    exact = _batch_norm('numpy', x, np.float64, channels_last, fix_gamma, monkeypatch)
    fast = _batch_norm('numba', x, np.float64, channels_last, fix_gamma, monkeypatch)
    fast32 = _batch_norm('numba', x, np.float32, channels_last, fix_gamma, monkeypatch)
    names = ['output', 'data gradient', 'gamma gradient', 'beta gradient', 'moving mean',
             'moving variance']
    for name, a, a32, ref in zip(names, fast, fast32, exact):
        scale = max(abs(ref).max(), 1e-30)
        assert abs(a - ref).max() <= 1e-13 * scale, name
        assert a32.dtype == np.float32
        assert abs(a32 - ref).max() <= 1e-6 * scale, name  # rounding of float32 steps only
