"""HybridBlock.hybridize(): the traced graph, its replay (outputs and gradients equal to
imperative code bit for bit), deferred shapes, hooks, and export, whose files real
MXNet 1.9.1 reads (those tests need MINIGLUON_MXNET_PYTHON, see tests/conftest.py)."""
import json
import warnings

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon import nn
from minigluon.gluon.cached_graph import flatten
from minigluon.gluon.model_zoo import vision
from minigluon.test_utils import assert_almost_equal

# code run by minigluon here and by MXNet in a subprocess (``mx`` is either)
NETS = '''
class TwoInputs(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(TwoInputs, self).__init__(**kwargs)
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(3, activation='tanh', flatten=False)
            self.pool = mx.gluon.nn.MaxPool1D()

    def hybrid_forward(self, F, x, pair):
        y, z = pair
        h = self.dense(x) * 2 + y
        return [F.relu(h), [self.pool(z) - 1, F.sum(h, axis=1)]]


def build(mx):
    nn = mx.gluon.nn
    convnet = nn.HybridSequential(prefix='convnet_')
    with convnet.name_scope():
        convnet.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
                    nn.Dense(8, activation='relu'), nn.Dropout(0.5), nn.Flatten(),
                    nn.Dense(3, in_units=8))
    two = TwoInputs(prefix='two_')
    return {'convnet': (convnet, [(2, 3, 5, 5)]), 'two': (two, [(2, 4, 5), [(2, 4, 3), (2, 3, 6)]])}


def inputs(shapes):
    rng = np.random.RandomState(0)
    return [inputs(s) if isinstance(s, list) else mx.nd.array(rng.uniform(-1, 1, s))
            for s in shapes]
'''


def _nets():
    scope = {'mx': mx, 'np': np}
    exec(NETS, scope)  # pylint: disable=exec-used
    return scope['build'](mx), scope['inputs']


def _run_twice(net, x, train):
    """Output, input gradient and parameter gradients of a recorded forward."""
    x.attach_grad()
    with autograd.record(train_mode=train):
        out = net(x)
        loss = (out * out).sum()
    loss.backward()
    params = net.collect_params().values()
    return [out, x.grad] + [p.grad() for p in params if p.grad_req != 'null'] + \
        [p.data() for p in params]


@pytest.mark.parametrize('model', ['small', 'resnet18_v1'])
def test_hybridized_outputs_and_gradients_equal_imperative_bit_for_bit(model):
    results = []
    for hybridize in (False, True, 'static_alloc'):
        mx.random.seed(1)
        if model == 'small':
            net = nn.HybridSequential()
            with net.name_scope():
                net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
                        nn.MaxPool2D(), nn.Dropout(0.3), nn.Dense(8, activation='relu'),
                        nn.Dense(3))
            shape = (2, 3, 6, 6)
        else:
            net = vision.resnet18_v1(classes=4, thumbnail=True)
            shape = (2, 3, 4, 4)
        net.initialize(mx.init.Xavier())
        if hybridize:
            net.hybridize(static_alloc=hybridize == 'static_alloc')
        x = nd.array(np.random.RandomState(0).randn(*shape))
        out = [net(x)]  # deferred initialization, before Dropout draws
        # BatchNorm's batch, then its running statistics
        for train in (True, False, True) if model == 'small' else (True, False):
            mx.random.seed(5)
            out += _run_twice(net, x, train)
        results.append([a.asnumpy() for a in out])
    for hybrid in results[1:]:
        assert len(results[0]) == len(hybrid)
        for imperative, other in zip(results[0], hybrid):
            assert np.array_equal(imperative, other)


