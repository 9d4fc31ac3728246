"""gluon.SymbolBlock: a graph run as a Block (parameters named by its variables, shapes
inferred on the first call, trained through autograd like any Block), ``imports`` of
``-symbol.json`` + ``.params`` files with clear errors, and the graph attributes
beyond MXNet that bring back an exported block's nesting and hierarchy. The exchange
with real MXNet 1.9.1 is in tests/gluon/model_zoo/test_exchange_mxnet.py."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.gluon import nn
from minigluon.gluon.cached_graph import graph_attrs
from minigluon.symbol import graph
from minigluon.symbol.symbol import total_outputs
from minigluon.test_utils import assert_almost_equal


@pytest.fixture(autouse=True)
def _fresh_names():
    """Nodes made here take counters of their own (``activation0``), leaving the
    process's names to the tests that check them."""
    with mx.name.NameManager():
        yield


def _small_gluon_net():
    """Conv-BN-ReLU-pool-Dense as Gluon layers; parameters named ``net_conv0_weight``..."""
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, in_channels=2), nn.BatchNorm(in_channels=4),
                nn.Activation('relu'), nn.GlobalAvgPool2D(), nn.Dense(3, in_units=4))
    net.initialize(mx.init.Xavier())
    for name, param in net.collect_params().items():
        if name.endswith(('gamma', 'beta', 'running_mean', 'running_var', 'bias')):
            param.set_data(nd.array(np.random.RandomState(len(name)).uniform(0.5, 1.5,
                                                                             param.shape)))
    return net


def _small_graph(data, prefix='net_'):
    """The graph of ``_small_gluon_net`` written with mx.sym, variables named as its
    parameters."""
    conv = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4,
                              name=prefix + 'conv0')
    bn = mx.sym.BatchNorm(conv, eps=1e-5, momentum=0.9, fix_gamma=False,
                          name=prefix + 'batchnorm0',
                          moving_mean=mx.sym.var(prefix + 'batchnorm0_running_mean'),
                          moving_var=mx.sym.var(prefix + 'batchnorm0_running_var',
                                                init=mx.init.One()))
    act = mx.sym.Activation(bn, act_type='relu')
    pool = mx.sym.Pooling(act, kernel=(1, 1), global_pool=True, pool_type='avg')
    return mx.sym.FullyConnected(pool, num_hidden=3, name=prefix + 'dense0')


def _copy_weights(src, dst):
    for name, param in dst.collect_params().items():
        param.set_data(src.collect_params()[name].data())


def _save_model(folder, out, params, args, attrs=None):
    """Write ``out`` and ``params`` ({name: NDArray}) as ``export`` does: ``model-symbol.json``
    (with graph attributes ``attrs``) and ``model-0000.params``."""
    (folder / 'model-symbol.json').write_text(
        graph.to_json(out._outputs, total_outputs, attrs))  # pylint: disable=protected-access
    nd.save(str(folder / 'model-0000.params'),
            {('arg:' if k in args else 'aux:') + k: v for k, v in params.items()})
    return str(folder / 'model-symbol.json'), str(folder / 'model-0000.params')


def test_parameters_are_the_graphs_variables_with_shapes_from_the_first_input():
    block = gluon.SymbolBlock(_small_graph(mx.sym.var('data')), mx.sym.var('data'))
    params = block.collect_params()
    assert list(params) == ['net_conv0_weight', 'net_conv0_bias', 'net_batchnorm0_gamma',
                            'net_batchnorm0_beta', 'net_dense0_weight', 'net_dense0_bias',
                            'net_batchnorm0_running_mean', 'net_batchnorm0_running_var']
    assert [p.grad_req for p in params.values()] == ['write'] * 6 + ['null'] * 2
    assert params['net_conv0_weight'].shape is None
    # as MXNet: the common prefix is left out of the names save_parameters uses
    assert list(block._collect_params_with_prefix())[:2] == ['conv0_weight', 'conv0_bias']
    block.initialize()
    out = block(nd.ones((2, 2, 5, 5)))
    assert out.shape == (2, 3)
    assert params['net_conv0_weight'].shape == (4, 2, 3, 3)
    assert params['net_dense0_weight'].shape == (3, 4)
    assert gluon.nn.SymbolBlock is gluon.SymbolBlock
    assert repr(block) == 'SymbolBlock(\n<Symbol net_dense0> : 1 -> 1\n)'


