"""``CSVIter``: batches of the rows of CSV files, with the batch contents, padding and
epoch boundaries of MXNet's C++ CSVIter (its ``round_batch`` rule included)."""
import os
import re

import numpy as np

from ..base import MXNetError, MXNetValueError
from .image_record_params import _to_bool, _to_int, _to_ints, _to_str
from .mx_data_iter import MXDataIter, check_positive, parse_kwargs

__all__ = ['CSVIter']

_DTYPES = {'float32': np.float32, 'int32': np.int32, 'int64': np.int64}
# How many batches MXNet's prefetching thread reads ahead of the consumer (its queue).
_PREFETCH_AHEAD = 16
_INT_PREFIX = re.compile(r'\s*([+-]?\d+)')


def _to_dtype(name, value):
    try:
        dtype = np.dtype(value).name
    except TypeError:
        dtype = str(value)
    if dtype not in _DTYPES:
        raise MXNetValueError('%s=%r is not supported for CSVIter: use float32, int32 or int64'
                              % (name, value))
    return dtype


_PARAMS = {
    'data_csv': (None, _to_str), 'data_shape': (None, _to_ints),
    'label_csv': ('NULL', _to_str), 'label_shape': ((1,), _to_ints),
    'batch_size': (None, _to_int), 'round_batch': (True, _to_bool),
    'dtype': ('float32', _to_dtype), 'prefetch_buffer': (4, _to_int), 'ctx': ('gpu', _to_str),
    'data_name': ('data', _to_str), 'label_name': ('softmax_label', _to_str),
}


