"""Samplers: orders, batching modes, and SplitSampler's equal disjoint parts."""
import random

import numpy as np
import pytest

from minigluon.base import MXNetError
from minigluon.gluon import data as gdata
from minigluon.gluon.data import (BatchSampler, FilterSampler, IntervalSampler, RandomSampler,
                                  SequentialSampler, SplitSampler)


def test_sequential_sampler_counts_from_start():
    assert list(SequentialSampler(4)) == [0, 1, 2, 3]
    assert list(SequentialSampler(3, start=5)) == [5, 6, 7]
    assert len(SequentialSampler(3, start=5)) == 3


def test_random_sampler_is_a_permutation_reproducible_with_numpy_seed():
    np.random.seed(3)
    first = list(RandomSampler(50))
    np.random.seed(3)
    again = list(RandomSampler(50))
    assert sorted(first) == list(range(50))
    assert first == again
    assert first != list(range(50))
    assert all(type(i) is int for i in first)


def test_filter_sampler_keeps_matching_indices():
    data = [3, 8, 1, 10, 7]
    sampler = FilterSampler(lambda x: x > 5, data)
    assert list(sampler) == [1, 3, 4] and len(sampler) == 3


@pytest.mark.parametrize('length, interval, rollover, expected', [
    (13, 3, True, [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]),
    (13, 3, False, [0, 3, 6, 9, 12]),
    (4, 4, True, [0, 1, 2, 3]),
])
def test_interval_sampler(length, interval, rollover, expected):
    sampler = IntervalSampler(length, interval, rollover)
    assert list(sampler) == expected
    assert len(sampler) == len(expected)


def test_interval_sampler_rejects_interval_above_length():
    with pytest.raises(ValueError, match='interval 5 is larger than length 3'):
        IntervalSampler(3, 5)


def test_batch_sampler_modes():
    seq = SequentialSampler(10)
    keep = BatchSampler(seq, 4, 'keep')
    assert list(keep) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(keep) == 3
    discard = BatchSampler(seq, 4, 'discard')
    assert list(discard) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(discard) == 2
    rollover = BatchSampler(seq, 4, 'rollover')
    assert len(rollover) == 2
    assert list(rollover) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(rollover) == 3  # two left over from the last epoch
    assert list(rollover) == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    assert list(rollover) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batch_sampler_rejects_unknown_mode_as_value_error():
    with pytest.raises(ValueError, match="last_batch must be one of 'keep', 'discard'"):
        BatchSampler(SequentialSampler(3), 2, 'drop')
    with pytest.raises(MXNetError, match='batch_size must be an int >= 1'):
        BatchSampler(SequentialSampler(3), 0)


@pytest.mark.parametrize('length, parts', [(100, 4), (103, 4), (10, 3), (7, 7), (50000, 3)])
def test_split_sampler_parts_are_equal_disjoint_and_cover_the_whole_parts(length, parts):
    samplers = [SplitSampler(length, parts, k, seed=11) for k in range(parts)]
    orders = [list(s) for s in samplers]
    part_len = length // parts
    assert all(len(s) == part_len and len(o) == part_len for s, o in zip(samplers, orders))
    union = set()
    for order in orders:
        assert len(set(order)) == part_len
        assert not union & set(order)
        union |= set(order)
    assert union == set(range(parts * part_len))


def test_split_sampler_parts_interleave_so_sorted_data_spreads_over_parts():
    labels = np.repeat(np.arange(10), 10)  # a data set sorted by class
    for k in range(2):
        part = list(SplitSampler(100, 2, k, shuffle=False))
        assert part == list(range(k, 100, 2))
        assert set(labels[part]) == set(range(10))


def test_split_sampler_same_seed_same_order_and_each_epoch_reshuffles():
    a = SplitSampler(1000, 2, 1, seed=5)
    b = SplitSampler(1000, 2, 1, seed=5)
    epochs_a = [list(a) for _ in range(3)]
    epochs_b = [list(b) for _ in range(3)]
    assert epochs_a == epochs_b
    assert epochs_a[0] != epochs_a[1] and sorted(epochs_a[0]) == sorted(epochs_a[1])
    assert list(SplitSampler(1000, 2, 1, seed=6)) != epochs_a[0]


def test_split_sampler_without_shuffle_is_ordered():
    assert list(SplitSampler(10, 3, 2, shuffle=False)) == [2, 5, 8]


@pytest.mark.parametrize('args, message', [
    ((10, 2, 2), 'part_index must be in \\[0, 2\\)'),
    ((10, 0, 0), 'num_parts must be an int >= 1'),
    ((3, 4, 0), 'cannot split 3 examples into 4'),
    ((-1, 1, 0), 'length must be an int >= 0'),
])
def test_split_sampler_rejects_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        SplitSampler(*args)


class TutorialSplitSampler(gdata.sampler.Sampler):
    """Verbatim from MXNet's distributed-training tutorial."""

    def __init__(self, length, num_parts=1, part_index=0):
        self.part_len = length // num_parts
        self.start = self.part_len * part_index
        self.end = self.start + self.part_len

    def __iter__(self):
        indices = list(range(self.start, self.end))
        random.shuffle(indices)
        return iter(indices)

    def __len__(self):
        return self.part_len


@pytest.mark.parametrize('num_workers', [0, 2])
def test_tutorial_sampler_subclass_works_with_the_data_loader(num_workers):
    data = np.arange(50, dtype=np.float32)
    loader = gdata.DataLoader(gdata.ArrayDataset(data), batch_size=8,
                              sampler=TutorialSplitSampler(50, 2, 1), num_workers=num_workers)
    seen = np.concatenate([b.asnumpy() for b in loader])
    assert len(loader) == 4
    assert sorted(seen.tolist()) == list(range(25, 50))
