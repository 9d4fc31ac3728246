"""Host ops split over threads by images: the same numbers as one thread to rounding (the
blocks of images differ in size, and the BLAS rounds a block's edge rows its own way;
weight gradients add the chunks' partial sums), the BLAS made
one-threaded at the first split, tasks run after those they wait for, and a forked child
starting afresh."""
import os
import threading
import time

import numpy as np
import pytest

from minigluon import autograd, nd
from minigluon.base import MXNetError
from minigluon.ndarray.ops import host_threads


def test_chunks_are_contiguous_and_nearly_equal():
    items = list(range(7))
    assert host_threads.chunks(items, 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert host_threads.chunks(items, 1) == [items]
    assert host_threads.chunks([1], 4) == [[1]]


def _conv_step(kernel, stride, pad, channels, size, batch):
    rng = np.random.RandomState(0)
    x = nd.array(rng.standard_normal((batch, channels, size, size)).astype(np.float32))
    w = nd.array(rng.standard_normal((channels, channels) + kernel).astype(np.float32) * 0.1)
    head = None
    for a in (x, w):
        a.attach_grad()
    with autograd.record():
        y = nd.Convolution(x, w, kernel=kernel, stride=stride, pad=pad, num_filter=channels,
                           no_bias=True)
        head = nd.array(rng.standard_normal(y.shape).astype(np.float32))
        loss = (y * head).sum()
    loss.backward()
    return y.asnumpy(), x.grad.asnumpy(), w.grad.asnumpy()


@pytest.mark.parametrize('kernel,stride,pad', [((3, 3), (1, 1), (1, 1)),  # Winograd
                                               ((3, 3), (2, 2), (1, 1)),  # im2col, col2im
                                               ((1, 1), (2, 2), (0, 0))], ids=str)
def test_two_threads_compute_what_one_does(threads, kernel, stride, pad):
    threads(1)
    one = _conv_step(kernel, stride, pad, 32, 10, 9)
    blas = threads(2)
    two = _conv_step(kernel, stride, pad, 32, 10, 9)
    assert host_threads.threads() == 2 and host_threads._state.lowered
    assert blas.get() == 1  # one-threaded from the first split on
    for a, b in zip(two, one):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6 * abs(b).max())


@pytest.mark.parametrize('count', [1, 2, 3])
def test_tasks_run_after_those_they_wait_for_lowest_priority_first(threads, count):
    blas = threads(count)
    order, lock = [], threading.Lock()

    def task(name):
        def run():
            time.sleep(0.001)
            with lock:
                order.append(name)
        return run
    # a diamond a -> (b, c) -> d, and e waiting for nothing but ranked last
    tasks = [(task('d'), [1, 2], 0), (task('b'), [3], 5), (task('c'), [3], 1),
             (task('a'), [], 9), (task('e'), [], 99)]
    host_threads.run_tasks(tasks)
    assert sorted(order) == ['a', 'b', 'c', 'd', 'e']
    for before, after in (('a', 'b'), ('a', 'c'), ('b', 'd'), ('c', 'd')):
        assert order.index(before) < order.index(after)
    if count == 1:  # one thread: by priority among the ready ones
        assert order == ['a', 'c', 'b', 'd', 'e']
    else:
        assert blas.get() == 1  # one-threaded, as for any split


def test_tasks_run_here_stay_on_the_calling_thread(threads):
    """For GPU work (CuPy's device and stream belong to the thread that set them)."""
    threads(2)
    seen = []
    tasks = [(lambda: seen.append(threading.current_thread()), [], 0) for _ in range(6)]
    host_threads.run_tasks(tasks, here=True)
    assert seen == [threading.current_thread()] * 6
    seen.clear()
    host_threads.run_tasks(tasks)
    assert len(seen) == 6 and len(set(seen)) >= 1


def test_a_task_error_is_raised_after_the_running_tasks_end(threads):
    threads(2)
    finished = []

    def slow():
        time.sleep(0.05)
        finished.append('slow')

    def fail():
        raise ValueError('task failed')
    tasks = [(slow, [], 0), (fail, [], 0), (lambda: finished.append('after'), [1], 0)]
    with pytest.raises(ValueError, match='task failed'):
        host_threads.run_tasks(tasks)
    assert finished == ['slow']  # the one waiting for the failed task never ran


