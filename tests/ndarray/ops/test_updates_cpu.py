"""SGD with momentum by its compiled CPU kernel against numpy's path: weights and
momenta bit for bit (the same float32 steps in the same order), with and without
gradient clipping, on one host thread and split over two; arrays the kernel does not
take (strided, mixed dtypes) keep numpy's path."""
import numpy as np
import pytest

from minigluon.ndarray.ops import compiled, host_threads, updates

pytest.importorskip('numba', reason='the compiled kernels need numba: '
                    '`pip install numba` (a dependency of minigluon)')


def _step(mode, arrays, clip, monkeypatch, view=lambda a: a):
    """The weight and momentum after one step on copies of ``arrays`` (each seen
    through ``view``)."""
    monkeypatch.setenv(compiled.VARIABLE, mode)
    compiled.reset()
    try:
        w, g, m = (view(a.copy()) for a in arrays)
        updates.sgd_step(np, w, g, m, 0.1, 1e-4, 0.9, 1 / 64, clip)
        return w, m
    finally:
        compiled.reset()


@pytest.mark.parametrize('threads', [1, 2])
@pytest.mark.parametrize('clip', [-1.0, 0.01], ids=['no-clip', 'clip'])
@pytest.mark.parametrize('dtype', [np.float32, np.float64], ids=['float32', 'float64'])
def test_sgd_kernel_leaves_numpys_weights_bit_for_bit(dtype, clip, threads, monkeypatch):
    monkeypatch.setenv(host_threads.VARIABLE, str(threads))
    monkeypatch.setattr(host_threads, 'SPLIT_ELEMENTS', 1 << 12)  # this small array too
    host_threads._reset()
    blas = host_threads._Blas.find()
    before = blas.get() if blas is not None else None
    try:
        rng = np.random.RandomState(0)
        arrays = [rng.standard_normal((300, 301)).astype(dtype) for _ in range(3)]
        arrays[1][0, :5] = [np.nan, np.inf, -np.inf, 1e30, -1e30]
        calls = []
        real = host_threads.map_chunks
        monkeypatch.setattr(host_threads, 'map_chunks',
                            lambda fn, items: calls.append(len(items)) or real(fn, items))
        fast = _step('numba', arrays, clip, monkeypatch)
        exact = _step('numpy', arrays, clip, monkeypatch)
    finally:
        host_threads._reset()
        if blas is not None:
            blas.set(before)
    assert calls == [threads]  # the kernel ran, split as many ways as threads
    for a, b in zip(fast, exact):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)


def test_arrays_the_kernel_does_not_take_keep_numpys_path(monkeypatch):
    rng = np.random.RandomState(1)
    arrays = [rng.standard_normal((40, 30)).astype(np.float32) for _ in range(3)]

    def strided(a):
        assert not a[:, ::2].flags.c_contiguous
        return a[:, ::2]
    fast = _step('numba', arrays, -1.0, monkeypatch, strided)
    exact = _step('numpy', arrays, -1.0, monkeypatch, strided)
    for a, b in zip(fast, exact):
        np.testing.assert_array_equal(a, b)
    mixed = [arrays[0], arrays[1].astype(np.float64), arrays[2]]
    np.testing.assert_array_equal(_step('numba', mixed, -1.0, monkeypatch)[0],
                                  _step('numpy', mixed, -1.0, monkeypatch)[0])
