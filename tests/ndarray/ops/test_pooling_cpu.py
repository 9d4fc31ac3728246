"""2-D max pooling by its compiled CPU kernels against numpy's path: identical outputs
(the same comparisons in the same order) and gradients at the same positions, equal to
rounding (where windows overlap, the two add a position's contributions in another
order), for channels-last memory (a
convolution's output) and channels-first, with padding, ceil mode, ties, NaN and
-inf, in float32 and float64; and the layer a ResNet stem runs, float32 against
float64."""
import numpy as np
import pytest

from minigluon import autograd, nd
from minigluon.ndarray.ops import compiled

pytest.importorskip('numba', reason='the compiled kernels need numba: '
                    "`pip install numba` (a dependency of minigluon)")

GEOMETRIES = [  # kernel, stride, pad, pooling_convention
    ((3, 3), (2, 2), (1, 1), 'valid'),
    ((2, 2), (2, 2), (0, 0), 'valid'),
    ((3, 2), (1, 2), (1, 0), 'full'),
    ((3, 3), (2, 2), (0, 0), 'full'),
    ((1, 1), (1, 1), (0, 0), 'valid'),
]


def _max_pool(mode, x, dtype, channels_last, geometry, monkeypatch):
    """Output and data gradient of max pooling with the kernels of ``mode``."""
    kernel, stride, pad, convention = geometry
    monkeypatch.setenv(compiled.VARIABLE, mode)
    compiled.reset()
    try:
        if channels_last:
            data = nd.array(np.moveaxis(x, 1, -1).copy(), dtype=dtype).transpose((0, 3, 1, 2))
        else:
            data = nd.array(x, dtype=dtype)
        data.attach_grad()
        with autograd.record():
            y = nd.Pooling(data, kernel=kernel, stride=stride, pad=pad, pool_type='max',
                           pooling_convention=convention)
            head = nd.array(np.random.RandomState(3).standard_normal(y.shape), dtype=dtype)
            loss = (y * head).sum()
        loss.backward()
        return y.asnumpy(), data.grad.asnumpy()
    finally:
        compiled.reset()


def _input(shape, seed=0):
    x = np.random.RandomState(seed).standard_normal(shape)
    x[:, :, ::3, ::2] = 0.5  # ties inside windows: the first maximum must win
    return x


@pytest.mark.parametrize('geometry', GEOMETRIES, ids=str)
@pytest.mark.parametrize('channels_last', [True, False], ids=['NHWC-memory', 'NCHW'])
@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['float32', 'float64'])
def test_max_pool_kernels_equal_numpys_path(geometry, channels_last, dtype, monkeypatch):
    x = _input((3, 5, 9, 8))
    exact = _max_pool('numpy', x, dtype, channels_last, geometry, monkeypatch)
    fast = _max_pool('numba', x, dtype, channels_last, geometry, monkeypatch)
    _same(fast, exact, dtype)


def _same(fast, exact, dtype):
    (y, grad), (y_ref, grad_ref) = fast, exact
    assert y.dtype == grad.dtype == dtype
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(grad != 0, grad_ref != 0)
    np.testing.assert_allclose(grad, grad_ref, rtol=0,
                               atol=4 * np.finfo(dtype).eps * abs(grad_ref).max())


@pytest.mark.parametrize('channels_last', [True, False], ids=['NHWC-memory', 'NCHW'])
def test_nan_and_minus_infinity_pool_as_numpys_path(channels_last, monkeypatch):
    x = _input((2, 3, 6, 6), seed=1)
    x[0, 0, 0, 0] = np.nan  # first in its window: stays, as numpy's comparisons keep it
    x[0, 1, 2, 3] = np.nan  # later in a window: never replaces the maximum
    x[1, 2, :3, :3] = -np.inf  # a window of -inf beside the padding
    geometry = ((3, 3), (2, 2), (1, 1), 'valid')
    exact = _max_pool('numpy', x, np.float32, channels_last, geometry, monkeypatch)
    fast = _max_pool('numba', x, np.float32, channels_last, geometry, monkeypatch)
    _same(fast, exact, np.float32)


def test_resnet_stem_pooling_float32_against_float64(monkeypatch):
    """The 3x3 stride-2 pooling after ResNet's 7x7 stem, channels-last as the convolution
    writes it: the maxima are the inputs themselves, so float32 is float64 rounded."""
    x = np.random.RandomState(2).standard_normal((2, 16, 28, 28))
    geometry = ((3, 3), (2, 2), (1, 1), 'valid')
    y64, g64 = _max_pool('numba', x, np.float64, True, geometry, monkeypatch)
    y32, g32 = _max_pool('numba', x, np.float32, True, geometry, monkeypatch)
    assert y32.shape == (2, 16, 14, 14)
    np.testing.assert_array_equal(y32, y64.astype(np.float32))
    np.testing.assert_allclose(g32, g64, rtol=1e-6, atol=1e-6)
