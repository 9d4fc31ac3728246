"""DataLoader: batches from a data set, loaded in this process, in threads or in processes."""
import concurrent.futures
import numbers
import weakref

import numpy as np

from ... import backend, context, profiler
from ...base import MXNetError
from ...ndarray import NDArray
from ...ndarray import array as nd_array
from ...ndarray import stack as nd_stack
from .sampler import (LAST_BATCH_MODES, BatchSampler, DataArgumentError, RandomSampler,
                      SequentialSampler)
from .workers import WorkerPool

__all__ = ['DataLoader', 'default_batchify_fn', 'default_mp_batchify_fn']

_MAX_PREFETCH_PER_WORKER = 64  # keeps the pipes to each worker far from full


def default_batchify_fn(data):
    """Collate a list of samples into a batch, as Gluon does.

    NDArray samples are stacked into one NDArray; tuples are batched field by field
    into a list (``(data, label)`` samples give ``[data_batch, label_batch]``);
    numbers and numpy arrays become one NDArray of their numpy dtype.
    """
    first = data[0]
    if isinstance(first, NDArray):
        shapes = {d.shape for d in data if isinstance(d, NDArray)}
        if len(shapes) > 1:
            raise MXNetError('default_batchify_fn: samples have different shapes %s; make them '
                             'one shape with a transform (e.g. Resize or CenterCrop) or pass a '
                             'batchify_fn that pads' % sorted(shapes))
        return nd_stack(*data)
    if isinstance(first, tuple):
        if any(len(d) != len(first) for d in data):
            raise MXNetError('default_batchify_fn: samples are tuples of different lengths')
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    try:
        arr = np.asarray(data)
    except ValueError as exc:
        raise MXNetError('default_batchify_fn: cannot stack the samples (%s); make them one shape '
                         'with a transform or pass a batchify_fn' % exc) from None
    return nd_array(arr, dtype=arr.dtype)


# Workers run the same collation: their batches reach the main process through shared memory.
default_mp_batchify_fn = default_batchify_fn


def _pinned_empty(shape, dtype):
    """A page-locked host array when CuPy can allocate one, else an ordinary one."""
    pinned = backend.pinned_host_array(shape, dtype)
    return np.empty(shape, dtype) if pinned is None else pinned


def _pin(batch, device_id):
    """``batch`` with every NDArray copied to ``cpu_pinned(device_id)``, as Gluon does."""
    if isinstance(batch, NDArray):
        data = backend.to_host(batch.handle)
        out = _pinned_empty(data.shape, data.dtype)
        out[...] = data
        return NDArray(out, context.cpu_pinned(device_id))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_pin(b, device_id) for b in batch)
    if isinstance(batch, dict):
        return {k: _pin(v, device_id) for k, v in batch.items()}
    return batch


def _load_batch(dataset, batchify_fn, indices):
    return batchify_fn([dataset[i] for i in indices])


