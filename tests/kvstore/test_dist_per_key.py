"""Keys pushed and pulled one at a time (the loop of MXNet's kvstore tutorial): pushes
waiting for the I/O thread leave merged, pulls read the values of the other keys ahead,
and the results are those of one key per message. Nodes are threads of this process."""
import threading

import numpy as np
import pytest

from minigluon import nd
from minigluon.base import MXNetError

from .inproc_cluster import InprocJob

SHAPES = [(3,), (4, 5), (2000,), (7,), (1,)]


def _blocked_io(store):
    """Hold the worker's I/O thread until the returned event is set."""
    go = threading.Event()
    store._node.van.call_soon(lambda: go.wait(10))
    return go


def test_pushes_queued_for_one_server_leave_as_one_message_with_right_sums():
    def worker(store):
        keys = list(range(len(SHAPES)))
        outs = [nd.zeros(s) for s in SHAPES]
        store.init(keys, outs)
        go = _blocked_io(store)
        before = store._customer.messages_sent
        for k in keys:
            store.push(k, nd.ones(SHAPES[k]) * (store.rank + 1) * (k + 1))
        go.set()
        store.barrier()  # (its own message: one)
        sent = store._customer.messages_sent - before
        for k in keys:
            store.pull(k, out=outs[k])
        return sent, [o.asnumpy() for o in outs]

    with InprocJob(num_workers=2, num_servers=1) as job:
        results = job.run(worker)
    for sent, values in results:
        assert sent == 2, sent  # five pushes in one message, then the barrier
        for k, value in enumerate(values):
            np.testing.assert_array_equal(value, np.full(SHAPES[k], 3.0 * (k + 1), np.float32))


def test_merged_pushes_keep_their_numbers_and_the_caller_may_change_its_arrays():
    def worker(store):
        store.init('w', nd.zeros((4,)))
        out = nd.zeros((4,))
        value = nd.ones((4,))
        go = _blocked_io(store)
        for _ in range(3):  # three rounds of one key in one message
            store.push('w', value)
            value[:] = 100.0  # (pushed already: changes nothing sent)
            value[:] = 1.0
        go.set()
        store.pull('w', out=out)
        return store.num_pushes('w'), out.asnumpy()

    with InprocJob(num_workers=2, num_servers=1) as job:
        for pushes, value in job.run(worker):
            assert pushes == 3
            np.testing.assert_array_equal(value, np.full(4, 2.0, np.float32))


def test_per_key_rounds_read_ahead_and_match_list_rounds():
    def worker(store):
        keys = list(range(len(SHAPES)))
        outs = [nd.zeros(s) for s in SHAPES]
        store.init(keys, outs)
        rounds = []
        for r in range(3):
            for k in keys:
                store.push(k, nd.ones(SHAPES[k]) * (store.rank + 1) * (r + 1))
            for k in keys:
                store.pull(k, out=outs[k])
            rounds.append([o.asnumpy().copy() for o in outs])
        return rounds

    with InprocJob(num_workers=2, num_servers=2, bigarray_bound=1000) as job:
        results = job.run(worker)  # (key 2 is cut over both servers)
    for rounds in results:
        for r, values in enumerate(rounds):
            for k, value in enumerate(values):
                np.testing.assert_array_equal(value, np.full(SHAPES[k], 3.0 * (r + 1)))


def test_a_push_after_the_read_ahead_is_not_answered_with_the_value_read_ahead():
    def worker(store):
        store.init([0, 1], [nd.zeros((2,)), nd.zeros((2,))])
        out = nd.zeros((2,))
        store.push(0, nd.ones((2,)))
        store.push(1, nd.ones((2,)))
        store.pull(0, out=out)        # reads key 1 ahead (its value after round 1)
        store.push(1, nd.ones((2,)) * 10)
        store.pull(1, out=out)        # after round 2
        return out.asnumpy()

    with InprocJob(num_workers=2, num_servers=1) as job:
        for value in job.run(worker):
            np.testing.assert_array_equal(value, [20.0, 20.0])


def test_a_pull_never_waits_for_a_value_read_ahead():
    # worker 0's pull of 'j' reads 'k' ahead, whose round needs worker 1's push of 'k',
    # which comes only after worker 1 got 'm', which worker 0 pushes after its pull
    def worker(store):
        out = nd.zeros((2,))
        store.init(['j', 'k', 'm'], [nd.zeros((2,))] * 3)
        if store.rank == 0:
            store.push('j', nd.ones((2,)))
            store.push('k', nd.ones((2,)))
            store.pull('j', out=out)
            store.push('m', nd.ones((2,)))
        else:
            store.push('j', nd.ones((2,)))
            store.push('m', nd.ones((2,)))
            store.pull('m', out=out)
            store.push('k', nd.ones((2,)))
        store.pull('k', out=out)
        return out.asnumpy()

    with InprocJob(num_workers=2, num_servers=1) as job:
        for value in job.run(worker, timeout=30):
            np.testing.assert_array_equal(value, [2.0, 2.0])


def test_an_error_for_merged_pushes_is_raised_once():
    def worker(store):
        store.init([0, 1], [nd.zeros((2,)), nd.zeros((2,))])
        go = _blocked_io(store)
        store.push(0, nd.ones((2,)))
        store.push(1, nd.ones((2,)))
        go.set()
        with pytest.raises(MXNetError) as caught:
            store.barrier()
        return str(caught.value)

    with InprocJob(num_workers=1, num_servers=1) as job:
        message, = job.run(worker, kind='dist_async')  # (no optimizer: every push refused)
    assert message.count('needs an optimizer') == 1, message
