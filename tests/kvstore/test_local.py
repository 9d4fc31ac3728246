"""The in-process kvstores ('local', 'device'), following the seed tutorial."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import kv, nd
from minigluon.base import MXNetError
from minigluon.kvstore import compression
from minigluon.test_utils import assert_almost_equal

DEVICES = [mx.cpu(0), mx.cpu(1)]


@pytest.mark.parametrize('kind', ['local', 'device'])
def test_tutorial_push_pull_on_two_devices(kind):
    store = kv.create(kind)
    assert store.type == kind and store.rank == 0 and store.num_workers == 1
    shape = (2, 3)
    x = nd.random_uniform(shape=shape)
    store.init('weight', x)
    y = [nd.zeros(shape, ctx=c) for c in DEVICES]
    store.pull('weight', out=y)
    for arr, c in zip(y, DEVICES):
        assert arr.context == c
        assert_almost_equal(arr, x)
    z = [nd.ones(shape, ctx=DEVICES[i]) + i for i in range(2)]
    store.push('weight', z)
    store.pull('weight', out=y)
    for arr in y:
        assert_almost_equal(arr, np.full(shape, 3.0))


def test_int_keys_lists_and_pushpull():
    store = kv.create('local')
    store.init([3, 5], [nd.ones((2,)), nd.zeros((3,))])
    store.push([3, 5], [[nd.ones((2,)), nd.ones((2,))], nd.full((3,), 4.0)])
    outs = [nd.zeros((2,)), nd.zeros((3,))]
    store.pull([3, 5], out=outs)
    assert_almost_equal(outs[0], [2.0, 2.0])
    assert_almost_equal(outs[1], [4.0, 4.0, 4.0])
    vals = [nd.full((2,), 1.5, ctx=c) for c in DEVICES]
    store.pushpull(3, vals)
    for v in vals:
        assert_almost_equal(v, [3.0, 3.0])


def test_broadcast():
    store = kv.create('device')
    outs = [nd.zeros((2, 2), ctx=c) for c in DEVICES]
    store.broadcast('w', nd.full((2, 2), 7.0), out=outs)
    for o in outs:
        assert_almost_equal(o, np.full((2, 2), 7.0))


def test_set_optimizer_updates_on_push():
    store = kv.create('local')
    store.init(0, nd.ones((3,)))
    store.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    store.push(0, [nd.ones((3,), ctx=c) for c in DEVICES])  # summed grad = 2
    out = nd.zeros((3,))
    store.pull(0, out=out)
    assert_almost_equal(out, np.full(3, 1 - 0.1 * 2))


def test_optimizer_states_save_load(tmp_path):
    def make():
        store = kv.create('local')
        store.init('w', nd.ones((4,)))
        store.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
        return store

    grads = [nd.array(np.random.RandomState(i).normal(size=4)) for i in range(6)]
    a = make()
    for g in grads:
        a.push('w', g)
    b = make()
    for g in grads[:3]:
        b.push('w', g)
    path = str(tmp_path / 'states.bin')
    b.save_optimizer_states(path)
    c = make()
    c.load_optimizer_states(path)
    # c restarts from b's weights: copy them over, then continue identically
    w = nd.zeros((4,))
    b.pull('w', out=w)
    c._store['w']._data[...] = w._data
    for g in grads[3:]:
        c.push('w', g)
    wa, wc = nd.zeros((4,)), nd.zeros((4,))
    a.pull('w', out=wa)
    c.pull('w', out=wc)
    assert np.array_equal(wa.asnumpy(), wc.asnumpy())


def test_errors_name_the_problem():
    store = kv.create('local')
    with pytest.raises(MXNetError, match='not been initialised'):
        store.push('x', nd.ones((1,)))
    store.init('x', nd.ones((2,)))
    with pytest.raises(MXNetError, match='already initialised'):
        store.init('x', nd.ones((2,)))
    with pytest.raises(MXNetError, match=r'shape \(3,\).*\(2,\)'):
        store.push('x', nd.ones((3,)))
    with pytest.raises(MXNetError, match='int or str'):
        store.init(1.5, nd.ones((1,)))
    with pytest.raises(MXNetError, match='unknown kvstore type'):
        kv.create('nonsense')
    with pytest.raises(MXNetError, match="'device'"):
        store.set_gradient_compression({'type': '2bit', 'threshold': 0.5})


def test_two_bit_codec_round_trip():
    rng = np.random.RandomState(0)
    grad = rng.normal(size=37).astype(np.float32)
    residual = np.zeros(37, np.float32)
    packed = compression.quantize_2bit(np, grad, residual, 0.5)
    assert packed.dtype == np.uint32 and packed.size == 3  # 16 values per word
    values = compression.dequantize_2bit(np, packed, 37, 0.5)
    expected = np.where(grad >= 0.5, 0.5, np.where(grad <= -0.5, -0.5, 0.0))
    assert np.array_equal(values, expected)
    assert_almost_equal(residual, grad - expected)


def test_device_store_with_two_bit_compression_and_error_feedback():
    store = kv.create('device')
    store.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    store.init('g', nd.zeros((4,)))
    out = nd.zeros((4,))
    pushes = [[0.3, 0.6, -0.7, 0.1], [0.3, 0.1, -0.2, 0.1]]
    expected_rounds = [[0.0, 0.5, -0.5, 0.0], [0.5, 0.0, 0.0, 0.0]]  # residual carries over
    for values, expected in zip(pushes, expected_rounds):
        store.push('g', nd.array(values))
        store.pull('g', out=out)
        assert_almost_equal(out, expected)
    with pytest.raises(MXNetError, match="'2bit'"):
        store.set_gradient_compression({'type': '1bit'})


def test_set_optimizer_again_keeps_states():
    """A new rescale_grad (e.g. a smaller last batch) must not reset Adam's moments."""
    def run(resend):
        store = kv.create('local')
        store.init(0, nd.ones((2,)))
        opt = mx.optimizer.Adam(learning_rate=0.1)
        store.set_optimizer(opt)
        for step in range(4):
            if resend:
                store.set_optimizer(opt)
            store.push(0, nd.array([0.5, -1.0]))
        out = nd.zeros((2,))
        store.pull(0, out=out)
        return out.asnumpy()
    assert np.array_equal(run(False), run(True))


