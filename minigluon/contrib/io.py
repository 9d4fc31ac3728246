"""Between the two data APIs: ``DataLoaderIter`` makes a Gluon ``DataLoader`` a
``DataIter`` (for ``mx.mod.Module``), ``DataIterLoader`` makes a ``DataIter`` iterate
``(data, label)`` pairs as a ``DataLoader`` does (for Gluon training loops)."""
from .. import ndarray as nd
from ..io import DataDesc, DataIter

__all__ = ['DataLoaderIter', 'DataIterLoader']


class DataLoaderIter(DataIter):
    """A Gluon ``DataLoader`` of ``(data, label)`` batches as a ``DataIter``, so that
    ``mx.mod.Module`` can train on it (MXNet's ``mx.contrib.io.DataLoaderIter``).

    Parameters
    ----------
    loader : gluon.data.DataLoader
        Yields ``(data, label)`` pairs of NDArrays.
    data_name : str, default 'data'
    label_name : str, default 'softmax_label'
    dtype : str, default 'float32'
        The dtype of the batches (and of ``provide_data``/``provide_label``).

    The first batch fixes ``batch_size``. A shorter last batch is filled up to
    ``batch_size`` with zeros and its ``pad`` says how many rows are fill.
    """

    def __init__(self, loader, data_name='data', label_name='softmax_label', dtype='float32'):
        super().__init__()
        self._loader = loader
        self._iter = iter(self._loader)
        try:
            data, label = next(self._iter)
        except StopIteration:
            raise ValueError('DataLoaderIter: the DataLoader yields no batch') from None
        except (TypeError, ValueError):
            raise ValueError('DataLoaderIter: the DataLoader must yield (data, label) pairs') \
                from None
        self.batch_size = data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch = None
        self.reset()

    def reset(self):
        self._iter = iter(self._loader)

    def iter_next(self):
        try:
            self._current_batch = next(self._iter)
        except StopIteration:
            self._current_batch = None
        return self._current_batch is not None

    def _filled(self, array):
        array = array.astype(self.dtype)
        if array.shape[0] == self.batch_size:
            return [array]
        full = nd.zeros((self.batch_size,) + array.shape[1:], ctx=array.context,
                        dtype=self.dtype)
        full[:array.shape[0]] = array
        return [full]

    def getdata(self):
        return self._filled(self._current_batch[0])

    def getlabel(self):
        return self._filled(self._current_batch[1])

    def getpad(self):
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        return None


class DataIterLoader:
    """A ``DataIter`` seen as a Gluon ``DataLoader``: iterating it resets the DataIter
    and yields ``(data, label)`` per batch, so ``for data, label in loader:`` loops
    (``gluon.utils.split_and_load``, ``Trainer.step(data.shape[0])``) run unchanged.
    MXNet's Gluon tutorial on data sets defines this class for the same purpose.

    Parameters
    ----------
    data_iter : DataIter
        An iterator whose batches have one data array and at most one label array
        (more give tuples of all data then all labels; none gives the data alone).
    keep_pad : bool, default False
        Keep the fill rows of a padded batch (``batch.pad``); by default they are cut
        off, so the last batch is short as a DataLoader's is.
    """

    def __init__(self, data_iter, keep_pad=False):
        self.data_iter = data_iter
        self.keep_pad = keep_pad

    def __iter__(self):
        self.data_iter.reset()
        for batch in self.data_iter:
            arrays = list(batch.data) + list(batch.label or [])
            if batch.pad and not self.keep_pad:
                arrays = [a[:a.shape[0] - batch.pad] for a in arrays]
            yield arrays[0] if len(arrays) == 1 else tuple(arrays)

    @property
    def batch_size(self):
        """The DataIter's batch size."""
        return self.data_iter.batch_size
