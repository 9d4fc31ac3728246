"""DataLoader: Gluon's argument rules, identical batches with and without workers, worker
errors, timeouts, and no process or shared-memory block left behind."""
import gc
import multiprocessing
import os
import re
import signal
import sys
import time

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError
from minigluon.gluon.data import (ArrayDataset, BatchSampler, DataLoader, Dataset,
                                  SequentialSampler, SimpleDataset, default_batchify_fn)
from minigluon.gluon.data.vision import transforms

N = 37


def _images():
    rng = np.random.RandomState(0)
    return rng.randint(0, 256, size=(N, 8, 8, 3)).astype(np.uint8)


class ImageDataset(Dataset):
    """(HWC uint8 NDArray, int32 label) samples, like the vision data sets."""

    def __init__(self):
        self.images = _images()
        self.labels = (np.arange(N) % 5).astype(np.int32)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return nd.array(self.images[i], dtype='uint8'), self.labels[i]


class FailingDataset(ImageDataset):
    def __getitem__(self, i):
        if i == 13:
            raise ValueError('sample 13 is broken on purpose')
        return super().__getitem__(i)


class SlowDataset(ImageDataset):
    def __getitem__(self, i):
        if i >= 8:
            time.sleep(30)
        return super().__getitem__(i)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _shm_blocks():
    return {n for n in os.listdir('/dev/shm') if n.startswith('mg%x_' % os.getpid())} \
        if os.path.isdir('/dev/shm') else set()


@pytest.fixture
def no_leftovers():
    """Fails the test if a worker process or a shared-memory block outlives it."""
    before = _shm_blocks()
    pids = []
    yield pids
    gc.collect()
    assert multiprocessing.active_children() == []
    assert not [p for p in pids if _alive(p)]
    assert _shm_blocks() == before


def _same(a, b):
    """Batches ``a`` and ``b`` have the same structure, types, dtypes and values."""
    assert type(a) is type(b)
    if isinstance(a, nd.NDArray):
        assert a.dtype == b.dtype and a.context == b.context
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def _epoch(loader, no_leftovers=None):
    it = iter(loader)
    if no_leftovers is not None:
        no_leftovers.extend(getattr(it, 'worker_pids', []))
    return list(it)


# ---- argument rules ----------------------------------------------------------------------------
@pytest.mark.parametrize('kwargs, message', [
    ({}, 'batch_size must be specified unless batch_sampler is specified'),
    ({'batch_size': 2, 'shuffle': True, 'sampler': SequentialSampler(N)},
     'shuffle must not be specified if sampler is specified'),
    ({'batch_size': 2, 'batch_sampler': BatchSampler(SequentialSampler(N), 2)},
     'must not be specified if batch_sampler is specified'),
    ({'batch_sampler': BatchSampler(SequentialSampler(N), 2), 'last_batch': 'keep'},
     'must not be specified if batch_sampler is specified'),
    ({'batch_size': 2, 'last_batch': 'drop'}, "last_batch must be one of 'keep'"),
    ({'batch_size': 2, 'timeout': 0}, 'timeout must be a positive number'),
    ({'batch_size': 0}, 'batch_size must be an int >= 1'),
])
def test_argument_errors_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(ImageDataset(), **kwargs)


@pytest.mark.parametrize('last_batch, expected', [(None, 8), ('keep', 8), ('discard', 7)])
def test_len_counts_batches(last_batch, expected):
    assert len(DataLoader(ImageDataset(), batch_size=5, last_batch=last_batch)) == expected


# ---- batchify ----------------------------------------------------------------------------------
def test_default_batchify_stacks_data_and_labels_like_gluon():
    data, label = next(iter(DataLoader(ImageDataset(), batch_size=4)))
    assert data.shape == (4, 8, 8, 3) and data.dtype == np.uint8
    assert label.dtype == np.int32
    np.testing.assert_array_equal(data.asnumpy(), _images()[:4])
    np.testing.assert_array_equal(label.asnumpy(), [0, 1, 2, 3])
    ints = default_batchify_fn([1, 2, 3])
    assert ints.dtype == np.int64 and ints.asnumpy().tolist() == [1, 2, 3]
    floats = default_batchify_fn([(np.ones(2, np.float32), 0.5), (np.zeros(2, np.float32), 1.5)])
    assert floats[0].dtype == np.float32 and floats[0].shape == (2, 2)
    assert floats[1].dtype == np.float64


def test_default_batchify_explains_shape_mismatch():
    with pytest.raises(MXNetError, match='samples have different shapes'):
        default_batchify_fn([nd.zeros((2, 2)), nd.zeros((3, 2))])


