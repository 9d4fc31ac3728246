"""``autograd.get_symbol``: the recorded computation as a graph with MXNet's op and
node names, which computes the same values and gradients when bound."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError


def _record():
    rng = np.random.RandomState(0)
    x, w, b = (nd.array(rng.normal(size=s)) for s in ((2, 3), (4, 3), (4,)))
    for a in (x, w, b):
        a.attach_grad()
    with autograd.record():
        y = nd.FullyConnected(x, w, b, num_hidden=4)
        z = nd.relu(y) * 2 + x.sum() - 1 / (nd.tanh(y) + 3)
    return (x, w, b), z


def test_the_graph_has_mxnets_ops_names_and_variables():
    (x, w, b), z = _record()
    sym = autograd.get_symbol(z)
    nodes = json.loads(sym.tojson())['nodes']
    assert sym.list_arguments() == ['var0', 'var1', 'var2']
    ops = sorted(n['op'] for n in nodes if n['op'] != 'null')
    assert ops == sorted(['FullyConnected', 'relu', '_mul_scalar', 'sum', 'broadcast_add',
                          'tanh', '_plus_scalar', '_rdiv_scalar', 'broadcast_sub'])
    fc = [n for n in nodes if n['op'] == 'FullyConnected'][0]
    assert fc['attrs'] == {'num_hidden': '4'}  # the call's parameters, as MXNet writes them
    assert [n for n in nodes if n['op'] == '_rdiv_scalar'][0]['attrs']['scalar'] == '1.0'
    assert all(n['name'].startswith('node_') for n in nodes if n['op'] != 'null')


def test_the_graph_computes_the_recorded_values_and_gradients():
    arrays, z = _record()
    head = nd.array(np.random.RandomState(1).normal(size=z.shape))
    sym = autograd.get_symbol(z)
    z.backward(head)
    _assert_bound_symbol_reproduces(sym, z, head, arrays, [a.grad for a in arrays])


def _assert_bound_symbol_reproduces(sym, z, head, arrays, expected_grads):
    """``sym`` bound to ``arrays`` (as ``var0``, ``var1``...) gives the recorded ``z`` and,
    backward from ``head``, the recorded gradients, bit for bit."""
    args = {'var%d' % i: a.copy() for i, a in enumerate(arrays)}
    grads = {name: nd.zeros(a.shape) for name, a in args.items()}
    executor = sym.bind(mx.cpu(), args, args_grad=grads)
    np.testing.assert_array_equal(executor.forward(is_train=True)[0].asnumpy(), z.asnumpy())
    executor.backward(head)
    for i, grad in enumerate(expected_grads):
        np.testing.assert_array_equal(grads['var%d' % i].asnumpy(), grad.asnumpy())


def test_a_hybridized_block_gives_the_ops_it_replays():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(5, activation='relu'), mx.gluon.nn.Dense(2))
    net.initialize()
    x = nd.ones((1, 3))
    shapes = []
    for hybridize in (False, True, 'static_alloc'):
        net.hybridize(bool(hybridize), static_alloc=hybridize == 'static_alloc')
        with autograd.record():
            y = net(x)
        sym = autograd.get_symbol(y)
        shapes.append(sym.infer_shape(var0=(1, 3))[1])
        assert [n['op'] for n in json.loads(sym.tojson())['nodes'] if n['op'] != 'null'] == \
            ['FullyConnected', 'Activation', 'FullyConnected']
    assert shapes[0] == shapes[1] == shapes[2] == [(1, 2)]


def test_a_static_alloc_block_recorded_as_one_node_is_spliced_in_and_computes_the_same():
    """The block's one node becomes its graph's ops, between the ops recorded around it."""
    mx.random.seed(2)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(4, activation='tanh', in_units=3), mx.gluon.nn.Dense(2, in_units=4))
    net.initialize()
    net.hybridize(static_alloc=True)
    x = nd.array(np.random.RandomState(0).normal(size=(2, 3)))
    x.attach_grad()
    with autograd.record():
        z = net(nd.sigmoid(x)) * 3
    assert z._node.parents[0][0].name == '_CachedOp'
    sym = autograd.get_symbol(z)
    ops = [n['op'] for n in json.loads(sym.tojson())['nodes'] if n['op'] != 'null']
    assert ops == ['sigmoid', 'FullyConnected', 'Activation', 'FullyConnected', '_mul_scalar']
    params = list(net.collect_params().values())
    arrays = [x] + [p.data() for p in params]
    assert len(sym.list_arguments()) == len(arrays)
    head = nd.array(np.random.RandomState(1).normal(size=z.shape))
    z.backward(head)
    # var0 is x (read first); the parameters follow in the graph's variable order
    _assert_bound_symbol_reproduces(sym, z, head, arrays, [x.grad] + [p.grad() for p in params])


def test_errors_say_what_is_missing():
    with pytest.raises(MXNetError, match='not part of a recorded computation'):
        autograd.get_symbol(nd.ones((2,)))
    (x, _, _), _ = _record()
    with autograd.record():
        q = (x * 2)[0]
    with pytest.raises(MXNetError, match="'_getitem'.*no graph op"):
        autograd.get_symbol(q)
    _, z = _record()
    z.backward()
    with pytest.raises(MXNetError, match='before backward, or backward with retain_graph'):
        autograd.get_symbol(z)
