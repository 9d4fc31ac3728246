"""Host ops split over threads by images: the same numbers as one thread to rounding (the
blocks of images differ in size, and the BLAS rounds a block's edge rows its own way;
weight gradients add the chunks' partial sums), the BLAS made
one-threaded at the first split and given its threads back inside ``blas_threads``,
and a forked child starting afresh."""
import os

import numpy as np
import pytest

from minigluon import autograd, nd
from minigluon.ndarray.ops import host_threads


@pytest.fixture
def threads(monkeypatch):
    """``set(n)``: host ops split over ``n`` threads from here on; the BLAS's thread count
    is restored afterwards."""
    blas = host_threads._Blas.find()
    before = blas.get() if blas is not None else None

    def set_threads(n):
        monkeypatch.setenv(host_threads.VARIABLE, str(n))
        host_threads._reset()
        if blas is None and n > 1:
            pytest.skip('numpy\'s BLAS is not an OpenBLAS whose threads can be set')
        return blas
    yield set_threads
    host_threads._reset()
    if blas is not None:
        blas.set(before)


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


def test_blas_threads_gives_the_threads_back_and_takes_them_again(threads):
    blas = threads(2)
    with host_threads.blas_threads():  # before any split: the BLAS is left as it was
        assert not host_threads._state.lowered
    host_threads.map_chunks(lambda chunk: None, [1, 2])
    assert blas.get() == 1
    with host_threads.blas_threads():
        with host_threads.blas_threads():
            assert blas.get() == 2
        assert blas.get() == 2
    assert blas.get() == 1


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