def test_allreduce_sums_devices_in_one_process():
    store = kv.create('device')
    vals = [nd.full((2,), float(i + 1), ctx=c) for i, c in enumerate(DEVICES)]
    store.allreduce('stats', vals)
    for v in vals:
        assert_almost_equal(v, [3.0, 3.0])
    out = nd.zeros((2,))
    store.allreduce('stats', nd.array([4.0, 5.0]), out=out, average=True)
    assert_almost_equal(out, [4.0, 5.0])  # one worker: the average is the value itself


@pytest.mark.parametrize('kind,merge_on_device', [('local_update_cpu', False),
                                                  ('local_allreduce_cpu', False),
                                                  ('local_allreduce_device', True),
                                                  ('Device', True)])
def test_mxnet_type_names(kind, merge_on_device):
    store = kv.create(kind)
    assert store.type == kind.lower()
    store.init('w', nd.zeros((2,), ctx=DEVICES[1]))
    assert store._store['w'].context == (DEVICES[1] if merge_on_device else mx.cpu(0))


def test_create_refuses_a_non_string_with_type_error():
    with pytest.raises(TypeError, match='string'):
        kv.create(3)


def test_is_capable():
    assert kv.create('local').is_capable(kv.KVStoreBase.OPTIMIZER)
    assert not kv.create('teststore').is_capable('optimizer')
    with pytest.raises(ValueError, match='capability'):
        kv.create('local').is_capable('telepathy')


def test_a_user_store_registers_by_its_class_name():
    @kv.KVStoreBase.register
    class CountingStore(kv.TestStore):
        pass

    try:
        assert type(kv.create('countingstore')) is CountingStore
        assert type(kv.create('CountingStore')) is CountingStore  # names ignore case
    finally:
        del kv.base._REGISTRY['countingstore']


def test_teststore_broadcasts_and_sums():
    store = kv.create('teststore')
    outs = [nd.zeros((2,), ctx=c) for c in DEVICES]
    store.broadcast('w', nd.array([1.0, 2.0]), out=outs)
    for o in outs:
        assert_almost_equal(o, [1.0, 2.0])
    store.pushpull('w', outs)
    for o in outs:
        assert_almost_equal(o, [2.0, 4.0])
    with pytest.raises(NotImplementedError):
        store.set_optimizer(mx.optimizer.SGD())
