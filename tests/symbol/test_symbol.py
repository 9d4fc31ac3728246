"""The Symbol API: variables and their attributes, groups and indexing, the graph's lists,
composing, arithmetic, MXNet's automatic names, copying and pickling; and the same
answers as MXNet 1.9.1 for one script (with ``MINIGLUON_MXNET_PYTHON``)."""
import copy
import json
import pickle

import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError, NotImplementedForSymbol

v = mx.sym.var


def _mlp():
    data = v('data')
    fc1 = mx.sym.FullyConnected(data, name='fc1', num_hidden=4)
    act = mx.sym.Activation(fc1, act_type='relu', name='relu1')
    return mx.sym.FullyConnected(act, name='fc2', num_hidden=2)


def test_variable_attributes_are_mxnet_strings():
    w = v('w', shape=(3, 4), lr_mult=0.5, wd_mult=2, dtype='float16',
          init=mx.init.Constant(0.5), attr={'__mood__': 'calm'}, __tag__=1)
    assert w.list_attr() == {
        '__shape__': '(3, 4)', '__lr_mult__': '0.5', '__wd_mult__': '2', '__dtype__': '2',
        '__init__': '["constant", {"value": 0.5}]', '__mood__': 'calm', '__tag__': '1',
        'lr_mult': '0.5', 'wd_mult': '2'}
    assert w.attr('__lr_mult__') == w.attr('lr_mult') == '0.5'
    assert w.attr('missing') is None and w.name == 'w'
    assert mx.sym.Variable is mx.sym.var
    with pytest.raises(MXNetError, match='must be spelled __tag__'):
        v('w', tag=1)
    with pytest.raises(TypeError, match='must be a str'):
        v(3)


def test_attr_scope_and_node_attributes_reach_the_variables_an_op_makes():
    x = v('x')
    with mx.AttrScope(ctx_group='dev1'):
        with mx.AttrScope(__lr_mult__='0.1'):
            fc = mx.sym.FullyConnected(x, num_hidden=2, name='fc', attr={'__group__': 'head'})
    expected = {'__ctx_group__': 'dev1', '__lr_mult__': '0.1', '__group__': 'head',
                'num_hidden': '2', 'ctx_group': 'dev1', 'lr_mult': '0.1'}
    assert fc.attr_dict()['fc'] == expected and fc.attr_dict()['fc_weight'] == expected
    assert 'x' not in fc.attr_dict()  # made before, outside the node
    with pytest.raises(ValueError, match='must be a string'):
        mx.AttrScope(lr_mult=0.1)
    with pytest.raises(DeprecationWarning, match='attr_dict'):
        fc.list_attr(recursive=True)


def test_an_argument_the_op_does_not_take_fails_when_the_node_is_made():
    with pytest.raises(MXNetError, match="'mood' is not supported.*fullyconnected0"):
        with mx.name.NameManager():
            mx.sym.FullyConnected(v('x'), num_hidden=2, mood='calm')


def test_lists_follow_the_graph_order():
    data = v('data')
    bn = mx.sym.BatchNorm(mx.sym.Convolution(data, kernel=(1, 1), num_filter=2, name='c'),
                          name='bn')
    assert bn.list_arguments() == ['data', 'c_weight', 'c_bias', 'bn_gamma', 'bn_beta']
    assert bn.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    assert bn.list_inputs() == ['data', 'c_weight', 'c_bias', 'bn_gamma', 'bn_beta',
                                'bn_moving_mean', 'bn_moving_var']
    assert bn.list_outputs() == ['bn_output']
    assert data.list_outputs() == ['data'] and data.list_arguments() == ['data']
    # the statistics start as MXNet starts them
    assert bn.attr_dict()['bn_moving_var']['__init__'] == '["one", {}]'
    stats = mx.sym.BatchNorm(data, output_mean_var=True, name='s')
    assert stats.list_outputs() == ['s_output', 's_mean', 's_var']