# ---- identical batches with and without workers ------------------------------------------------
@pytest.mark.parametrize('last_batch', ['keep', 'discard', 'rollover'])
@pytest.mark.parametrize('shuffle', [False, True])
def test_workers_give_the_same_batches_as_the_main_process(last_batch, shuffle, no_leftovers):
    dataset = ImageDataset().transform_first(transforms.ToTensor())
    epochs = {}
    for workers in (0, 2):
        np.random.seed(42)
        loader = DataLoader(dataset, batch_size=5, shuffle=shuffle, last_batch=last_batch,
                            num_workers=workers)
        epochs[workers] = [_epoch(loader, no_leftovers) for _ in range(2)]
    for a, b in zip(epochs[0], epochs[2]):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    first = epochs[0][0]
    assert first[0][0].dtype == np.float32 and first[0][0].shape == (5, 3, 8, 8)
    sizes = [len(b[1]) for b in first]
    assert sizes == ([5] * 7 + [2] if last_batch == 'keep' else [5] * 7)
    if last_batch == 'rollover':
        assert len(epochs[0][1]) == 7  # 2 left over + 37 = 39 samples: 7 full batches
    order = np.concatenate([b[1].asnumpy() for b in first])
    assert (order.tolist() != (np.arange(len(order)) % 5).tolist()) == shuffle


def test_thread_pool_gives_the_same_batches(no_leftovers):
    dataset = ImageDataset()
    _same(_epoch(DataLoader(dataset, batch_size=6)),
          _epoch(DataLoader(dataset, batch_size=6, num_workers=3, thread_pool=True)))


def _structured_batch(samples):
    data = np.stack([s[0].asnumpy() for s in samples])
    return {'data': nd.array(data, dtype='uint8'), 'meta': (len(samples), 'ok', None, 1.5),
            'first_label': samples[0][1], 'raw': data[:, 0, 0, 0]}


def test_custom_batchify_structures_travel_through_shared_memory(no_leftovers):
    loader = DataLoader(ImageDataset(), batch_size=4, batchify_fn=_structured_batch,
                        num_workers=2)
    batches = _epoch(loader, no_leftovers)
    assert len(batches) == 10
    first = batches[0]
    assert first['meta'] == (4, 'ok', None, 1.5)
    assert isinstance(first['first_label'], np.int32) and first['first_label'] == 0
    assert isinstance(first['data'], nd.NDArray) and first['data'].context == mx.cpu(0)
    np.testing.assert_array_equal(first['data'].asnumpy(), _images()[:4])
    np.testing.assert_array_equal(first['raw'], _images()[:4, 0, 0, 0])
    assert batches[-1]['meta'][0] == 1


def _growing_batch(samples):
    """Batches whose byte size changes, so the ring of blocks must grow and shrink."""
    return np.full((int(samples[0]) % 7 + 1) * 1000, samples[0], dtype=np.float64)


def test_batches_of_changing_size_are_all_correct(no_leftovers):
    loader = DataLoader(SimpleDataset(list(range(40))), batch_size=1,
                        batchify_fn=_growing_batch, num_workers=2, prefetch=3)
    for i, batch in enumerate(_epoch(loader, no_leftovers)):
        assert batch.shape == ((i % 7 + 1) * 1000,) and (batch == i).all()


def test_many_epochs_over_a_large_data_set_match(no_leftovers):
    rng = np.random.RandomState(1)
    data = rng.normal(size=(3000, 3, 4, 4)).astype(np.float32)
    label = rng.randint(0, 10, size=3000).astype(np.int32)
    dataset = ArrayDataset(nd.array(data), label)
    np.random.seed(7)
    serial = [_epoch(DataLoader(dataset, batch_size=64, shuffle=True)) for _ in range(2)]
    np.random.seed(7)
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2, prefetch=8)
    parallel = [_epoch(loader, no_leftovers) for _ in range(2)]
    for a, b in zip(serial, parallel):
        _same(a, b)


# ---- workers: errors, clean-up, timeouts ------------------------------------------------------
def _failing_loop(no_leftovers):
    loader = DataLoader(FailingDataset(), batch_size=4, num_workers=2)
    it = iter(loader)
    no_leftovers.extend(it.worker_pids)
    for _ in it:
        pass


def test_worker_exception_reraises_in_main_with_the_worker_traceback(no_leftovers):
    with pytest.raises(ValueError) as info:
        _failing_loop(no_leftovers)
    text = str(info.value)
    assert 'sample 13 is broken on purpose' in text
    assert 'DataLoader worker' in text and 'Worker traceback' in text
    assert 'in __getitem__' in text and 'test_dataloader.py' in text