def test_outputs_gradients_and_training_match_the_same_layers():
    net = _small_gluon_net()
    block = gluon.SymbolBlock(_small_graph(mx.sym.var('data')), mx.sym.var('data'))
    block.initialize()
    block(nd.zeros((1, 2, 5, 5)))
    _copy_weights(net, block)
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (3, 2, 5, 5)))
    label = nd.array([0, 2, 1])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainers = [gluon.Trainer(m.collect_params(), 'sgd', {'learning_rate': 0.5})
                for m in (net, block)]
    losses = []
    for _ in range(4):
        results = []
        for model, trainer in zip((net, block), trainers):
            with autograd.record():
                loss = loss_fn(model(x), label)
            loss.backward()
            trainer.step(3)
            results.append((loss.mean().asscalar(), {
                k: (p.data().asnumpy(), p.grad().asnumpy() if p.grad_req != 'null' else None)
                for k, p in model.collect_params().items()}))
        (loss_a, state_a), (loss_b, state_b) = results
        assert_almost_equal(loss_a, loss_b, rtol=1e-6, atol=1e-7)
        for name, (data, grad) in state_a.items():
            assert_almost_equal(data, state_b[name][0], rtol=1e-5, atol=1e-6)
            if grad is not None:
                assert_almost_equal(grad, state_b[name][1], rtol=1e-5, atol=1e-6)
        losses.append(loss_b)
    assert losses[-1] < losses[0]
    # the moving statistics were updated in place by training, as in the Gluon layer
    assert not np.allclose(block.collect_params()['net_batchnorm0_running_mean'].data()
                           .asnumpy(), 1.0)
    with autograd.predict_mode():
        assert_almost_equal(block(x), net(x), rtol=1e-5, atol=1e-6)


def test_ops_without_their_optional_inputs_get_gradients():
    """A node leaving out an input (no_bias) runs the kernel with None there, as the
    imperative call does (its backward returned one gradient too many before)."""
    data = mx.sym.var('data')
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, no_bias=True, name='c')
    out = mx.sym.FullyConnected(mx.sym.LeakyReLU(conv, slope=0.1), num_hidden=2,
                                no_bias=True, name='f')
    block = gluon.SymbolBlock(out, data)
    block.initialize()
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 1, 4, 4)))
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward()
    weights = [block.collect_params()[k].data().copy() for k in ('c_weight', 'f_weight')]
    x2 = x.copy()
    x2.attach_grad()
    for w in weights:
        w.attach_grad()
    with autograd.record():
        h = nd.LeakyReLU(nd.Convolution(x2, weights[0], None, kernel=(3, 3), num_filter=2,
                                        no_bias=True), slope=0.1)
        y2 = nd.FullyConnected(h, weights[1], None, num_hidden=2, no_bias=True)
    y2.backward()
    assert_almost_equal(y, y2)
    assert_almost_equal(x.grad, x2.grad)
    assert_almost_equal(block.collect_params()['c_weight'].grad(), weights[0].grad)


def test_several_inputs_and_outputs_keep_their_nesting():
    x, y, z = mx.sym.var('x'), mx.sym.var('y'), mx.sym.var('z')
    a = mx.sym.FullyConnected(x, num_hidden=2, name='fc')
    block = gluon.SymbolBlock([a, [a + y, mx.sym.Group([y * 2, z - 1])]], [x, [y, z]])
    block.initialize()
    xs = [nd.ones((2, 3)), nd.full((2, 2), 3.0), nd.full((2, 2), 5.0)]
    out = block(xs[0], [xs[1], xs[2]])
    assert isinstance(out, list) and len(out) == 2 and len(out[1]) == 2
    assert_almost_equal(out[1][0], out[0] + 3)
    assert [o.asnumpy()[0, 0] for o in out[1][1]] == [6, 4]
    flat = block(*xs)  # flat inputs, as MXNet's imported blocks take them
    assert_almost_equal(flat[0], out[0])
    with pytest.raises(ValueError, match='argument structure'):
        block([xs[0], xs[1]], xs[2])


