"""Samplers: iterables of dataset indices (one index, or one batch of indices, at a time).

A sampler is anything with ``__iter__`` and ``__len__``; subclassing ``Sampler`` is
a convention, so the ``SplitSampler`` written out in MXNet's distributed-training
tutorial works unchanged.
"""
import numbers

import numpy as np

from ...base import MXNetError

__all__ = ['Sampler', 'SequentialSampler', 'RandomSampler', 'FilterSampler', 'BatchSampler',
           'IntervalSampler', 'SplitSampler']

LAST_BATCH_MODES = ('keep', 'discard', 'rollover')


class DataArgumentError(MXNetError, ValueError):
    """A bad argument to the data API; a ValueError as in Gluon, and an MXNetError."""


def _check_count(name, value, minimum=0):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise DataArgumentError('%s must be an int >= %d, got %r' % (name, minimum, value))
    return int(value)


class Sampler:
    """Base class for samplers: iterate over indices of a data set."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1`` in order.

    Parameters
    ----------
    length : int
        Number of indices.
    start : int, default 0
        The first index.
    """

    def __init__(self, length, start=0):
        self._length = _check_count('SequentialSampler: length', length)
        self._start = _check_count('SequentialSampler: start', start)

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """``0 .. length-1`` in a new random order each epoch.

    Draws from numpy's global generator, as Gluon does, so ``np.random.seed(s)``
    makes the order reproducible.
    """

    def __init__(self, length):
        self._length = _check_count('RandomSampler: length', length)

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """Indices of the samples of ``dataset`` for which ``fn(sample)`` is true."""

    def __init__(self, fn, dataset):
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class IntervalSampler(Sampler):
    """Every ``interval``-th index: ``0, k, 2k, ...``, then ``1, k+1, ...`` if ``rollover``.

    ``IntervalSampler(13, 3)`` gives ``0 3 6 9 12 1 4 7 10 2 5 8 11``; with
    ``rollover=False`` only ``0 3 6 9 12``.
    """

    def __init__(self, length, interval, rollover=True):
        self._length = _check_count('IntervalSampler: length', length)
        self._interval = _check_count('IntervalSampler: interval', interval, 1)
        if self._interval > max(self._length, 1):
            raise DataArgumentError('IntervalSampler: interval %d is larger than length %d'
                                    % (interval, length))
        self._rollover = bool(rollover)

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Parameters
    ----------
    sampler : Sampler or iterable of indices
    batch_size : int
    last_batch : {'keep', 'discard', 'rollover'}, default 'keep'
        What to do with a last batch shorter than ``batch_size``: yield it, drop it,
        or put its indices at the front of the next epoch's first batch.
    """

    def __init__(self, sampler, batch_size, last_batch='keep'):
        self._sampler = sampler
        self._batch_size = _check_count('BatchSampler: batch_size', batch_size, 1)
        if last_batch not in LAST_BATCH_MODES:
            raise DataArgumentError("last_batch must be one of 'keep', 'discard' or 'rollover', "
                                    'got %r' % (last_batch,))
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for index in self._sampler:
            batch.append(index)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == 'keep':
                yield batch
            elif self._last_batch == 'rollover':
                self._prev = batch

    def __len__(self):
        n = len(self._sampler)
        if self._last_batch == 'keep':
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == 'discard':
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size


class SplitSampler(Sampler):
    """Part ``part_index`` of ``num_parts`` disjoint, equal parts of ``range(length)``.

    For data-parallel training: worker ``rank`` of ``num_workers`` takes
    ``SplitSampler(len(dataset), num_workers, rank)``. Every part has exactly
    ``length // num_parts`` indices (the last ``length % num_parts`` indices are left
    out), so every worker runs the same number of steps per epoch, which a
    ``dist_sync`` job needs. Part ``k`` holds indices ``k, k + n, k + 2n, ...``
    (``n = num_parts``), so a data set stored sorted by class still gives every part
    every class.

    Parameters
    ----------
    length : int
        Number of examples in the data set.
    num_parts : int, default 1
        Number of parts (workers).
    part_index : int, default 0
        Which part to iterate over, ``0 <= part_index < num_parts``.
    shuffle : bool, default True
        Iterate over the part in a new random order each epoch.
    seed : int, optional
        Seed of the shuffling: the same seed gives the same sequence of epochs.
        Without it every sampler shuffles differently.
    """

    def __init__(self, length, num_parts=1, part_index=0, shuffle=True, seed=None):
        length = _check_count('SplitSampler: length', length)
        num_parts = _check_count('SplitSampler: num_parts', num_parts, 1)
        part_index = _check_count('SplitSampler: part_index', part_index)
        if part_index >= num_parts:
            raise DataArgumentError('SplitSampler: part_index must be in [0, %d) for '
                                    'num_parts=%d, got %d' % (num_parts, num_parts, part_index))
        if num_parts > length:
            raise DataArgumentError('SplitSampler: cannot split %d examples into %d non-empty '
                                    'parts' % (length, num_parts))
        self._indices = np.arange(part_index, num_parts * (length // num_parts), num_parts)
        self._shuffle = bool(shuffle)
        self._rng = np.random.default_rng(seed)

    def __iter__(self):
        if self._shuffle:
            return iter(self._rng.permutation(self._indices).tolist())
        return iter(self._indices.tolist())

    def __len__(self):
        return len(self._indices)
