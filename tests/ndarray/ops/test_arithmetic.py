"""The remainder's gradients, as MXNet 1.9.1 has them: zeros for integer arrays."""
from minigluon import autograd, nd


def test_integer_remainder_has_zero_gradients():
    a, b = nd.array([[5., 6., 7.], [8., 9., 10.]]), nd.array([[3., 4., 1.]])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        out = nd.broadcast_mod(a.astype('int32'), b.astype('int32'))
    out.backward(nd.ones((2, 3), dtype='int32'))
    assert out.asnumpy().tolist() == [[2, 2, 0], [2, 1, 0]]
    assert not a.grad.asnumpy().any() and not b.grad.asnumpy().any()


def test_float_remainder_gradients():
    a, b = nd.array([5.5, -7.]), nd.array([2., 3.])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        out = a % b
    out.backward()
    assert a.grad.asnumpy().tolist() == [1., 1.]
    assert b.grad.asnumpy().tolist() == [-2., 3.]  # -floor(a / b)

