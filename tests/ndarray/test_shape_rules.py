"""The op table's shape rules: an input whose shape is not known yet (a PendingArray,
what a deferred Parameter is inside hybrid_forward) gets it from the first op that
uses it."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.ndarray.dispatch import PendingArray


class Pending(PendingArray):
    """Resolves to ``fill`` in the shape the op's rule gave, and remembers it."""

    def __init__(self, shape, fill=1.0):
        super().__init__(shape, np.float32, mx.cpu(), "Parameter 'w'")
        self.fill = fill
        self.resolved = []

    def _resolve(self, shape):
        self.resolved.append(shape)
        return nd.full(shape, self.fill)


def _ones(*shape):
    return nd.ones(shape)


def test_fully_connected_weight_and_bias():
    w, b = Pending((4, 0)), Pending((0,), fill=0.5)
    out = nd.FullyConnected(_ones(2, 3, 5), w, b, num_hidden=4)
    assert w.resolved == [(4, 15)] and b.resolved == [(4,)]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 4), 15.5))
    w = Pending((4, 0))
    nd.FullyConnected(_ones(2, 3, 5), w, num_hidden=4, no_bias=True, flatten=False)
    assert w.resolved == [(4, 5)]


def test_convolution_and_deconvolution_weights():
    w, b = Pending((8, 0, 3, 3)), Pending((0,))
    out = nd.Convolution(_ones(1, 6, 5, 5), w, b, kernel=(3, 3), num_filter=8, num_group=2)
    assert w.resolved == [(8, 3, 3, 3)] and b.resolved == [(8,)]
    np.testing.assert_array_equal(out.asnumpy(), np.full((1, 8, 3, 3), 28.0))  # 3*3*3 + 1
    w = Pending((0, 0, 2))
    nd.Deconvolution(_ones(1, 6, 4), w, kernel=(2,), num_filter=4, num_group=2)
    assert w.resolved == [(6, 2, 2)]


def test_convolution_channels_last_weight_shape():
    from minigluon.ndarray.registry import get_op
    rule = get_op('Convolution').infer_shape
    assert rule((1, 5, 5, 6), (8, 0, 0, 0), None, kernel=(3, 3), num_filter=8,
                layout='NHWC')[1] == (8, 3, 3, 6)


def test_dot_completes_the_contracted_axis_only():
    w = Pending((0, 7))
    out = nd.dot(_ones(2, 3), w)
    assert w.resolved == [(3, 7)] and out.shape == (2, 7)
    w = Pending((7, 0))
    nd.dot(_ones(2, 3), w, transpose_b=True)
    assert w.resolved == [(7, 3)]
    w = Pending((0, 0))
    with pytest.raises(mx.MXNetError, match=r"'w' has unknown shape \(0, 0\), and op 'dot' "
                                            r"cannot infer it"):
        nd.dot(_ones(2, 3), w)
    w = Pending((0, 4, 0))
    nd.batch_dot(_ones(2, 3, 4), w, transpose_b=True)
    assert w.resolved == [(2, 4, 4)]


def test_broadcast_arithmetic_takes_the_other_operands_sizes():
    b = Pending((0,), fill=2.0)
    out = _ones(3, 4) * b  # through the operators ...
    assert b.resolved == [(4,)] and (out.asnumpy() == 2).all()
    assert (b + _ones(3, 4)).shape == (3, 4)  # ... on either side; resolved once
    assert b.resolved == [(4,)] and b.shape == (4,)
    g = Pending((0, 1))
    nd.broadcast_sub(_ones(5, 6), g)
    assert g.resolved == [(5, 1)]
    s = Pending((0,))
    with pytest.raises(mx.MXNetError, match="cannot infer it"):
        s * 2  # a scalar says nothing about the shape


def test_norms_embedding_and_prelu():
    params = [Pending((0,)) for _ in range(4)]
    nd.BatchNorm(_ones(2, 3, 4), *params)
    assert [p.resolved for p in params] == [[(3,)]] * 4
    gamma, beta = Pending((0,)), Pending((0,))
    nd.LayerNorm(_ones(2, 3, 4), gamma, beta)  # axis=-1 by default
    assert gamma.resolved == beta.resolved == [(4,)]
    gamma, beta = Pending((0,)), Pending((0,))
    nd.InstanceNorm(_ones(2, 3, 4), gamma, beta)
    assert gamma.resolved == [(3,)]
    w = Pending((0, 0))
    nd.Embedding(nd.array([0, 2]), w, input_dim=5, output_dim=3)
    assert w.resolved == [(5, 3)]
    gamma = Pending((0,))
    nd.LeakyReLU(_ones(2, 3, 4), gamma, act_type='prelu')
    assert gamma.resolved == [(3,)]


def test_without_a_rule_or_the_shape_the_error_says_what_to_do():
    w = Pending((0, 3))
    with pytest.raises(mx.MXNetError, match=r"op 'swapaxes' cannot infer it .*\(it has no "
                                            r"shape rule\). Give the parameter its full shape"):
        nd.swapaxes(w, 0, 1)
    with pytest.raises(mx.MXNetError, match=r"unknown shape \(0, 3\): .T needs the shape"):
        w.T
    assert 'not known yet' in repr(w)
    nd.dot(_ones(2, 4), w)
    assert w.T.shape == (3, 4) and w.context == mx.cpu()  # read through once resolved
