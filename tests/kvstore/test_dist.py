"""The distributed store's sums, optimizers and modes, with the scheduler, the servers
and the workers as threads of this process (inproc_cluster.py); one job of real
processes over ZeroMQ proves the same end to end."""
import threading

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

from .inproc_cluster import InprocJob

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

SMALL_PARTS = {'bigarray_bound': 1000, 'chunk_bytes': 4096}


def sums(store):
    r = store.rank
    store.init('small', nd.zeros((2, 3)))
    store.init(7, nd.zeros((3000,)))                  # above the bound: sliced over servers
    store.init('half', nd.zeros((4,), dtype='float16'))
    out = []
    for rnd in range(3):
        store.push('small', nd.ones((2, 3)) * (r + 1) * (rnd + 1))
        store.push(7, nd.arange(3000) * (r + 1))
        store.push('half', nd.ones((4,), dtype='float16') * (r + 1))
        small, big, half = nd.zeros((2, 3)), nd.zeros((3000,)), nd.zeros((4,), dtype='float16')
        store.pull(['small', 7, 'half'], out=[small, big, half])
        out.append([small.asnumpy(), big.asnumpy()[[0, 1, 2999]], half.asnumpy()])
    return store.rank, store.num_workers, out


def check_sums(results, workers):
    total = sum(range(1, workers + 1))
    for w, (rank, n, out) in enumerate(results):
        assert rank == w and n == workers
        for rnd, (small, big, half) in enumerate(out):
            assert np.array_equal(small, np.full((2, 3), total * (rnd + 1.0)))
            assert big.tolist() == [0.0, total, 2999.0 * total]
            assert half.tolist() == [total] * 4 and half.dtype == np.float16


def test_three_workers_two_servers_exact_sums():
    with InprocJob(num_workers=3, num_servers=2, **SMALL_PARTS) as job:
        check_sums(job.run(sums), 3)
        assert job.wait() == {'scheduler': 0, 'server:0': 0, 'server:1': 0}


def optimizer_steps(store):
    r = store.rank
    store.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.5, wd=0.01))
    store.init('w', nd.ones((5,)))
    store.init('big', nd.ones((2500,)))
    history = []
    for _ in range(4):
        store.push('w', nd.ones((5,)) * (r + 1))
        store.push('big', nd.ones((2500,)) * (r + 1))
        w, big = nd.zeros((5,)), nd.zeros((2500,))
        store.pull('w', out=w)
        store.pull('big', out=big)
        history.append([w.asnumpy()[0].item(), big.asnumpy()[[0, 2499]].tolist()])
    return history


def test_sgd_on_servers_gives_exact_weights():
    with InprocJob(num_workers=3, num_servers=2, bigarray_bound=1000) as job:
        histories = job.run(optimizer_steps)
    w, mom, expected = 1.0, 0.0, []
    for _ in range(4):
        grad = 1 + 2 + 3
        mom = 0.5 * mom - 0.1 * (grad + 0.01 * w)
        w += mom
        expected.append(w)
    for history in histories:
        np.testing.assert_allclose([h[0] for h in history], expected, rtol=1e-6)
        for h, e in zip(history, expected):
            np.testing.assert_allclose(h[1], [e, e], rtol=1e-6)


def compressed(store):
    store.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    store.init('g', nd.zeros((20,)))
    rounds = []
    values = nd.array([0.3, 0.6, -0.7, 0.1, 2.0] * 4) * (store.rank + 1)
    for _ in range(2):
        store.push('g', values)
        out = nd.zeros((20,))
        store.pull('g', out=out)
        rounds.append(out.asnumpy())
    return rounds


def _two_bit_reference(grads, threshold, rounds):
    residual = [np.zeros_like(g) for g in grads]
    totals = []
    for _ in range(rounds):
        total = np.zeros_like(grads[0])
        for i, g in enumerate(grads):
            residual[i] += g
            q = np.where(residual[i] >= threshold, threshold,
                         np.where(residual[i] <= -threshold, -threshold, 0.0))
            residual[i] -= q
            total += q
        totals.append(total)
    return totals


