"""Shape and dtype inference on graphs: 0 for an unknown dimension and () for an unknown
shape (-1 and None inside ``np_shape()``), inputs inferred from outputs as MXNet 1.x
infers them, contradictions reported; and the same answers as MXNet 1.9.1 on the same
graphs (with ``MINIGLUON_MXNET_PYTHON``)."""
import warnings

import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError

v = mx.sym.var


def _args(sym, shapes):
    return dict(zip(sym.list_arguments(), shapes))


def test_known_inputs_give_every_shape():
    net = mx.sym.FullyConnected(v('data'), num_hidden=8, name='fc')
    net = mx.sym.BatchNorm(mx.sym.Activation(net, act_type='relu'), name='bn')
    args, outs, aux = net.infer_shape(data=(4, 3, 2))
    assert _args(net, args) == {'data': (4, 3, 2), 'fc_weight': (8, 6), 'fc_bias': (8,),
                                'bn_gamma': (8,), 'bn_beta': (8,)}
    assert outs == [(4, 8)] and aux == [(8,), (8,)]
    # positionally, in list_arguments order
    assert net.infer_shape((4, 6))[1] == [(4, 8)]


def test_unknown_shapes_give_none_or_partial_answers():
    net = mx.sym.elemwise_add(mx.sym.FullyConnected(v('x'), num_hidden=3, name='a'),
                              mx.sym.FullyConnected(v('h'), num_hidden=3, name='b'))
    with pytest.warns(UserWarning, match=r"\['h', 'b_weight', 'b_bias'\]"):
        assert net.infer_shape(x=(2, 5)) == (None, None, None)
    args, outs, _ = net.infer_shape_partial(x=(2, 5))
    assert _args(net, args) == {'x': (2, 5), 'a_weight': (3, 5), 'a_bias': (3,),
                                'h': (), 'b_weight': (), 'b_bias': ()}
    assert outs == [(2, 3)]
    args, _, _ = net.infer_shape_partial(x=(0, 5))
    assert _args(net, args)['x'] == (0, 5)


def test_np_shape_spells_unknowns_minus_one_and_none():
    net = mx.sym.dot(v('x'), v('y'))
    assert net.infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    with mx.np_shape(True):
        assert net.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
        assert mx.sym.sin(v('s')).infer_shape_partial() == ([None], [None], [])
        # 0 is a size there
        assert mx.sym.sin(v('s')).infer_shape(s=(0, 2))[1] == [(0, 2)]
    assert not mx.util.is_np_shape()


def test_variables_declare_shapes_that_arguments_override():
    c = mx.sym.elemwise_add(v('a', shape=(2, 3)), v('b'))
    assert c.infer_shape() == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert c.infer_shape(a=(5, 6))[0] == [(5, 6), (5, 6)]


@pytest.mark.parametrize('net, expected', [
    # elementwise ops share every known dimension
    (v('a', shape=(0, 10)) + v('b', shape=(12, 0)), {'a': (12, 10), 'b': (12, 10)}),
    # FullyConnected's batch size comes back from its output
    (mx.sym.FullyConnected(v('a', shape=(0, 10)), num_hidden=21, name='f')
     + v('c', shape=(5, 0)), {'a': (5, 10), 'c': (5, 21)}),
    # and a stride-1 convolution's spatial sizes
    (mx.sym.Convolution(v('a', shape=(0, 10, 0, 0)), num_filter=21, kernel=(3, 3),
                        pad=(1, 1), name='k') + v('c', shape=(5, 21, 32, 32)),
     {'a': (5, 10, 32, 32)}),
    (mx.sym.concat(v('a', shape=(0, 10)), v('b', shape=(0, 5)), dim=1)
     + v('d', shape=(2, 0)), {'a': (2, 10), 'b': (2, 5), 'd': (2, 15)}),
    (mx.sym.split(v('a', shape=(0, 15, 0)), num_outputs=3)[1] + v('c', shape=(3, 5, 2)),
     {'a': (3, 15, 2)}),
    (mx.sym.split(v('a', shape=(0, 10)), num_outputs=10, axis=1, squeeze_axis=True)[1]
     + v('c', shape=(5,)), {'a': (5, 10)}),
])
def test_inputs_are_inferred_from_outputs(net, expected):
    args = _args(net, net.infer_shape()[0])
    assert {k: args[k] for k in expected} == expected


def test_a_strided_convolution_says_only_the_batch_size_of_its_data():
    net = mx.sym.Convolution(v('a', shape=(0, 3, 0, 0)), kernel=(3, 3), num_filter=4,
                             stride=(2, 2), name='k') + v('o', shape=(2, 4, 8, 8))
    assert _args(net, net.infer_shape_partial()[0])['a'] == (2, 3, 0, 0)


def test_shape_constraint_op_infers_backwards():
    """``_identity_with_attr_like_rhs`` gives its rhs the shape of its output (MXNet's way
    to infer a weight through a broadcast that cannot)."""
    w = v('weight')
    wt = mx.sym._internal._identity_with_attr_like_rhs(
        mx.sym.broadcast_add(w, v('shift', shape=(1,))), w)
    net = mx.sym.FullyConnected(v('data'), weight=wt, num_hidden=11, no_bias=True)
    assert _args(net, net.infer_shape(data=(7, 100))[0])['weight'] == (11, 100)


def test_partial_dimensions_flow_through_any_op():
    """Outputs keep the dimensions that do not depend on unknown ones."""
    cases = [
        (mx.sym.transpose(v('x'), axes=(0, 3, 2, 1)), dict(x=(0, 3, 4, 5)), (0, 5, 4, 3)),
        (mx.sym.pick(v('x'), v('i'), axis=1), dict(x=(0, 3, 4), i=(0, 4)), (0, 4)),
        (mx.sym.Embedding(v('i'), v('w'), input_dim=10, output_dim=3), dict(i=(0, 5)),
         (0, 5, 3)),
        (mx.sym.sum(v('x'), axis=1, keepdims=True), dict(x=(0, 3, 4)), (0, 1, 4)),
        (mx.sym.Pooling(v('x'), kernel=(1, 1), global_pool=True, pool_type='avg'),
         dict(x=(1, 3, 0, 0)), (1, 3, 1, 1)),
        (mx.sym.broadcast_mul(v('a'), v('b')), dict(a=(0, 3), b=(1, 3)), (0, 3)),
        (mx.sym.where(v('c'), v('x'), v('y')), dict(c=(0, 2), x=(0, 2), y=(0, 2)), ()),
    ]
    for net, shapes, expected in cases:
        assert net.infer_shape_partial(**shapes)[1] == [expected], net


def test_slicing_leaves_the_unknown_dimensions_unknown():
    """``x[:5]`` of an axis of unknown size may be shorter than 5: MXNet says nothing."""
    net = mx.sym.slice(v('x', shape=(0, 20)), begin=(None, 3), end=(5, 10))
    assert net.infer_shape_partial()[1] == [(0, 7)]
    net = mx.sym.slice_axis(v('x', shape=(10, 0)), axis=1, begin=0, end=5)
    assert net.infer_shape_partial()[1] == [(10, 0)]
    with mx.np_shape():
        net = mx.sym.slice(v('x', shape=(-1, 20)), begin=(None, 3), end=(5, 10))
        assert net.infer_shape_partial()[1] == [(-1, 7)]


def test_transpose_takes_its_input_shape_from_its_output():
    net = mx.sym.transpose(v('x', shape=(0, 0))) + v('y', shape=(2, 3))
    assert net.infer_shape()[0] == [(3, 2), (2, 3)]
    net = mx.sym.transpose(v('x', shape=(0, 0, 0)), axes=(1, 2, 0)) + v('y', shape=(2, 3, 4))
    assert net.infer_shape()[0] == [(4, 2, 3), (2, 3, 4)]


