"""gluon.Block and HybridBlock: registration, names, initialization, files, hooks, repr.

Names are Gluon 1.x's (``net_dense0_weight``; the expected values here are what
MXNet 1.9.1 gives for the same code); files and kvstore keys use the structural
names (``features.0.weight``)."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon import nn
from minigluon.test_utils import assert_almost_equal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Net(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential()
            self.features.add(nn.Dense(8, activation='relu'), nn.Dropout(0.5))
            self.output = nn.Dense(3)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _small_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, in_channels=2), nn.BatchNorm(in_channels=4),
            nn.Activation('relu'), nn.GlobalAvgPool2D(), nn.Dense(3, in_units=4))
    return net


def test_names_follow_prefixes_and_name_scopes_as_in_gluon_1x():
    net = Net(prefix='net_')
    assert list(net.collect_params().keys()) == [
        'net_dense0_weight', 'net_dense0_bias', 'net_dense1_weight', 'net_dense1_bias']
    assert net.features[0].weight.name == 'net_dense0_weight'
    assert (net.name, net.prefix, net.features.name, net.features[1].name, net.output.name) == (
        'net', 'net_', 'net_hybridsequential0', 'net_dropout0', 'net_dense1')
    assert net.features[0].act.name == 'net_dense0_relu'
    assert net.features.params.prefix == 'net_hybridsequential0_'
    assert list(net.features.collect_params().keys()) == ['net_dense0_weight', 'net_dense0_bias']
    with mx.name.NameManager():  # fresh counters for the Blocks made outside any scope
        assert [Net().name, Net().name, nn.Dense(2).name, nn.Conv2D(2, 3).name,
                nn.MaxPool2D().name, nn.Activation('tanh').name] == [
                    'net0', 'net1', 'dense0', 'conv0', 'pool0', 'tanh0']
        assert list(Net().collect_params()) == ['net2_dense0_weight', 'net2_dense0_bias',
                                                'net2_dense1_weight', 'net2_dense1_bias']


def test_an_empty_prefix_names_children_after_the_parent():
    class Model(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.features = nn.HybridSequential(prefix='')
                with self.features.name_scope():
                    stage = nn.HybridSequential(prefix='stage1_')
                    with stage.name_scope():
                        stage.add(nn.Dense(5))
                    self.features.add(nn.Dense(3), stage)
                self.output = nn.Dense(2)

    model = Model(prefix='m_')
    assert model.features.name == 'm' and model.features.prefix == 'm_'
    assert list(model.collect_params()) == [
        'm_dense0_weight', 'm_dense0_bias', 'm_stage1_dense0_weight', 'm_stage1_dense0_bias',
        'm_dense1_weight', 'm_dense1_bias']


def test_files_use_structural_names(tmp_path):
    net = Net(prefix='net_')
    net.initialize()
    net(nd.ones((2, 4)))
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    assert sorted(nd.load(fname)) == ['features.0.bias', 'features.0.weight', 'output.bias',
                                      'output.weight']
    other = Net(prefix='other_')  # other names, same structure
    other.load_parameters(fname)
    assert_almost_equal(other.output.weight.data(), net.output.weight.data())


def test_legacy_save_params_and_load_params(tmp_path):
    net = Net(prefix='net_')
    net.initialize()
    net(nd.ones((2, 4)))
    fname = str(tmp_path / 'legacy.params')
    with pytest.warns(DeprecationWarning, match='save_parameters'):
        net.save_params(fname)
    # Gluon 1.x's old format: parameter names without the model's prefix
    assert sorted(nd.load(fname)) == ['dense0_bias', 'dense0_weight', 'dense1_bias',
                                      'dense1_weight']
    other = Net(prefix='other_')
    with pytest.warns(DeprecationWarning, match='load_parameters'):
        other.load_params(fname)
    assert_almost_equal(other.output.weight.data(), net.output.weight.data())
    third = Net(prefix='third_')
    third.load_parameters(fname, ctx=mx.cpu(1))  # load_parameters reads that format too
    assert third.features[0].weight.list_ctx() == [mx.cpu(1)]
    assert_almost_equal(third.features[0].weight.data(mx.cpu(1)).as_in_context(mx.cpu(0)),
                        net.features[0].weight.data())


def test_kvstore_keys_do_not_depend_on_what_the_process_made_before():
    code = ('import minigluon as mx, minigluon.gluon.model_zoo.vision as v; '
            'mx.gluon.nn.Dense(2); net = v.cifar_resnet20_v1(); net.initialize(); '
            'print([p._structural_name for p in mx.gluon.Trainer(net.collect_params(), "sgd")'
            '._params])')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    net = gluon.model_zoo.vision.cifar_resnet20_v1()
    net.initialize()
    order = [p._structural_name for p in gluon.Trainer(net.collect_params(), 'sgd')._params]
    assert out == str(order)   # position i is kvstore key i in both processes
    assert order[0] == 'features.0.weight' and order[-1] == 'output.weight'
    assert order == sorted(order)


def test_collect_params_select_is_a_regex():
    net = Net(prefix='net_')
    assert list(net.collect_params('.*weight').keys()) == ['net_dense0_weight',
                                                           'net_dense1_weight']
    assert list(net.collect_params('net_dense1_.*|.*0_bias').keys()) == [
        'net_dense0_bias', 'net_dense1_weight', 'net_dense1_bias']


def test_blocks_in_a_list_attribute_are_not_registered_and_warn():
    class Model(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.layers = [nn.Dense(2), nn.Dense(3)]
                self.config = {'a': '4', 'b': 123}

    with pytest.warns(UserWarning, match='"Model.layers" is an unregistered container'):
        assert list(Model().collect_params()) == []


def test_an_attribute_keeps_its_kind_of_value():
    net = Net(prefix='n_')
    with pytest.raises(TypeError, match='Changing attribute type for output'):
        net.output = None
    net.output = nn.Dense(4)  # a Block of the same kind replaces the child
    assert net._children['output'] is net.output
    net.extra = gluon.Parameter('w', shape=(2,))
    assert net.extra.name == 'n_w' and 'n_w' in net.collect_params()
    with pytest.raises(TypeError, match='Changing attribute type for extra'):
        net.extra = (2,)
    del net.extra
    assert 'n_w' not in net.collect_params()
    net.first = gluon.Parameter('v', shape=(1,))
    with pytest.raises(mx.MXNetError, match="cannot assign 'second': the Block has a parameter "
                                            "named 'n_v' already \\(attribute 'first'\\)"):
        net.second = gluon.Parameter('v', shape=(1,))


def test_assigning_before_super_init_is_a_clear_error():
    class Bad(gluon.Block):
        def __init__(self):
            self.layer = nn.Dense(2)
            super().__init__()

    with pytest.raises(mx.MXNetError, match=r'Bad: call super\(\).__init__\(\)'):
        Bad()


def test_register_child_and_cycles():
    outer = gluon.Block()
    inner = nn.Dense(2, in_units=2, prefix='d_')
    outer.register_child(inner, 'head')
    assert list(outer.collect_params().keys()) == ['d_weight', 'd_bias']
    assert inner.weight._structural_name == 'head.weight'
    seq = nn.Sequential()
    seq.add(outer)
    with pytest.raises(mx.MXNetError, match='cycle'):
        outer.register_child(seq)
    with pytest.raises(mx.MXNetError, match='expected a Block'):
        outer.register_child(lambda x: x)


def test_shared_blocks_and_parameters_are_listed_once(tmp_path):
    dense = nn.Dense(2, in_units=2, prefix='d_')
    net = nn.Sequential()
    net.add(dense, dense)
    assert list(net.collect_params().keys()) == ['d_weight', 'd_bias']
    shared = nn.Dense(2, params=dense.params)
    assert shared.weight is dense.weight and shared.params.prefix == 'd_'
    net.initialize()
    fname = str(tmp_path / 'shared.params')
    net.save_parameters(fname)  # as Gluon 1.x: once per path, unless deduplicate=True
    assert sorted(nd.load(fname)) == ['0.bias', '0.weight', '1.bias', '1.weight']
    net.save_parameters(fname, deduplicate=True)
    assert sorted(nd.load(fname)) == ['1.bias', '1.weight']
    fresh = nn.Sequential()
    fresh_dense = nn.Dense(2, in_units=2)
    fresh.add(fresh_dense, fresh_dense)
    fresh.load_parameters(fname)  # one path of a shared parameter is enough
    assert_almost_equal(fresh_dense.weight.data(), dense.weight.data())


def test_params_argument_shares_through_name_scopes():
    class Pair(gluon.Block):
        def __init__(self, in_units=0, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.dense0 = nn.Dense(5, in_units=in_units)
                self.dense1 = nn.Dense(5, in_units=in_units)

        def forward(self, x):
            return self.dense1(self.dense0(x))

    first = Pair(prefix='first_')  # in_units unknown ...
    second = Pair(prefix='second_', in_units=5, params=first.collect_params())
    assert second.dense0.weight is first.dense0.weight
    assert first.dense0.weight.shape == (5, 5)  # ... until the sharer told it
    assert second.params.prefix == 'first_' and second.prefix == 'second_'
    assert list(second.collect_params()) == list(first.collect_params())
    first.initialize()
    x = nd.ones((3, 5))
    assert_almost_equal(second(x), first(x))


def test_share_parameters_between_models():
    a, b = Net(), Net()
    b.share_parameters(a.collect_params())
    a.initialize()
    x = nd.ones((2, 5))
    assert_almost_equal(a(x), b(x))
    assert b.output.weight is a.output.weight


def test_share_parameters_of_a_layer_saved_under_other_paths():
    # a fused LSTM's structural names are its cell stack's (`_unfused.0.i2h_weight`),
    # not attribute paths: sharing once raised KeyError '_unfused'
    def model():
        net = gluon.nn.HybridSequential()
        net.add(gluon.rnn.LSTM(4, num_layers=2, input_size=3), gluon.nn.Dense(2))
        return net
    a, b = model(), model()
    b.share_parameters(a.collect_params())
    a.initialize()
    x = nd.ones((5, 2, 3))
    assert_almost_equal(a(x), b(x))
    assert b[0].l1_h2h_weight is a[0].l1_h2h_weight


def test_mxnet1_style_params_get():
    class Scale(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.alpha = self.params.get('alpha', shape=(1,), init=mx.init.Constant(3))

        def hybrid_forward(self, F, x, alpha):
            return x * alpha

    block = Scale(prefix='scale_')
    block.initialize()
    assert list(block.collect_params().keys()) == ['scale_alpha']
    assert block(nd.ones((2,))).asnumpy().tolist() == [3, 3]


def test_initialize_uses_the_default_and_honours_per_parameter_initializers():
    net = _small_net()
    net.initialize(mx.init.Constant(0.5))
    assert (net[0].weight.data().asnumpy() == 0.5).all()
    assert (net[0].bias.data().asnumpy() == 0).all()  # bias_initializer='zeros'
    assert (net[1].gamma.data().asnumpy() == 1).all()
    assert (net[1].running_var.data().asnumpy() == 1).all()
    custom = nn.Dense(2, in_units=3, weight_initializer='ones')
    custom.initialize('xavier')  # a registered name works as the default
    assert (custom.weight.data().asnumpy() == 1).all()
    xavier = nn.Dense(20, in_units=30)
    xavier.initialize('xavier')
    assert np.abs(xavier.weight.data().asnumpy()).max() <= np.sqrt(3 / 25)


def test_initialize_default_is_uniform_007_and_force_reinit():
    net = nn.Dense(50, in_units=40)
    net.initialize()
    w = net.weight.data().asnumpy()
    assert np.abs(w).max() <= 0.07 and w.std() > 0.03
    net.initialize(init='zeros', force_reinit=True)
    assert (net.weight.data().asnumpy() == 0).all()


def test_initialize_on_several_contexts():
    net = _small_net()
    net.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    x = nd.ones((1, 2, 3, 3))
    y0 = net(x)
    y1 = net(x.as_in_context(mx.cpu(1)))
    assert y1.context == mx.cpu(1)
    assert_almost_equal(y0, y1.as_in_context(mx.cpu(0)))


def test_deferred_shapes_complete_on_the_first_forward():
    net = Net()
    net.initialize()
    assert net.output.weight.shape == (3, 0)
    with pytest.raises(gluon.DeferredInitializationError, match='run a forward pass first'):
        net.output.weight.data()
    y = net(nd.ones((4, 5)))
    assert y.shape == (4, 3)
    assert net.features[0].weight.shape == (8, 5) and net.output.weight.shape == (3, 8)
    assert repr(net.output) == 'Dense(8 -> 3, linear)'


def test_user_block_shapes_come_from_the_ops_or_its_infer_shape():
    class Custom(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.w = gluon.Parameter('w', shape=(0,), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return x * w

    block = Custom()
    block.initialize(init='ones')
    assert block(nd.ones((2, 3))).asnumpy().tolist() == [[1, 1, 1]] * 2
    assert block.w.shape == (3,)  # the broadcast multiply's shape rule

    class Unused(Custom):
        def hybrid_forward(self, F, x, w):
            return x

    block = Unused()
    block.initialize()
    with pytest.raises(mx.MXNetError, match=r"parameter 'w' has unknown shape \(0,\) and "
                                            r"hybrid_forward did not use it"):
        block(nd.ones((3,)))

    class NoRule(Custom):
        def hybrid_forward(self, F, x, w):
            return x + F.transpose(w)

    block = NoRule()
    block.initialize()
    with pytest.raises(mx.MXNetError, match=r"unknown shape \(0,\), and op 'transpose' "
                                            r"cannot infer it"):
        block(nd.ones((3,)))

    class WithInfer(NoRule):
        def infer_shape(self, x):
            self.w.shape = x.shape

    block = WithInfer()
    block.initialize(init='ones')
    assert block(nd.ones((3,))).asnumpy().tolist() == [2, 2, 2]


def test_numpy_input_is_a_clear_error():
    net = nn.Dense(2, in_units=2)
    net.initialize()
    with pytest.raises(mx.MXNetError, match=r'numpy array; convert inputs with nd.array'):
        net(np.ones((1, 2)))


def test_hybridize_is_accepted_and_changes_nothing():
    net = _small_net()
    net.initialize()
    x = nd.random.uniform(shape=(2, 2, 4, 4))
    before = net(x)
    net.hybridize(static_alloc=True, static_shape=True)
    assert net._active and net[0]._active
    assert_almost_equal(net(x), before)


def test_save_load_round_trip_is_bit_identical(tmp_path):
    net = _small_net()
    net.initialize(mx.init.Xavier())
    with autograd.record():  # move BatchNorm's running statistics off their initial values
        net(nd.random.normal(shape=(3, 2, 4, 4)))
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    other = _small_net()
    other.load_parameters(fname)
    for p, q in zip(net.collect_params().values(), other.collect_params().values()):
        assert q.data().dtype == p.data().dtype
        assert p.data().asnumpy().tobytes() == q.data().asnumpy().tobytes(), p.name


def test_parameter_file_is_not_a_pickle(tmp_path):
    net = _small_net()
    net.initialize()
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    with open(fname, 'rb') as f:
        assert f.read(8) == (0x112).to_bytes(8, 'little')  # MXNet's NDArray list
    with open(fname, 'rb') as f, pytest.raises(pickle.UnpicklingError):
        pickle.load(f)
    assert sorted(nd.load(fname)) == ['0.bias', '0.weight', '1.beta', '1.gamma',
                                      '1.running_mean', '1.running_var', '4.bias', '4.weight']
    assert not [f for f in os.listdir(tmp_path) if f != 'net.params']  # no temp files left


def test_load_errors_name_the_parameter(tmp_path):
    net = _small_net()
    net.initialize()
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    params = nd.load(fname)

    missing = dict(params)
    del missing['1.gamma']
    nd.save(fname, missing)
    with pytest.raises(mx.MXNetError, match=r"parameter '1.gamma' is missing from .*"
                                            r"allow_missing=True"):
        _small_net().load_parameters(fname)
    partial = _small_net()
    partial.initialize(init='zeros')
    partial.load_parameters(fname, allow_missing=True)
    assert (partial[1].gamma.data().asnumpy() == 1).all()
    assert_almost_equal(partial[0].weight.data(), net[0].weight.data())

    extra = dict(params, **{'5.weight': nd.ones((2,))})
    nd.save(fname, extra)
    with pytest.raises(mx.MXNetError, match=r"holds parameter '5.weight', which this Block "
                                            r"does not have.*ignore_extra=True"):
        _small_net().load_parameters(fname)
    _small_net().load_parameters(fname, ignore_extra=True)

    wrong = dict(params, **{'4.weight': nd.ones((3, 5))})
    nd.save(fname, wrong)
    target = _small_net()
    target.initialize(init='zeros')
    with pytest.raises(mx.MXNetError, match=r"parameter '4.weight' has shape \(3, 4\) in this "
                                            r"Block but \(3, 5\)"):
        target.load_parameters(fname)
    # nothing was changed by the failed load
    assert (target[0].weight.data().asnumpy() == 0).all()

    nd.save(fname, [nd.ones((1,))])
    with pytest.raises(mx.MXNetError, match='list of arrays'):
        _small_net().load_parameters(fname)


def test_load_completes_deferred_shapes_and_places_on_ctx(tmp_path):
    net = Net()
    net.initialize()
    net(nd.ones((1, 6)))
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    fresh = Net()  # in_units unknown, never initialized
    fresh.load_parameters(fname, ctx=mx.cpu(1))
    assert fresh.features[0].weight.shape == (8, 6)
    assert fresh.output.weight.list_ctx() == [mx.cpu(1)]
    x = nd.ones((2, 6))
    assert_almost_equal(fresh(x.as_in_context(mx.cpu(1))).as_in_context(mx.cpu(0)), net(x))


def test_load_with_another_dtype_needs_cast_dtype(tmp_path):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    fname = str(tmp_path / 'dense.params')
    net.save_parameters(fname)
    wide = nn.Dense(2, in_units=3, dtype='float64')
    with pytest.raises(mx.MXNetError, match="parameter 'dense[0-9]+_weight' has dtype float64 in "
                                            "this Block but float32 in .*cast_dtype=True"):
        wide.load_parameters(fname)
    wide.load_parameters(fname, cast_dtype=True)
    assert wide.weight.data().dtype == np.float64
    assert_almost_equal(wide.weight.data(), net.weight.data().astype('float64'))
    narrow = nn.Dense(2, in_units=3, dtype='float64')
    narrow.load_parameters(fname, cast_dtype=True, dtype_source='saved')
    assert narrow.weight.data().dtype == np.float32


def test_errors_inside_a_model_name_the_block():
    net = _small_net()
    net.initialize()
    with pytest.raises(mx.MXNetError, match=r"\[in Conv2D 'conv[0-9]+'\]$"):
        net(nd.ones((1, 4, 3, 3)))


def test_save_before_initialize_names_the_parameter(tmp_path):
    with pytest.raises(mx.MXNetError, match="'net_dense0_weight' of Dense has not been "
                                            "initialized"):
        Net(prefix='net_').save_parameters(str(tmp_path / 'x.params'))


def test_cast_to_float64():
    net = _small_net()
    net.initialize()
    net.cast('float64')
    y = net(nd.ones((1, 2, 3, 3), dtype='float64'))
    assert y.dtype == np.float64
    assert all(p.data().dtype == np.float64 for p in net.collect_params().values())


def test_cast_to_float16_keeps_batchnorm_in_float32():
    net = _small_net()
    net.initialize()
    net.cast('float16')
    assert net[0].weight.dtype == np.float16 and net[1].gamma.dtype == np.float32


def test_apply_visits_children_first():
    net = _small_net()
    seen = []
    assert net.apply(lambda b: seen.append(type(b).__name__)) is net
    assert seen == ['Conv2D', 'BatchNorm', 'Activation', 'GlobalAvgPool2D', 'Dense',
                    'HybridSequential']


def test_forward_hooks_and_detach():
    net = nn.Dense(2, in_units=2)
    net.initialize()
    calls = []
    pre = net.register_forward_pre_hook(lambda blk, inputs: calls.append(('pre', inputs[0].shape)))
    post = net.register_forward_hook(lambda blk, inputs, out: calls.append(('post', out.shape)))
    net(nd.ones((3, 2)))
    assert calls == [('pre', (3, 2)), ('post', (3, 2))]
    pre.detach()
    with post:
        pass  # leaving the with block detaches too
    net(nd.ones((3, 2)))
    assert len(calls) == 2


def test_summary(capsys):
    net = _small_net()
    net.initialize()
    net.summary(nd.ones((2, 2, 5, 5)))
    out = capsys.readouterr().out
    assert 'Conv2D-1' in out and '(2, 4, 5, 5)' in out and 'Dense-5' in out
    assert 'HybridSequential' not in out  # containers have no row, as in MXNet
    assert 'Total params: %d' % (4 * 2 * 9 + 4 + 4 * 4 + 3 * 4 + 3) in out
    assert 'Non-trainable params: 8' in out  # the running statistics


def test_repr_of_a_small_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(64, kernel_size=3, padding=1, use_bias=False, in_channels=3),
            nn.BatchNorm(in_channels=64), nn.Activation('relu'), nn.MaxPool2D(),
            nn.Flatten(), nn.Dense(10, activation='relu'), nn.Dropout(0.5),
            nn.Dense(10, in_units=784))
    assert repr(net) == '\n'.join([
        'HybridSequential(',
        '  (0): Conv2D(3 -> 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)',
        '  (1): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, '
        'use_global_stats=False, in_channels=64)',
        '  (2): Activation(relu)',
        '  (3): MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, '
        'global_pool=False, pool_type=max, layout=NCHW)',
        '  (4): Flatten',
        '  (5): Dense(None -> 10, Activation(relu))',
        '  (6): Dropout(p = 0.5, axes=())',
        '  (7): Dense(784 -> 10, linear)',
        ')'])
    nested = Net()
    assert repr(nested).startswith('Net(\n  (features): HybridSequential(\n    (0): Dense(')


def test_plain_block_forward_and_sequential():
    class Twice(gluon.Block):
        def forward(self, x):
            return x * 2

    seq = nn.Sequential()
    seq.add(Twice(), nn.Lambda(lambda x: x + 1))
    assert seq(nd.ones((2,))).asnumpy().tolist() == [3, 3]
    assert len(seq) == 2 and isinstance(seq[1], nn.Lambda)
    head = seq[:1]
    assert type(head) is nn.Sequential and len(head) == 1
    with pytest.raises(NotImplementedError):
        gluon.Block()(nd.ones((1,)))


class NormalizationHybridLayer(gluon.HybridBlock):
    """The custom layer of Gluon 1.x's "custom layers" tutorial, as written there."""

    def __init__(self, hidden_units, scales):
        super(NormalizationHybridLayer, self).__init__()
        with self.name_scope():
            self.weights = self.params.get('weights', shape=(hidden_units, 0),
                                           allow_deferred_init=True)
            self.scales = self.params.get('scales', shape=scales.shape,
                                          init=mx.init.Constant(scales.asnumpy().tolist()),
                                          differentiable=False)

    def hybrid_forward(self, F, x, weights, scales):
        normalized_data = F.broadcast_div(F.broadcast_sub(x, F.min(x)),
                                          (F.broadcast_sub(F.max(x), F.min(x))))
        weighted_data = F.FullyConnected(normalized_data, weights,
                                         num_hidden=self.weights.shape[0], no_bias=True)
        scaled_data = F.broadcast_mul(scales, weighted_data)
        return scaled_data