def _files(path):
    """The file ``path``, or every file of the folder ``path`` (by name)."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
        return [os.path.join(path, n) for n in names]
    if not os.path.isfile(path):
        raise MXNetError('CSVIter: %r is neither a file nor a folder' % (path,))
    return [path]


def _parse_value(text, dtype):
    if dtype == 'float32':
        return float(text)
    # MXNet's parser reads the integer at the start of the field ('1.7' -> 1)
    match = _INT_PREFIX.match(text)
    if match is None:
        raise ValueError(text)
    return int(match.group(1))


def _read_rows(path, shape, dtype, what):
    """The rows of the CSV file(s) at ``path``, each reshaped to ``shape``: an array of
    shape ``(rows,) + shape``. Empty lines are skipped, as MXNet skips them."""
    size = int(np.prod(shape))
    rows = []
    for name in _files(path):
        with open(name, 'r') as f:
            for number, line in enumerate(f, 1):
                fields = line.strip().split(',')
                if fields[-1].strip() == '':
                    fields.pop()        # a trailing comma, or an empty line
                if not fields:
                    continue
                if len(fields) != size:
                    raise MXNetError('CSVIter: line %d of %s has %d values but %s=%s needs %d '
                                     '(the data size in the CSV does not match the shape)'
                                     % (number, name, len(fields), what, shape, size))
                try:
                    rows.append([_parse_value(v, dtype) for v in fields])
                except ValueError as exc:
                    raise MXNetError('CSVIter: line %d of %s: %r is not a number'
                                     % (number, name, str(exc))) from None
    try:
        values = np.array(rows, dtype=_DTYPES[dtype])
    except OverflowError:
        raise MXNetError('CSVIter: %s holds values outside the range of %s' % (path, dtype)) \
            from None
    return values.reshape((len(rows),) + tuple(shape))


class CSVIter(MXDataIter):
    """Batches of the rows of a CSV file (or of every file in a folder), as MXNet's
    ``mx.io.CSVIter``: each row, reshaped to ``data_shape``, is one example.

    Parameters
    ----------
    data_csv : str
        A CSV file of numbers, or a folder of them.
    data_shape : tuple of int
        The shape of one example; a row holds ``prod(data_shape)`` values.
    label_csv : str, optional
        The labels, one row per example; all labels are 0 without it.
    label_shape : tuple of int, default (1,)
    batch_size : int
    round_batch : bool, default True
        With True a short last batch is completed from the start of the data (its
        ``pad`` says how many) and the next epoch starts after those rows; with False
        the missing rows repeat what the last full batch held (``pad`` counts them) and
        every epoch starts at the first row.
    dtype : {'float32', 'int32', 'int64'}, default 'float32'
        The type of data and labels; integers are read up to a decimal point.
    data_name, label_name : str, default 'data', 'softmax_label'

    Batches' labels of shape ``(batch, 1)`` come as ``(batch,)``, as MXNet gives them.
    The data are read into memory at construction. ``reset()`` is meant to be called
    at the end of an epoch; called earlier, it behaves as MXNet's whose reading thread
    has read ahead by 16 batches.
    """

    def __init__(self, **kwargs):
        p = parse_kwargs('CSVIter', kwargs, _PARAMS)
        for name in ('data_csv', 'data_shape', 'batch_size'):
            if p[name] is None:
                raise MXNetValueError('CSVIter needs %s' % name)
        check_positive('CSVIter', 'batch_size', p['batch_size'])
        self._data = _read_rows(p['data_csv'], p['data_shape'], p['dtype'], 'data_shape')
        rows = len(self._data)
        if p['label_csv'] != 'NULL':
            labels = _read_rows(p['label_csv'], p['label_shape'], p['dtype'], 'label_shape')
            if len(labels) < rows:
                raise MXNetError('CSVIter: %s has %d rows but %s only %d: give one label row '
                                 'per data row' % (p['data_csv'], rows, p['label_csv'],
                                                   len(labels)))
            self._labels = labels[:rows]
        else:
            self._labels = np.zeros((rows, 1), dtype=_DTYPES[p['dtype']])
        self._round_batch = p['round_batch']
        self._path = p['data_csv']
        bs = p['batch_size']
        # the C++ batch buffers: with round_batch=False a short batch keeps the rows the
        # previous batch left in them
        self._data_buf = np.zeros((bs,) + self._data.shape[1:], self._data.dtype)
        self._label_buf = np.zeros((bs,) + self._labels.shape[1:], self._labels.dtype)
        self._index_buf = np.zeros(bs, np.uint64)
        self._pos = 0             # the next row to read
        self._overflow = 0        # rows of the next epoch a round_batch batch took
        self._at_end = False      # the epoch has ended (the reader said so)
        super().__init__(bs)
        self._start(bs, p['data_name'], p['label_name'])

    def _plan(self):
        """The next batch as ``(rows, pad)`` (rows: indices into the data), or None at
        the end of the epoch; moves the reading position as MXNet's BatchLoader does."""
        if self._overflow:
            return None
        bs, rows = self.batch_size, len(self._data)
        taken = list(range(self._pos, min(self._pos + bs, rows)))
        self._pos += len(taken)
        if len(taken) == bs:
            return taken, 0
        if not taken:
            return None
        if not self._round_batch:
            return taken, bs - len(taken)
        missing = bs - len(taken)
        if missing > rows:
            raise MXNetError('CSVIter: batch_size=%d needs more rows than the %d of %s: the '
                             'number of rows must be at least the batch size'
                             % (bs, rows, self._path))
        self._pos = self._overflow = missing
        return taken + list(range(missing)), missing

    def _read_batch(self):
        plan = self._plan()
        if plan is None:
            self._at_end = True
            return None
        rows, pad = plan
        n = len(rows)
        self._data_buf[:n] = self._data[rows]
        self._label_buf[:n] = self._labels[rows]
        self._index_buf[:n] = rows
        return self._data_buf.copy(), self._label_buf.copy(), pad, self._index_buf.copy()

    def _before_first(self):
        if not self._at_end and self._round_batch:
            # MXNet's reading thread has read ahead of the consumer; what it read moves
            # the round_batch position
            for _ in range(_PREFETCH_AHEAD):
                if self._plan() is None:
                    break
        if not self._round_batch or not self._overflow:
            self._pos = 0
        self._overflow = 0
        self._at_end = False