class _Residual(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = nn.HybridSequential()
            self.body.add(nn.Conv2D(16, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
                          nn.Conv2D(16, 3, padding=1), nn.BatchNorm())

    def hybrid_forward(self, F, x):
        return F.relu(self.body(x) + x)


def _held_after_forward(**flags):
    """Bytes allocated by a recorded forward of a residual block that are still held
    when it returns (what backward, and gradients of gradients, may read)."""
    import tracemalloc
    mx.random.seed(0)
    net = _Residual()
    net.initialize()
    if flags:
        net.hybridize(**flags)
    x = nd.random.normal(shape=(8, 16, 16, 16))
    x.attach_grad()
    with autograd.record():
        net(x).backward()  # deferred initialization and the trace
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with autograd.record():
            y = net(x)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    y.backward()
    return held, x.grad.asnumpy()


def test_static_alloc_keeps_only_what_first_order_gradients_need():
    activation = 8 * 16 * 16 * 16 * 4
    imperative, grad = _held_after_forward()
    traced, traced_grad = _held_after_forward(static_alloc=False)
    lean, lean_grad = _held_after_forward(static_alloc=True, static_shape=True)
    # the first BatchNorm's output (its ReLU keeps its own), the second's and the sum
    # (the residual add keeps shapes only) go; kept for gradients of gradients otherwise
    assert traced >= imperative - activation // 2
    assert lean <= imperative - 2.5 * activation
    np.testing.assert_array_equal(lean_grad, grad)
    np.testing.assert_array_equal(traced_grad, grad)


def test_static_alloc_refuses_gradients_of_gradients_through_the_block():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation='tanh', in_units=3))
    net.initialize()
    x = nd.random.normal(shape=(2, 3))
    x.attach_grad()
    net.hybridize()
    with autograd.record():
        (dx,) = autograd.grad(net(x).sum(), [x], create_graph=True)
        total = dx.sum()
    total.backward()  # through the block traced without static_alloc: fine
    assert np.abs(x.grad.asnumpy()).sum() > 0
    net.hybridize(static_alloc=True)
    with autograd.record():
        y = net(x).sum()
        with pytest.raises(mx.base.MXNetError, match='static_alloc=True.*without static_alloc'):
            autograd.grad(y, [x], create_graph=True)


def test_trainer_steps_of_a_hybridized_net_give_the_imperative_weights():
    weights = []
    for hybridize in (False, True):
        mx.random.seed(3)
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(6, activation='relu', in_units=5), nn.BatchNorm(in_channels=6),
                    nn.Dropout(0.2), nn.Dense(3, in_units=6))
        net.initialize(mx.init.Xavier())
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        if hybridize:
            net.hybridize(static_alloc=True, static_shape=True)
            loss_fn.hybridize()
        trainer = gluon.Trainer(net.collect_params(), 'sgd',
                                {'learning_rate': 0.1, 'momentum': 0.9})
        rng = np.random.RandomState(0)
        for _ in range(3):
            x = nd.array(rng.randn(4, 5))
            y = nd.array(rng.randint(0, 3, 4))
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(4)
        weights.append([p.data().asnumpy() for p in net.collect_params().values()])
    for imperative, hybrid in zip(*weights):
        assert np.array_equal(imperative, hybrid)


def test_deferred_shapes_come_from_the_graph():
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(nn.Conv2D(3, 3), nn.BatchNorm(), nn.Dense(4))
    net.initialize()
    net.hybridize()
    assert net(nd.ones((2, 2, 5, 5))).shape == (2, 4)
    shapes = {k: v.shape for k, v in net.collect_params().items()}
    assert shapes['net_conv0_weight'] == (3, 2, 3, 3)
    assert shapes['net_batchnorm0_running_var'] == (3,)
    assert shapes['net_dense0_weight'] == (4, 27)