def test_group_indexing_and_iteration():
    net = _mlp()
    fc1 = net.get_internals()['fc1_output']
    group = mx.sym.Group([net, fc1])
    assert len(group) == 2 and group.name is None
    assert group.list_outputs() == ['fc2_output', 'fc1_output']
    assert group[1].name == 'fc1' and group['fc2_output'].name == 'fc2'
    assert group[0:1].list_outputs() == ['fc2_output']
    assert [s.name for s in group] == ['fc2', 'fc1']
    assert group.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'fc2_weight',
                                      'fc2_bias']
    with pytest.raises(IndexError, match='2 outputs'):
        group[2]
    with pytest.raises(MXNetError, match="no output named 'nope'"):
        group['nope']
    with pytest.raises(TypeError, match='non-empty list of Symbols'):
        mx.sym.Group([])
    parts = mx.sym.split(v('x'), num_outputs=3, name='parts')
    assert parts.list_outputs() == ['parts_output0', 'parts_output1', 'parts_output2']
    assert parts[2].list_outputs() == ['parts_output2']


def test_internals_and_children():
    net = _mlp()
    assert net.get_internals().list_outputs() == [
        'data', 'fc1_weight', 'fc1_bias', 'fc1_output', 'relu1_output', 'fc2_weight',
        'fc2_bias', 'fc2_output']
    fc1 = net.get_internals()['fc1_output']
    assert fc1.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']
    children = net.get_children()
    assert children.list_outputs() == ['relu1_output', 'fc2_weight', 'fc2_bias']
    # a group's children are those of each of its outputs' nodes
    assert children.get_children().list_outputs() == ['fc1_output']
    assert children['fc2_weight'].get_children() is None
    doubled = v('a') + v('a')
    assert len(doubled.get_children()) == 2


def test_compose_replaces_variables_and_names_the_result():
    net1 = _mlp()
    head = mx.sym.Activation(mx.sym.FullyConnected(name='fc3', num_hidden=2), act_type='tanh',
                             name='t')
    assert head.list_arguments() == ['fc3_data', 'fc3_weight', 'fc3_bias']
    composed = head(fc3_data=net1, name='composed')
    assert composed.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'fc2_weight',
                                         'fc2_bias', 'fc3_weight', 'fc3_bias']
    assert composed.list_outputs() == ['composed_output']
    assert head.list_outputs() == ['t_output']  # the original is left as it was
    positional = mx.sym.elemwise_add(v('p'), v('q'))(v('x'), v('y'))
    assert positional.list_arguments() == ['x', 'y']
    with pytest.raises(MXNetError, match='a variable cannot be composed'):
        v('x')(x=v('y'))


def test_automatic_names_count_per_op():
    with mx.name.NameManager():
        fc = mx.sym.FullyConnected(v('data'), num_hidden=3)
        bn = mx.sym.BatchNorm(fc)
        again = mx.sym.FullyConnected(bn, num_hidden=2)
        assert again.list_arguments() == [
            'data', 'fullyconnected0_weight', 'fullyconnected0_bias', 'batchnorm0_gamma',
            'batchnorm0_beta', 'fullyconnected1_weight', 'fullyconnected1_bias']
        assert bn.list_auxiliary_states() == ['batchnorm0_moving_mean',
                                              'batchnorm0_moving_var']
        x = v('x')
        assert [s.name for s in (x + 1, 1 - x, x * x, x ** 2, 2 ** x, x > 0, mx.sym.sum(x),
                                 x.reshape((1, -1)), x.flatten(), x.broadcast_axes(axis=0,
                                                                                   size=1))] \
            == ['_plusscalar0', '_rminusscalar0', '_mul0', '_powerscalar0', '_rpower_scalar0',
                '_greater_scalar0', 'sum0', 'reshape0', 'flatten0', 'broadcast_axes0']
    with mx.name.Prefix('net_'):
        assert mx.sym.Convolution(v('d'), kernel=(1, 1), num_filter=1).list_arguments() == \
            ['d', 'net_convolution0_weight', 'net_convolution0_bias']


