"""gluon.Parameter, Constant and ParameterDict."""
import warnings

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.gluon import nn


def _param(shape=(2, 3), **kwargs):
    return gluon.Parameter('weight', shape=shape, **kwargs)


def test_initialize_and_access(ctx):
    p = _param(init=mx.init.Constant(1.5))
    p.initialize(ctx=ctx)
    assert p.list_ctx() == [ctx]
    assert p.data().context == ctx and p.data(ctx).shape == (2, 3)
    assert (p.data().asnumpy() == 1.5).all() and p.data().dtype == np.float32
    assert p.list_data()[0] is p.data()
    assert (p.grad(ctx).asnumpy() == 0).all() and p.list_grad()[0] is p.grad()
    assert repr(p) == 'Parameter weight (shape=(2, 3), dtype=float32)'


def test_one_copy_per_context_and_data_picks_the_current_one():
    p = _param()
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    a, b = p.list_data()
    assert (a.context, b.context) == (mx.cpu(0), mx.cpu(1))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert a._data is not b._data
    assert p.data() is a  # the current context is cpu(0)
    with mx.cpu(1):
        assert p.data() is b
    assert p.data(mx.cpu(1)) is b and p.grad(mx.cpu(1)).context == mx.cpu(1)
    with pytest.raises(mx.MXNetError, match=r"'weight' was not initialized on context cpu\(2\)"):
        p.data(mx.cpu(2))


def test_uninitialized_errors_say_what_to_do():
    p = _param()
    with pytest.raises(mx.MXNetError, match=r"Parameter 'weight' has not been initialized; "
                                            r"call net.initialize\(\)"):
        p.data()
    with pytest.raises(mx.MXNetError, match='not been initialized'):
        p.list_ctx()
    net = nn.Dense(3, in_units=2, prefix='fc_')
    with pytest.raises(mx.MXNetError, match="Parameter 'fc_weight' of Dense has not been"):
        net(nd.ones((1, 2)))


def test_grad_req_write_add_null():
    p = _param(shape=(3,))
    p.initialize(init='ones')
    x = nd.array([1., 2., 3.])
    for _ in range(2):
        with autograd.record():
            y = (p.data() * x).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [1, 2, 3])  # write: overwritten
    p.grad_req = 'add'
    for _ in range(2):
        with autograd.record():
            y = (p.data() * x).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [3, 6, 9])  # added twice onto [1, 2, 3]
    p.zero_grad()
    assert (p.grad().asnumpy() == 0).all()
    p.grad_req = 'null'
    with pytest.raises(mx.MXNetError, match="'weight' has no gradient because grad_req='null'"):
        p.grad()
    with autograd.record():
        y = p.data() * x  # no gradient needed: nothing recorded
    assert y._node is None
    p.grad_req = 'write'
    assert (p.grad().asnumpy() == 0).all()
    with pytest.raises(mx.MXNetError, match="grad_req must be 'write', 'add' or 'null'"):
        p.grad_req = 'sometimes'


def test_stale_gradients_for_the_trainer():
    p = _param(shape=(2,))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert p.stale_grad_contexts() == [mx.cpu(0), mx.cpu(1)]  # no backward yet
    with autograd.record():
        y = (p.data(mx.cpu(1)) * 2).sum()
    y.backward()
    assert p.stale_grad_contexts() == [mx.cpu(0)]
    p.mark_grad_used()
    assert p.stale_grad_contexts() == [mx.cpu(0), mx.cpu(1)]


def test_deferred_initialization():
    p = gluon.Parameter('weight', shape=(4, 0), allow_deferred_init=True, init='ones')
    p.initialize(ctx=mx.cpu(1))
    assert p.list_ctx() == [mx.cpu(1)]
    with pytest.raises(gluon.DeferredInitializationError, match='run a forward pass first'):
        p.data()
    p.shape = (4, 5)
    p._finish_deferred_init()
    assert p.data().shape == (4, 5) and p.data().context == mx.cpu(1)
    assert (p.data().asnumpy() == 1).all()


