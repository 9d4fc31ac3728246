"""im2col and col2im: a convolution as a product with the columns, each op the other's
adjoint, graphs, and MXNet 1.9.1's numbers (gradients: op_cases.py)."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError

rng = np.random.RandomState(7)

GEOMETRIES = [  # data shape, kernel, stride, dilate, pad
    ((2, 3, 9, 8), (3, 3), (1, 1), (1, 1), (0, 0)),
    ((2, 3, 9, 8), (3, 2), (2, 1), (2, 1), (1, 2)),
    ((1, 2, 11), (4,), (3,), (1,), (1,)),
    ((1, 2, 5, 6, 4), (2, 3, 2), (1, 2, 1), (2, 1, 1), (1, 0, 1)),
]


def _kwargs(kernel, stride, dilate, pad):
    return {'kernel': kernel, 'stride': stride, 'dilate': dilate, 'pad': pad}


@pytest.mark.parametrize('shape,kernel,stride,dilate,pad', GEOMETRIES)
def test_columns_times_weight_is_the_convolution(shape, kernel, stride, dilate, pad, ctx):
    kwargs = _kwargs(kernel, stride, dilate, pad)
    data = nd.array(rng.rand(*shape), ctx=ctx, dtype='float64')
    weight = nd.array(rng.rand(4, shape[1], *kernel), ctx=ctx, dtype='float64')
    cols = nd.im2col(data, **kwargs)
    conv = nd.Convolution(data, weight, num_filter=4, no_bias=True, **kwargs)
    product = nd.dot(weight.reshape((4, -1)), cols.transpose((1, 0, 2)).reshape(
        (cols.shape[1], -1))).reshape((4, shape[0]) + conv.shape[2:]).transpose(
            (1, 0) + tuple(range(2, len(shape))))
    assert cols.shape == (shape[0], shape[1] * int(np.prod(kernel)), int(np.prod(conv.shape[2:])))
    np.testing.assert_allclose(product.asnumpy(), conv.asnumpy(), rtol=1e-12)


@pytest.mark.parametrize('shape,kernel,stride,dilate,pad', GEOMETRIES)
def test_each_is_the_others_adjoint(shape, kernel, stride, dilate, pad, ctx):
    kwargs = _kwargs(kernel, stride, dilate, pad)
    x = nd.array(rng.rand(*shape), ctx=ctx, dtype='float64')
    cols_shape = nd.im2col(x, **kwargs).shape
    c = nd.array(rng.rand(*cols_shape), ctx=ctx, dtype='float64')
    # <im2col(x), c> == <x, col2im(c)>
    left = float((nd.im2col(x, **kwargs) * c).sum().asscalar())
    right = float((x * nd.col2im(c, shape[2:], **kwargs)).sum().asscalar())
    assert abs(left - right) < 1e-10 * abs(left)
    for fn, arg, head, other in ((lambda t: nd.im2col(t, **kwargs), x, c, 'col2im'),
                                 (lambda t: nd.col2im(t, shape[2:], **kwargs), c, x, 'im2col')):
        arg.attach_grad()
        with autograd.record():
            out = fn(arg)
        out.backward(head)
        want = nd.col2im(head, shape[2:], **kwargs) if other == 'col2im' else \
            nd.im2col(head, **kwargs)
        np.testing.assert_allclose(arg.grad.asnumpy(), want.asnumpy(), rtol=1e-12)


def test_graphs_run_and_infer_shapes():
    data = mx.sym.var('data')
    cols = mx.sym.im2col(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    image = mx.sym.col2im(cols, (7, 6), kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    assert cols.infer_shape(data=(2, 3, 7, 6))[1] == [(2, 27, 12)]
    assert image.infer_shape(data=(2, 3, 7, 6))[1] == [(2, 3, 7, 6)]
    x = nd.array(rng.rand(2, 3, 7, 6))
    got = image.eval(data=x)[0]
    want = nd.col2im(nd.im2col(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1)), (7, 6),
                     kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)


def test_bad_geometry_says_what_is_wrong():
    with pytest.raises(MXNetError, match='smaller than the dilated kernel'):
        nd.im2col(nd.ones((1, 1, 3, 3)), kernel=(4, 4))
    with pytest.raises(MXNetError, match='needs 4-d data'):
        nd.im2col(nd.ones((1, 1, 3)), kernel=(2, 2))
    with pytest.raises(MXNetError, match='do not fit kernel'):
        nd.col2im(nd.ones((1, 5, 4)), (3, 3), kernel=(2, 2))
    with pytest.raises(MXNetError, match='output_size'):
        nd.col2im(nd.ones((1, 4, 4)), kernel=(2, 2))


_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
nd = mx.nd
rng = np.random.RandomState(0)
out = {}
for k, (shape, kernel, stride, dilate, pad) in enumerate(%r):
    kw = dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad)
    x = nd.array(rng.rand(*shape))
    cols = nd.im2col(x, **kw)
    image = nd.col2im(nd.array(rng.rand(*cols.shape)), shape[2:], **kw)
    out[str(k)] = [cols.asnumpy().tolist(), image.asnumpy().tolist()]
json.dump(out, open(sys.argv[1] + '/im2col.json', 'w'))
''' % ([g for g in GEOMETRIES if len(g[1]) == 2],)  # MXNet's CPU kernels fail 1-d, 3-d


def test_values_match_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'im2col.json')
    for k in sorted(theirs):
        for want, got in zip(theirs[k], ours[k]):
            np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6, atol=1e-7,
                                       err_msg='geometry %s' % k)
