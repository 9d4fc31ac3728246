"""Fixtures of the op tests."""
import pytest

from minigluon.ndarray.ops import host_threads


@pytest.fixture
def threads(monkeypatch):
    """``set(n)``: host ops split over ``n`` threads from here on, arrays of 4096
    elements and up (so that tests split small arrays); the BLAS's thread count is
    restored afterwards."""
    monkeypatch.setattr(host_threads, 'SPLIT_ELEMENTS', 1 << 12)
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