class DataLoader:
    """Loads batches from a data set, optionally in parallel.

    Parameters
    ----------
    dataset : Dataset
        Anything with ``__getitem__`` and ``__len__``.
    batch_size : int, optional
        Samples per batch; required unless ``batch_sampler`` is given.
    shuffle : bool, default False
        Shuffle the samples each epoch (numpy's global generator draws the order).
    sampler : Sampler, optional
        The order of the samples; excludes ``shuffle``.
    last_batch : {'keep', 'discard', 'rollover'}, default 'keep'
        What to do with a last batch shorter than ``batch_size`` (see BatchSampler).
    batch_sampler : Sampler, optional
        Yields lists of indices, one per batch; excludes ``batch_size``, ``shuffle``,
        ``sampler`` and ``last_batch``.
    batchify_fn : callable, optional
        Turns a list of samples into a batch; ``default_batchify_fn`` by default.
    num_workers : int, default 0
        Worker processes (threads with ``thread_pool=True``) loading batches; 0 loads
        in the main process. Workers start with each epoch's iterator and stop when it
        is exhausted, dropped or garbage collected. Batches arrive in sampler order.
    pin_memory : bool, default False
        Return NDArrays on ``cpu_pinned(pin_device_id)``, in page-locked memory when
        CuPy sees a GPU, for faster copies to it.
    pin_device_id : int, default 0
    prefetch : int, optional
        Batches requested ahead of the one being consumed; ``2 * num_workers`` by
        default.
    thread_pool : bool, default False
        Use threads instead of processes (no start-up cost; the GIL limits speed-up).
    timeout : float, default 120
        Seconds to wait for a batch from the workers before raising an error.
    auto_reload : bool, default False
        Start loading an epoch before it is asked for: the first one when the
        DataLoader is made, each next one as soon as an epoch's iterator is exhausted
        (see ``refresh`` and ``clean``).
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 auto_reload=False):
        self._dataset = dataset
        if not isinstance(timeout, numbers.Real) or timeout <= 0:
            raise DataArgumentError('timeout must be a positive number of seconds, got %r'
                                    % (timeout,))
        if batch_sampler is None:
            if batch_size is None:
                raise DataArgumentError('batch_size must be specified unless batch_sampler is '
                                        'specified')
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle \
                    else SequentialSampler(len(dataset))
            elif shuffle:
                raise DataArgumentError('shuffle must not be specified if sampler is specified')
            if last_batch is not None and last_batch not in LAST_BATCH_MODES:
                raise DataArgumentError("last_batch must be one of 'keep', 'discard' or "
                                        "'rollover', got %r" % (last_batch,))
            batch_sampler = BatchSampler(sampler, batch_size, last_batch or 'keep')
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise DataArgumentError('batch_size, shuffle, sampler and last_batch must not be '
                                    'specified if batch_sampler is specified.')
        if not isinstance(num_workers, numbers.Integral):
            raise DataArgumentError('num_workers must be an int, got %r' % (num_workers,))
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn or default_batchify_fn
        self._num_workers = max(0, int(num_workers))
        self._pin_memory = bool(pin_memory)
        self._pin_device_id = int(pin_device_id)
        self._thread_pool = bool(thread_pool)
        self._timeout = timeout
        prefetch = 2 * self._num_workers if prefetch is None else max(0, int(prefetch))
        self._prefetch = min(prefetch, _MAX_PREFETCH_PER_WORKER * max(self._num_workers, 1))
        self.auto_reload = bool(auto_reload)
        self._iter = None
        if self.auto_reload:
            self.refresh()

    def __len__(self):
        return len(self._batch_sampler)

    def __iter__(self):
        epoch = self._iter if self._iter is not None else self._new_epoch()
        self._iter = None  # a prefetched epoch serves one iterator
        return self._reloading(epoch) if self.auto_reload else epoch

    def _reloading(self, epoch):
        yield from epoch
        if self._iter is None:
            self.refresh()

    def refresh(self):
        """Start loading a new epoch now; the next ``iter()`` returns it."""
        self._iter = self._new_epoch()

    def clean(self):
        """Drop the epoch ``refresh`` started (its workers stop); loading starts again at
        the next ``iter()``."""
        self._iter = None

    def _new_epoch(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        if self._thread_pool:
            loader = _ThreadLoader(self._dataset, self._batchify_fn, self._num_workers)
        else:
            loader = WorkerPool(self._dataset, self._batchify_fn, self._num_workers)
        return _PrefetchingIter(loader, self._batch_sampler, self._prefetch, self._timeout,
                                self._pin_device_id if self._pin_memory else None)

    def _same_process_iter(self):
        for i, indices in enumerate(self._batch_sampler):
            start = profiler.now_if_recording()
            batch = _load_batch(self._dataset, self._batchify_fn, indices)
            if self._pin_memory:
                batch = _pin(batch, self._pin_device_id)
            if start is not None:
                profiler.record_range(start, 'data', 'DataLoader batch',
                                      {'batch': i, 'samples': len(indices)})
            yield batch


class _ThreadLoader:
    """Threads that load batches; the same interface as ``WorkerPool``."""

    def __init__(self, dataset, batchify_fn, num_workers):
        self._dataset, self._batchify_fn = dataset, batchify_fn
        self._executor = concurrent.futures.ThreadPoolExecutor(
            num_workers, thread_name_prefix='DataLoaderThread')
        self._futures = {}

    def submit(self, i, indices):
        self._futures[i] = self._executor.submit(_load_batch, self._dataset, self._batchify_fn,
                                                 indices)

    def get(self, i, timeout):
        try:
            return self._futures.pop(i).result(timeout)
        except concurrent.futures.TimeoutError:
            raise MXNetError('DataLoader timed out: batch %d did not arrive from the worker '
                             'threads within timeout=%g s. A transform may be very slow or '
                             'stuck; pass a larger DataLoader(timeout=...), or debug with '
                             'num_workers=0' % (i, timeout)) from None

    def shutdown(self):
        self._executor.shutdown(wait=False, cancel_futures=True)


class _PrefetchingIter:
    """Keeps ``prefetch`` batches requested ahead and returns them in sampler order.

    The loader (worker processes or threads) is shut down when the epoch ends, when a
    batch fails, and when this iterator is dropped or garbage collected (a finalizer
    also runs at interpreter exit).
    """

    def __init__(self, loader, batch_sampler, prefetch, timeout, pin_device_id):
        self._loader = loader
        self._shutdown = weakref.finalize(self, loader.shutdown)
        self._batches = iter(batch_sampler)
        self._timeout = timeout
        self._pin_device_id = pin_device_id
        self._sent = self._received = 0
        try:
            for _ in range(prefetch):
                self._push_next()
        except BaseException:
            self._shutdown()
            raise

    def _push_next(self):
        indices = next(self._batches, None)
        if indices is not None:
            self._loader.submit(self._sent, indices)
            self._sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        start = profiler.now_if_recording()
        try:
            self._push_next()
            if self._received == self._sent:
                self._shutdown()
                raise StopIteration
            batch = self._loader.get(self._received, self._timeout)
        except BaseException:  # StopIteration, a worker's error, Ctrl-C: stop the workers
            self._shutdown()
            raise
        self._received += 1
        if self._pin_device_id is not None:
            batch = _pin(batch, self._pin_device_id)
        if start is not None:  # the wait for a batch the workers prepared
            profiler.record_range(start, 'data', 'DataLoader batch',
                                  {'batch': self._received - 1})
        return batch

    @property
    def worker_pids(self):
        """Process ids of the workers (empty with threads)."""
        return list(getattr(self._loader, 'pids', []))
