"""The compiled Winograd transforms against the numpy ones (a gathering copy and a GEMM
with the Kronecker product of the 1-D transform, an independent computation of the same
sums), in float64 to rounding and in float32 against float64, at even and odd sizes and
channel counts that do and do not fill a vector register; then whole 3x3 layers with
either set of kernels against plain loops (tests/gluon/nn/test_conv_layers.py)."""
import numpy as np
import pytest

from minigluon.ndarray.ops import compiled, conv_winograd

pytest.importorskip('numba', reason='the compiled kernels need numba: '
                    "`pip install numba` (a dependency of minigluon)")

SHAPES = [(1, 2, 2, 1), (2, 4, 6, 3), (3, 5, 7, 17), (2, 8, 8, 64), (1, 7, 4, 33)]


def _both(monkeypatch, fn, *args):
    """``fn(*args)`` with the compiled kernels, then with numpy's."""
    out = []
    for mode in ('numba', 'numpy'):
        monkeypatch.setenv(compiled.VARIABLE, mode)
        compiled.reset()
        out.append(fn(*args))
    compiled.reset()
    return out


def _input(shape, dtype, seed=0):
    return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def _tiles(shape):
    return conv_winograd.tiles(shape[1:3]) * shape[0]


@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_input_transform_matches_numpy(shape, monkeypatch):
    x = _input(shape, np.float64)
    fast, slow = _both(monkeypatch, conv_winograd.transform_input, np, x)
    assert fast.shape == slow.shape == (16, _tiles(shape), shape[3])
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-14)
    fast32, _ = _both(monkeypatch, conv_winograd.transform_input, np, x.astype(np.float32))
    assert fast32.dtype == np.float32
    # each entry is a sum of four inputs: float32 rounding of that sum only
    np.testing.assert_allclose(fast32, slow, rtol=0, atol=4 * 2.0 ** -23 * 4 * abs(x).max())


@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_output_transform_matches_numpy(shape, monkeypatch):
    m = _input((16, _tiles(shape), shape[3]), np.float64, seed=1)

    def output(m):
        y = np.full(shape, np.nan, m.dtype)
        conv_winograd.transform_output(np, m, y)
        return y
    fast, slow = _both(monkeypatch, output, m)
    assert not np.isnan(fast).any()  # every output written, odd edges included
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-14)
    fast32, _ = _both(monkeypatch, output, m.astype(np.float32))
    np.testing.assert_allclose(fast32, slow, rtol=0, atol=9 * 2.0 ** -23 * 9 * abs(m).max())


@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_output_gradient_transform_matches_numpy(shape, monkeypatch):
    dy = _input(shape, np.float64, seed=2)
    fast, slow = _both(monkeypatch, conv_winograd.transform_output_grad, np, dy)
    assert fast.shape == slow.shape == (16, _tiles(shape), shape[3])
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-14)
    fast32, _ = _both(monkeypatch, conv_winograd.transform_output_grad, np,
                      dy.astype(np.float32))
    np.testing.assert_allclose(fast32, slow, rtol=0, atol=4 * 2.0 ** -23 * 4 * abs(dy).max())


def test_views_and_other_dtypes_take_a_path_that_gives_the_same_numbers(monkeypatch):
    # a channels-last view of a channels-first array is not contiguous: copied, then the
    # kernel; float16 has no compiled kernel and keeps numpy's transforms
    x = _input((2, 6, 4, 6), np.float64).transpose(0, 2, 3, 1)
    fast, slow = _both(monkeypatch, conv_winograd.transform_output_grad, np, x)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-14)
    half = x.astype(np.float16)
    fast, slow = _both(monkeypatch, conv_winograd.transform_input, np, half)
    assert fast.dtype == np.float16
    np.testing.assert_array_equal(fast, slow)
