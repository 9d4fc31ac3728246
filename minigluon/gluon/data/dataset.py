"""Datasets: anything with ``__getitem__`` and ``__len__``, plus Gluon's combinators."""
import numbers
import os

from ... import recordio
from ...ndarray import NDArray
from .sampler import DataArgumentError, FilterSampler, Sampler, SequentialSampler

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset', 'RecordFileDataset']


class Dataset:
    """Abstract data set: ``dataset[i]`` is one sample, ``len(dataset)`` their number.

    Subclasses implement ``__getitem__`` and ``__len__``; the methods below build new
    data sets from this one without copying it.
    """

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """The samples for which ``fn(sample)`` is true (evaluated once, here)."""
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Shard ``index`` of ``num_shards`` contiguous shards.

        The first ``len(self) % num_shards`` shards hold one sample more, as in Gluon.
        For equal parts (data-parallel training), sample with ``SplitSampler``.

        Parameters
        ----------
        num_shards : int
            The number of shards, at least 1.
        index : int
            Which shard, in ``[0, num_shards)``.

        Returns
        -------
        Dataset
            A view of the shard's samples; nothing is copied.
        """
        if not isinstance(num_shards, numbers.Integral) or num_shards < 1:
            raise DataArgumentError('shard: num_shards must be a positive int, got %r'
                                    % (num_shards,))
        if not isinstance(index, numbers.Integral) or not 0 <= index < num_shards:
            raise DataArgumentError('shard: index must be in [0, %d), got %r'
                                    % (num_shards, index))
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (index < rest)
        return _SampledDataset(self, SequentialSampler(end - start, start))

    def take(self, count):
        """The first ``count`` samples (all of them when ``count`` is None or too big)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """The samples at the indices ``sampler`` yields, in that order."""
        if not isinstance(sampler, Sampler):
            raise DataArgumentError('sample: expected a Sampler, got %s' % type(sampler).__name__)
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """A data set whose samples are ``fn(*sample)`` (``fn(sample)`` for non-tuples).

        Parameters
        ----------
        fn : callable
            The transform; it receives the elements of a tuple sample as separate
            arguments.
        lazy : bool, default True
            Transform each sample when it is read; with False every sample is
            transformed now and kept in memory.

        Returns
        -------
        Dataset
        """
        transformed = _LazyTransformDataset(self, fn)
        if lazy:
            return transformed
        return SimpleDataset([transformed[i] for i in range(len(transformed))])

    def transform_first(self, fn, lazy=True):
        """Apply ``fn`` to the first element of each sample (the data, not the label).

        Parameters
        ----------
        fn : callable
            Maps the first element; the other elements pass through unchanged (a
            sample that is not a tuple is passed to ``fn`` whole).
        lazy : bool, default True
            As in ``transform``.

        Returns
        -------
        Dataset
        """
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A data set over any sequence (a list, a numpy array, ...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """``fn`` on the first element only; a class, not a closure, so it pickles."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    """The samples of ``dataset`` at the indices of ``sampler``, drawn once."""

    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._indices = list(sampler)

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Zips arrays of equal length: sample ``i`` is ``(a[i], b[i], ...)``.

    With a single array, sample ``i`` is ``a[i]``. 1-D NDArrays are kept as numpy
    so that their items are scalars, as in Gluon.
    """

    def __init__(self, *args):
        if not args:
            raise DataArgumentError('ArrayDataset needs at least one array')
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise DataArgumentError(
                    'ArrayDataset: all arrays must have the same length; array 0 has length %d '
                    'but array %d has length %d' % (self._length, i, len(data)))
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file, as bytes, in the order of its index.

    Parameters
    ----------
    filename : str
        Path of the ``.rec`` file; its index is the ``.idx`` file beside it (same name).

    A DataLoader's worker processes each read the file through their own handle.
    """

    def __init__(self, filename):
        self.filename = os.fspath(filename)
        self.idx_file = os.path.splitext(self.filename)[0] + '.idx'
        if not os.path.isfile(self.idx_file):
            raise DataArgumentError(
                'RecordFileDataset: %s has no index %s beside it; make one with '
                'tools/im2rec.py, or write the records with MXIndexedRecordIO'
                % (self.filename, self.idx_file))
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, 'r')

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
