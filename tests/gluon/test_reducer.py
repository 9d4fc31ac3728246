"""The gradient reducer with stores of one's own: a store registered with
``KVStoreBase.register`` that implements the public protocol (``pull_async``, and
``push_held``/``release``) gets the overlap of communication with backward, one that
does not works as a plain store, and both give the weights of the plain step."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon.reducer import pushpull_keys
from minigluon.kvstore import KVStoreBase
from minigluon.test_utils import assert_almost_equal

CTXS = [mx.cpu(0), mx.cpu(1)]


class _PlainStore(KVStoreBase):
    """A user's store with MXNet's API only: sums on the host, optionally updates."""

    def __init__(self):
        super().__init__(type(self).__name__.lower())
        self.values, self.updater, self.log = {}, None, []

    def init(self, key, value):
        for k, v in zip(*_lists(key, value)):
            self.values[k] = v[0].asnumpy() if isinstance(v, list) else v.asnumpy()

    def push(self, key, value, priority=0):
        self.log.append(('push', tuple(_lists(key, value)[0])))
        for k, v in zip(*_lists(key, value)):
            total = sum(a.asnumpy() for a in (v if isinstance(v, list) else [v]))
            if self.updater is None:
                self.values[k] = total
            else:
                weight = nd.array(self.values[k])
                self.updater(k, nd.array(total), weight)
                self.values[k] = weight.asnumpy()

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        for k, o in zip(*_lists(key, out)):
            for a in (o if isinstance(o, list) else [o]):
                a[:] = nd.array(self.values[k], ctx=a.context)

    def set_optimizer(self, optimizer):
        self.updater = mx.optimizer.get_updater(optimizer)


class _OverlappingStore(_PlainStore):
    """The same store, pulling on a thread of its own and holding updates until release."""

    def __init__(self):
        super().__init__()
        self._pool = ThreadPoolExecutor(1)
        self._held = []
        self._released = threading.Condition()
        self._pushed = self._applied = 0  # pushes made and applied

    def push(self, key, value, priority=0):
        with self._released:
            super().push(key, value, priority)
            self._pushed += 1
            self._applied = self._pushed

    def push_held(self, key, value, priority=0):
        self.log.append(('push_held', tuple(_lists(key, value)[0])))
        copies = [[a.copy() for a in v] for v in _lists(key, value)[1]]
        with self._released:
            self._held.append((_lists(key, value)[0], copies))
            self._pushed += 1

    def release(self):
        self.log.append(('release',))
        with self._released:
            held, self._held = self._held, []
            for keys, values in held:
                super().push(keys, values)
            self._applied = self._pushed
            self._released.notify_all()

    def pull_async(self, key, out, priority=0):
        """The value after every push made so far: a pull waits for their release."""
        self.log.append(('pull_async', tuple(_lists(key, out)[0])))
        with self._released:
            target = self._pushed
        return _Pending(self._pool.submit(self._pull_after, target, key, out))

    def _pull_after(self, target, key, out):
        with self._released:
            if not self._released.wait_for(lambda: self._applied >= target, timeout=30):
                raise AssertionError('the pushes before this pull were never released')
            self.pull(key, out)


class _Pending:
    def __init__(self, future):
        self._future = future

    def wait(self):
        self._future.result()


def _lists(key, value):
    if isinstance(key, (list, tuple)):
        return list(key), list(value)
    return [key], [value]


def _register(klass):
    return KVStoreBase.register(klass)


@pytest.fixture
def stores():
    plain, overlapping = _register(_PlainStore), _register(_OverlappingStore)
    yield plain, overlapping
    for name in ('_plainstore', '_overlappingstore'):
        del mx.kv.base._REGISTRY[name]


def _train(kvstore, steps=4, overlap=None, read=True):
    mx.random.seed(3)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(6, in_units=4, activation='tanh'), gluon.nn.Dense(2, in_units=6))
    net.initialize(mx.init.Xavier(), ctx=CTXS)
    store = mx.kv.create(kvstore)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1,
                                                           'momentum': 0.9},
                            kvstore=store, overlap=overlap)
    loss_fn = gluon.loss.L2Loss()
    pushed_in_backward = []
    for step in range(steps):
        rng = np.random.RandomState(step)
        x, y = nd.array(rng.normal(size=(8, 4))), nd.array(rng.normal(size=(8, 2)))
        before = len(store.log)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(gluon.utils.split_and_load(x, CTXS),
                                                         gluon.utils.split_and_load(y, CTXS))]
        autograd.backward(losses)
        pushed_in_backward.append(sum(e[0].startswith('push') for e in store.log[before:]))
        trainer.step(8)
    weights = [p.data(CTXS[1]).asnumpy() for p in net.collect_params().values()] if read else []
    return weights, pushed_in_backward, trainer, store


def test_a_users_store_that_implements_the_protocol_gets_overlap(stores):
    plain_weights, plain_pushed, plain_trainer, _ = _train('_plainstore')
    weights, pushed, trainer, store = _train('_overlappingstore')
    assert not mx.kv.create('_plainstore').overlaps and store.overlaps and store.holds_pushes
    assert not plain_trainer._reducer.overlap and plain_pushed == [0, 0, 0, 0]
    # from the second step on, backward pushes every gradient (held until the step)
    assert trainer._reducer.overlap and trainer._reducer.holds
    assert pushed[0] == 0 and all(n > 0 for n in pushed[1:])
    assert ('release',) in store.log and any(e[0] == 'pull_async' for e in store.log)
    for a, b in zip(weights, plain_weights):
        np.testing.assert_array_equal(a, b)


def test_overlap_asked_of_a_plain_store_runs_the_synchronous_defaults(stores):
    plain_weights, _, _, _ = _train('_plainstore')
    weights, pushed, trainer, _ = _train('_plainstore', overlap=True)
    assert trainer._reducer.overlap and not trainer._reducer.holds
    assert all(n > 0 for n in pushed[1:])
    for a, b in zip(weights, plain_weights):
        np.testing.assert_array_equal(a, b)


def test_a_parameter_waits_in_data_for_its_pulled_weights(stores):
    _, _, trainer, store = _train('_overlappingstore', steps=2, read=False)
    params = trainer._params
    # with update_on_kvstore the step returns before the new weights are here
    assert all(p._pending is not None for p in params)
    values = [p.data(CTXS[0]).asnumpy() for p in params]
    assert all(p._pending is None for p in params)
    for p, v in zip(params, values):
        np.testing.assert_array_equal(v, store.values[trainer._params.index(p)])


def test_pushpull_keys_calls_a_users_pushpull_once_per_key():
    class CountingStore(mx.kv.TestStore):
        calls = 0

        def pushpull(self, key, value, out=None, priority=0):
            CountingStore.calls += 1
            super().pushpull(key, value, out, priority)

    store = CountingStore()
    values = [[nd.full((2,), float(i + j), ctx=c) for j, c in enumerate(CTXS)]
              for i in range(3)]
    outs = [[nd.zeros((2,), ctx=c) for c in CTXS] for _ in range(3)]
    pushpull_keys(store, [0, 1, 2], values, outs)  # its own pushpull: one key a call
    assert CountingStore.calls == 3
    for i, per_device in enumerate(outs):
        for o in per_device:
            assert_almost_equal(o, np.full(2, 2.0 * i + 1))


def test_pushpull_keys_sends_key_lists_to_builtin_stores_at_once():
    store = mx.kv.create('device')
    store.init([0, 1], [nd.zeros((2,)), nd.zeros((3,))])
    grads = [[nd.ones((2,), ctx=c) for c in CTXS], [nd.full((3,), 2.0, ctx=c) for c in CTXS]]
    pushpull_keys(store, [0, 1], grads, grads)
    for g in grads[0]:
        assert_almost_equal(g, [2.0, 2.0])
    for g in grads[1]:
        assert_almost_equal(g, [4.0, 4.0, 4.0])
