"""GraphNode: a hybridized block's graph run on raw arrays and recorded as one node
(``hybridize(static_alloc=True)``, and any hybridized block outside ``record()``), with
the outputs and gradients of the op-by-op replay bit for bit."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.symbol.graph_node import NODE_NAME


class _Mixed(gluon.HybridBlock):
    """Scalar forms, a multi-output op used in part, a weight used twice, BlockGrad, a
    float16 stretch (gradients cast back) and two outputs, one nested."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.weight = self.params.get('weight', shape=(6, 6))
            self.dense = gluon.nn.Dense(6, in_units=6, activation='tanh')

    def hybrid_forward(self, F, x, weight):
        h = self.dense(x) * 2 + 1
        h = F.FullyConnected(h, weight, no_bias=True, num_hidden=6)
        h = F.FullyConnected(F.relu(1 - h), weight, no_bias=True, num_hidden=6)
        a, b, _ = F.split(h, num_outputs=3, axis=1)
        half = F.cast(F.cast(a, 'float16') * 3, 'float32')
        return [half + F.BlockGrad(b), [F.sum(b * b, axis=1)]]


def _train(flags, x_needs_grad, retain=False):
    mx.random.seed(4)
    net = _Mixed()
    net.initialize(mx.init.Xavier())
    net.hybridize(**flags)
    x = nd.array(np.random.RandomState(0).randn(4, 6))
    if x_needs_grad:
        x.attach_grad()
    with autograd.record():
        first, (second,) = net(x)
        loss = (first * first).sum() + second.sum()
    loss.backward(retain_graph=retain)
    arrays = [first, second] + [p.grad() for p in net.collect_params().values()]
    if x_needs_grad:
        arrays.append(x.grad)
    return [a.asnumpy() for a in arrays], first, (net, x, loss)


@pytest.mark.parametrize('x_needs_grad', [True, False])
def test_one_recorded_node_gives_the_op_by_op_outputs_and_gradients(x_needs_grad):
    per_op, first, _ = _train({}, x_needs_grad)
    assert first._node.name != NODE_NAME
    whole, first, _ = _train({'static_alloc': True}, x_needs_grad)
    assert first._node.name == NODE_NAME
    assert len(per_op) == len(whole)
    for expected, got in zip(per_op, whole):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_retain_graph_runs_the_node_backward_again_and_a_freed_node_says_so():
    grads, _, (net, _, loss) = _train({'static_alloc': True}, True, retain=True)
    loss.backward()  # once more: the closures were kept
    again = [p.grad().asnumpy() for p in net.collect_params().values()]
    for first, second in zip(grads[2:], again):
        np.testing.assert_array_equal(first, second)  # grad_req 'write'
    with pytest.raises(MXNetError, match='already freed.*retain_graph=True'):
        loss.backward()


def test_outside_record_a_hybridized_block_runs_whole_and_records_nothing():
    outputs = []
    for flags in (None, {}, {'static_alloc': True}):
        mx.random.seed(4)
        net = _Mixed()
        net.initialize(mx.init.Xavier())
        if flags is not None:
            net.hybridize(**flags)
        x = nd.array(np.random.RandomState(0).randn(4, 6))
        first, (second,) = net(x)
        first, (second,) = net(x)  # the replay (the first call traces)
        assert first._node is None and second._node is None
        outputs.append([first.asnumpy(), second.asnumpy()])
    for other in outputs[1:]:
        for expected, got in zip(outputs[0], other):
            np.testing.assert_array_equal(got, expected)


def test_op_hooks_still_see_each_node_of_a_static_alloc_block():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, in_units=2, activation='relu'), gluon.nn.Dense(2, in_units=3))
    net.initialize()
    net.hybridize(static_alloc=True)
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append(op))
    x = nd.ones((1, 2))
    with autograd.record():
        net(x).backward()
    assert seen.count('FullyConnected') == 2 and 'Activation' in seen


def test_a_kernel_failing_inside_the_graph_names_the_node():
    class Reshaper(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.reshape(x, shape=(-1, 4)) * 2

    net = Reshaper()
    net.hybridize(static_alloc=True, static_shape=True)
    net(nd.ones((2, 4)))
    with pytest.raises(MXNetError, match=r'reshaping \(3, 3\).*in graph node \w+_reshape0, op Reshape'):
        net(nd.ones((3, 3)))


    class Adder(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return F.broadcast_add(x, y) * 2

    net = Adder()
    net.hybridize(static_alloc=True)
    net(nd.ones((2, 3)), nd.ones((2, 3)))
    with pytest.raises(ValueError, match=r"'add' failed on inputs \(2x3 float32, 4x3 float32\)"
                                         r".*in graph node \w+_broadcast_add0"):
        net(nd.ones((2, 3)), nd.ones((4, 3)))


def test_each_parameter_gradient_is_written_as_soon_as_the_graph_completes_it(monkeypatch):
    """A Trainer pushes a gradient to its kvstore when it is written: the last layer's
    are written before the first layer's products run, as op-by-op recording does."""
    from minigluon.ndarray.ops import host_threads
    net = gluon.nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(gluon.nn.Dense(4, in_units=3, activation='tanh'), gluon.nn.Dense(2, in_units=4))
    net.initialize()
    net.hybridize(static_alloc=True)
    x = nd.random.normal(shape=(5, 3))
    net(x)  # the trace
    products, written = [], []
    real = host_threads.matmul
    monkeypatch.setattr(host_threads, 'matmul', lambda a, b: products.append(1) or real(a, b))
    for param in net.collect_params().values():
        arr = param.data()
        hook = arr._grad_hook

        def watch(a, done, name=param.name, hook=hook):
            if done:
                written.append((name, len(products)))
            if hook is not None:
                hook(a, done)
        arr._grad_hook = watch
    with autograd.record():
        y = net(x)
    del products[:]
    y.backward()
    # the second layer: its data and weight gradients (two products); then the first
    # layer's weight gradient (its data needs none)
    assert sorted(written) == [('net_dense0_bias', 3), ('net_dense0_weight', 3),
                               ('net_dense1_bias', 2), ('net_dense1_weight', 2)]
    assert y._node.name == NODE_NAME
