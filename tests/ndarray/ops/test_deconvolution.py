"""Deconvolution's ``target_shape``: it sets pad and adj as MXNet 1.x works them out
(the given pad and adj are then ignored)."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

RNG = np.random.RandomState(0)
X = nd.array(RNG.rand(1, 2, 3, 3))
W = nd.array(RNG.rand(2, 2, 3, 3))


@pytest.mark.parametrize('target, pad, adj', [
    ((6, 5), (1, 1), (1, 0)), ((6, 6), (1, 1), (1, 1)), ((7, 7), (0, 0), (0, 0)),
    ((5, 6), (1, 1), (0, 1))])
def test_target_shape_sets_pad_and_adj(target, pad, adj):
    out = nd.Deconvolution(X, W, kernel=(3, 3), stride=(2, 2), num_filter=2, target_shape=target,
                           pad=(99, 99), adj=(101, 101))
    same = nd.Deconvolution(X, W, kernel=(3, 3), stride=(2, 2), num_filter=2, pad=pad, adj=adj)
    assert out.shape == (1, 2) + target
    np.testing.assert_allclose(out.asnumpy(), same.asnumpy(), rtol=1e-6)


def test_target_shape_in_graph_shape_inference():
    """MXNet 1.9.1's answers (test_operator.py's check_deconvolution_target_shape)."""
    data = mx.sym.var('data')
    for kernel, stride, target, shape in (((3, 3), (2, 2), (8, 8), (2, 3, 4, 4)),
                                          ((3,), (2,), (8,), (2, 3, 4)),
                                          ((3, 3), (2, 2), (7, 9), (2, 3, 4, 4))):
        sym = mx.sym.Deconvolution(data=data, kernel=kernel, stride=stride, num_filter=5,
                                   target_shape=target, pad=(99,) * len(kernel),
                                   adj=(101,) * len(kernel))
        assert sym.infer_shape(data=shape)[1] == [(shape[0], 5) + target]


def test_too_big_a_target_shape_says_what_fits():
    with pytest.raises(MXNetError, match='target_shape'):
        nd.Deconvolution(X, W, kernel=(3, 3), stride=(2, 2), num_filter=2, target_shape=(8, 8))
