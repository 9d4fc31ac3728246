"""``sym.contrib.foreach``, ``while_loop`` and ``cond``: one node holding its subgraphs,
written as MXNet 1.9.1 writes it, run by the Executor and by hybridized blocks with the
imperative loops' results bit for bit, shapes inferred through the subgraphs, and
models moving both ways with MXNet 1.9.1 (with ``MINIGLUON_MXNET_PYTHON``)."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError

v = mx.sym.var

# The three graphs of MXNet's documentation, as one script for both frameworks.
GRAPHS_SCRIPT = '''
import json, sys
import mxnet as mx
v = mx.sym.var
data, s0, w = v('data'), v('s0'), v('w')
outer = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
def body(x, states):
    h = mx.sym.tanh(mx.sym.dot(x, w) + states[0] + mx.sym.sum(outer))
    return h * 2, [h]
outs, st = mx.sym.contrib.foreach(body, data, [s0])
graphs = {'foreach': mx.sym.Group([outs, st[0]])}
i, s = v('i'), v('s')
outs, st = mx.sym.contrib.while_loop(lambda i, s: i <= 5,
                                     lambda i, s: ([i + s * w], [i + 1, s + i]),
                                     [i, s], max_iterations=7)
graphs['while_loop'] = mx.sym.Group(outs + st)
a, b = v('a'), v('b')
graphs['cond'] = mx.sym.Group(mx.sym.contrib.cond(
    a * b < 5, lambda: [(a + 5) * (b + 5), b], lambda: [(a - 5) * (b - 5), a]))
def outer_step(x, states):
    inner, _ = mx.sym.contrib.foreach(lambda y, t: (y * 2 + t[0], [y]), x, states)
    return inner + 1, [mx.sym.sum(inner, axis=0)]
outs, st = mx.sym.contrib.foreach(outer_step, v('seq'), [v('h')])
graphs['nested'] = mx.sym.Group([outs, st[0]])
with open(sys.argv[1] + '/graphs.json', 'w') as f:
    json.dump({k: json.loads(g.tojson()) for k, g in graphs.items()}, f)
'''


def _f64(shape, seed):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, shape), dtype='float64')


def _graph_nodes(sym):
    return json.loads(sym.tojson())['nodes']


def test_foreach_node_holds_its_subgraph_as_mxnet_writes_it():
    data, s0, w = v('data'), v('s0'), v('w')
    outer = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    outs, states = mx.sym.contrib.foreach(
        lambda x, s: (mx.sym.tanh(mx.sym.dot(x, w) + s[0] + mx.sym.sum(outer)), [x]),
        data, [s0])
    assert isinstance(states, list) and len(states) == 1
    group = mx.sym.Group([outs, states[0]])
    assert group.list_arguments() == ['data', 's0', 'w', 'fc_weight', 'fc_bias']
    assert group.list_outputs() == ['_foreach0_output0', '_foreach0_output1']
    node = _graph_nodes(group)[-1]
    assert node['op'] == '_foreach' and node['attrs'] == {
        'in_data_locs': '[0]', 'in_state_locs': '[2]', 'num_args': '5', 'num_out_data': '1',
        'num_outputs': '2', 'remain_locs': '[1, 3]'}
    sub = node['subgraphs'][0]
    # the loop's own inputs are data-0 and s0-0; what the body read from outside is cut
    # into variables named after it (w, fc_output); a head that is an input is copied
    assert [n['name'] for n in sub['nodes'] if n['op'] == 'null'] == \
        ['data-0', 'w', 's0-0', 'fc_output']
    assert sub['nodes'][-1]['op'] == '_copy' and 'attrs' not in sub
    # the JSON reads back into the same graph
    again = mx.sym.load_json(group.tojson())
    assert again.tojson() == group.tojson()


def test_graphs_are_mxnets(answers_of_both):
    theirs, ours = answers_of_both(GRAPHS_SCRIPT, 'graphs.json')
    assert set(theirs) == set(ours)
    for name in theirs:
        assert ours[name] == theirs[name], name


def test_executor_runs_the_subgraph_as_the_imperative_loop():
    # float64: the executor's outputs and gradients are those of nd.contrib, bit for bit
    data, s0, w = v('data'), v('s0'), v('w')

    def body(F, w):
        return lambda x, s: ([F.tanh(x * w + s[0]), x * 3], [F.sigmoid(s[0]) * x])
    outs, states = mx.sym.contrib.foreach(body(mx.sym, w), data, [s0])
    group = mx.sym.Group(outs + states)
    args = {'data': _f64((4, 3), 0), 's0': _f64((3,), 1), 'w': _f64((3,), 2)}
    grads = {k: nd.zeros(a.shape, dtype='float64') for k, a in args.items()}
    # gradients for names the graph lacks are left out, as MXNet's bind leaves them
    exe = group.bind(mx.cpu(), args, args_grad=dict(grads, extra=nd.ones((1,))))
    heads = [_f64((4, 3), 3), _f64((4, 3), 4), _f64((3,), 5)]
    exe.forward(is_train=True)
    exe.backward(heads + [nd.ones((1,))])  # further head gradients are ignored, as in MXNet
    copies = {k: a.copy() for k, a in args.items()}
    for a in copies.values():
        a.attach_grad()
    with autograd.record():
        outs, states = nd.contrib.foreach(body(nd, copies['w']), copies['data'],
                                          [copies['s0']])
    autograd.backward(outs + states, heads)
    for got, want in zip(exe.outputs, outs + states):
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    for name, arr in copies.items():
        np.testing.assert_array_equal(grads[name].asnumpy(), arr.grad.asnumpy())


def test_while_loop_and_cond_in_an_executor():
    i, s, w = v('i'), v('s'), v('w')
    outs, (fi, fs) = mx.sym.contrib.while_loop(
        lambda i, s: i < 3,
        lambda i, s: ([mx.sym.broadcast_mul(s, w)],
                      [i + 1, mx.sym.broadcast_mul(mx.sym.sin(s), w)]),
        [i, s], max_iterations=5)
    picked = mx.sym.contrib.cond(mx.sym.sum(fs) > 0, lambda: fs * 2,
                                 lambda: mx.sym.broadcast_sub(fs, w))
    group = mx.sym.Group([outs[0], fi, fs, picked])
    # shapes through the subgraphs: the step outputs have max_iterations rows
    _, out_shapes, _ = group.infer_shape(i=(1,), s=(2, 2), w=(2,))
    assert out_shapes == [(5, 2, 2), (1,), (2, 2), (2, 2)]
    assert group.infer_type(i='float64', s='float64', w='float64')[1] == [np.float64] * 4
    args = {'i': nd.zeros((1,), dtype='float64'), 's': _f64((2, 2), 0), 'w': _f64((2,), 1)}
    grads = {'s': nd.zeros((2, 2), dtype='float64'), 'w': nd.zeros((2,), dtype='float64')}
    exe = group.bind(mx.cpu(), args, args_grad=grads)
    exe.forward(is_train=True)
    heads = [_f64(o.shape, 10 + k) for k, o in enumerate(exe.outputs)]
    exe.backward(heads)
    x, w_ = args['s'].copy(), args['w'].copy()
    x.attach_grad()
    w_.attach_grad()
    with autograd.record():
        steps, h = [], x
        for _ in range(3):
            steps.append(h * w_)
            h = nd.sin(h) * w_
        picked = h * 2 if h.sum().asscalar() > 0 else h - w_
        stacked = nd.concat(nd.stack(*steps), nd.zeros((2, 2, 2), dtype='float64'), dim=0)
    autograd.backward([stacked, h, picked], [heads[0], heads[2], heads[3]])
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), stacked.asnumpy(), rtol=1e-14)
    assert exe.outputs[1].asscalar() == 3
    np.testing.assert_allclose(exe.outputs[3].asnumpy(), picked.asnumpy(), rtol=1e-14)
    np.testing.assert_allclose(grads['s'].asnumpy(), x.grad.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(grads['w'].asnumpy(), w_.grad.asnumpy(), rtol=1e-12)


def test_shapes_flow_into_and_out_of_a_foreach_body():
    data, h = v('data'), v('h')

    def step(x, states):
        out = mx.sym.FullyConnected(x, num_hidden=4, name='i2h') + \
            mx.sym.FullyConnected(states[0], num_hidden=4, name='h2h')
        return out, [mx.sym.tanh(out)]
    outs, states = mx.sym.contrib.foreach(step, data, [h])
    group = mx.sym.Group([outs, states[0]])
    # the weights the body makes are the loop's inputs too, and take their shapes there
    args, outs_shapes, _ = group.infer_shape(data=(5, 2, 3), h=(2, 4))
    assert dict(zip(group.list_arguments(), args)) == {
        'data': (5, 2, 3), 'h': (2, 4), 'i2h_weight': (4, 3), 'i2h_bias': (4,),
        'h2h_weight': (4, 4), 'h2h_bias': (4,)}
    assert outs_shapes == [(5, 2, 4), (2, 4)]
    # an unknown length stays unknown (0), as MXNet's test_foreach_with_unkown_dim wants
    outs, _ = mx.sym.contrib.foreach(lambda x, s: (x + s[0], [s[0] * 2]),
                                     v('d', shape=(0, 3, 8)), [v('s')])
    assert outs.infer_shape_partial()[1] == [(0, 3, 8)]


def test_front_end_errors_are_mxnets():
    data, s = v('data'), v('s')
    with pytest.raises(AssertionError, match='have to be used'):
        mx.sym.contrib.foreach(lambda x, st: (x, [x * 2]), data, [s])
    with pytest.raises(AssertionError, match='different format'):
        mx.sym.contrib.foreach(lambda x, st: (x, st[0] + x), data, [s])
    with pytest.raises(ValueError, match="doesn't involve"):
        mx.sym.contrib.while_loop(lambda a, b: a < 1, lambda a, b: (None, [a + 1, a]),
                                  [data, s], max_iterations=2)
    with pytest.raises(ValueError, match='Number of outputs differs'):
        mx.sym.contrib.cond(data > 0, lambda: [data, s], lambda: data)
    with pytest.raises(MXNetError, match='subgraphs'):
        mx.sym.load_json(json.dumps({'nodes': [{'op': '_cond', 'name': 'c', 'inputs': [],
                                                'subgraphs': {}}], 'heads': [[0, 0, 0]]}))


class _Cell(gluon.HybridBlock):
    """A small RNN cell: the loop body of ``_Net``."""

    def __init__(self, hidden, **kwargs):
        super().__init__(**kwargs)
        self.hidden = hidden
        with self.name_scope():
            self.i2h_weight = self.params.get('i2h_weight', shape=(hidden, 5))
            self.h2h_weight = self.params.get('h2h_weight', shape=(hidden, hidden))

    def hybrid_forward(self, F, x, states, i2h_weight, h2h_weight):
        h = F.tanh(F.FullyConnected(x, i2h_weight, no_bias=True, num_hidden=self.hidden)
                   + F.FullyConnected(states[0], h2h_weight, no_bias=True,
                                      num_hidden=self.hidden))
        return h, [h]


class _Net(gluon.HybridBlock):
    """foreach over a cell, then a while_loop and a cond on its final state."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = _Cell(3)
            self.scale = self.params.get('scale', shape=(3,))

    def hybrid_forward(self, F, x, h, scale):
        outs, states = F.contrib.foreach(self.cell, x, [h])
        steps, (_, g) = F.contrib.while_loop(
            lambda i, g: i < 2, lambda i, g: ([g], [i + 1, F.broadcast_mul(F.sin(g), scale)]),
            [F.zeros((1,), dtype='float64'), states[0]], max_iterations=3)
        picked = F.contrib.cond(F.sum(g) > 0, lambda: g * 2, lambda: F.broadcast_sub(g, scale))
        return outs, steps[0], picked