def test_batches_before_a_failing_one_are_delivered_first(no_leftovers):
    loader = DataLoader(FailingDataset(), batch_size=4, num_workers=2, prefetch=6)
    it = iter(loader)
    no_leftovers.extend(it.worker_pids)
    got = [next(it) for _ in range(3)]  # batch 3 holds sample 13
    assert [b[1].asnumpy()[0] for b in got] == [0, 4, 3]
    with pytest.raises(ValueError, match='broken on purpose'):
        next(it)


def test_break_leaves_no_worker_behind(no_leftovers):
    loader = DataLoader(ImageDataset(), batch_size=2, num_workers=2)
    for round_ in range(2):
        for i, batch in enumerate(loader):
            if i == 0:
                pids = list(multiprocessing.active_children())
                no_leftovers.extend(p.pid for p in pids)
                assert len(pids) == 2
            if i == 3:
                break
        assert multiprocessing.active_children() == []


def test_exception_in_the_loop_body_leaves_no_worker_behind(no_leftovers):
    loader = DataLoader(ImageDataset(), batch_size=2, num_workers=2)
    with pytest.raises(RuntimeError, match='user code failed'):
        for _ in loader:
            no_leftovers.extend(p.pid for p in multiprocessing.active_children())
            raise RuntimeError('user code failed')
    assert multiprocessing.active_children() == []


