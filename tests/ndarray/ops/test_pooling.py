"""nd.Pooling's defaults and conventions are MXNet 1.x's."""
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError


def test_pooling_strides_by_one_when_no_stride_is_given():
    """MXNet's Pooling op moves its window by 1 by default (Gluon's layers pass their
    stride, the pool size, themselves)."""
    out = nd.Pooling(nd.arange(16).reshape((1, 1, 4, 4)), kernel=(2, 2), pool_type='max')
    assert out.shape == (1, 1, 3, 3)
    assert out.asnumpy()[0, 0, 0].tolist() == [5, 6, 7]
    sym = mx.sym.Pooling(mx.sym.var('x'), kernel=(3, 3), pad=(1, 1), pool_type='avg',
                         count_include_pad=False)
    assert sym.infer_shape(x=(2, 1, 3, 4))[1] == [(2, 1, 3, 4)]


def test_same_convention_gives_one_window_per_stride():
    """MXNet 1.9.1's answers: ceil(width / stride) windows, clipped at the end (an
    average over the real elements only)."""
    x = nd.arange(7).reshape((1, 1, 7))
    for pool_type, expected in (('max', [2, 4, 6, 6]), ('avg', [1, 3, 5, 6]),
                                ('sum', [3, 9, 15, 6])):
        out = nd.Pooling(x, kernel=3, stride=2, pad=(0, 0, 0), pool_type=pool_type,
                         pooling_convention='same')
        assert out.asnumpy().ravel().tolist() == expected
    out = nd.Pooling(nd.ones((1, 1, 10)), kernel=2, stride=2, pooling_convention='same')
    assert out.shape == (1, 1, 5)


def test_same_convention_takes_1d_data_and_no_pad():
    with pytest.raises(MXNetError, match='same'):
        nd.Pooling(nd.ones((1, 1, 10)), kernel=2, stride=2, pad=2, pooling_convention='same')
    with pytest.raises(MXNetError, match='1-D'):
        nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=(2, 2), stride=(2, 2),
                   pooling_convention='same')


def test_pad_entries_past_the_spatial_axes_go_unused():
    """As in MXNet 1.9.1; a pad with too few entries stays an error."""
    x = nd.ones((1, 1, 5, 5))
    assert nd.Pooling(x, kernel=(2, 2), pad=(1, 2, 0)).shape == (1, 1, 6, 8)
    with pytest.raises(MXNetError, match='pad'):
        nd.Pooling(x, kernel=(2, 2), pad=(1,))