def test_unknown_shape_without_deferral_is_an_error():
    with pytest.raises(mx.MXNetError, match=r"cannot initialize Parameter 'weight'.*\(4, 0\)"):
        gluon.Parameter('weight', shape=(4, 0)).initialize()


def test_shape_can_only_be_completed_not_changed():
    p = gluon.Parameter('weight', shape=(4, 0))
    p.shape = (4, 7)
    with pytest.raises(mx.MXNetError, match=r'shape \(4, 7\), which is incompatible with the '
                                            r'new shape \(4, 8\)'):
        p.shape = (4, 8)


def test_set_data_reaches_every_context():
    p = _param()
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    value = np.arange(6, dtype='float32').reshape(2, 3)
    p.set_data(nd.array(value))
    for d in p.list_data():
        np.testing.assert_array_equal(d.asnumpy(), value)
    p.set_data(value * 2)  # numpy works too
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), value * 2)
    with pytest.raises(mx.MXNetError, match='incompatible'):
        p.set_data(nd.ones((3, 2)))


def test_set_data_before_deferred_init_finishes_is_kept():
    p = gluon.Parameter('weight', shape=(0, 2), allow_deferred_init=True)
    p.initialize()
    p.set_data(nd.ones((3, 2)))
    p._finish_deferred_init()
    assert (p.data().asnumpy() == 1).all()


def test_initialize_twice_warns_and_force_reinit_refills():
    p = _param(init='zeros')
    p.initialize()
    with pytest.warns(UserWarning, match='already initialized'):
        p.initialize(init='ones')
    assert (p.data().asnumpy() == 0).all()
    p.initialize(init=mx.init.One(), force_reinit=True)
    assert (p.data().asnumpy() == 1).all()


def test_reset_ctx_moves_values_and_gradients():
    p = _param()
    p.initialize(ctx=mx.cpu(0))
    before = p.data().asnumpy()
    p.reset_ctx([mx.cpu(1), mx.cpu(2)])
    assert p.list_ctx() == [mx.cpu(1), mx.cpu(2)]
    for d, g in zip(p.list_data(), p.list_grad()):
        np.testing.assert_array_equal(d.asnumpy(), before)
        assert g.context == d.context
    with autograd.record():
        y = (p.data(mx.cpu(2)) * 3).sum()
    y.backward()
    assert (p.grad(mx.cpu(2)).asnumpy() == 3).all()


def test_cast_converts_data_and_gradient():
    p = _param()
    p.initialize()
    p.cast('float64')
    assert p.dtype == np.float64 and p.data().dtype == np.float64
    with autograd.record():
        y = (p.data() * 2).sum()
    y.backward()
    assert p.grad().dtype == np.float64 and (p.grad().asnumpy() == 2).all()


def test_optimizer_multipliers_are_plain_attributes():
    p = _param(lr_mult=0.1, wd_mult=0.0)
    assert (p.lr_mult, p.wd_mult) == (0.1, 0.0)
    p.lr_mult = 2
    assert p.lr_mult == 2


def test_constant_never_gets_a_gradient():
    c = gluon.Constant([[1, 2], [3, 4]])
    c.initialize(init=mx.init.Zero())  # its own value wins over any initializer
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2], [3, 4]])
    assert c.grad_req == 'null' and c.dtype == np.float32
    with pytest.warns(UserWarning, match='does not support'):
        c.grad_req = 'write'
    assert c.grad_req == 'null'
    old_style = gluon.Constant('const', nd.array([5.], dtype='float64'))
    old_style.initialize()
    assert old_style.data().asnumpy().tolist() == [5.0] and old_style.dtype == np.float64