def test_broadcast_operands_are_not_guessed_from_each_other():
    net = mx.sym.broadcast_mul(v('a'), v('b'))
    assert net.infer_shape_partial(a=(0, 3), b=(1, 3))[0] == [(0, 3), (1, 3)]


def test_batch_dot_infers_a_contracted_size_mxnet_leaves_unknown():
    """The op table's rule gives rhs the contracted size lhs has; MXNet 1.x gives up."""
    net = mx.sym.batch_dot(v('x'), v('y'))
    assert net.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5)) == \
        ([(0, 3, 4), (0, 4, 5)], [(0, 3, 5)], [])


def _transposed_plus_itself():
    one = v('v')
    return mx.sym.elemwise_add(mx.sym.transpose(one), v('x') + one)


@pytest.mark.parametrize('net, shapes, match', [
    (mx.sym.FullyConnected(v('data'), num_hidden=10, name='fc'),
     dict(data=(4, 6), fc_weight=(10, 5)), r'fc.*\(10, 6\)|\(10, 5\)'),
    (_transposed_plus_itself(), dict(x=(2, 3)), 'transpose'),
    (mx.sym.Convolution(v('x'), kernel=(5, 5), num_filter=2), dict(x=(1, 1, 3, 3)),
     'convolution0'),
])
def test_contradictions_raise_naming_the_node(net, shapes, match):
    with pytest.raises(MXNetError, match=match):
        net.infer_shape(**shapes)


def test_infer_shape_rejects_unknown_names():
    with pytest.raises(MXNetError, match="'y' is not an input"):
        mx.sym.sin(v('x')).infer_shape(y=(2,))
    with pytest.raises(MXNetError, match='2 positional values'):
        mx.sym.sin(v('x')).infer_shape((1,), (2,))


def test_types_follow_the_data_and_casts():
    mlp = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Cast(v('data'), dtype='float32'),
                                                     num_hidden=3, name='fc'), name='sm')
    assert mlp.infer_type(data=np.float16) == \
        ([np.float16, np.float32, np.float32, np.float32], [np.float32], [])
    assert mlp.infer_type_partial()[0] == [None, np.float32, np.float32, np.float32]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        assert mlp.infer_type() == (None, None, None)
    bn = mx.sym.BatchNorm(v('x', dtype='float64'), name='bn')
    assert bn.infer_type() == ([np.float64] * 3, [np.float64], [np.float64] * 2)
    # index inputs keep their own dtype
    emb = mx.sym.Embedding(v('i'), v('w'), input_dim=4, output_dim=2)
    assert emb.infer_type(i='int32') == ([np.int32, np.float32], [np.float32], [])
    assert mx.sym.one_hot(v('i'), depth=3, dtype='int32').infer_type(i='float32')[1] == \
        [np.int32]


# ---- against MXNet 1.9.1 ----