def test_creation_nodes_are_named_and_typed_as_mxnet_writes_them():
    # MXNet writes `_zeros0` with dtype float32; an exported F.zeros differed in that node
    with mx.name.NameManager():
        made = [mx.sym.zeros((2, 3)), mx.sym.ones((2,)), mx.sym.full((2,), 3),
                mx.sym.arange(3)]
        assert [s.name for s in made] == ['_zeros0', '_ones0', '_full0', '_arange0']
        assert all(s.list_attr()['dtype'] == 'float32' for s in made)
        assert mx.sym.zeros((1,), dtype='float16').list_attr()['dtype'] == 'float16'


def test_arithmetic_with_symbols_and_scalars_on_either_side():
    x, y = v('x'), v('y')
    xv = np.array([[0.5, 1.5, -2.0]], dtype=np.float32)
    yv = np.array([[2.0, 0.5, 3.0]], dtype=np.float32)
    cases = [(x + y, xv + yv), (x - y, xv - yv), (x * y, xv * yv), (x / y, xv / yv),
             (x ** y.abs(), xv ** np.abs(yv)), (x % y, np.mod(xv, yv)), (x + 1, xv + 1),
             (1 + x, 1 + xv), (x - 1, xv - 1), (1 - x, 1 - xv), (2 * x, 2 * xv),
             (x / 2, xv / 2), (2 / x, 2 / xv), (x ** 2, xv ** 2), (2 ** x, 2 ** xv),
             (-x, -xv), (abs(x), np.abs(xv)), (x > 1, xv > 1), (1 > x, 1 > xv),
             (x >= y, xv >= yv), (x < y, xv < yv), (x <= 0.5, xv <= 0.5), (x == 1.5, xv == 1.5),
             (x != y, xv != yv), (mx.sym.maximum(x, y), np.maximum(xv, yv)),
             (mx.sym.minimum(1, x), np.minimum(1, xv)), (mx.sym.pow(2, x), 2 ** xv)]
    arrays = {'x': mx.nd.array(xv), 'y': mx.nd.array(yv)}
    for sym, expected in cases:
        out = sym.eval(ctx=mx.cpu(), **{k: arrays[k] for k in sym.list_arguments()})[0]
        np.testing.assert_allclose(out.asnumpy(), expected.astype(np.float32), rtol=1e-6,
                                   err_msg=sym.name)
    ops = [json.loads(s.tojson())['nodes'][-1]['op']
           for s in (x + y, mx.sym.maximum(x, y), 3 % x, 2 ** x, mx.sym.broadcast_add(x, y))]
    assert ops == ['elemwise_add', '_maximum', '_rmod_scalar', '_rpower_scalar',
                   'broadcast_add']
    with pytest.raises(NotImplementedForSymbol, match='bool'):
        bool(x)
    with pytest.raises(TypeError, match='a Symbol or a number'):
        x + 'a'


def test_copy_and_pickle_keep_the_graph():
    net = _mlp()
    for other in (copy.copy(net), copy.deepcopy(net), net.copy(),
                  pickle.loads(pickle.dumps(net))):
        assert other.tojson() == net.tojson()
    assert pickle.loads(pickle.dumps(net)).__getstate__() == {'handle': net.tojson()}
    with pytest.raises(MXNetError, match='expected the state'):
        mx.sym.Symbol([]).__setstate__({'handle': None})


def test_eval_and_debug_str():
    x = v('x')
    out = (x * 2).eval(x=mx.nd.array([1, 2]))
    assert isinstance(out, list) and out[0].asnumpy().tolist() == [2, 4]
    text = _mlp().debug_str()
    assert 'Op:FullyConnected, Name=fc1' in text and 'attr:num_hidden=4' in text


# ---- against MXNet 1.9.1 ----