@pytest.mark.parametrize('count', [1, 2])
def test_tasks_waiting_on_each_other_are_an_error_not_a_hang(threads, count):
    threads(count)
    tasks = [(lambda: None, [], 0), (lambda: None, [2], 0), (lambda: None, [1], 0)]
    with pytest.raises(MXNetError, match='cycle'):
        host_threads.run_tasks(tasks)


def test_a_chunk_that_splits_again_runs_on_its_thread(threads):
    threads(2)
    seen = host_threads.map_chunks(
        lambda chunk: host_threads.map_chunks(lambda inner: len(inner), [0, 1, 2]), [0, 1])
    assert seen == [[3], [3]]


def test_bad_thread_count_says_what_to_give(threads, monkeypatch):
    threads(1)
    monkeypatch.setenv(host_threads.VARIABLE, 'many')
    host_threads._reset()
    with pytest.raises(Exception, match='MINIGLUON_HOST_THREADS.*positive number'):
        host_threads.threads()


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')
def test_a_forked_child_splits_with_threads_of_its_own(threads):
    threads(2)
    host_threads.map_chunks(lambda chunk: None, [1, 2])  # the parent's pool exists
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a pool of its own, or this would wait forever
        try:
            result = host_threads.map_chunks(lambda chunk: sum(chunk), [1, 2, 3, 4])
            os.write(write, repr(result).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 100).decode() in ('[3, 7]', '[10]') and status == 0


def _batch_norm_and_pool_step():
    """BatchNorm then max pooling on channels-last memory, large enough to split:
    outputs, the data gradient, gamma's and beta's, and the moving statistics."""
    rng = np.random.RandomState(1)
    x = rng.standard_normal((8, 24, 24, 16)).astype(np.float32) * 3 + 5
    data = nd.array(x).transpose((0, 3, 1, 2))  # the memory order a convolution writes
    gamma, beta = nd.array(np.linspace(0.5, 1.5, 16)), nd.array(np.linspace(-1, 1, 16))
    moving_mean, moving_var = nd.zeros(16), nd.ones(16)
    for a in (data, gamma, beta):
        a.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(data, gamma, beta, moving_mean, moving_var, fix_gamma=False)
        z = nd.Pooling(y, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max')
        loss = (z * nd.array(rng.standard_normal(z.shape).astype(np.float32))).sum()
    loss.backward()
    return [a.asnumpy() for a in (y, z, data.grad, gamma.grad, beta.grad, moving_mean,
                                  moving_var)]


def test_batch_norm_and_pooling_split_as_one_thread_computes(threads):
    from minigluon.ndarray.ops import compiled
    if not compiled.enabled():
        pytest.skip('the split BatchNorm and pooling passes are the compiled kernels\'')
    threads(1)
    one = _batch_norm_and_pool_step()
    threads(2)
    calls = []
    real = host_threads.map_chunks
    host_threads.map_chunks = lambda fn, items: calls.append(len(items)) or real(fn, items)
    try:
        two = _batch_norm_and_pool_step()
    finally:
        host_threads.map_chunks = real
    assert calls and all(n == 2 for n in calls)  # every pass was split in two
    for a, b in zip(two, one):  # float64 per-channel sums added in another order
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * abs(b).max())


def test_relu_split_over_threads_is_relu(threads):
    """ReLU on the host runs its rows on the host threads: the same numbers, x's memory
    order kept (channels-last stays channels-last)."""
    rng = np.random.RandomState(4)
    x = nd.array(rng.standard_normal((6, 20, 30, 40)).astype(np.float32)).transpose(
        (0, 3, 1, 2))
    head = nd.array(rng.standard_normal(x.shape).astype(np.float32))
    results = []
    for n in (1, 2):
        threads(n)
        x.attach_grad()
        with autograd.record():
            y = nd.relu(x)
            loss = (y * head).sum()
        loss.backward()
        assert y.asnumpy().shape == x.shape
        results.append((y.asnumpy(), x.grad.asnumpy(), y._data.transpose(0, 2, 3, 1)
                        .flags.c_contiguous))
    (y1, g1, last1), (y2, g2, last2) = results
    np.testing.assert_array_equal(y2, y1)
    np.testing.assert_array_equal(g2, g1)
    np.testing.assert_array_equal(y1, np.maximum(x.asnumpy(), 0))
    assert last1 and last2


