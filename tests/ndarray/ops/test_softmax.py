"""softmax with MXNet 1.x's ``length`` input (``use_length=True``), imperatively and in
graphs; the numbers are MXNet 1.9.1's."""
import numpy as np

import minigluon as mx
from minigluon import autograd, nd

X = np.arange(12, dtype=np.float32).reshape(2, 3, 2) * 0.1
LENGTH = np.array([[1, 2], [3, 0]], dtype=np.int32)
# MXNet 1.9.1: nd.softmax(X, LENGTH, axis=1, use_length=True)
EXPECTED = np.array([[[1.0, 0.450166], [0.0, 0.549834], [0.0, 0.0]],
                     [[0.2693075, 0.0], [0.3289329, 0.0], [0.40175956, 0.0]]])
# and the gradient of X with the head gradient arange(12) and temperature=2.0
EXPECTED_GRAD = np.array([[[0.0, -0.24937607], [0.0, 0.24937601], [0.0, 0.0]],
                          [[-0.320617, 0.0], [-0.02211156, 0.0], [0.34272835, 0.0]]])


def test_softmax_uses_only_the_first_length_positions():
    out = nd.softmax(nd.array(X), nd.array(LENGTH, dtype='int32'), axis=1, use_length=True)
    np.testing.assert_allclose(out.asnumpy(), EXPECTED, rtol=1e-5, atol=1e-7)


def test_softmax_with_length_backward_matches_mxnet():
    x = nd.array(X)
    x.attach_grad()
    with autograd.record():
        y = nd.softmax(x, nd.array(LENGTH, dtype='int32'), axis=1, use_length=True,
                       temperature=2.0)
    y.backward(nd.arange(12).reshape((2, 3, 2)))
    np.testing.assert_allclose(x.grad.asnumpy(), EXPECTED_GRAD, rtol=1e-4, atol=1e-6)


def test_softmax_symbol_takes_length_only_with_use_length():
    data, length = mx.sym.var('data'), mx.sym.var('length')
    assert mx.sym.softmax(data, axis=1).list_arguments() == ['data']
    sym = mx.sym.softmax(data=data, length=length, use_length=True, axis=1)
    assert sym.list_arguments() == ['data', 'length']
    out = sym.eval(data=nd.array(X), length=nd.array(LENGTH, dtype='int32'))[0]
    np.testing.assert_allclose(out.asnumpy(), EXPECTED, rtol=1e-5, atol=1e-7)


# MXNet 1.9.1 (MXNET_SAFE_ACCUMULATION=1): float32 [[1, 2, 3]] with dtype='float64', the
# head gradient [[1, 0, 0]]: (output, gradient of the input)
_DTYPE_ANSWERS = {
    'softmax': ([[0.09003057156584758, 0.2447284759361244, 0.6652409524980281]],
                [[0.08192506432533264, -0.022033045068383217, -0.05989202484488487]]),
    'log_softmax': ([[-2.4076059693701053, -1.407605969370105, -0.4076059693701051]],
                    [[0.9099694490432739, -0.2447284758090973, -0.6652409434318542]]),
    'softmin': ([[0.6652409524980281, 0.2447284759361244, 0.09003057156584758]],
                [[-0.22269542515277863, 0.16280341148376465, 0.05989202484488487]]),
}


def test_softmax_family_output_dtype():
    for name, (expected, expected_grad) in _DTYPE_ANSWERS.items():
        x = nd.array([[1., 2., 3.]])
        x.attach_grad()
        with autograd.record():
            y = getattr(nd, name)(x, dtype='float64')
        y.backward(nd.array([[1., 0., 0.]], dtype='float64'))
        assert y.dtype == np.float64 and x.grad.dtype == np.float32, name
        np.testing.assert_allclose(y.asnumpy(), expected, rtol=1e-7, err_msg=name)
        np.testing.assert_allclose(x.grad.asnumpy(), expected_grad, rtol=1e-6, err_msg=name)
        sym = getattr(mx.sym, name)(mx.sym.var('x'), dtype='float64')
        assert sym.infer_type(x='float32')[1] == [np.float64], name


def test_softmax_of_float16_accumulates_in_float32():
    """500 terms of about 0.002: a float16 sum would be off by more than float16's step."""
    data = np.random.RandomState(0).uniform(size=(3, 500))
    y = nd.softmax(nd.array(data, dtype='float16'))
    assert y.dtype == np.float16
    expected = nd.softmax(nd.array(data.astype(np.float16).astype(np.float32))).asnumpy()
    np.testing.assert_allclose(y.asnumpy().astype(np.float32), expected, rtol=1e-3, atol=1e-5)