def test_hybridized_block_is_the_imperative_one_bit_for_bit():
    x, h = _f64((4, 2, 5), 0), _f64((2, 3), 1)
    results = []
    for hybrid in (False, True):
        net = _Net(prefix='net_')
        net.initialize(mx.init.Uniform(1.0))
        net.cast('float64')
        for k, param in enumerate(sorted(net.collect_params().values(), key=lambda p: p.name)):
            param.set_data(_f64(param.shape, 20 + k))
        if hybrid:
            net.hybridize()
        with autograd.record():
            outs = net(x, h)
        autograd.backward(list(outs), [_f64(o.shape, 30 + k) for k, o in enumerate(outs)])
        results.append([o.asnumpy() for o in outs] +
                       [p.grad().asnumpy() for _, p in sorted(net.collect_params().items())])
    assert results[1][1].shape == (3, 2, 3)
    for imperative, hybridized in zip(*results):
        np.testing.assert_array_equal(imperative, hybridized)


EXCHANGE_SCRIPT = '''
import json, os, sys
import numpy as np
import mxnet as mx
gluon = mx.gluon
folder = sys.argv[1]

class Cell(gluon.HybridBlock):
    def __init__(self, hidden, **kwargs):
        super(Cell, self).__init__(**kwargs)
        self.hidden = hidden
        with self.name_scope():
            self.i2h_weight = self.params.get('i2h_weight', shape=(hidden, 3))
            self.h2h_weight = self.params.get('h2h_weight', shape=(hidden, hidden))
            self.bias = self.params.get('bias', shape=(hidden,))
    def hybrid_forward(self, F, x, states, i2h_weight, h2h_weight, bias):
        h = F.tanh(F.FullyConnected(x, i2h_weight, bias, num_hidden=self.hidden)
                   + F.FullyConnected(states[0], h2h_weight, no_bias=True,
                                      num_hidden=self.hidden))
        return h, [h]

class Seq(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(Seq, self).__init__(**kwargs)
        with self.name_scope():
            self.cell = Cell(4)
    def hybrid_forward(self, F, x, h):
        outs, states = F.contrib.foreach(self.cell, x, [h])
        return outs, states[0]

class Loop(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(Loop, self).__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get('w', shape=(3,))
    def hybrid_forward(self, F, x, w):
        def func(i, h):
            new = F.tanh(F.broadcast_mul(h, w) + x)
            return [new * 2], [i + 1, new]
        outs, (_, h) = F.contrib.while_loop(lambda i, h: i < 3, func, [F.zeros((1,)), x],
                                            max_iterations=4)
        y = F.contrib.cond(F.sum(h) > 0, lambda: h * 3, lambda: F.broadcast_sub(h, w))
        # the rows after the last step are undefined in MXNet
        return F.slice_axis(outs[0], axis=0, begin=0, end=3), h, y

rng = np.random.RandomState(0)
inputs = {'seq': [mx.nd.array(rng.uniform(-1, 1, (5, 2, 3))),
                  mx.nd.array(rng.uniform(-1, 1, (2, 4)))],
          'loop': [mx.nd.array(rng.uniform(-1, 1, (2, 3)))]}
results = {}
imported = os.path.exists(os.path.join(folder, 'exported.json'))
for name, make in (('seq', Seq), ('loop', Loop)):
    args = inputs[name]
    path = os.path.join(folder, name)
    if imported:
        names = ['data'] if len(args) == 1 else ['data0', 'data1']
        net = gluon.SymbolBlock.imports(path + '-symbol.json', names, path + '-0000.params')
    else:
        net = make()
        net.initialize(mx.init.Uniform(1.0))
        net.hybridize()
    results[name] = [o.asnumpy().tolist() for o in net(*args)]
    if not imported:
        net.export(path)
with open(os.path.join(folder, 'imported.json' if imported else 'exported.json'), 'w') as f:
    json.dump(results, f)
'''


def test_models_move_both_ways_with_mxnet(tmp_path, run_mxnet, run_minigluon):
    for first, second, folder in ((run_minigluon, run_mxnet, tmp_path / 'ours'),
                                  (run_mxnet, run_minigluon, tmp_path / 'theirs')):
        folder.mkdir()
        first(folder, EXCHANGE_SCRIPT)   # builds, runs and exports
        second(folder, EXCHANGE_SCRIPT)  # imports and runs
        exported = json.loads((folder / 'exported.json').read_text())
        imported = json.loads((folder / 'imported.json').read_text())
        for name in ('seq', 'loop'):
            assert len(exported[name]) == len(imported[name])
            for want, got in zip(exported[name], imported[name]):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