def test_nested_inputs_none_and_structure_checks():
    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, a, pair, c=None):
            out = a + pair[0] * pair[1]
            return [out, (out if c is None else out + c, a)]

    net = Net()
    net.hybridize()
    a, b = nd.ones((2,)), nd.full((2,), 3)
    out = net(a, [b, b])
    assert isinstance(out, list) and isinstance(out[1], list)
    assert out[0].asnumpy().tolist() == [10, 10] and out[1][1] is not None
    inputs, graph = net._cached_graph
    assert [s.name for s in inputs] == ['data0', 'data1', 'data2']
    assert net._in_format == [0, [0, 0]] and net._out_format == [0, [0, 0]]
    assert net(a, [b, b], None)[0].asnumpy().tolist() == [10, 10]  # a default left as None
    with pytest.raises(ValueError, match='argument structure of HybridBlock does not match'):
        net(a, [b, b], a)
    with pytest.raises(ValueError, match='must be \\(nested\\) list of Symbol or NDArray'):
        net(a, [b, 3])
    with pytest.raises(ValueError, match='mixed NDArrays and Symbols'):
        net(a, [b, mx.sym.var('s')])


def test_symbol_inputs_compose_a_graph_named_as_mxnet_does():
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(nn.Dense(4, activation='relu'), nn.Dense(2))
    out = net(mx.sym.var('data'))
    assert isinstance(out, mx.sym.Symbol)
    assert out.list_arguments() == ['data', 'net_dense0_weight', 'net_dense0_bias',
                                    'net_dense1_weight', 'net_dense1_bias']
    names = [n['name'] for n in json.loads(out.tojson())['nodes'] if n['op'] != 'null']
    assert names == ['net_dense0_fwd', 'net_dense0_relu_fwd', 'net_dense1_fwd']


def test_a_variable_that_is_no_parameter_is_an_error():
    class Stray(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + (F.var('stray') if F is mx.sym else 0)

    net = Stray()
    net.hybridize()
    with pytest.raises(mx.MXNetError, match='Unknown input to HybridBlock: stray'):
        net(nd.ones((2,)))


def test_hooks_summary_cast_and_hybridize_false():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.Activation('relu'))
    net.initialize()
    x = nd.ones((1, 2))
    expected = net(x).asnumpy()
    calls = []
    net.register_forward_pre_hook(lambda block, args: calls.append(type(args[0]).__name__))
    net.register_forward_hook(lambda block, args, out: calls.append(out.shape))
    with pytest.warns(UserWarning, match='while still having forward hook'):
        net.hybridize()
    for _ in range(2):
        assert np.array_equal(net(x).asnumpy(), expected)
    assert calls == ['NDArray', (1, 3)] * 2
    with pytest.raises(AssertionError, match='must not be hybridized to print summary'):
        net.summary(x)
    net.cast('float64')
    assert net._cached_op is None  # traced again, on float64 parameters
    assert net(x.astype('float64')).dtype == np.float64
    net.cast('float32')
    net.hybridize(False)
    seen = []
    net.register_op_hook(lambda *args: seen.append(args[0]))
    assert np.array_equal(net(x).asnumpy(), expected) and seen == []


def test_op_hook_names_are_mxnets():
    """MXNet 1.9.1's test_op_hook_output_names, and names seen from its monitor."""
    def names(model, x, monitor_all=False):
        seen = []
        model.register_op_hook(lambda name, op, arr: seen.append((name, op)), monitor_all)
        model(x)
        return seen

    model = nn.HybridSequential(prefix='dense_')
    with model.name_scope():
        model.add(nn.Dense(2), nn.Activation('relu'))
    model.initialize()
    model.hybridize()
    assert [n for n, _ in names(model, nd.ones((2, 3, 4)), True)] == [
        'dense_dense0_fwd_data', 'dense_dense0_fwd_weight', 'dense_dense0_fwd_bias',
        'dense_dense0_fwd_output', 'dense_relu0_fwd_input0', 'dense_relu0_fwd_output']
    model = nn.HybridSequential(prefix='pool_')
    with model.name_scope():
        model.add(nn.AvgPool1D())
    model.hybridize()
    assert names(model, nd.ones((2, 3, 4)), True) == [('pool_pool0_fwd_data', 'Pooling'),
                                                      ('pool_pool0_fwd_output', 'Pooling')]
    lam = nn.HybridLambda(lambda F, x: F.relu(x * 2 - x), prefix='f_')
    lam.hybridize()
    assert names(lam, nd.ones((2,))) == [('f__mulscalar0_0', '_mul_scalar'),
                                         ('f__minus0_0', 'elemwise_sub'),
                                         ('f_relu0_0', 'relu')]