class _TwoLayers(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.hidden = nn.Dense(4, in_units=3)
            self.out = nn.Dense(2, in_units=4)
            self.scale = gluon.Parameter('scale', shape=(1,), init='ones')

    def hybrid_forward(self, F, x, scale):
        return self.out(self.hidden(x)) * scale


def test_parameter_dict_bulk_operations():
    net = _TwoLayers(prefix='net_')
    params = net.collect_params()
    assert isinstance(params, gluon.ParameterDict) and params.prefix == 'net_'
    assert list(params.keys()) == ['net_scale', 'net_dense0_weight', 'net_dense0_bias',
                                   'net_dense1_weight', 'net_dense1_bias']
    params.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert params.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    params.setattr('lr_mult', 0.5)
    assert all(p.lr_mult == 0.5 for p in params.values())
    with autograd.record():
        y = net(nd.ones((2, 3))).sum()
    y.backward()
    assert np.abs(params['net_dense0_weight'].grad().asnumpy()).sum() > 0
    params.zero_grad()
    assert all((p.grad().asnumpy() == 0).all() for p in params.values())
    params.setattr('grad_req', 'null')
    assert all(p.grad_req == 'null' for p in params.values())
    params.reset_ctx(mx.cpu(3))
    assert params.list_ctx() == [mx.cpu(3)]
    with pytest.raises(KeyError, match="no parameter 'net_gamma'; the names are: 'net_scale'"):
        params['net_gamma']
    assert repr(params).splitlines() == [
        'net_ (', '  Parameter net_scale (shape=(1,), dtype=float32)',
        '  Parameter net_dense0_weight (shape=(4, 3), dtype=float32)',
        '  Parameter net_dense0_bias (shape=(4,), dtype=float32)',
        '  Parameter net_dense1_weight (shape=(2, 4), dtype=float32)',
        '  Parameter net_dense1_bias (shape=(2,), dtype=float32)', ')']


def test_parameter_dict_get_creates_once_and_checks_attributes():
    params = gluon.ParameterDict('net_')
    w = params.get('w', shape=(2, 0), init='ones')
    assert w.name == 'net_w' and list(params) == ['net_w']
    assert params.get('w', shape=(2, 5)) is w and w.shape == (2, 5)
    with pytest.raises(mx.MXNetError, match='dtype float32, not the requested float64'):
        params.get('w', dtype='float64')
    with pytest.raises(mx.MXNetError, match=r'shape \(2, 5\), which does not match the '
                                            r'requested shape \(3, 5\)'):
        params.get('w', shape=(3, 5))
    with pytest.raises(mx.MXNetError, match="has init='ones', not the requested 'zeros'"):
        params.get('w', init='zeros')
    other = gluon.ParameterDict('net_')
    other.get('w')
    with pytest.raises(mx.MXNetError, match="'net_w' names a different Parameter"):
        params.update(other)
    sharer = gluon.ParameterDict('net_', shared=params)
    assert sharer.get('w') is w and 'net_w' in sharer  # taken from the shared dict


def test_parameter_dict_get_constant():
    params = gluon.ParameterDict('net_')
    const = params.get_constant('c', [[1, 2], [3, 4]])
    assert isinstance(const, gluon.Constant) and const.name == 'net_c'
    assert params.get_constant('c') is const
    assert params.get_constant('c', nd.array([[1, 2], [3, 4]])) is const
    with pytest.raises(mx.MXNetError, match="Constant 'net_c' exists with another value"):
        params.get_constant('c', [[1, 2], [3, 5]])
    with pytest.raises(KeyError, match="no constant named 'net_d'"):
        params.get_constant('d')
    params.get('w', shape=(1,))
    with pytest.raises(mx.MXNetError, match="'net_w' exists and is a Parameter"):
        params.get_constant('w', [1])


def test_a_constant_in_a_block_is_left_alone_by_the_trainer():
    class AddConstant(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.value = np.asarray([[1, 2], [3, 4]])
            self.const = self.params.get_constant('const', self.value)

        def hybrid_forward(self, F, x, const):
            return x + const

    block = AddConstant()
    block.initialize()
    trainer = gluon.Trainer(block.collect_params(), 'sgd', {'learning_rate': 1.0,
                                                             'momentum': 0.5})
    x = nd.ones((2, 2))
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward()
    trainer.step(1)
    assert (block.const.data().asnumpy() == block.value).all()
    assert (x.grad.asnumpy() == 1).all() and (y.asnumpy() == block.value + 1).all()


def test_parameter_dict_save_load_round_trip(tmp_path):
    net = _TwoLayers(prefix='net_')
    net.initialize()
    fname = str(tmp_path / 'p.params')
    net.collect_params().save(fname)  # by parameter name: the same prefix loads it
    assert sorted(nd.load(fname))[0] == 'net_dense0_bias'
    other = _TwoLayers(prefix='net_')
    other.collect_params().load(fname, ctx=mx.cpu(1))
    for (k, a), (k2, b) in zip(net.collect_params().items(), other.collect_params().items()):
        assert k == k2 and b.list_ctx() == [mx.cpu(1)]
        np.testing.assert_array_equal(a.data().asnumpy(), b.data().asnumpy())
    net.collect_params('net_dense0_.*').save(fname, strip_prefix='net_dense0_')
    assert sorted(nd.load(fname)) == ['bias', 'weight']
    fresh = nn.Dense(4, in_units=3, prefix='fresh_')
    fresh.collect_params().load(fname, restore_prefix='fresh_')
    np.testing.assert_array_equal(fresh.weight.data().asnumpy(),
                                  net.hidden.weight.data().asnumpy())
    with pytest.raises(mx.MXNetError, match="cannot strip prefix 'net_dense1_' from parameter "
                                            "name 'net_scale'"):
        net.collect_params().save(fname, strip_prefix='net_dense1_')
    with pytest.raises(mx.MXNetError, match="restore_prefix is 'x_' but parameter name "
                                            "'fresh_weight' does not start with it"):
        fresh.collect_params().load(fname, restore_prefix='x_')


def test_parameter_dict_load_dict_takes_mxnet_checkpoint_names():
    params = gluon.ParameterDict('net_')
    w = params.get('w', shape=(2,))
    b = params.get('b', shape=(1,))
    params.load_dict({'arg:w': nd.array([1, 2]), 'aux:b': nd.array([3])}, ctx=mx.cpu(1),
                     restore_prefix='net_')
    assert w.data().asnumpy().tolist() == [1, 2] and b.list_ctx() == [mx.cpu(1)]
    with pytest.raises(mx.MXNetError, match="parameter 'net_b' is missing from the dict"):
        params.load_dict({'w': nd.array([1, 2])}, restore_prefix='net_')


def test_dense_parameter_dtype():
    layer = nn.Dense(3, in_units=2, dtype='float64')
    layer.initialize()
    assert layer.weight.data().dtype == np.float64


def test_no_warnings_from_a_normal_initialize():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        _TwoLayers().initialize()


def test_block_without_parameters_saves_and_loads(tmp_path):
    # MXNet's format has no names in a file of no arrays, so it loads as an empty list.
    fname = str(tmp_path / 'empty.params')
    nn.HybridSequential().save_parameters(fname)
    assert nd.load(fname) == []
    nn.HybridSequential().load_parameters(fname)
    with pytest.raises(mx.MXNetError, match="parameter 'dense[0-9]+_weight' is missing"):
        nn.Dense(2, in_units=3).collect_params().load(fname)


def test_hooks_hear_backward_gradient_access_and_loading(tmp_path):
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(ctx=ctxs)
    events = []
    handles = [net.weight.register_hook(e, lambda p, e=e: events.append((e, p.name)))
               for e in ('grad_write', 'grad_ready', 'grad_access', 'load')]
    with autograd.record():
        losses = [net(nd.ones((1, 3), ctx=c)).sum() for c in ctxs]
    autograd.backward(losses)
    name = net.weight.name
    # before and after each context's gradient is written
    assert events == [('grad_write', name), ('grad_ready', name)] * 2
    assert net.weight.grad_writes_since_used() == [1, 1]
    events.clear()
    net.weight.list_grad()
    net.save_parameters(str(tmp_path / 'w.params'))
    net.load_parameters(str(tmp_path / 'w.params'), ctx=ctxs)
    assert events == [('grad_access', name), ('load', name)]
    for h in handles:
        h.remove()
    events.clear()
    net.weight.zero_grad()
    assert events == []
    with pytest.raises(MXNetError, match='unknown event'):
        net.weight.register_hook('grad_redy', print)
