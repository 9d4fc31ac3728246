"""``MXDataIter``: what MXNet's file iterators (``CSVIter``, ``MNISTIter``), written in C++
there, share through their Python wrapper: keyword parameters given as values or
strings, the first batch read at construction, and ``getdata``/``getlabel`` returning
one NDArray each."""
import warnings

import numpy as np

from ..base import MXNetError, MXNetValueError
from ..context import cpu
from ..ndarray.creation import array
from .data_iter import DataBatch, DataDesc, DataIter

__all__ = ['MXDataIter']


def parse_kwargs(iter_name, kwargs, params):
    """``kwargs`` checked against ``params`` (name -> (default, converter)).

    Unknown names are ignored with a warning (MXNet ignores them silently; they are
    usually typos, or parameters of another iterator such as ``data_shape`` given to
    ``MNISTIter``).
    """
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        warnings.warn('%s ignores unknown parameters %s' % (iter_name, ', '.join(unknown)),
                      stacklevel=4)
    values = {}
    for name, (default, convert) in params.items():
        value = kwargs.get(name, default)
        values[name] = value if value is None else convert(name, value)
    return values


class MXDataIter(DataIter):
    """The base of the iterators MXNet implements in C++.

    A subclass calls ``_start(batch_size, data_name, label_name)`` at the end of its
    ``__init__`` and implements ``_read_batch()``, which returns ``(data, label, pad,
    index)`` (numpy arrays, an int and a uint64 array) or None at the end of the
    epoch, and ``_before_first()``, which rewinds.
    """

    def _start(self, batch_size, data_name, label_name):
        self.batch_size = batch_size
        self._current = None
        # as MXNet: the first batch is read at once, so errors show at construction and
        # provide_data/provide_label come from a real batch
        self.first_batch = None
        try:
            self.first_batch = self.next()
        except StopIteration:
            raise MXNetError('%s: the data hold fewer examples than one batch (batch_size=%d)'
                             % (type(self).__name__, batch_size)) from None
        data, label = self.first_batch.data[0], self.first_batch.label[0]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype)]

    def _read_batch(self):
        raise NotImplementedError

    def _before_first(self):
        raise NotImplementedError

    def reset(self):
        """Start the next epoch."""
        self.first_batch = None
        self._before_first()

    def _advance(self):
        read = self._read_batch()
        if read is None:
            self._current = None
            return False
        data, label, pad, index = read
        if label.ndim > 1 and label.shape[1] == 1:
            # MXNet hands out labels of shape (batch, 1, ...) as (batch,): the first
            # `batch` values
            label = label.reshape(-1)[:label.shape[0]]
        self._current = DataBatch(data=[array(data, cpu(0), dtype=data.dtype)],
                                  label=[array(label, cpu(0), dtype=label.dtype)],
                                  pad=pad, index=np.asarray(index, dtype=np.uint64))
        return True

    def next(self):
        """The next ``DataBatch``; StopIteration at the end of the epoch."""
        if self.first_batch is not None:
            batch, self.first_batch = self.first_batch, None
            return batch
        if self._advance():
            return self._current
        raise StopIteration

    def iter_next(self):
        """Move to the next batch; False at the end of the epoch."""
        if self.first_batch is not None:
            self.first_batch = None     # it is the current batch
            return True
        return self._advance()

    def _batch(self, what):
        if self._current is None:
            raise MXNetError('%s.%s: there is no current batch (the epoch is over); call '
                             'reset() and iter_next() first' % (type(self).__name__, what))
        return self._current

    def getdata(self):
        """The current batch's data (one NDArray, as MXNet's C++ iterators return it)."""
        return self._batch('getdata').data[0]

    def getlabel(self):
        """The current batch's labels (one NDArray)."""
        return self._batch('getlabel').label[0]

    def getindex(self):
        """The indices (uint64) of the current batch's examples."""
        return self._batch('getindex').index

    def getpad(self):
        """How many examples at the end of the current batch are fill."""
        return self._batch('getpad').pad


def check_positive(iter_name, name, value):
    """Raise a clear error unless the int parameter ``name`` is positive."""
    if value <= 0:
        raise MXNetValueError('%s: %s must be positive, got %d' % (iter_name, name, value))