def test_symbols_compose_onto_the_graph():
    block = gluon.SymbolBlock(_small_graph(mx.sym.var('data')), mx.sym.var('data'))
    out = block(mx.sym.var('image') * 2)
    assert isinstance(out, mx.sym.Symbol)
    assert out.list_arguments()[0] == 'image'
    assert 'net_conv0_weight' in out.list_arguments()
    assert out.infer_shape(image=(1, 2, 4, 4))[1] == [(1, 3)]


def test_imports_runs_an_exported_model_and_takes_the_files_dtypes(tmp_path):
    net = _small_gluon_net()
    out = _small_graph(mx.sym.var('data'))
    params = {k: p.data().astype('float64') for k, p in net.collect_params().items()}
    files = _save_model(tmp_path, out, params, out.list_arguments())
    block = gluon.SymbolBlock.imports(files[0], 'data', files[1])
    assert {p.dtype for p in block.collect_params().values()} == {np.float64}
    x = np.random.RandomState(1).uniform(-1, 1, (2, 2, 5, 5))
    expected = net(nd.array(x)).asnumpy()
    assert_almost_equal(block(nd.array(x, dtype='float64')), expected, rtol=1e-5, atol=1e-6)
    block.load_parameters(files[1])  # the export file, by variable name, loads again
    block.save_parameters(str(tmp_path / 'tuned.params'))
    assert sorted(nd.load(str(tmp_path / 'tuned.params')))[0] == 'batchnorm0_beta'
    block.load_parameters(str(tmp_path / 'tuned.params'))
    without = gluon.SymbolBlock.imports(files[0], ['data'], ctx=mx.cpu())
    assert without.collect_params()['net_conv0_weight'].dtype == np.float32


def test_cast_to_float16_keeps_batch_norm_float32_as_the_layers_do(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Activation('relu'), nn.Dense(3))
    net.initialize()
    net.hybridize()
    x = nd.random.normal(shape=(2, 3, 8, 8))
    expected = net(x).asnumpy()
    net.export(str(tmp_path / 'net'))
    block = gluon.SymbolBlock.imports(str(tmp_path / 'net-symbol.json'), ['data'],
                                      str(tmp_path / 'net-0000.params'))
    block.cast('float16')
    dtypes = {name: p.dtype for name, p in block.collect_params().items()}
    assert {n for n, d in dtypes.items() if d == np.float32} == {
        'batchnorm0_gamma', 'batchnorm0_beta', 'batchnorm0_running_mean',
        'batchnorm0_running_var'}
    assert {d for n, d in dtypes.items() if 'batchnorm' not in n} == {np.float16}
    out = block(x.astype('float16'))
    assert out.dtype == np.float16
    assert_almost_equal(out, expected, rtol=1e-2, atol=1e-2)
    net.cast('float16')  # the layers cast the same way and compute the same numbers
    np.testing.assert_array_equal(net(x.astype('float16')).asnumpy(), out.asnumpy())


