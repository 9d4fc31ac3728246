"""gluon.Block and HybridBlock: registration, names, initialization, files, hooks, repr."""
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


def test_parameter_names_are_attribute_paths():
    net = Net(prefix='net_')
    assert list(net.collect_params().keys()) == [
        'features.0.weight', 'features.0.bias', 'output.weight', 'output.bias']
    assert net.features[0].weight.name == 'features.0.weight'
    assert net.output.name == 'output' and net.features[1].name == 'features.1'
    assert net.name == 'net' and Net().name == 'net'
    # relative to the block asked
    assert list(net.features.collect_params().keys()) == ['0.weight', '0.bias']


def test_names_are_identical_in_another_process():
    code = ('import minigluon.gluon.model_zoo.vision as v; '
            'print(list(v.cifar_resnet20_v1().collect_params().keys()))')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    local = gluon.model_zoo.vision.cifar_resnet20_v1().collect_params().keys()
    assert out == str(list(local))


def test_collect_params_select_is_a_regex():
    net = Net()
    assert list(net.collect_params('.*weight').keys()) == ['features.0.weight', 'output.weight']
    assert list(net.collect_params('output\\..*|.*0.bias').keys()) == [
        'features.0.bias', 'output.weight', 'output.bias']


def test_reassigning_an_attribute_updates_the_registry():
    net = Net()
    net.output = None
    assert 'output' not in net._children
    net.extra = gluon.Parameter('w', shape=(2,))
    assert 'extra' in net.collect_params()
    del net.extra
    assert 'extra' not in net.collect_params()


def test_assigning_before_super_init_is_a_clear_error():
    class Bad(gluon.Block):
        def __init__(self):
            self.layer = nn.Dense(2)
            super().__init__()

    with pytest.raises(mx.MXNetError, match=r'Bad: call super\(\).__init__\(\)'):
        Bad()


def test_register_child_and_cycles():
    outer = gluon.Block()
    inner = nn.Dense(2, in_units=2)
    outer.register_child(inner, 'head')
    assert list(outer.collect_params().keys()) == ['head.weight', 'head.bias']
    seq = nn.Sequential()
    seq.add(outer)
    with pytest.raises(mx.MXNetError, match='cycle'):
        outer.register_child(seq)
    with pytest.raises(mx.MXNetError, match='expected a Block'):
        outer.register_child(lambda x: x)


def test_shared_blocks_and_parameters_are_listed_once():
    dense = nn.Dense(2, in_units=2)
    net = nn.Sequential()
    net.add(dense, dense)
    assert list(net.collect_params().keys()) == ['0.weight', '0.bias']
    shared = nn.Dense(2, in_units=2, params=dense.params)
    assert shared.weight is dense.weight


def test_share_parameters_between_models():
    a, b = Net(), Net()
    b.share_parameters(a.collect_params())
    a.initialize()
    x = nd.ones((2, 5))
    assert_almost_equal(a(x), b(x))
    assert b.output.weight is a.output.weight


def test_mxnet1_style_params_get():
    class Scale(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.alpha = self.params.get('alpha', shape=(1,), init=mx.init.Constant(3))

        def hybrid_forward(self, F, x, alpha):
            return x * alpha

    block = Scale()
    block.initialize()
    assert list(block.collect_params().keys()) == ['alpha']
    assert block(nd.ones((2,))).asnumpy().tolist() == [3, 3]


def test_initialize_uses_the_default_and_honours_per_parameter_initializers():
    net = _small_net()
    net.initialize(mx.init.Constant(0.5))
    params = net.collect_params()
    assert (params['0.weight'].data().asnumpy() == 0.5).all()
    assert (params['0.bias'].data().asnumpy() == 0).all()  # bias_initializer='zeros'
    assert (params['1.gamma'].data().asnumpy() == 1).all()
    assert (params['1.running_var'].data().asnumpy() == 1).all()
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


def test_user_block_with_unknown_shape_needs_infer_shape():
    class Custom(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.w = gluon.Parameter('w', shape=(0,), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return x * w

    block = Custom()
    block.initialize()
    with pytest.raises(mx.MXNetError, match=r'unknown shape \(w\).*implement infer_shape'):
        block(nd.ones((3,)))

    class WithInfer(Custom):
        def infer_shape(self, x):
            self.w.shape = x.shape

    block = WithInfer()
    block.initialize(init='ones')
    assert block(nd.ones((3,))).asnumpy().tolist() == [1, 1, 1]


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
    for name, p in net.collect_params().items():
        q = other.collect_params()[name]
        assert q.data().dtype == p.data().dtype
        assert p.data().asnumpy().tobytes() == q.data().asnumpy().tobytes(), name


def test_parameter_file_is_not_a_pickle(tmp_path):
    net = _small_net()
    net.initialize()
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    with open(fname, 'rb') as f:
        assert f.read(8) == (0x112).to_bytes(8, 'little')  # MXNet's NDArray list
    with open(fname, 'rb') as f, pytest.raises(pickle.UnpicklingError):
        pickle.load(f)
    assert sorted(nd.load(fname)) == sorted(net.collect_params())
    assert not [f for f in os.listdir(tmp_path) if f != 'net.params']  # no temp files left


def test_load_errors_name_the_parameter(tmp_path):
    net = _small_net()
    net.initialize()
    fname = str(tmp_path / 'net.params')
    params = {k: p.data() for k, p in net.collect_params().items()}

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
    with pytest.raises(mx.MXNetError, match="parameter 'weight' has dtype float64 in this Block "
                                            "but float32 in .*cast_dtype=True"):
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
    with pytest.raises(mx.MXNetError, match=r"\[in Conv2D '0'\]$"):
        net(nd.ones((1, 4, 3, 3)))


def test_save_before_initialize_names_the_parameter(tmp_path):
    with pytest.raises(mx.MXNetError, match="'features.0.weight' of Dense has not been "
                                            "initialized"):
        Net().save_parameters(str(tmp_path / 'x.params'))


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
