"""``NDArrayIter``: batches of in-memory arrays, with MXNet 1.x's batch contents in every
``last_batch_handle`` mode, epoch after epoch."""
import numpy as np

from ..ndarray import concat, tile
from .data_iter import DataBatch, DataDesc, DataIter
from .utils import _getdata_by_idx, _init_data, _slice_along_batch_axis

__all__ = ['NDArrayIter']

_LAST_BATCH_MODES = ('pad', 'discard', 'roll_over')


class NDArrayIter(DataIter):
    """Iterates over NDArrays or numpy arrays in batches (MXNet's ``mx.io.NDArrayIter``).

    Parameters
    ----------
    data : array, list of arrays or dict of str to array
        The inputs; their first axis (the layout's ``N``) counts the examples. One
        array is named ``data_name``; the arrays of a list ``_0_<data_name>``,
        ``_1_<data_name>``...; a dict gives the names. Arrays are ordered by name, as
        in MXNet. numpy arrays become float32 NDArrays.
    label : array, list of arrays or dict of str to array, optional
        The labels, named like ``data`` from ``label_name``.
    batch_size : int, default 1
    shuffle : bool, default False
        Reorder the examples at each ``reset`` (numpy's global generator draws the
        order, as in MXNet).
    last_batch_handle : {'pad', 'discard', 'roll_over'}, default 'pad'
        The short last batch: ``pad`` fills it from the start of the data (``pad`` of
        the batch counts the fill), ``discard`` drops it, ``roll_over`` keeps its
        examples for the first batch of the next epoch (for training; prediction
        would see them twice).
    data_name : str, default 'data'
    label_name : str, default 'softmax_label'
    layout : str, default 'NCHW'
        The position of ``N`` is the batch axis.

    Sparse inputs (scipy's or MXNet's CSR matrices) raise NotImplementedError:
    minigluon has no sparse storage.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle='pad',
                 data_name='data', label_name='softmax_label', layout='NCHW'):
        super().__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_MODES:
            raise ValueError("NDArrayIter: last_batch_handle must be 'pad', 'discard' or "
                             "'roll_over', got %r" % (last_batch_handle,))
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError('NDArrayIter: batch_size must be a positive int, got %r'
                             % (batch_size,))
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        self.layout = layout
        self._check_lengths()
        self.idx = np.arange(self.data[0][1].shape[0])
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -self.batch_size
        self.num_data = self.idx.shape[0]
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)
        # the short last batch of an epoch, kept for the next with 'roll_over'
        self._cache_data = None
        self._cache_label = None

    def _check_lengths(self):
        # MXNet counts the examples of the first array and reads that many of each
        for name, arr in self.data + self.label:
            if arr.ndim == 0:
                raise ValueError('NDArrayIter: %r is a scalar; inputs need an axis of '
                                 'examples' % (name,))
        first, count = self.data[0][0], self.data[0][1].shape[0]
        for name, arr in self.data + self.label:
            if arr.shape[0] < count:
                raise ValueError('NDArrayIter: every input needs at least as many examples as '
                                 '%r (%d); %r has shape %s' % (first, count, name, arr.shape))

    def _batch_axis(self):
        return self.layout.find('N')

    def _describe(self, arrays):
        axis = self._batch_axis()
        return [DataDesc(name, tuple(arr.shape[:axis]) + (self.batch_size,)
                         + tuple(arr.shape[axis + 1:]), arr.dtype, layout=self.layout)
                for name, arr in arrays]

    @property
    def provide_data(self):
        """``DataDesc`` (name, batch shape, dtype, layout) of each data array."""
        return self._describe(self.data)

    @property
    def provide_label(self):
        """``DataDesc`` (name, batch shape, dtype, layout) of each label array."""
        return self._describe(self.label)

    def hard_reset(self):
        """Go back to the start, dropping examples kept for a roll-over."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        """Start the next epoch (reshuffled with ``shuffle``); with ``roll_over`` its first
        batch begins with the examples the last epoch left over."""
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == 'roll_over' and \
                self.num_data - self.batch_size < self.cursor < self.num_data:
            # the cursor stands at a short last batch: the next epoch's first batch takes
            # (num_data - cursor) examples from it and the rest from the new order
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        """Move the cursor to the next batch; False past the end of the data."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        """The next ``DataBatch``; StopIteration at the end of the epoch."""
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self._batch_axis()] != self.batch_size:
            # a short last batch ('discard' or 'roll_over'): kept for the next epoch
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, data_source, start=None, end=None):
        """The examples ``start:end`` of every array of ``data_source``."""
        start = 0 if start is None else start
        if end is None:
            end = data_source[0][1].shape[0] if data_source else 0
        return [_slice_along_batch_axis(arr, slice(start, end), self._batch_axis())
                for _, arr in data_source]

    def _concat(self, first_data, second_data):
        if not first_data or not second_data:
            return first_data if first_data else second_data
        return [concat(a, b, dim=self._batch_axis()) for a, b in zip(first_data, second_data)]

    @staticmethod
    def _tile(data, repeats):
        # MXNet repeats along axis 0 whatever the layout
        return [tile(arr, (repeats,) + (1,) * (arr.ndim - 1)) for arr in data]

    def _batchify(self, data_source):
        if self.cursor >= self.num_data:
            raise RuntimeError('NDArrayIter: the epoch is over; call reset() before reading '
                               'more batches')
        if self.last_batch_handle == 'roll_over' and -self.batch_size < self.cursor < 0:
            # the first batch after a roll-over: the kept examples, then the new epoch's
            if self._cache_data is None and self._cache_label is None:
                raise RuntimeError('NDArrayIter: no examples were kept from the last epoch; '
                                   'with roll_over read the epoch with next() to its end '
                                   'before reset()')
            if self._cache_data is not None:
                cached, self._cache_data = self._cache_data, None
            else:
                cached, self._cache_label = self._cache_label, None
            return self._concat(cached, self._getdata(data_source,
                                                      end=self.cursor + self.batch_size))
        if self.last_batch_handle == 'pad' and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first_data = self._getdata(data_source, start=self.cursor)
            if pad > self.num_data:
                # a batch bigger than the data: whole copies, then a part
                second_data = self._tile(self._getdata(data_source, end=self.num_data),
                                         pad // self.num_data)
                if pad % self.num_data:
                    second_data = self._concat(second_data, self._getdata(
                        data_source, end=pad % self.num_data))
            else:
                second_data = self._getdata(data_source, end=pad)
            return self._concat(first_data, second_data)
        end = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(data_source, self.cursor, end)

    def getdata(self):
        """The current batch's data, a list of NDArray."""
        return self._batchify(self.data)

    def getlabel(self):
        """The current batch's labels, a list of NDArray (empty without labels)."""
        return self._batchify(self.label)

    def getpad(self):
        """How many examples of the current batch are fill: the repeated start with
        ``pad``, the kept examples of a roll-over's first batch."""
        if self.last_batch_handle == 'pad' and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == 'roll_over' and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        # MXNet shuffles the current order again (the permutations compose)
        np.random.shuffle(self.idx)
        self.data = _getdata_by_idx(self.data, self.idx)
        self.label = _getdata_by_idx(self.label, self.idx)