# The same graphs under MXNet and minigluon: infer_shape, infer_shape_partial (both
# spellings of unknowns), infer_type and infer_type_partial, written to inferred.json.
COMPARE = '''
import json, os, sys, warnings
import numpy as np
import mxnet as mx
warnings.simplefilter('ignore')
v = mx.sym.var


def shape_cases():
    fc = mx.sym.FullyConnected(v('data'), num_hidden=8, name='fc')
    yield 'fc', fc, dict(data=(4, 3, 2))
    yield 'fc weight only', fc, dict(fc_weight=(8, 6))
    yield 'fc nothing', fc, {}
    yield 'fc batch from a sum', mx.sym.elemwise_add(fc, v('other')), dict(data=(0, 6),
                                                                            other=(5, 0))
    yield 'fc mismatch', fc, dict(data=(4, 6), fc_weight=(8, 5))
    conv = mx.sym.Convolution(v('data'), kernel=(3, 3), num_filter=4, pad=(1, 1), name='c')
    yield 'conv partial', conv, dict(data=(0, 3, 0, 0))
    yield 'conv from output', mx.sym.elemwise_add(conv, v('o')), dict(data=(0, 3, 0, 0),
                                                                        o=(2, 4, 8, 8))
    strided = mx.sym.Convolution(v('data'), kernel=(3, 3), num_filter=4, stride=(2, 2),
                                 name='s')
    yield 'strided conv from output', mx.sym.elemwise_add(strided, v('o')), \\
        dict(data=(0, 3, 0, 0), o=(2, 4, 8, 8))
    bn = mx.sym.BatchNorm(mx.sym.Activation(v('x'), act_type='relu'), name='bn')
    yield 'batchnorm', bn, dict(x=(2, 5, 3))
    yield 'batchnorm partial', bn, dict(x=(0, 5, 0))
    cat = mx.sym.concat(v('a', shape=(0, 10)), v('b', shape=(0, 5)), dim=1)
    yield 'concat from output', mx.sym.elemwise_add(cat, v('d', shape=(2, 0))), {}
    parts = mx.sym.split(v('a', shape=(0, 15, 0)), num_outputs=3)
    yield 'split from output', parts[1] + v('c', shape=(3, 5, 2)), {}
    yield 'split squeeze', mx.sym.split(v('a'), num_outputs=4, axis=1, squeeze_axis=True), \\
        dict(a=(2, 4, 3))
    yield 'broadcast', mx.sym.broadcast_add(v('a'), v('b')), dict(a=(2, 1, 3), b=(4, 1))
    yield 'broadcast partial', mx.sym.broadcast_mul(v('a'), v('b')), dict(a=(0, 3), b=(1, 3))
    yield 'dot partial', mx.sym.dot(v('x'), v('y')), dict(x=(0, 3, 4), y=(4, 5))
    yield 'dot transposed', mx.sym.dot(v('x'), v('y'), transpose_a=True), dict(x=(4, 3),
                                                                               y=(4, 2))
    yield 'embedding', mx.sym.Embedding(v('i'), v('w'), input_dim=10, output_dim=3), \\
        dict(i=(0, 5))
    yield 'transpose', mx.sym.transpose(v('x'), axes=(0, 3, 2, 1)), dict(x=(0, 3, 4, 5))
    yield 'pick', mx.sym.pick(v('x'), v('i'), axis=1), dict(x=(0, 3, 4), i=(0, 4))
    where = mx.sym.where(v('c'), v('x'), v('y'))
    yield 'where unknown condition', where, dict(c=(0, 2), x=(0, 2), y=(0, 2))
    yield 'where', where, dict(c=(3,), x=(3, 2))
    yield 'reshape', mx.sym.reshape(v('x'), shape=(0, -1)), dict(x=(2, 3, 4))
    yield 'reduce', mx.sym.sum(v('x'), axis=(1,), keepdims=True), dict(x=(0, 3, 4))
    yield 'pooling', mx.sym.Pooling(v('x'), kernel=(2, 2), stride=(2, 2)), dict(x=(0, 3, 8, 8))
    yield 'global pooling', mx.sym.Pooling(v('x'), kernel=(1, 1), global_pool=True,
                                           pool_type='avg'), dict(x=(1, 3, 0, 0))
    yield 'softmax output', mx.sym.SoftmaxOutput(v('x'), name='sm'), dict(x=(4, 7))
    yield 'softmax output 3-d', mx.sym.SoftmaxOutput(v('x'), multi_output=True, name='sm'), \\
        dict(x=(4, 7, 3))
    yield 'slice', mx.sym.slice(v('x'), begin=(1, None), end=(3, None)), dict(x=(5, 0))
    yield 'slice of unknown', mx.sym.slice(v('x'), begin=(None, 3), end=(5, 10)), \\
        dict(x=(0, 20))
    yield 'slice_axis of unknown', mx.sym.slice_axis(v('x'), axis=1, begin=0, end=5), \\
        dict(x=(10, 0))
    yield 'transpose from output', mx.sym.elemwise_add(mx.sym.transpose(v('x')), v('y')), \\
        dict(x=(0, 0), y=(2, 3))
    yield 'reshape target_shape', mx.sym.Reshape(v('x'), target_shape=(2, 0)), \\
        dict(x=(2, 3, 5, 5))
    yield 'unknown', mx.sym.sin(v('x')), {}
    yield 'variable shape', mx.sym.elemwise_mul(v('a', shape=(2, 3)), v('b')), {}
    one = v('v')
    yield 'inconsistent', mx.sym.elemwise_add(mx.sym.transpose(one), v('x') + one), \\
        dict(x=(2, 3))


def type_cases():
    data = v('data')
    mlp = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Cast(data, dtype='float32'),
                                                     num_hidden=3, name='fc'), name='sm')
    yield 'cast', mlp, dict(data='float16')
    yield 'cast partial', mlp, {}
    yield 'float64 net', mx.sym.BatchNorm(mx.sym.Convolution(data, kernel=(1, 1),
                                                             num_filter=2), name='bn'), \\
        dict(data='float64')
    yield 'embedding', mx.sym.Embedding(v('i'), v('w'), input_dim=4, output_dim=2), \\
        dict(i='int32')
    yield 'one_hot', mx.sym.one_hot(v('i'), depth=3, dtype='int32'), dict(i='float32')
    yield 'from output', mx.sym.elemwise_add(v('a'), mx.sym.Cast(v('b'), dtype='float16')), {}
    yield 'variable dtype', mx.sym.relu(v('a', dtype='float64')), {}


def listed(groups):
    return [None if g is None else [None if s is None else list(s) for s in g]
            for g in groups]


results = {}
for np_semantics in (False, True):
    with mx.np_shape(np_semantics):
        for name, sym, shapes in shape_cases():
            if np_semantics:
                shapes = {k: tuple(-1 if d == 0 else d for d in s) for k, s in shapes.items()}
            entry = {}
            for how in ('infer_shape', 'infer_shape_partial'):
                try:
                    entry[how] = listed(getattr(sym, how)(**shapes))
                except Exception:
                    entry[how] = 'error'
            results['%s, np_shape=%s' % (name, np_semantics)] = entry
for name, sym, given in type_cases():
    for how in ('infer_type', 'infer_type_partial'):
        got = getattr(sym, how)(**given)
        results['%s, %s' % (name, how)] = [
            None if g is None else [None if t is None else np.dtype(t).name for t in g]
            for g in got]
with open(os.path.join(sys.argv[1], 'inferred.json'), 'w') as f:
    json.dump(results, f)
'''