API = '''
import json, os, sys
import numpy as np
import mxnet as mx
out = {}
w = mx.sym.var('w', shape=(3, 4), lr_mult=0.5, wd_mult=2, dtype='float16',
               init=mx.init.Xavier(magnitude=2), attr={'__mood__': 'calm'})
out['var list_attr'] = w.list_attr()
out['var attr'] = [w.attr('__lr_mult__'), w.attr('lr_mult'), w.attr('__missing__')]
data = mx.sym.var('data')
with mx.name.NameManager():
    fc = mx.sym.FullyConnected(data, num_hidden=4)
    bn = mx.sym.BatchNorm(fc, fix_gamma=False, attr={'__group__': 'g1'})
    act = mx.sym.Activation(bn, act_type='relu')
    net = mx.sym.FullyConnected(act, w, num_hidden=3, no_bias=True, name='head')
    out['lists'] = [net.list_arguments(), net.list_outputs(), net.list_auxiliary_states(),
                    net.list_inputs()]
    out['attr_dict'] = net.attr_dict()
    out['list_attr'] = net.list_attr()
    out['internals'] = net.get_internals().list_outputs()
    out['children'] = net.get_children().list_outputs()
    out['bn children'] = net.get_internals()['batchnorm0_output'].get_children().list_outputs()
    grouped = mx.sym.Group([net, fc])
    out['group'] = [grouped.list_outputs(), grouped.name, len(grouped), grouped[1].name,
                    grouped.get_children().list_outputs()]
    parts = mx.sym.split(data, num_outputs=3, name='parts')
    out['split'] = [parts.list_outputs(), parts[2].list_outputs(), parts['parts_output1'].name,
                    [p.list_outputs() for p in parts]]
    x, y = mx.sym.var('x'), mx.sym.var('y')
    arith = [x + y, x - y, x * y, x / y, x ** y, x % y, x + 1, 1 + x, x - 1, 1 - x, x * 2,
             2 * x, x / 2, 2 / x, x ** 2, 2 ** x, x % 3, 3 % x, -x, abs(x), x > 1, 1 > x,
             x >= y, x < y, x == 1, x != y, x <= 2, 2 >= x, mx.sym.maximum(x, 1),
             mx.sym.minimum(1, x), mx.sym.maximum(x, y), mx.sym.pow(2, x)]
    out['arithmetic nodes'] = [json.loads(a.tojson())['nodes'] for a in arith]
    out['arithmetic outputs'] = [a.list_outputs() for a in arith]
    values = {'x': mx.nd.array([[0.5, 1.5, -2.0]]), 'y': mx.nd.array([[2.0, 0.5, 3.0]])}
    out['arithmetic values'] = [
        a.eval(ctx=mx.cpu(), **{k: values[k] for k in a.list_arguments()})[0].asnumpy().tolist()
        for a in arith]
    head = mx.sym.FullyConnected(name='fc3', num_hidden=2)
    head = mx.sym.Activation(head, act_type='tanh', name='t')
    composed = head(fc3_data=net, name='composed')
    out['composed'] = [composed.list_arguments(), composed.list_outputs()]
    pq = mx.sym.elemwise_add(mx.sym.var('p'), mx.sym.var('q'), name='pq')
    out['compose by name'] = pq(p=x, q=y).list_arguments()
    with mx.name.Prefix('pre_'):
        out['prefix'] = mx.sym.Convolution(data, kernel=(1, 1), num_filter=2).list_arguments()
    with mx.AttrScope(ctx_group='dev1', __lr_mult__='0.1'):
        scoped = mx.sym.FullyConnected(mx.sym.var('s'), num_hidden=2, name='sc')
    out['attr scope'] = scoped.attr_dict()
    out['scoped json'] = json.loads(scoped.tojson())['nodes']
with open(os.path.join(sys.argv[1], 'api.json'), 'w') as f:
    json.dump(out, f, sort_keys=True)
'''


def test_the_api_answers_as_mxnet_does(answers_of_both):
    expected, got = answers_of_both(API, 'api.json')
    assert sorted(got) == sorted(expected)
    for key in expected:
        assert got[key] == expected[key], key


def test_simple_bind_passes_over_keywords_that_are_no_shapes():
    # MXNet reads shapes (tuples) from the keywords and nothing else; its own tests give
    # simple_bind force_rebind=True
    y = mx.sym.var('x') * 2
    exe = y.simple_bind(mx.cpu(), x=(2, 3), force_rebind=True)
    assert exe.arg_dict['x'].shape == (2, 3)