def test_changed_children_and_parameters_are_used():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(10, weight_initializer='zeros', bias_initializer='ones',
                         flatten=False))
    net.hybridize()
    net.initialize()
    net(nd.ones((2, 3, 5)))
    net.add(nn.Flatten())  # MXNet's test_hybrid_stale_cache
    assert net(nd.ones((2, 3, 5))).shape == (2, 30)
    net[0].bias.set_data(nd.full((10,), 2))
    assert net(nd.ones((2, 3, 5))).asnumpy().max() == 2
    net.reset_ctx(mx.cpu(1))
    out = net(nd.ones((2, 3, 5), ctx=mx.cpu(1)))
    assert out.context == mx.cpu(1) and out.asnumpy().max() == 2


def test_load_parameters_after_the_trace(tmp_path):
    nets = []
    for _ in range(2):
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(3, in_units=2), nn.BatchNorm(in_channels=3))
        net.initialize(mx.init.Normal())
        net.hybridize()
        nets.append(net)
    x = nd.array([[1., 2.]])
    nets[1](x)
    nets[0].save_parameters(str(tmp_path / 'a.params'))
    nets[1].load_parameters(str(tmp_path / 'a.params'))
    assert np.array_equal(nets[1](x).asnumpy(), nets[0](x).asnumpy())


def test_export_writes_mxnets_files_with_formats_and_structure(tmp_path):
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.BatchNorm(in_channels=3))
    net.initialize()
    net.hybridize()
    with pytest.raises(RuntimeError, match='run forward with this block at least once'):
        net.export(str(tmp_path / 'm'))
    net(nd.ones((1, 2)))
    files = net.export(str(tmp_path / 'm'), epoch=3)
    assert files == (str(tmp_path / 'm-symbol.json'), str(tmp_path / 'm-0003.params'))
    graph = json.loads(open(files[0]).read())
    assert json.loads(graph['attrs']['minigluon_formats'][1]) == {'in': [0], 'out': 0}
    assert json.loads(graph['attrs']['minigluon_structure'][1])['net_batchnorm0_gamma'] == \
        '1.gamma'
    assert sorted(nd.load(files[1])) == [
        'arg:net_batchnorm0_beta', 'arg:net_batchnorm0_gamma', 'arg:net_dense0_bias',
        'arg:net_dense0_weight', 'aux:net_batchnorm0_running_mean',
        'aux:net_batchnorm0_running_var']


def test_graph_files_equal_mxnets(tmp_path, run_mxnet):
    """Node names, ops, attributes and layout of MXNet 1.9.1's export of the same nets."""
    run_mxnet(tmp_path, 'import sys\nimport numpy as np\nimport mxnet as mx\n' + NETS + '''
for name, (net, shapes) in build(mx).items():
    net.initialize()
    net.hybridize()
    net(*inputs(shapes))
    net.export('%s/mx-%s' % (sys.argv[1], name))
''')
    nets, inputs = _nets()
    for name, (net, shapes) in nets.items():
        net.initialize()
        net.hybridize()
        net(*inputs(shapes))
        net.export(str(tmp_path / ('mg-' + name)))
        theirs, ours = (json.loads((tmp_path / ('%s-%s-symbol.json' % (side, name))).read_text())
                        for side in ('mx', 'mg'))
        for node in theirs['nodes']:
            node.get('attrs', {}).pop('cudnn_off', None)  # a GPU switch minigluon leaves out
        # (node_row_ptr counts hidden outputs, which depend on MXNet's build: its MKLDNN
        # max pooling has a workspace output)
        for key in ('nodes', 'arg_nodes', 'heads'):
            assert ours[key] == theirs[key], (name, key)
        assert sorted(nd.load(str(tmp_path / ('mg-%s-0000.params' % name)))) == \
            sorted(nd.load(str(tmp_path / ('mx-%s-0000.params' % name))))


