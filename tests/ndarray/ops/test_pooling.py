"""nd.Pooling's defaults are MXNet 1.x's."""

import minigluon as mx
from minigluon import nd


def test_pooling_strides_by_one_when_no_stride_is_given():
    """MXNet's Pooling op moves its window by 1 by default (Gluon's layers pass their
    stride, the pool size, themselves)."""
    out = nd.Pooling(nd.arange(16).reshape((1, 1, 4, 4)), kernel=(2, 2), pool_type='max')
    assert out.shape == (1, 1, 3, 3)
    assert out.asnumpy()[0, 0, 0].tolist() == [5, 6, 7]
    sym = mx.sym.Pooling(mx.sym.var('x'), kernel=(3, 3), pad=(1, 1), pool_type='avg',
                         count_include_pad=False)
    assert sym.infer_shape(x=(2, 1, 3, 4))[1] == [(2, 1, 3, 4)]
