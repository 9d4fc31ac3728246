"""Graph files: MXNet 1.x's JSON format, read and written, and moved both ways with MXNet
1.9.1 (those tests need ``MINIGLUON_MXNET_PYTHON``)."""
import json
import os
import shutil

import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError
from minigluon.symbol.graph import MXNET_VERSION, from_json, to_json, topological_order


def _net():
    data = mx.sym.var('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, pad=(1, 1), name='conv')
    x = mx.sym.BatchNorm(x, name='bn')
    x = mx.sym.Activation(x, act_type='relu')
    return mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=3, name='fc')


def test_json_layout_is_nnvm_s():
    graph = json.loads(_net().tojson())
    assert graph['attrs'] == {'mxnet_version': ['int', MXNET_VERSION]}
    names = [n['name'] for n in graph['nodes']]
    assert names == ['data', 'conv_weight', 'conv_bias', 'conv', 'bn_gamma', 'bn_beta',
                     'bn_moving_mean', 'bn_moving_var', 'bn', 'activation0', 'flatten0',
                     'fc_weight', 'fc_bias', 'fc']
    assert graph['arg_nodes'] == [0, 1, 2, 4, 5, 6, 7, 11, 12]
    # BatchNorm counts its hidden mean and var outputs, as MXNet's node_row_ptr does
    assert graph['node_row_ptr'] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14, 15, 16]
    assert graph['heads'] == [[13, 0, 0]]
    bn = graph['nodes'][8]
    assert bn['op'] == 'BatchNorm' and bn['inputs'][3:] == [[6, 0, 1], [7, 0, 1]]  # mutable
    assert graph['nodes'][3]['attrs'] == {'kernel': '(3, 3)', 'num_filter': '2',
                                          'pad': '(1, 1)'}


def test_json_round_trip_is_identical_and_runs_the_same():
    net = _net()
    text = net.tojson()
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    assert again.list_arguments() == net.list_arguments()
    assert again.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    shapes = dict(data=(2, 1, 3, 3))
    rng = np.random.RandomState(0)
    args = {n: mx.nd.array(rng.normal(size=s))
            for n, s in zip(net.list_arguments(), net.infer_shape(**shapes)[0])}
    aux = {'bn_moving_mean': mx.nd.zeros(2), 'bn_moving_var': mx.nd.ones(2)}
    out1 = net.bind(mx.cpu(), args, aux_states=aux).forward()[0].asnumpy()
    out2 = again.bind(mx.cpu(), args, aux_states=aux).forward()[0].asnumpy()
    np.testing.assert_array_equal(out1, out2)


def test_save_and_load_files(tmp_path):
    net = _net()
    path = str(tmp_path / 'net-symbol.json')
    net.save(path)
    assert mx.sym.load(path).tojson() == net.tojson()
    assert os.listdir(str(tmp_path)) == ['net-symbol.json']  # no temporary file left
    with pytest.raises(MXNetError, match='cannot read symbol file'):
        mx.sym.load(str(tmp_path / 'missing.json'))


def test_older_files_keep_attributes_under_param_or_attr():
    """MXNet before 1.0 wrote operator arguments under ``param`` and others under
    ``attr``; such files still load."""
    text = json.dumps({
        'nodes': [{'op': 'null', 'name': 'x', 'inputs': []},
                  {'op': 'Activation', 'name': 'act', 'param': {'act_type': 'tanh'},
                   'inputs': [[0, 0]]}],
        'arg_nodes': [0], 'heads': [[1, 0]]})
    sym = mx.sym.load_json(text)
    out = sym.eval(x=mx.nd.array([0.5]))[0]
    np.testing.assert_allclose(out.asnumpy(), np.tanh([0.5]), rtol=1e-6)


@pytest.mark.parametrize('text, match', [
    ('not json', 'not valid JSON'),
    ('[]', 'must be an object'),
    ('{"nodes": [{"op": "null"}], "heads": []}', 'node 0 is malformed'),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": [[3, 0]]}], "heads": []}',
     'node 0 is malformed'),
    ('{"nodes": [{"op": "NoSuchOp", "name": "x", "inputs": []}], "heads": []}',
     "operator 'NoSuchOp' is not supported"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[5, 0, 0]]}',
     '"heads" must list'),
])
def test_malformed_files_give_clear_errors(text, match):
    with pytest.raises(MXNetError, match=match):
        from_json(text)


def test_topological_order_is_depth_first_post_order():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    with mx.name.NameManager():
        c = mx.sym.elemwise_add(a * 2, b, name='c')
    order = [n.name for n in topological_order(c._outputs)]
    assert order == ['a', '_mulscalar0', 'b', 'c']


def test_graph_attributes_are_written_with_their_type():
    text = to_json(mx.sym.var('x')._outputs, lambda n: 1, {'note': 'hi', 'count': 2})
    assert json.loads(text)['attrs'] == {'mxnet_version': ['int', MXNET_VERSION],
                                         'note': ['str', 'hi'], 'count': ['int', 2]}


def test_np_shape_graphs_are_marked_and_older_graphs_read_with_unknown_dims():
    net = mx.sym.FullyConnected(mx.sym.var('data'), mx.sym.var('w', shape=(4, 0)),
                                num_hidden=4, no_bias=True)
    assert 'is_np_shape' not in json.loads(net.tojson())['attrs']
    with mx.np_shape(True):
        assert json.loads(net.tojson())['attrs']['is_np_shape'] == ['int', 1]
        # a file of 1.x's semantics: its 0 is an unknown dimension, as MXNet reads it
        loaded = mx.sym.load_json(net.tojson().replace('"is_np_shape"', '"other"'))
        assert loaded.attr_dict()['w']['__shape__'] == '(4, -1)'
        assert loaded.infer_shape(data=(2, 3))[0] == [(2, 3), (4, 3)]