def test_custom_layers_tutorial_infers_the_unknown_dimension_from_fully_connected():
    net = gluon.nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(nn.Dense(5))
        net.add(NormalizationHybridLayer(hidden_units=5, scales=nd.array([2])))
        net.add(nn.Dense(1))
    net.initialize(mx.init.Xavier(magnitude=2.24))
    net.hybridize()
    assert list(net.collect_params())[2:4] == ['net_normalizationhybridlayer0_weights',
                                               'net_normalizationhybridlayer0_scales']
    x = nd.random.uniform(low=-10, high=10, shape=(5, 2))
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    with autograd.record():
        out = net(x)
        loss = gluon.loss.L2Loss()(out, nd.zeros((5, 1)))
    loss.backward()
    layer = net[1]
    assert layer.weights.shape == (5, 5) and out.shape == (5, 1)
    h = net[0](x).asnumpy()
    w = layer.weights.data().asnumpy()
    expected = 2 * ((h - h.min()) / (h.max() - h.min())) @ w.T
    assert_almost_equal(layer(net[0](x)), expected, rtol=1e-5, atol=1e-6)
    assert np.abs(layer.weights.grad().asnumpy()).sum() > 0
    trainer.step(5)
    assert not np.allclose(layer.weights.data().asnumpy(), w)  # trained as any weight
    assert layer.scales.data().asnumpy().tolist() == [2]


