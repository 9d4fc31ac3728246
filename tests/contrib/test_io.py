"""mx.contrib.io: a Gluon DataLoader as a DataIter (DataLoaderIter) and the reverse
(DataIterLoader)."""
import numpy as np

import minigluon as mx
from minigluon.gluon.data import ArrayDataset, DataLoader


def _loader(n=5, batch_size=2):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    return DataLoader(ArrayDataset(x, np.arange(n)), batch_size=batch_size), x


def test_dataloader_iter_pads_the_last_batch_and_restarts():
    loader, x = _loader()
    it = mx.contrib.io.DataLoaderIter(loader, label_name='y', dtype='float64')
    assert it.batch_size == 2
    assert it.provide_data[0] == ('data', (2, 2)) and it.provide_label[0].name == 'y'
    for _ in range(2):
        batches = list(it)
        it.reset()
        assert [b.pad for b in batches] == [0, 0, 1]
        last = batches[-1]
        assert last.data[0].dtype == np.float64 and last.data[0].shape == (2, 2)
        np.testing.assert_array_equal(last.data[0].asnumpy(), [x[4], [0, 0]])
        np.testing.assert_array_equal(last.label[0].asnumpy(), [4, 0])


def test_data_iter_loader_yields_pairs_without_the_padding():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    loader = mx.contrib.io.DataIterLoader(mx.io.NDArrayIter(x, np.arange(5), batch_size=2))
    for _ in range(2):      # each pass starts a new epoch
        pairs = [(d.asnumpy(), l.asnumpy()) for d, l in loader]
        assert [d.shape[0] for d, _ in pairs] == [2, 2, 1]
        np.testing.assert_array_equal(np.concatenate([d for d, _ in pairs]), x)
        np.testing.assert_array_equal(np.concatenate([l for _, l in pairs]), np.arange(5))
    kept = mx.contrib.io.DataIterLoader(mx.io.NDArrayIter(x, batch_size=2), keep_pad=True)
    assert [d.shape[0] for d in kept] == [2, 2, 2]
