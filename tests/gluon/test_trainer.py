"""gluon.Trainer: the Gluon training idiom end to end, multi-device, states, errors."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.test_utils import assert_almost_equal

DEVICES = [mx.cpu(0), mx.cpu(1)]


def _mlp(seed=0):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(16, activation='relu'), gluon.nn.Dense(3))
    return net


def _batch(seed=1, n=8):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, 5)).astype(np.float32), rng.randint(0, 3, size=n)


def _weights(net):
    """By structural name: the same in every net built the same way (parameter names count
    the Blocks made before)."""
    return {k: v.data(v.list_ctx()[0]).asnumpy()
            for k, v in net._collect_params_with_prefix().items()}


def _one_step(ctx_list, optimizer, kvstore='device', update_on_kvstore=None, steps=1):
    net = _mlp()
    net.initialize(mx.init.Xavier(), ctx=ctx_list)
    trainer = gluon.Trainer(net.collect_params(), optimizer[0], dict(optimizer[1]),
                            kvstore=kvstore, update_on_kvstore=update_on_kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for s in range(steps):
        x, y = _batch(seed=s)
        xs = gluon.utils.split_and_load(x, ctx_list)
        ys = gluon.utils.split_and_load(y, ctx_list)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        for loss in losses:
            loss.backward()
        trainer.step(x.shape[0])
    return net


@pytest.mark.parametrize('optimizer', [('sgd', {'learning_rate': 0.5, 'momentum': 0.9}),
                                       ('adam', {'learning_rate': 0.05, 'wd': 0.01})])
@pytest.mark.parametrize('kvstore,update_on_kvstore', [('device', None), ('local', None),
                                                       ('device', False)])
def test_two_devices_match_one_device_with_whole_batch(optimizer, kvstore, update_on_kvstore):
    single = _weights(_one_step([mx.cpu(0)], optimizer, steps=3))
    net = _one_step(DEVICES, optimizer, kvstore, update_on_kvstore, steps=3)
    multi = _weights(net)
    for name in single:
        assert_almost_equal(multi[name], single[name], rtol=1e-5, atol=1e-6, names=(name, name))
    # every device holds the same weights
    for p in net.collect_params().values():
        assert_almost_equal(p.data(DEVICES[0]), p.data(DEVICES[1]))


def test_small_mlp_learns_a_synthetic_task():
    rng = np.random.RandomState(0)
    centers = rng.normal(scale=3.0, size=(4, 10)).astype(np.float32)
    labels = rng.randint(0, 4, size=800)
    data = centers[labels] + rng.normal(size=(800, 10)).astype(np.float32)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(32, activation='relu'), gluon.nn.Dense(4))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    batch_size = 50
    for epoch in range(5):
        for i in range(0, 600, batch_size):
            x, y = nd.array(data[i:i + batch_size]), nd.array(labels[i:i + batch_size])
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(batch_size)
    metric = mx.metric.Accuracy()
    metric.update(nd.array(labels[600:]), net(nd.array(data[600:])))
    assert metric.get()[1] > 0.95


def test_small_cnn_learns_a_synthetic_task():
    rng = np.random.RandomState(1)
    labels = rng.randint(0, 2, size=256)
    images = rng.normal(scale=0.5, size=(256, 1, 8, 8)).astype(np.float32)
    images[labels == 1, :, 2:6, 2:6] += 1.5  # class 1 has a bright square
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, padding=1, activation='relu'), gluon.nn.MaxPool2D(2),
            gluon.nn.Flatten(), gluon.nn.Dense(2))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for epoch in range(4):
        for i in range(0, 192, 32):
            x, y = nd.array(images[i:i + 32]), nd.array(labels[i:i + 32])
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(32)
    pred = net(nd.array(images[192:])).argmax(axis=1).asnumpy()
    assert (pred == labels[192:]).mean() > 0.9


@pytest.mark.parametrize('ctx_list,update_on_kvstore', [([mx.cpu(0)], None),
                                                        (DEVICES, None), (DEVICES, False)])
def test_save_load_states_continues_bit_identically(tmp_path, ctx_list, update_on_kvstore):
    opt = ('adam', {'learning_rate': 0.01})

    def train(net, trainer, steps):
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for s in steps:
            x, y = _batch(seed=s)
            xs = gluon.utils.split_and_load(x, ctx_list)
            ys = gluon.utils.split_and_load(y, ctx_list)
            with autograd.record():
                losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
            autograd.backward(losses)
            trainer.step(8)

    def fresh():
        net = _mlp()
        net.initialize(mx.init.Xavier(), ctx=ctx_list)
        return net, gluon.Trainer(net.collect_params(), *opt, update_on_kvstore=update_on_kvstore)

    net, trainer = fresh()
    train(net, trainer, range(6))
    uninterrupted = _weights(net)

    net, trainer = fresh()
    train(net, trainer, range(3))
    net.save_parameters(str(tmp_path / 'net.params'))
    trainer.save_states(str(tmp_path / 'trainer.states'))
    net2, trainer2 = fresh()
    net2.load_parameters(str(tmp_path / 'net.params'), ctx=ctx_list)
    trainer2.load_states(str(tmp_path / 'trainer.states'))
    train(net2, trainer2, range(3, 6))
    resumed = _weights(net2)
    for name in uninterrupted:
        assert np.array_equal(resumed[name], uninterrupted[name]), name
    with open(str(tmp_path / 'trainer.states'), 'rb') as f:
        assert f.read(2) == b'PK'  # a zip of arrays + JSON, not a pickle


def test_stale_gradient_is_reported_with_the_parameter_name():
    net = _mlp()
    net.initialize()
    unused = gluon.nn.Dense(2, in_units=5)
    unused.initialize()
    params = net.collect_params()
    params.update(unused.collect_params())
    trainer = gluon.Trainer(params, 'sgd')
    x, _ = _batch()
    with autograd.record():
        out = net(nd.array(x))
    out.backward()
    with pytest.raises(UserWarning, match='has not been updated by backward'):
        trainer.step(8)
    before = unused.weight.data().asnumpy()
    trainer.step(8, ignore_stale_grad=True)
    assert np.array_equal(unused.weight.data().asnumpy(), before)  # stale ones are skipped


def test_shared_parameters_are_updated_once():
    shared = gluon.nn.Dense(4, in_units=4, use_bias=False)
    net = gluon.nn.Sequential()
    net.add(shared, shared)
    net.initialize(mx.init.One())
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0})
    assert len(trainer._params) == 1
    x = nd.ones((1, 4))
    with autograd.record():
        y = net(x).sum()
    y.backward()
    grad = shared.weight.grad().asnumpy().copy()
    trainer.step(1)
    assert_almost_equal(shared.weight.data(), 1 - grad)


def test_lr_mult_and_learning_rate_control():
    net = gluon.nn.Dense(1, in_units=1, use_bias=False)
    net.initialize(mx.init.One())
    net.weight.lr_mult = 0.5
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0})
    assert trainer.learning_rate == 1.0
    trainer.set_learning_rate(0.2)
    assert trainer.learning_rate == 0.2
    with autograd.record():
        y = net(nd.ones((1, 1))).sum()
    y.backward()
    trainer.step(1)
    assert_almost_equal(net.weight.data(), [[1 - 0.2 * 0.5]])


def test_allreduce_then_clip_then_update():
    net = _mlp()
    net.initialize(ctx=DEVICES)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            update_on_kvstore=False)
    x, y = _batch()
    xs = gluon.utils.split_and_load(x, DEVICES)
    with autograd.record():
        outs = [net(a).sum() for a in xs]
    autograd.backward(outs)
    trainer.allreduce_grads()
    grads = [p.grad(DEVICES[0]) for p in net.collect_params().values()]
    norm = gluon.utils.clip_global_norm(grads, 0.01)
    assert norm > 0.01
    total = np.sqrt(sum((g.asnumpy() ** 2).sum() for g in grads))
    assert_almost_equal(np.array([total]), [0.01], rtol=1e-4)
    trainer.update(8)


def test_argument_errors():
    net = _mlp()
    net.initialize()
    with pytest.raises(MXNetError, match='optimizer_params must be None'):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {'learning_rate': 1})
    with pytest.raises(MXNetError, match='unknown optimizer'):
        gluon.Trainer(net.collect_params(), 'no-such-optimizer')
    with pytest.raises(MXNetError, match='Parameters'):
        gluon.Trainer([1, 2], 'sgd')
    net2 = _mlp()
    net2.initialize(ctx=DEVICES)
    net2(nd.ones((2, 5)))  # finish deferred initialisation
    trainer = gluon.Trainer(net2.collect_params(), 'sgd', kvstore=None)
    with pytest.raises(MXNetError, match='cannot aggregate'):
        trainer.step(1, ignore_stale_grad=True)
    trainer = gluon.Trainer(net2.collect_params(), 'sgd')
    with pytest.raises(MXNetError, match='update_on_kvstore'):
        trainer.update(1, ignore_stale_grad=True)


def test_trainer_accepts_a_kvstore_object_with_one_device():
    store = mx.kv.create('local')
    net = gluon.nn.Dense(1, in_units=2)
    net.initialize(mx.init.One())
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0}, kvstore=store)
    with autograd.record():
        y = net(nd.ones((2, 2))).sum()
    y.backward()
    trainer.step(2)
    assert trainer._kvstore is store
    assert_almost_equal(net.weight.data(), [[0.0, 0.0]])  # grad 2 per weight, / batch 2


def _two_device_param(name='x', value=0.0):
    x = gluon.Parameter(name, shape=(4,))
    x.initialize(ctx=DEVICES, init=mx.init.Constant(value))
    return x


def _backward_ones(param, scale_by_device=False):
    with autograd.record():
        ys = [w * (i if scale_by_device else 1) + 1 for i, w in enumerate(param.list_data())]
    for y in ys:
        y.backward()


def test_a_parameter_dict_is_taken_in_name_order_and_keyed_by_position():
    params = gluon.ParameterDict()
    b = params.get('b', shape=(2,))
    a = params.get('a', shape=(2,), lr_mult=1.0)
    params.initialize(ctx=DEVICES, init='zeros')
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1})
    assert trainer._params == [a, b]
    for p in (a, b):
        _backward_ones(p)
    trainer.step(1)
    store_opt = trainer._kvstore._updater.optimizer
    assert sorted(trainer._kvstore._updater.states) == [0, 1]
    assert store_opt._get_lr(0) == pytest.approx(0.1)
    a.lr_mult = 2.0  # the optimizer reads the Parameter's multiplier, not a copy
    assert store_opt._get_lr(0) == pytest.approx(0.2)


def test_update_and_allreduce_refused_while_the_store_updates():
    x = _two_device_param()
    trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 1.0})
    _backward_ones(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is True
    for call in (lambda: trainer.update(1), trainer.allreduce_grads):
        with pytest.raises(AssertionError, match='update_on_kvstore') as info:
            call()
        assert isinstance(info.value, MXNetError)  # MXNet asserts; both except clauses work


def test_the_environment_decides_update_on_kvstore_by_default(monkeypatch):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '0')
    x = _two_device_param()
    trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 1.0, 'momentum': 0.5})
    _backward_ones(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    assert_almost_equal(x.data(DEVICES[1]), np.full(4, -2.0))  # grads 1 + 1 summed
    assert sorted(trainer._updaters[0].states) == [0]


def test_a_store_without_an_optimizer_aggregates_and_the_devices_update():
    x = _two_device_param()
    store = mx.kv.create('teststore')
    trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 1.0, 'momentum': 0.5}, kvstore=store)
    _backward_ones(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is False and trainer._kvstore is store
    for ctx in DEVICES:
        assert_almost_equal(x.data(ctx), np.full(4, -2.0))
    impossible = gluon.Trainer([x], 'sgd', kvstore=store, update_on_kvstore=True)
    with pytest.raises(ValueError, match='update_on_kvstore=False'):
        impossible._init_kvstore()


class _AsyncLookalike(mx.kv.TestStore):
    """A store that applies each push as it arrives (the Trainer's choices depend on what
    the store says it does, not on its name)."""

    is_async = True

    @staticmethod
    def is_capable(capability):
        return True


def test_dist_async_updates_on_the_store_and_refuses_update_on_kvstore_false():
    x = _two_device_param()
    trainer = gluon.Trainer([x], 'sgd', kvstore=_AsyncLookalike(), update_on_kvstore=False)
    with pytest.raises(ValueError, match='async') as info:
        trainer._init_kvstore()
    assert isinstance(info.value, MXNetError)


def test_reset_kvstore_restarts_from_the_current_weights():
    x = _two_device_param()
    trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 0.1}, kvstore='local')
    _backward_ones(x)
    trainer.step(1)
    assert_almost_equal(x.data(DEVICES[0]), np.full(4, -0.2))
    x.set_data(nd.zeros((4,)))  # e.g. a checkpoint loaded
    trainer._reset_kvstore()
    assert trainer._kvstore is None and not trainer._kv_initialized
    _backward_ones(x)
    trainer.step(1)
    for ctx in DEVICES:  # from the new weights, not the store's old copy (-0.4)
        assert_almost_equal(x.data(ctx), np.full(4, -0.2))


def test_allreduce_with_update_on_kvstore_false_sums_different_gradients():
    x = _two_device_param()
    trainer = gluon.Trainer([x], 'sgd', {'learning_rate': 1.0}, update_on_kvstore=False)
    _backward_ones(x, scale_by_device=True)  # grads 0 and 1
    trainer.allreduce_grads()
    for ctx in DEVICES:
        assert_almost_equal(x.grad(ctx), np.ones(4))
    trainer.update(1)
    for ctx in DEVICES:
        assert_almost_equal(x.data(ctx), np.full(4, -1.0))


def test_loading_parameters_sets_the_store_up_again_from_them(tmp_path):
    # the store holds the weights when it updates them: values loaded from a file must
    # replace them there too, not be overwritten by the next step's pull
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(1.0), ctx=DEVICES)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.0},
                            kvstore='device')
    for _ in range(2):
        for c in DEVICES:
            with autograd.record():
                loss = net(nd.ones((1, 3), ctx=c)).sum()
            loss.backward()
        trainer.step(2)
        if trainer._kv_initialized:
            net.weight.set_data(nd.full((2, 3), 5.0))
            net.save_parameters(str(tmp_path / 'w.params'))
            net.load_parameters(str(tmp_path / 'w.params'), ctx=DEVICES)
            assert not trainer._kv_initialized
    for c in DEVICES:  # (learning rate 0: the step returns what the store holds)
        assert_almost_equal(net.weight.data(c), np.full((2, 3), 5.0))