def test_infer_shape_sets_shapes_without_initializing():
    layer = NormalizationHybridLayer(hidden_units=3, scales=nd.array([1]))
    x = nd.arange(14).reshape((2, 7))
    layer.infer_shape(x)
    assert layer.weights.shape == (3, 7)
    with pytest.raises(mx.MXNetError, match='has not been initialized'):
        layer.weights.data()
    layer.initialize(init='ones')
    expected = np.repeat(np.array([[21.], [70.]]) / 13, 3, axis=1)  # rows of x / 13, summed
    assert_almost_equal(layer(x), expected)


def test_op_hook_sees_every_op_of_a_hybridized_block():
    class Affine(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.weight = self.params.get('weight', shape=(2, 3), init='ones')

        def hybrid_forward(self, F, x, weight):
            y = F.FullyConnected(x, weight, no_bias=True, num_hidden=2, name='fwd')
            return F.relu(y * 2)

    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(Affine())
    net.initialize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.shape)))
    x = nd.ones((4, 3))
    net(x)
    assert seen == []  # only hybridized blocks report, as in MXNet
    net.hybridize()
    net(x)
    # the graph's nodes under MXNet 1.9.1's monitor names (ops that register no output
    # names number them)
    assert seen == [('net_affine0_fwd_output', 'FullyConnected', (4, 2)),
                    ('net_affine0__mulscalar0_0', '_mul_scalar', (4, 2)),
                    ('net_affine0_relu0_0', 'relu', (4, 2))]
    seen.clear()
    net.register_op_hook(lambda name, op, arr: seen.append(name), monitor_all=True)
    net(x)
    assert seen[:4] == ['net_affine0_fwd_data', 'net_affine0_fwd_weight',
                        'net_affine0_fwd_output', 'net_affine0__mulscalar0_input0']
    assert nd.relu(x, name='r').shape == (4, 3)  # name= is accepted by every op