def test_mxnet_runs_the_exported_files(tmp_path, run_mxnet):
    """SymbolBlock.imports and Module.load of MXNet 1.9.1 give minigluon's outputs."""
    nets, inputs = _nets()
    net, shapes = nets['two']
    resnet = vision.resnet18_v1(classes=5, thumbnail=True)
    images = nd.array(np.random.RandomState(1).uniform(-1, 1, (2, 3, 8, 8)))
    cases = {'two': (net, inputs(shapes)), 'resnet': (resnet, [images])}
    for name, (model, data) in cases.items():
        model.initialize(mx.init.Xavier())
        model.hybridize()
        with autograd.record():  # BatchNorm's running statistics move off their start
            model(*data)
        model.export(str(tmp_path / name))
        for i, arr in enumerate(flatten(data, 'input')[0]):
            np.save(str(tmp_path / ('%s-in%d.npy' % (name, i))), arr.asnumpy())
        for i, arr in enumerate(flatten(model(*data), 'output')[0]):
            np.save(str(tmp_path / ('%s-out%d.npy' % (name, i))), arr.asnumpy())
    run_mxnet(tmp_path, '''
import sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
for name, count in (('two', 3), ('resnet', 1)):
    names = ['data'] if count == 1 else ['data%d' % i for i in range(count)]
    data = [mx.nd.array(np.load('%s/%s-in%d.npy' % (folder, name, i))) for i in range(count)]
    block = mx.gluon.SymbolBlock.imports('%s/%s-symbol.json' % (folder, name), names,
                                         '%s/%s-0000.params' % (folder, name))
    outs = block(*data)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    mod = mx.mod.Module.load('%s/%s' % (folder, name), 0, data_names=names, label_names=None)
    mod.bind(data_shapes=list(zip(names, [d.shape for d in data])), for_training=False)
    mod.forward(mx.io.DataBatch(data, None), is_train=False)
    for i, (a, b) in enumerate(zip(outs, mod.get_outputs())):
        np.save('%s/%s-mx%d.npy' % (folder, name, i), a.asnumpy())
        np.save('%s/%s-mod%d.npy' % (folder, name, i), b.asnumpy())
''')
    for name, count in (('two', 3), ('resnet', 1)):
        for i in range(count):
            ours = np.load(str(tmp_path / ('%s-out%d.npy' % (name, i))))
            for side in ('mx', 'mod'):
                theirs = np.load(str(tmp_path / ('%s-%s%d.npy' % (name, side, i))))
                assert_almost_equal(theirs, ours, rtol=1e-5, atol=1e-5)


def test_unused_inputs_and_parameters_warn_as_in_mxnet():
    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.extra = gluon.Parameter('extra', shape=(1,))

        def hybrid_forward(self, F, x, y, extra):
            return x * 2

    net = Net()
    net.initialize()
    net.hybridize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert net(nd.ones((2,)), nd.ones((2,))).asnumpy().tolist() == [2, 2]
    text = ' '.join(str(w.message) for w in caught)
    assert 'The 1-th input to HybridBlock is not used' in text
    assert 'Parameter %s is not used' % net.extra.name in text


def _rand(*shape):
    return nd.array(np.random.RandomState(sum(shape)).uniform(0.1, 1, shape))