def test_inference_agrees_with_mxnet(answers_of_both):
    expected, got = answers_of_both(COMPARE, 'inferred.json')
    assert sorted(got) == sorted(expected)
    differ = {k: (got[k], expected[k]) for k in expected if got[k] != expected[k]}
    assert not differ, differ


def test_arange_with_infer_range_takes_its_length_from_the_graph():
    # MXNet 1.9.1 gives [0 1 2 3 4] and [2 2 2.5 2.5 3 3] for these
    s = mx.sym.elemwise_add(mx.sym.arange(start=0, infer_range=True), mx.sym.zeros(shape=(5,)))
    assert s.bind(mx.cpu(), args={}).forward()[0].asnumpy().tolist() == [0, 1, 2, 3, 4]
    s = mx.sym.arange(start=2, step=0.5, repeat=2, infer_range=True) + mx.sym.var('x')
    assert s.infer_shape(x=(6,))[1] == [(6,)]
    assert s.eval(x=mx.nd.zeros((6,)))[0].asnumpy().tolist() == [2, 2, 2.5, 2.5, 3, 3]
    # round trip through MXNet's JSON keeps the node open
    again = mx.sym.load_json(s.tojson())
    assert again.eval(x=mx.nd.ones((4,)))[0].asnumpy().tolist() == [3, 3, 3.5, 3.5]