def test_two_bit_compression_gives_the_quantised_sums():
    with InprocJob(num_workers=2, num_servers=2) as job:
        got = job.run(compressed)
    base = np.array([0.3, 0.6, -0.7, 0.1, 2.0] * 4, dtype=np.float32)
    expected = _two_bit_reference([base * 1, base * 2], 0.5, 2)
    for rounds in got:
        for g, e in zip(rounds, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6)


def async_pushes(store):
    store.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    store.init('w', nd.zeros((3,)))
    for _ in range(5):
        store.push('w', nd.ones((3,)) * (store.rank + 1))
    store.barrier()          # every push has been applied once all workers get here
    out = nd.zeros((3,))
    store.pull('w', out=out)
    return out.asnumpy().tolist()


def test_dist_async_reaches_the_exact_final_value():
    with InprocJob(num_workers=3) as job:
        assert job.run(async_pushes, kind='dist_async') == [[-30.0] * 3] * 3  # -(1+2+3)*5


def async_without_optimizer(store):
    store.init('w', nd.zeros((3,)))
    store.push('w', nd.ones((3,)))
    with pytest.raises(MXNetError, match='needs an optimizer'):
        store.pull('w', out=nd.zeros((3,)))
        store.barrier()


def test_dist_async_without_optimizer_is_a_clear_error():
    with InprocJob(num_workers=1) as job:
        job.run(async_without_optimizer, kind='dist_async')


def late_optimizer(store, pushed):
    """MXNet's tutorial pattern in dist_async: every worker sets the optimizer, then
    pushes. Worker 0's optimizer is held back until worker 1's push has been answered
    (or for 1 s, once worker 1's set_optimizer waits for it)."""
    store.init('w', nd.zeros((3,)))
    early = store.rank == 0 and pushed.wait(1.0)   # (worker 1 pushed without an optimizer)
    store.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    store.push('w', nd.ones((3,)))
    store.pull('w', out=nd.zeros((3,)))   # (answered after the push)
    if store.rank == 1:
        pushed.set()
    store.barrier()
    out = nd.zeros((3,))
    store.pull('w', out=out)
    return early, out.asnumpy().tolist()


def test_dist_async_set_optimizer_returns_once_every_server_holds_one():
    pushed = threading.Event()
    with InprocJob(num_workers=2, num_servers=2, bigarray_bound=2) as job:
        assert job.run(lambda store: late_optimizer(store, pushed), kind='dist_async') == \
            [(False, [-2.0] * 3)] * 2


def test_set_optimizer_waits_for_worker_0_within_the_wait_timeout():
    def never_from_worker_0(store):
        if store.rank == 1:
            with pytest.raises(MXNetError, match='server 0 got no optimizer from worker 0 '
                                                 'within 0.5 s'):
                store.set_optimizer(mx.optimizer.SGD())
        store.barrier()

    with InprocJob(num_workers=2) as job:
        job.run(never_from_worker_0, kind='dist_async', wait_timeout=0.5)


def tutorial(store):
    shape = (2, 3)
    ctx = [mx.cpu(0), mx.cpu(1)]
    store.init(3, nd.ones(shape) * 2)
    y = [nd.zeros(shape, ctx=c) for c in ctx]
    store.push(3, [nd.ones(shape, ctx=c) * (i + 1) for i, c in enumerate(ctx)])
    store.pull(3, out=y)
    return [a.asnumpy() for a in y]


@pytest.mark.parametrize('kind', ['dist', 'dist_sync_device'])
def test_tutorial_two_workers_pushing_one_and_two_pull_six(kind):
    with InprocJob(num_workers=2) as job:
        for arrays in job.run(tutorial, kind=kind):
            for arr in arrays:
                assert np.array_equal(arr, np.full((2, 3), 6.0))


def shape_clash(store):
    store.init('w', nd.zeros((2,) if store.rank == 0 else (3,)))


