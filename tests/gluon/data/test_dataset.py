"""Datasets: SimpleDataset, ArrayDataset and the transform/filter/shard/take/sample views."""
import numpy as np
import pytest

from minigluon import nd
from minigluon.base import MXNetError
from minigluon.gluon.data import (ArrayDataset, Dataset, IntervalSampler, SequentialSampler,
                                  SimpleDataset)


def test_simple_dataset_wraps_a_sequence():
    ds = SimpleDataset(['a', 'b', 'c'])
    assert len(ds) == 3 and ds[1] == 'b'


def test_array_dataset_zips_arrays_and_keeps_1d_ndarrays_as_numpy():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = nd.array([0, 1, 0, 1], dtype='int32')
    ds = ArrayDataset(x, y, [10, 11, 12, 13])
    assert len(ds) == 4
    xi, yi, zi = ds[2]
    np.testing.assert_array_equal(xi, x[2])
    assert isinstance(yi, np.int32) and yi == 0 and zi == 12
    single = ArrayDataset(nd.array(x))
    assert isinstance(single[1], nd.NDArray)
    np.testing.assert_array_equal(single[1].asnumpy(), x[1])


def test_array_dataset_errors():
    with pytest.raises(ValueError, match='at least one array'):
        ArrayDataset()
    with pytest.raises(MXNetError, match='array 0 has length 3 but array 1 has length 2'):
        ArrayDataset(np.zeros(3), np.zeros(2))


def test_transform_is_lazy_and_unpacks_tuples():
    calls = []

    def fn(x, y):
        calls.append(x)
        return x * 10, y

    ds = ArrayDataset(np.arange(5), np.arange(5) + 100)
    lazy = ds.transform(fn)
    assert calls == [] and len(lazy) == 5
    assert lazy[3] == (30, 103)
    assert calls == [3]
    eager = ds.transform(fn, lazy=False)
    assert len(calls) == 6 and isinstance(eager, SimpleDataset)
    assert eager[4] == (40, 104)
    single = SimpleDataset([1, 2]).transform(lambda x: -x)
    assert single[1] == -2


def test_transform_first_changes_only_the_data():
    ds = ArrayDataset(np.arange(4), np.arange(4) + 100).transform_first(lambda x: x + 0.5)
    assert ds[2] == (2.5, 102)
    assert SimpleDataset([1, 2]).transform_first(lambda x: x * 3)[1] == 6


def test_filter_take_and_sample():
    ds = SimpleDataset(list(range(10)))
    evens = ds.filter(lambda x: x % 2 == 0)
    assert [evens[i] for i in range(len(evens))] == [0, 2, 4, 6, 8]
    assert len(ds.take(3)) == 3 and ds.take(3)[2] == 2
    assert len(ds.take(None)) == 10 and len(ds.take(99)) == 10
    picked = ds.sample(IntervalSampler(10, 4, rollover=False))
    assert [picked[i] for i in range(len(picked))] == [0, 4, 8]
    with pytest.raises(ValueError, match='expected a Sampler, got list'):
        ds.sample([1, 2])


def test_shard_splits_like_gluon_first_shards_get_the_rest():
    ds = SimpleDataset(list(range(10)))
    shards = [ds.shard(3, k) for k in range(3)]
    assert [len(s) for s in shards] == [4, 3, 3]
    assert [s[i] for s in shards for i in range(len(s))] == list(range(10))
    with pytest.raises(ValueError, match=r'index must be in \[0, 3\)'):
        ds.shard(3, 3)


def test_sampled_views_raise_index_error_past_the_end():
    view = SimpleDataset(list(range(10))).sample(SequentialSampler(2, start=4))
    assert view[1] == 5
    with pytest.raises(IndexError):
        view[2]


def test_abstract_dataset_must_be_subclassed():
    with pytest.raises(NotImplementedError):
        len(Dataset())