# ---- exchange with MXNet 1.9.1 ----

# One program, run by MXNet and by minigluon: many ops, a BatchNorm in training, a
# broadcast variable with a declared shape, a loss layer; outputs and gradients saved.
BUILD = '''
import os, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
data = mx.sym.var('data')
x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True,
                       name='conv')
x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, name='bn')
x = mx.sym.Activation(x, act_type='relu')
x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max')
x = mx.sym.LeakyReLU(x, act_type='leaky', slope=0.1)
fc = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=5, name='fc')
y = mx.sym.softmax(fc, axis=-1)
z = mx.sym.concat(fc * 2 + 1, 1 - fc, mx.sym.exp(fc / 3), dim=1)
z = mx.sym.sum(mx.sym.transpose(z), axis=0, keepdims=True)
w = mx.sym.slice_axis(mx.sym.reshape(fc, shape=(0, 5, 1)), axis=1, begin=1, end=4)
w = mx.sym.mean(mx.sym.square(w), axis=(1, 2))
u = mx.sym.broadcast_mul(fc, mx.sym.var('scale', shape=(1, 5)))
u = mx.sym.clip(u, -1, 1) + mx.sym.tanh(fc) - mx.sym.sigmoid(fc)
v = mx.sym.broadcast_add(mx.sym.dot(fc, mx.sym.var('proj'), transpose_b=True) ** 2,
                         mx.sym.sum(mx.sym.abs(fc), axis=1, keepdims=True))
graph = mx.sym.Group([y, z, w, u, v, mx.sym.SoftmaxOutput(fc, name='out')])
with open(os.path.join(folder, 'graph.json'), 'w') as f:
    f.write(graph.tojson())
'''

LOAD = '''
import os, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
graph = mx.sym.load(os.path.join(folder, 'other.json'))
'''

# Runs ``graph`` on fixed inputs (forward in training mode, backward with ones) and saves
# outputs, gradients and the updated BatchNorm statistics as ``<tag>_<name>.npy``.
RUN = '''
tag = %r
shapes = dict(data=(2, 3, 6, 6), proj=(3, 5), out_label=(2,))
exe = graph.simple_bind(mx.cpu(), grad_req={n: 'write' for n in graph.list_arguments()
                                            if n != 'out_label'}, **shapes)
rng = np.random.RandomState(0)
for name in sorted(exe.arg_dict):
    arr = exe.arg_dict[name]
    arr[:] = rng.randint(0, 5, arr.shape) if name == 'out_label' else \\
        rng.normal(size=arr.shape)
exe.aux_dict['bn_moving_var'][:] = 1
outs = exe.forward(is_train=True)
exe.backward([mx.nd.ones(o.shape) for o in outs])
saved = dict(('output%%d' %% i, o) for i, o in enumerate(outs))
saved.update(('grad_' + n, g) for n, g in exe.grad_dict.items() if g is not None)
saved.update(('aux_' + n, a) for n, a in exe.aux_dict.items())
for name, arr in saved.items():
    np.save(os.path.join(folder, '%%s_%%s.npy' %% (tag, name)), arr.asnumpy())
'''


def _saved(folder, tag):
    return {name[len(tag) + 1:-4]: np.load(os.path.join(folder, name))
            for name in sorted(os.listdir(folder)) if name.startswith(tag + '_')}


def _assert_same_numbers(ours, theirs, what):
    assert sorted(ours) == sorted(theirs), what
    for name in theirs:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5,
                                   err_msg='%s: %s' % (what, name))


def test_graphs_move_both_ways_with_mxnet(tmp_path, run_mxnet, run_minigluon):
    theirs, ours = tmp_path / 'mxnet', tmp_path / 'minigluon'
    theirs.mkdir()
    ours.mkdir()
    run_mxnet(theirs, BUILD + RUN % 'own')
    run_minigluon(ours, BUILD + RUN % 'own')
    # the same program gives the same file, node for node (node_row_ptr aside: MXNet's
    # oneDNN build counts a hidden workspace output of max pooling)
    mx_graph = json.loads((theirs / 'graph.json').read_text())
    mg_graph = json.loads((ours / 'graph.json').read_text())
    for key in ('nodes', 'arg_nodes', 'heads', 'attrs'):
        assert mg_graph[key] == mx_graph[key], key
    _assert_same_numbers(_saved(ours, 'own'), _saved(theirs, 'own'), 'the same program')
    # each loads the other's file and runs it to the same numbers
    shutil.copy(str(ours / 'graph.json'), str(theirs / 'other.json'))
    shutil.copy(str(theirs / 'graph.json'), str(ours / 'other.json'))
    run_mxnet(theirs, LOAD + RUN % 'loaded')
    run_minigluon(ours, LOAD + RUN % 'loaded')
    _assert_same_numbers(_saved(theirs, 'loaded'), _saved(theirs, 'own'),
                         "MXNet running minigluon's file")
    _assert_same_numbers(_saved(ours, 'loaded'), _saved(theirs, 'own'),
                         "minigluon running MXNet's file")