def test_garbage_collected_iterator_stops_its_workers(no_leftovers):
    loader = DataLoader(ImageDataset(), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    pids = it.worker_pids
    no_leftovers.extend(pids)
    assert all(_alive(p) for p in pids)
    del it
    gc.collect()
    assert not [p for p in pids if _alive(p)]


def test_timeout_raises_a_clear_error(no_leftovers):
    loader = DataLoader(SlowDataset(), batch_size=4, num_workers=2, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(MXNetError, match='timed out.*within timeout=0.5 s'):
        for _ in _iter_recording(loader, no_leftovers):
            pass
    assert time.monotonic() - start < 10


def _iter_recording(loader, no_leftovers):
    it = iter(loader)
    no_leftovers.extend(getattr(it, 'worker_pids', []))
    return it


def test_thread_pool_timeout_raises_the_same_error():
    loader = DataLoader(SimpleDataset([0, 1]), batch_size=1, num_workers=1, thread_pool=True,
                        timeout=0.1, batchify_fn=lambda s: time.sleep(0.3))
    with pytest.raises(MXNetError, match='within timeout=0.1 s'):
        list(loader)


def test_a_killed_worker_is_reported_not_waited_for(no_leftovers):
    loader = DataLoader(SlowDataset(), batch_size=4, num_workers=2, timeout=60)
    it = _iter_recording(loader, no_leftovers)
    next(it)
    next(it)
    os.kill(it.worker_pids[0], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(MXNetError, match='exited unexpectedly.*SIGKILL'):
        for _ in it:
            pass
    assert time.monotonic() - start < 10


def _exited(pid, timeout=10):
    """Wait until process ``pid`` is a zombie or gone: it has exited and its pipes are
    closed (it is not reaped here: it is multiprocessing's child)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open('/proc/%d/stat' % pid) as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                    return
        except OSError:
            return
        time.sleep(0.01)
    raise AssertionError('process %d did not exit' % pid)


@pytest.mark.skipif(not os.path.isdir('/proc'), reason='watches the workers in /proc')
def test_a_batch_for_a_worker_that_has_died_gets_the_same_clear_error(no_leftovers):
    # the next batch goes to a worker whose pipe is already closed: not a BrokenPipeError
    loader = DataLoader(SlowDataset(), batch_size=4, num_workers=2, timeout=60)
    it = _iter_recording(loader, no_leftovers)
    next(it)
    for pid in it.worker_pids:
        os.kill(pid, signal.SIGKILL)
    for pid in it.worker_pids:
        _exited(pid)
    with pytest.raises(MXNetError, match='exited unexpectedly.*SIGKILL'):
        next(it)


def test_workers_draw_different_random_augmentations(no_leftovers):
    dataset = SimpleDataset(list(range(8))).transform(lambda i: np.random.randint(1 << 30))
    draws = [b.asscalar() for b in _epoch(DataLoader(dataset, batch_size=1, num_workers=2),
                                          no_leftovers)]
    assert len(set(draws)) == 8


def test_pin_memory_returns_ndarrays_on_cpu_pinned(no_leftovers):
    for workers in (0, 2):
        data, label = _epoch(DataLoader(ImageDataset(), batch_size=4, pin_memory=True,
                                        num_workers=workers), no_leftovers)[0]
        assert data.context == mx.cpu_pinned(0) and label.context == mx.cpu_pinned(0)
        np.testing.assert_array_equal(data.asnumpy(), _images()[:4])


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='fork is the Linux default')
def test_spawned_workers_give_the_same_batches(monkeypatch, no_leftovers):
    monkeypatch.setenv('MINIGLUON_DATALOADER_START_METHOD', 'spawn')
    rng = np.random.RandomState(2)
    dataset = ArrayDataset(rng.normal(size=(40, 3)).astype(np.float32), np.arange(40))
    expected = _epoch(DataLoader(dataset, batch_size=8))
    _same(expected, _epoch(DataLoader(dataset, batch_size=8, num_workers=2), no_leftovers))


def _set_batch(samples):
    return set(samples)


def test_unsendable_batch_types_get_a_clear_error(no_leftovers):
    loader = DataLoader(SimpleDataset([1, 2]), batch_size=2, batchify_fn=_set_batch,
                        num_workers=1)
    with pytest.raises(MXNetError, match='cannot send a set back to the main process'):
        _epoch(loader, no_leftovers)


def test_empty_data_set_gives_no_batches(no_leftovers):
    assert _epoch(DataLoader(SimpleDataset([]), batch_size=2, num_workers=2), no_leftovers) == []


def test_indices_must_be_sendable_to_workers(no_leftovers):
    class ObjectSampler(BatchSampler):
        def __iter__(self):
            yield [object()]

    loader = DataLoader(SimpleDataset([1]), batch_sampler=ObjectSampler(SequentialSampler(1), 1),
                        num_workers=1)
    with pytest.raises(MXNetError, match='sends sample indices to its workers as JSON'):
        _epoch(loader, no_leftovers)


def test_auto_reload_prefetches_each_epoch_before_it_is_asked_for(no_leftovers):
    dataset = ArrayDataset(np.arange(10, dtype=np.float32))
    loader = DataLoader(dataset, batch_size=4, num_workers=2, auto_reload=True)
    workers = multiprocessing.active_children()  # started by the constructor
    no_leftovers.extend(p.pid for p in workers)
    assert len(workers) == 2
    expected = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    for _ in range(2):
        assert [b.asnumpy().tolist() for b in loader] == expected
        reloaded = multiprocessing.active_children()  # the next epoch is already loading
        no_leftovers.extend(p.pid for p in reloaded)
        assert len(reloaded) == 2
    loader.clean()
    gc.collect()
    assert multiprocessing.active_children() == []
    plain = DataLoader(dataset, batch_size=4, num_workers=2)
    assert multiprocessing.active_children() == []  # without auto_reload: on iter() only
    assert [b.asnumpy().tolist() for b in plain] == expected


def test_auto_reload_in_the_main_process_and_threads():
    dataset = ArrayDataset(np.arange(5, dtype=np.float32))
    for kwargs in ({}, {'num_workers': 2, 'thread_pool': True}):
        loader = DataLoader(dataset, batch_size=2, auto_reload=True, **kwargs)
        for _ in range(2):
            assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [2, 3], [4]]
        loader.clean()


def test_the_first_batches_blocks_become_the_ring(no_leftovers):
    # The first batches travel in one-off blocks (the ring's size is unknown until one
    # arrives); blocks of the ring's size join the ring, so an epoch of equal batches
    # maps no other block (new blocks would fault their pages in again).
    data = np.arange(48 * 2000, dtype=np.float32).reshape(48, 2000)
    loader = DataLoader(ArrayDataset(data), batch_size=4, num_workers=1, prefetch=3)
    seen, epoch = set(), iter(loader)
    no_leftovers.extend(epoch.worker_pids)
    for i, batch in enumerate(epoch):
        assert (batch.asnumpy() == data[4 * i:4 * i + 4]).all()
        seen |= _shm_blocks()
    assert i == 11 and 0 < len(seen) <= 4, seen
    assert all(re.match(r'mg[0-9a-f]+_[0-9a-f]+_s\d+$', name) for name in seen), seen


class ThreadsSeen(Dataset):
    """Each sample: how many threads the process that loads it splits host ops over, and
    its BLAS's thread count (-1 where it cannot be read)."""

    def __len__(self):
        return 4

    def __getitem__(self, idx):
        from minigluon.ndarray.ops import host_threads
        blas = host_threads._Blas.find()
        return np.array([host_threads.threads(), blas.get() if blas is not None else -1])


def test_workers_run_one_thread_each(no_leftovers, monkeypatch):
    """As PyTorch's: DataLoader workers share the cores with the training process, so
    each splits nothing and its BLAS runs one thread, whatever the parent has."""
    from minigluon.ndarray.ops import host_threads
    monkeypatch.setenv(host_threads.VARIABLE, '2')
    host_threads._reset()
    try:
        seen = np.concatenate([b.asnumpy() for b in DataLoader(ThreadsSeen(), batch_size=2,
                                                               num_workers=2)])
    finally:
        host_threads._reset()
    assert (seen[:, 0] == 1).all() and (seen[:, 1] <= 1).all(), seen
