"""mx.test_utils: the helpers must catch what they claim to catch."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd, test_utils


def test_assert_almost_equal_passes_and_fails_with_location():
    test_utils.assert_almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))
    with pytest.raises(AssertionError, match=r'worst at index \(1,\)'):
        test_utils.assert_almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.1]))
    with pytest.raises(AssertionError, match='shape mismatch'):
        test_utils.assert_almost_equal(np.zeros(2), np.zeros(3))


def test_almost_equal_and_same():
    assert test_utils.almost_equal(np.array([1.0]), np.array([1.0 + 1e-9]))
    assert not test_utils.almost_equal(np.array([1.0]), np.array([1.1]))
    assert test_utils.same(nd.array([1, 2]), np.array([1, 2], dtype=np.float32))
    assert not test_utils.same(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))


def test_float16_tolerance_is_looser():
    a = np.array([1.0], dtype=np.float16)
    test_utils.assert_almost_equal(a, np.array([1.004], dtype=np.float16))
    with pytest.raises(AssertionError):
        test_utils.assert_almost_equal(np.array([1.0]), np.array([1.004]))


def test_rand_helpers_and_default_context():
    shape = test_utils.rand_shape_nd(3, dim=4)
    assert len(shape) == 3 and all(1 <= s <= 4 for s in shape)
    arr = test_utils.rand_ndarray((2, 5), dtype='float64')
    assert arr.shape == (2, 5) and arr.dtype == np.float64
    assert ((arr.asnumpy() >= 0) & (arr.asnumpy() < 1)).all()
    assert test_utils.default_context() == mx.cpu(0)
    test_utils.set_default_context(mx.cpu(1))
    try:
        assert test_utils.rand_ndarray((2,)).context == mx.cpu(1)
    finally:
        test_utils.set_default_context(mx.cpu(0))


def test_check_numeric_gradient_catches_a_wrong_backward():
    class WrongSquare(autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            x, = self.saved_tensors
            return dy * x * 2.02  # 1% off

    class RightSquare(WrongSquare):
        def backward(self, dy):
            x, = self.saved_tensors
            return dy * x * 2

    x = np.array([0.5, -1.5, 2.0])
    test_utils.check_numeric_gradient(lambda a: RightSquare()(a), [x], rtol=1e-4)
    with pytest.raises(AssertionError, match='autograd grad of input 0'):
        test_utils.check_numeric_gradient(lambda a: WrongSquare()(a), [x], rtol=1e-4)


def test_check_numeric_gradient_named_inputs_and_grad_nodes():
    loc = {'x': np.array([1.0, 2.0]), 'idx': np.array([1.0, 0.0])}
    test_utils.check_numeric_gradient(lambda x, idx: nd.take(x, idx) * x, loc, grad_nodes=['x'])