def test_static_alloc_records_an_imported_graph_for_first_order_gradients_only(tmp_path):
    net = _small_gluon_net()
    x = nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 2, 5, 5)))
    net.hybridize()
    net(x)
    net.export(str(tmp_path / 'net'))
    block = gluon.SymbolBlock.imports(str(tmp_path / 'net-symbol.json'), ['data'],
                                      str(tmp_path / 'net-0000.params'))
    x.attach_grad()
    grads = []
    for flags in ({}, {'static_alloc': True}):
        block.hybridize(**flags)
        with autograd.record():
            y = block(x)
        assert (y._node.saved is None) == bool(flags)  # nothing kept for create_graph
        y.backward()
        grads.append(x.grad.asnumpy().copy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_imports_errors_name_what_is_wrong(tmp_path):
    net = _small_gluon_net()
    out = _small_graph(mx.sym.var('data'))
    params = {k: p.data() for k, p in net.collect_params().items()}
    args = out.list_arguments()
    missing = dict(params)
    del missing['net_dense0_bias']
    files = _save_model(tmp_path, out, missing, args)
    with pytest.raises(MXNetError, match="'net_dense0_bias' is missing"):
        gluon.SymbolBlock.imports(*files[:1], ['data'], files[1])
    block = gluon.SymbolBlock.imports(files[0], ['data'], files[1], allow_missing=True)
    assert block.collect_params()['net_dense0_weight'].shape == (3, 4)
    files = _save_model(tmp_path, out, dict(params, extra_weight=nd.ones(2)), args)
    with pytest.raises(MXNetError, match="'extra_weight'.*ignore_extra"):
        gluon.SymbolBlock.imports(files[0], ['data'], files[1])
    gluon.SymbolBlock.imports(files[0], ['data'], files[1], ignore_extra=True)
    with pytest.raises(MXNetError, match=r"input 'date' is not a variable.*\['data'\]"):
        gluon.SymbolBlock.imports(files[0], ['date'], files[1], ignore_extra=True)
    text = (tmp_path / 'model-symbol.json').read_text().replace('"Activation"', '"NoSuchOp"')
    (tmp_path / 'model-symbol.json').write_text(text)
    with pytest.raises(MXNetError, match="model-symbol.json.*'NoSuchOp' is not supported"):
        gluon.SymbolBlock.imports(files[0], ['data'], files[1])
    with pytest.raises(MXNetError, match='cannot read symbol file'):
        gluon.SymbolBlock.imports(str(tmp_path / 'nothing.json'), ['data'])


def test_formats_attribute_gives_back_the_nesting_of_the_exported_block(tmp_path):
    d0, d1, d2 = mx.sym.var('data0'), mx.sym.var('data1'), mx.sym.var('data2')
    out = mx.sym.Group([d0 * 2, d1 + d2, d1 - d2])
    attrs = graph_attrs([0, [0, 0]], [0, [0, 0]], {})
    files = _save_model(tmp_path, out, {}, [], attrs)
    block = gluon.SymbolBlock.imports(files[0], ['data0', 'data1', 'data2'], files[1])
    x, y, z = nd.ones((2,)), nd.full((2,), 3.0), nd.full((2,), 5.0)
    a, (b, c) = block(x, [y, z])
    assert (a.asnumpy()[0], b.asnumpy()[0], c.asnumpy()[0]) == (2, 8, -2)
    assert len(block(x, y, z)) == 2  # flat inputs still work
    assert json.loads(json.loads((tmp_path / 'model-symbol.json').read_text())
                      ['attrs']['minigluon_formats'][1]) == {'in': [0, [0, 0]],
                                                             'out': [0, [0, 0]]}
    again = block.export(str(tmp_path / 'again'))  # a re-export keeps the nesting
    block = gluon.SymbolBlock.imports(again[0], ['data0', 'data1', 'data2'], again[1])
    assert block(x, [y, z])[1][1].asnumpy()[0] == -2
    files = _save_model(tmp_path, out, {}, [])
    plain = gluon.SymbolBlock.imports(files[0], ['data0', 'data1', 'data2'], files[1])
    assert len(plain(x, y, z)) == 3  # the attribute is what restores the nesting


def test_structure_attribute_gives_back_the_hierarchy_for_layer_wise_tuning(tmp_path):
    net = _small_gluon_net()
    out = _small_graph(mx.sym.var('data'))
    params = {k: p.data() for k, p in net.collect_params().items()}
    attrs = graph_attrs([0], 0, {p.name: path for path, p in
                                 net._collect_params_with_prefix().items()})
    files = _save_model(tmp_path, out, params, out.list_arguments(), attrs)
    block = gluon.SymbolBlock.imports(files[0], ['data'], files[1])
    assert sorted(block.collect_params()) == sorted(net.collect_params())
    assert block[0].weight is block.collect_params()['net_conv0_weight']
    assert list(block[4].collect_params()) == ['net_dense0_weight', 'net_dense0_bias']
    assert list(block.collect_params(r'1\.')) == [
        'net_batchnorm0_gamma', 'net_batchnorm0_beta', 'net_batchnorm0_running_mean',
        'net_batchnorm0_running_var']
    assert list(block.collect_params('.*dense0_bias')) == ['net_dense0_bias']
    assert sorted(block._collect_params_with_prefix()) == \
        sorted(net._collect_params_with_prefix())
    # files move between the original model and the imported one by structural name
    block.save_parameters(str(tmp_path / 'block.params'))
    net.load_parameters(str(tmp_path / 'block.params'))
    net.save_parameters(str(tmp_path / 'net.params'))
    block.load_parameters(str(tmp_path / 'net.params'))
    # freeze everything but the last layer, train, and only that layer moves
    block.collect_params().setattr('grad_req', 'null')
    block[4].collect_params().setattr('grad_req', 'write')
    before = {k: p.data().asnumpy() for k, p in block.collect_params().items()}
    trainer = gluon.Trainer(block.collect_params(), 'sgd', {'learning_rate': 1.0})
    with autograd.record(train_mode=False):  # BatchNorm's statistics stay too
        loss = block(nd.ones((2, 2, 5, 5))).sum()
    loss.backward()
    trainer.step(2)
    moved = [k for k, p in block.collect_params().items()
             if not np.array_equal(p.data().asnumpy(), before[k])]
    assert moved == ['net_dense0_weight', 'net_dense0_bias']
    with pytest.raises(MXNetError, match='part of an imported SymbolBlock'):
        block[0](nd.ones((1, 2, 5, 5)))
    files = block.export(str(tmp_path / 'tuned'), epoch=3)
    assert files[1].endswith('tuned-0003.params')
    again = gluon.SymbolBlock.imports(files[0], ['data'], files[1])
    assert sorted(again._collect_params_with_prefix()) == \
        sorted(net._collect_params_with_prefix())
    assert_almost_equal(again[4].weight.data(), block[4].weight.data())


class _TwoInputs(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential()
            self.features.add(nn.Dense(4, activation='relu'), nn.Dense(3))
            self.output = nn.Dense(2)

    def hybrid_forward(self, F, x, pair):
        h = self.features(x)
        return self.output(h), [h + pair[0], pair[1] * 2]


def test_exported_blocks_come_back_with_their_nesting_and_hierarchy(tmp_path):
    net = _TwoInputs()
    net.initialize()
    net.hybridize()
    x, y, z = nd.ones((2, 5)), nd.full((2, 3), 2.0), nd.full((2, 3), 3.0)
    expected = net(x, [y, z])
    files = net.export(str(tmp_path / 'two'))
    block = gluon.SymbolBlock.imports(files[0], ['data0', 'data1', 'data2'], files[1])
    out, (a, b) = block(x, [y, z])
    assert_almost_equal(out, expected[0])
    assert_almost_equal(a, expected[1][0])
    assert_almost_equal(b, expected[1][1])
    assert sorted(block._collect_params_with_prefix()) == \
        sorted(net._collect_params_with_prefix())
    assert block.features[1].weight is block.collect_params()[net.features[1].weight.name]
    net.save_parameters(str(tmp_path / 'two.params'))
    block.load_parameters(str(tmp_path / 'two.params'))


def test_op_hooks_see_the_graphs_nodes():
    block = gluon.SymbolBlock(_small_graph(mx.sym.var('data')), mx.sym.var('data'))
    block.initialize()
    seen = []
    block.register_op_hook(lambda name, op, arr: seen.append((name, op)))
    block(nd.ones((1, 2, 5, 5)))
    assert ('net_conv0_output', 'Convolution') in seen
    assert seen[-1] == ('net_dense0_output', 'FullyConnected')