NAMING = '''
import json, os, sys, warnings
def naming(mx, folder):
    gluon, nn, nd = mx.gluon, mx.gluon.nn, mx.nd
    out = {}

    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(Net, self).__init__(**kwargs)
            self.loose = nn.Dense(2)  # outside the name scope: the thread's counters
            with self.name_scope():
                self.features = nn.HybridSequential(prefix='')
                with self.features.name_scope():
                    stage = nn.HybridSequential(prefix='stage1_')
                    with stage.name_scope():
                        stage.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Activation('relu'))
                    self.features.add(stage, nn.MaxPool2D(), nn.Dense(8, activation='tanh'))
                self.output = nn.Dense(3)

        def hybrid_forward(self, F, x):
            return self.output(self.features(x)) + self.loose(x).sum()

    with mx.name.NameManager():
        net = Net(prefix='net_')
        twin = Net(params=net.collect_params())
        blocks = [net, twin, net.features, net.features[0], net.features[0][2], net.features[2],
                  net.features[2].act, net.output, net.loose, twin.output]
        out['blocks'] = [(b.name, b.prefix, b.params.prefix) for b in blocks]
        out['params'] = list(net.collect_params())
        out['twin'] = list(twin.collect_params())
        out['select'] = list(net.collect_params('.*stage1.*weight|.*bias'))
        net.initialize()
        net(nd.ones((1, 2, 6, 6)))
        net.save_parameters(os.path.join(folder, 'structural.params'))
        out['structural'] = sorted(nd.load(os.path.join(folder, 'structural.params')))
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            net.output.save_params(os.path.join(folder, 'legacy.params'))
        out['legacy'] = sorted(nd.load(os.path.join(folder, 'legacy.params')))
        seq = nn.HybridSequential(prefix='seq_')
        with seq.name_scope():
            seq.add(nn.Dense(2), nn.Conv1DTranspose(2, 3), nn.AvgPool1D(), nn.Activation('sigmoid'))
        out['seq'] = [b.name for b in seq] + [seq[1:].name] + list(seq.collect_params())
    with open(os.path.join(folder, 'names.json'), 'w') as f:
        json.dump(out, f)
'''


def test_names_and_files_are_mxnets(tmp_path, run_mxnet):
    """The same model code, run by a real MXNet 1.x and by minigluon, gives the same block
    names, parameter names and saved-file names."""
    import json
    (tmp_path / 'mxnet').mkdir()
    (tmp_path / 'minigluon').mkdir()
    run_mxnet(tmp_path / 'mxnet', NAMING + '\nimport mxnet\nnaming(mxnet, sys.argv[1])\n')
    scope = {}
    exec(NAMING, scope)
    scope['naming'](mx, str(tmp_path / 'minigluon'))
    with open(tmp_path / 'mxnet' / 'names.json') as f:
        expected = json.load(f)
    with open(tmp_path / 'minigluon' / 'names.json') as f:
        assert json.load(f) == expected