def test_same_key_with_another_shape_is_an_error_naming_both():
    with InprocJob(num_workers=2) as job:
        errors = job.start_workers(shape_clash).errors_by_rank()
    assert errors[0] is None
    assert isinstance(errors[1], MXNetError)
    assert '(3,)' in str(errors[1]) and '(2,)' in str(errors[1])


def test_launcher_index_decides_the_rank():
    with InprocJob(num_workers=3) as job:
        workers = job.start_workers(lambda store: store.rank, ranks=[2, 0, 1])
        assert workers.results() == [2, 0, 1]


def allreduce(store):
    r = store.rank
    store.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))   # must not touch allreduce keys
    store.init('w', nd.zeros((2,)))
    outs = []
    for step in range(2):
        stats = nd.array([r + 1.0, 10.0 * (r + 1) + step])
        store.allreduce('bn.running_mean', stats, average=True)
        outs.append(stats.asnumpy().tolist())
        store.push('w', nd.ones((2,)))
    store.barrier()                 # dist_async: every push applied before the pull
    w = nd.zeros((2,))
    store.pull('w', out=w)
    return outs, w.asnumpy().tolist()


@pytest.mark.parametrize('kind', ['dist_sync', 'dist_async'])
def test_allreduce_keys_are_summed_never_optimised(kind):
    with InprocJob(num_workers=2, num_servers=2) as job:
        for stats, w in job.run(allreduce, kind=kind):
            assert stats == [[1.5, 15.0], [1.5, 16.0]]
            assert w == [-4.0, -4.0]  # two SGD steps of lr 1 on a summed grad of 2


KEYS = ['k%d' % i for i in range(20)] + [7]          # 7 is sliced over both servers
SHAPES = [(i + 1, 3) for i in range(20)] + [(3000,)]


def batches(store):
    r = store.rank
    store.init(KEYS, [nd.zeros(s) for s in SHAPES])
    out = []
    for step in range(2):
        store.push(KEYS, [nd.ones(s) * (r + 1) * (step + 1) for s in SHAPES])   # one call
        outs = [nd.zeros(s) for s in SHAPES] + [nd.zeros((4, 3))]
        store.pull(KEYS + ['k3'], out=outs)             # a key twice in one call
        out.append([float(o.asnumpy().sum()) for o in outs])
    with pytest.raises(MXNetError, match="not been initialised.*'nope'"):
        store.pull(['k1', 'nope'], out=[nd.zeros((2, 3)), nd.zeros((1,))])
    return out


def test_small_parts_for_one_server_travel_in_one_message_and_sum_exactly(monkeypatch):
    received = []
    with InprocJob(num_workers=2, num_servers=2, **SMALL_PARTS) as job:
        for server in job.servers:
            handle = server._handlers['push']
            monkeypatch.setitem(server._handlers, 'push',
                                lambda msg, handle=handle: received.append(msg.src) or
                                handle(msg))
        for res in job.run(batches):
            for step in range(2):
                want = [3.0 * (step + 1) * (i + 1) * 3 for i in range(20)] + \
                    [3.0 * (step + 1) * 3000, 3.0 * (step + 1) * 4 * 3]
                assert res[step] == want
    # per step and server: one message for the small keys, at most two for the 4 KiB
    # parts of key 7 (24 messages per step without batches)
    assert 4 <= received.count('worker:0') <= 12, received




def test_a_server_refuses_keys_past_its_cap_and_goes_on_serving_the_others():
    # (each key part costs a server bookkeeping besides its values: a client creating
    # keys without end must get an error, not grow the server without bound)
    def worker(store):
        store.init(list(range(40)), [nd.ones((2,))] * 40)
        with pytest.raises(MXNetError, match='MINIGLUON_PS_MAX_KEYS=50'):
            store.init(list(range(40, 60)), [nd.ones((2,))] * 20)
        store.push(3, nd.ones((2,)) * 5)
        out = nd.zeros((2,))
        store.pull(3, out=out)
        return out.asnumpy()

    with InprocJob(num_workers=1, num_servers=1, max_keys=50) as job:
        [value] = job.run(worker)
    np.testing.assert_array_equal(value, [5.0, 5.0])
