"""Correlation against a loop over every output value, as FlowNet's layer is written,
and against MXNet 1.9.1 (gradients: op_cases.py)."""
import math

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError

rng = np.random.RandomState(5)


def _reference(a, b, kernel, disp, s1, s2, pad, multiply):
    """Output and both gradients (for an output gradient of ones) one value at a time."""
    n, c, h, w = a.shape
    p1 = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p2 = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    border = disp + (kernel - 1) // 2
    oh = math.ceil((h + 2 * pad - 2 * border) / s1)
    ow = math.ceil((w + 2 * pad - 2 * border) / s1)
    radius = disp // s2
    grid = 2 * radius + 1
    out = np.zeros((n, grid * grid, oh, ow))
    g1, g2 = np.zeros_like(p1), np.zeros_like(p2)
    count = kernel * kernel * c
    for i in range(oh):
        for j in range(ow):
            y1, x1 = i * s1 + disp, j * s1 + disp
            for q in range(grid * grid):
                y2 = y1 + (q // grid - radius) * s2
                x2 = x1 + (q % grid - radius) * s2
                u = p1[:, :, y1:y1 + kernel, x1:x1 + kernel]
                v = p2[:, :, y2:y2 + kernel, x2:x2 + kernel]
                if multiply:
                    out[:, q, i, j] = (u * v).sum(axis=(1, 2, 3)) / count
                    g1[:, :, y1:y1 + kernel, x1:x1 + kernel] += v / count
                    g2[:, :, y2:y2 + kernel, x2:x2 + kernel] += u / count
                else:
                    out[:, q, i, j] = np.abs(u - v).sum(axis=(1, 2, 3)) / count
                    sign = np.where(u >= v, 1.0, -1.0) / count
                    g1[:, :, y1:y1 + kernel, x1:x1 + kernel] += sign
                    g2[:, :, y2:y2 + kernel, x2:x2 + kernel] -= sign
    inside = (Ellipsis, slice(pad, pad + h), slice(pad, pad + w))
    return out, g1[inside], g2[inside]


SETTINGS = [  # shape, kernel_size, max_displacement, stride1, stride2, pad_size, is_multiply
    ((2, 3, 6, 7), 1, 2, 1, 1, 2, True),
    ((2, 3, 6, 7), 3, 2, 1, 2, 1, False),
    ((1, 2, 9, 8), 3, 3, 2, 1, 1, True),   # a stride that does not divide: MXNet rounds up
    ((1, 2, 5, 5), 5, 0, 1, 1, 2, False),
]


@pytest.mark.parametrize('shape,kernel,disp,s1,s2,pad,multiply', SETTINGS)
def test_matches_the_loop(shape, kernel, disp, s1, s2, pad, multiply, ctx):
    a, b = rng.rand(*shape), rng.rand(*shape)
    x, y = nd.array(a, ctx=ctx, dtype='float64'), nd.array(b, ctx=ctx, dtype='float64')
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        out = nd.Correlation(x, y, kernel_size=kernel, max_displacement=disp, stride1=s1,
                             stride2=s2, pad_size=pad, is_multiply=multiply)
    out.backward(nd.ones(out.shape, ctx=ctx, dtype='float64'))
    want, g1, g2 = _reference(a, b, kernel, disp, s1, s2, pad, multiply)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(x.grad.asnumpy(), g1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y.grad.asnumpy(), g2, rtol=1e-12, atol=1e-14)


def test_float16_sums_in_float32():
    a, b = rng.rand(1, 64, 6, 6), rng.rand(1, 64, 6, 6)
    half = nd.Correlation(nd.array(a, dtype='float16'), nd.array(b, dtype='float16'),
                          kernel_size=3, max_displacement=1, pad_size=1)
    want, _, _ = _reference(a.astype(np.float16).astype(np.float64),
                            b.astype(np.float16).astype(np.float64), 3, 1, 1, 1, 1, True)
    assert half.dtype == np.float16
    np.testing.assert_allclose(half.asnumpy(), want, rtol=1e-3)


def test_symbol_infers_shape_and_dtype():
    corr = mx.sym.Correlation(data1=mx.sym.var('a'), data2=mx.sym.var('b'), kernel_size=3,
                              max_displacement=2, stride1=2, pad_size=1)
    _, out_shapes, _ = corr.infer_shape(a=(2, 3, 10, 9), b=(2, 3, 10, 9))
    assert out_shapes == [(2, 25, 3, 3)]
    arg_types, out_types, _ = corr.infer_type(b='float16')
    assert arg_types == [np.float16, np.float16] and out_types == [np.float16]
    assert corr.list_outputs() == ['correlation0_output']


@pytest.mark.parametrize('kwargs,message', [
    ({'kernel_size': 28}, 'do not fit'),
    ({'kernel_size': 2}, 'odd'),
    ({'max_displacement': 14}, 'do not fit'),
])
def test_bad_settings_say_what_is_wrong(kwargs, message):
    data = nd.array(rng.rand(1, 1, 28, 28))
    with pytest.raises(MXNetError, match=message):
        nd.Correlation(data, data, **kwargs)


def test_inputs_must_agree():
    with pytest.raises(MXNetError, match='one shape'):
        nd.Correlation(nd.ones((1, 1, 5, 5)), nd.ones((1, 2, 5, 5)))
    with pytest.raises(MXNetError, match='floating-point'):
        nd.Correlation(nd.ones((1, 1, 5, 5), dtype='int32'), nd.ones((1, 1, 5, 5),
                                                                    dtype='int32'))


_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
autograd, nd = mx.autograd, mx.nd
rng = np.random.RandomState(0)
out = {}
for k, (shape, kernel, disp, s1, s2, pad, mul) in enumerate(%r):
    x = nd.array(rng.rand(*shape))
    y = nd.array(rng.rand(*shape))
    head = nd.array(rng.rand(*nd.Correlation(x, y, kernel_size=kernel, max_displacement=disp,
                    stride1=s1, stride2=s2, pad_size=pad, is_multiply=mul).shape))
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        o = nd.Correlation(x, y, kernel_size=kernel, max_displacement=disp, stride1=s1,
                           stride2=s2, pad_size=pad, is_multiply=mul)
    o.backward(head)
    out[str(k)] = [a.asnumpy().tolist() for a in (o, x.grad, y.grad)]
json.dump(out, open(sys.argv[1] + '/corr.json', 'w'))
''' % (SETTINGS,)


def test_values_and_gradients_match_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'corr.json')
    for k in sorted(theirs):
        for name, want, got in zip(('output', 'data1 grad', 'data2 grad'), theirs[k], ours[k]):
            np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6,
                                       err_msg='setting %s, %s' % (k, name))
