"""Iterators over other iterators: ``ResizeIter`` (a fixed number of batches per epoch)
and ``PrefetchingIter`` (several iterators read ahead in background threads, merged)."""
import threading

from .data_iter import DataBatch, DataDesc, DataIter

__all__ = ['ResizeIter', 'PrefetchingIter']


class _CurrentBatchIter(DataIter):
    """A wrapper whose ``get*`` methods read the batch it holds in ``current_batch``."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_CurrentBatchIter):
    """``size`` batches per epoch from ``data_iter``, which is restarted whenever it runs
    out (MXNet's ``mx.io.ResizeIter``).

    Parameters
    ----------
    data_iter : DataIter
    size : int
        Batches per epoch.
    reset_internal : bool, default True
        Also reset ``data_iter`` at each ``reset``; with False an epoch continues where
        the last one stopped.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, 'default_bucket_key'):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


class _Fetcher:
    """One background thread reading ``data_iter`` one batch ahead of its consumer.

    It holds no reference to the PrefetchingIter, so dropping that one stops it.
    """

    def __init__(self, data_iter):
        self.data_iter = data_iter
        self.ready = threading.Event()     # a batch (or the end, or an error) is waiting
        self.taken = threading.Event()     # the consumer took it: fetch the next
        self.taken.set()
        self.running = True
        self.batch = None
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name='PrefetchingIter-%s' % type(data_iter).__name__)
        self.thread.start()

    def _run(self):
        while True:
            self.taken.wait()
            if not self.running:
                return
            try:
                self.batch = self.data_iter.next()
            except StopIteration:
                self.batch = None
            except Exception as exc:  # handed to the consumer, which raises it
                self.batch, self.error = None, exc
            self.taken.clear()
            self.ready.set()

    def wait(self):
        """Wait for the batch being fetched; re-raise the error that stopped it."""
        self.ready.wait()
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def fetch_next(self):
        self.ready.clear()
        self.taken.set()

    def stop(self):
        self.running = False
        self.taken.set()
        if self.thread is not threading.current_thread():
            self.thread.join()


class PrefetchingIter(_CurrentBatchIter):
    """Reads one or more iterators ahead in background threads (one each) and merges
    their batches: a batch's data are the iterators' data in order, its labels their
    labels (MXNet's ``mx.io.PrefetchingIter``).

    Parameters
    ----------
    iters : DataIter or list of DataIter
        Iterators with the same number of batches and the same padding.
    rename_data : list of dict, optional
        For the i-th iterator, ``{old name: new name}`` for each of its data names.
    rename_label : list of dict, optional
        The same for the labels.

    ``close()`` (or dropping the iterator) stops the threads.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError('PrefetchingIter needs at least one iterator')
        for what, renames in (('rename_data', rename_data), ('rename_label', rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise ValueError('PrefetchingIter: %s needs one dict per iterator (%d), got %d'
                                 % (what, len(iters), len(renames)))
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._fetchers = [_Fetcher(it) for it in iters]

    def close(self):
        """Stop the background threads (the iterator cannot be used afterwards)."""
        for fetcher in self.__dict__.get('_fetchers', []):
            fetcher.stop()
        self._fetchers = []

    def __del__(self):
        self.close()

    @staticmethod
    def _renamed(descs_per_iter, renames):
        if renames is None:
            return sum(descs_per_iter, [])
        out = []
        for rename, descs in zip(renames, descs_per_iter):
            for desc in descs:
                if not isinstance(desc, DataDesc):
                    desc = DataDesc(*desc)
                if desc.name not in rename:
                    raise KeyError('PrefetchingIter: the renaming map %r has no entry for %r'
                                   % (rename, desc.name))
                out.append(DataDesc(rename[desc.name], desc.shape, desc.dtype))
        return out

    @property
    def provide_data(self):
        """The ``DataDesc``s of every iterator's data, in order, renamed."""
        return self._renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self):
        """The ``DataDesc``s of every iterator's labels, in order, renamed."""
        return self._renamed([it.provide_label for it in self.iters], self.rename_label)

    def _check_open(self):
        if not self._fetchers:
            raise RuntimeError('PrefetchingIter: this iterator was closed')

    def reset(self):
        self._check_open()
        for fetcher in self._fetchers:
            fetcher.ready.wait()   # an error pending there is dropped with the epoch
            fetcher.error = None
        for it in self.iters:
            it.reset()
        for fetcher in self._fetchers:
            fetcher.fetch_next()

    def iter_next(self):
        self._check_open()
        for fetcher in self._fetchers:
            fetcher.wait()
        batches = [fetcher.batch for fetcher in self._fetchers]
        if batches[0] is None:
            if any(b is not None for b in batches):
                raise ValueError('PrefetchingIter: the iterators have different numbers of '
                                 'batches')
            return False
        if any(b is None or b.pad != batches[0].pad for b in batches):
            raise ValueError('PrefetchingIter: the iterators have different numbers of '
                             'examples (batch counts or pads differ)')
        self.current_batch = DataBatch(sum([list(b.data) for b in batches], []),
                                       sum([list(b.label or []) for b in batches], []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for fetcher in self._fetchers:
            fetcher.fetch_next()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration
