"""Rounding ops give MXNet 1.9.1's values, which differ from numpy's at halves."""
import numpy as np
import pytest

import minigluon as mx

VALUES = [1.5, 2.5, -0.5, -1.5, -2.5, 0.5, 3.7, -3.7, 0.49999997, -0.3]
# What MXNet 1.9.1 prints for VALUES (float32): round takes halves away from zero, rint
# takes them down (floor when x is exactly between floor and ceil).
EXPECTED = {
    'round': [2, 3, -1, -2, -3, 1, 4, -4, 0, -0.0],
    'rint': [1, 2, -1, -2, -3, 0, 4, -4, 0, -0.0],
    'fix': [1, 2, -0.0, -1, -2, 0, 3, -3, 0, -0.0],
    'trunc': [1, 2, -0.0, -1, -2, 0, 3, -3, 0, -0.0],
}


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_rounding_matches_mxnet(ctx, name, dtype):
    x = mx.nd.array(VALUES, ctx=ctx, dtype=dtype)
    out = getattr(mx.nd, name)(x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), np.array(EXPECTED[name], dtype=dtype))
    np.testing.assert_array_equal(getattr(x, name)().asnumpy(), out.asnumpy())


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_rounding_keeps_integers(ctx, name):
    x = mx.nd.array([1, 2, -3], ctx=ctx, dtype='int32')
    out = getattr(mx.nd, name)(x)
    assert out.dtype == np.int32
    assert out.asnumpy().tolist() == [1, 2, -3]