def test_residual_add_split_over_threads_is_numpys_add(threads):
    rng = np.random.RandomState(5)
    a = rng.standard_normal((8, 30, 30, 40)).astype(np.float32)
    b = rng.standard_normal(a.shape).astype(np.float32)
    for n in (1, 2):
        threads(n)
        calls = []
        real = host_threads.map_chunks
        host_threads.map_chunks = lambda fn, items: calls.append(len(items)) or real(fn, items)
        try:
            out = (nd.array(a) + nd.array(b)).asnumpy()
        finally:
            host_threads.map_chunks = real
        assert calls == [n]
        np.testing.assert_array_equal(out, a + b)
    np.testing.assert_array_equal((nd.array([1, 2]) + nd.array([[3], [4]])).asnumpy(),
                                  [[4, 5], [5, 6]])  # broadcasting keeps numpy's path


def _dense_step(rows, units, hidden):
    rng = np.random.RandomState(2)
    x = nd.array(rng.standard_normal((rows, units)).astype(np.float32))
    w = nd.array(rng.standard_normal((hidden, units)).astype(np.float32))
    b = nd.array(rng.standard_normal(hidden).astype(np.float32))
    for a in (x, w, b):
        a.attach_grad()
    with autograd.record():
        y = nd.FullyConnected(x, w, b, num_hidden=hidden)
        loss = (y * nd.array(rng.standard_normal(y.shape).astype(np.float32))).sum()
    loss.backward()
    return y.asnumpy(), x.grad.asnumpy(), w.grad.asnumpy(), b.grad.asnumpy()


def _count_runs(monkeypatch):
    """How many runs each call of ``each_run`` splits into, from here on."""
    runs = []
    each_run = host_threads.each_run

    def counted(fn, rows, elements):
        runs.append(len(host_threads.row_runs(rows, elements)))
        return each_run(fn, rows, elements)
    monkeypatch.setattr(host_threads, 'each_run', counted)
    return runs


def test_a_dense_layer_splits_its_rows_once_the_blas_is_one_threaded(threads, monkeypatch):
    threads(1)
    one = _dense_step(600, 300, 400)
    blas = threads(2)
    host_threads.map_chunks(lambda chunk: None, [1, 2])  # an earlier split
    calls = _count_runs(monkeypatch)
    two = _dense_step(600, 300, 400)
    assert blas.get() == 1 and calls == [2, 2, 2]  # forward, data and weight gradients
    for a, b in zip(two, one):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * abs(b).max())


def _log_softmax_step(shape, axis):
    rng = np.random.RandomState(4)
    x = nd.array(rng.standard_normal(shape).astype(np.float32) * 4)
    x.attach_grad()
    with autograd.record():
        y = nd.log_softmax(x, axis=axis)
        loss = (y * nd.array(rng.standard_normal(shape).astype(np.float32))).sum()
    loss.backward()
    return y.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize('shape,axis', [((300, 500), -1), ((3, 100, 700), 2), ((300, 500), 0)])
def test_log_softmax_split_by_rows_is_one_threads(threads, monkeypatch, shape, axis):
    """A language model's decoder outputs: rows go to the threads when the reduction is
    along the last axis (the same numbers, bit for bit); along another axis, one call."""
    threads(1)
    one = _log_softmax_step(shape, axis)
    threads(2)
    runs = _count_runs(monkeypatch)
    two = _log_softmax_step(shape, axis)
    assert runs == ([] if axis == 0 else [2, 2])  # forward and backward
    for a, b in zip(two, one):
        np.testing.assert_array_equal(a, b)