LAYERS = [
    (lambda: nn.Dense(3, flatten=False), [(2, 3, 4)]), (lambda: nn.Dropout(0.5), [(2, 4)]),
    (lambda: nn.BatchNormReLU(), [(2, 3, 4)]), (lambda: nn.InstanceNorm(axis=2), [(2, 3, 4)]),
    (lambda: nn.LayerNorm(), [(2, 3, 4)]), (lambda: nn.GroupNorm(1), [(2, 3, 4)]),
    (lambda: nn.Embedding(5, 3), [(2, 2)]), (lambda: nn.HybridLambda('tanh'), [(2, 3)]),
    (lambda: nn.PReLU(), [(2, 3)]), (lambda: nn.ELU(), [(2, 3)]), (lambda: nn.SELU(), [(2, 3)]),
    (lambda: nn.GELU(), [(2, 3)]), (lambda: nn.Swish(), [(2, 3)]),
    (lambda: nn.Conv1D(2, 3), [(2, 3, 6)]), (lambda: nn.Conv2D(2, 3, layout='NHWC'), [(1, 5, 5, 3)]),
    (lambda: nn.Conv2DTranspose(2, 3), [(1, 3, 4, 4)]), (lambda: nn.GlobalMaxPool3D(), [(1, 2, 2, 2, 2)]),
    (lambda: nn.ReflectionPad2D(1), [(1, 2, 3, 3)]),
    (lambda: nn.HybridConcurrent(axis=1).add(nn.Dense(2), nn.Identity()), [(2, 4)]),
]


@pytest.mark.parametrize('make, shapes', LAYERS, ids=lambda v: '' if isinstance(v, list) else
                         type(v()).__name__)
def test_every_layer_traces_and_gives_its_imperative_output(make, shapes):
    xs = [_rand(*s) for s in shapes]
    if isinstance(make(), nn.Embedding):
        xs = [nd.array([[1, 2], [3, 4]])]
    outs = []
    for hybridize in (False, True):
        mx.random.seed(0)
        layer = make()
        layer.initialize()
        if hybridize:
            layer.hybridize()
        layer(*xs)
        mx.random.seed(1)
        with autograd.record():
            outs.append(layer(*xs).asnumpy())
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize('loss', [
    gluon.loss.L1Loss(), gluon.loss.L2Loss(), gluon.loss.SoftmaxCrossEntropyLoss(),
    gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False), gluon.loss.HuberLoss(),
    gluon.loss.SigmoidBinaryCrossEntropyLoss(), gluon.loss.KLDivLoss(), gluon.loss.HingeLoss(),
    gluon.loss.LogisticLoss(), gluon.loss.PoissonNLLLoss(), gluon.loss.TripletLoss(),
    gluon.loss.CosineEmbeddingLoss()], ids=lambda loss: type(loss).__name__)
def test_losses_trace_and_give_their_imperative_values(loss):
    """Before, tracing failed where a loss read ``.shape`` (reshaping the label)."""
    pred, label = _rand(2, 4), _rand(2, 4)
    name = type(loss).__name__
    if name == 'SoftmaxCrossEntropyLoss':
        args = [pred, nd.array([1, 3]) if loss._sparse_label else label.reshape((8,))]
    elif name == 'TripletLoss':
        args = [pred, label, _rand(2, 2, 2)]
    elif name == 'CosineEmbeddingLoss':
        args = [pred, label, nd.array([1, -1])]
    elif name in ('L1Loss', 'L2Loss', 'HuberLoss'):
        args = [pred, label.reshape((4, 2))]  # reshaped to pred's shape
    else:
        args = [pred, label]
    expected = loss(*args).asnumpy()
    loss.hybridize()
    loss(*args)
    assert np.array_equal(loss(*args).asnumpy(), expected)


def test_a_child_added_deep_inside_clears_the_outer_trace():
    net = nn.HybridSequential()
    with net.name_scope():
        inner = nn.HybridSequential()
        inner.add(nn.Dense(4, in_units=3))
        net.add(inner)
    net.initialize()
    net.hybridize()
    assert net(nd.ones((2, 3))).shape == (2, 4)
    inner.add(nn.Dense(2, in_units=4))  # MXNet's outer graph would still end at 4
    inner[1].initialize()
    assert net(nd.ones((2, 3))).shape == (2, 2)
