"""mx.io.MNISTIter over IDX files: order, scale and shapes as MXNet 1.9.1's C++ MNISTIter."""
import gzip
import os

import numpy as np
import pytest

import minigluon as mx
from minigluon.io.mnist_iter import cxx_shuffle_order

# Tiny IDX files in MNIST's real format (magic, counts, rows, cols, then bytes).
_WRITE_IDX = '''
import os, struct
import numpy as np

def write_idx(folder, count, rows=4, cols=3):
    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, size=(count, rows, cols)).astype(np.uint8)
    labels = (np.arange(count) % 10).astype(np.uint8)
    image_path = os.path.join(folder, 'images-idx3-ubyte')
    label_path = os.path.join(folder, 'labels-idx1-ubyte')
    with open(image_path, 'wb') as f:
        f.write(struct.pack('>IIII', 2051, count, rows, cols) + images.tobytes())
    with open(label_path, 'wb') as f:
        f.write(struct.pack('>II', 2049, count) + labels.tobytes())
    return image_path, label_path, images, labels
'''

_SCRIPT = _WRITE_IDX + '''
import json, sys
import mxnet as mx

folder = sys.argv[1]
image, label, _, _ = write_idx(folder, 23)
answer = {}
configs = {'default': {}, 'seed': dict(seed=5, flat=True),
           'plain': dict(shuffle=False, batch_size=4),
           'part': dict(num_parts=3, part_index=2, batch_size=2, seed=1)}
for name, kwargs in configs.items():
    kwargs.setdefault('batch_size', 5)
    it = mx.io.MNISTIter(image=image, label=label, silent=True, **kwargs)
    epochs = []
    for _ in range(2):
        epochs.append([[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad,
                        b.index.tolist()] for b in it])
        it.reset()
    answer[name] = [epochs, [[d.name, list(d.shape), str(d.dtype)]
                             for d in it.provide_data + it.provide_label]]
with open(os.path.join(folder, 'answer.json'), 'w') as f:
    json.dump(answer, f)
'''


def test_batches_match_mxnet(answers_of_both):
    mxnet, minigluon = answers_of_both(_SCRIPT, 'answer.json')
    for key in mxnet:
        assert minigluon[key] == mxnet[key], key


def test_shuffle_is_libstdcxx_std_shuffle():
    # the first permutation values std::shuffle(0..9, std::mt19937(3)) gives (MXNet's order)
    assert cxx_shuffle_order(10, 3)[:8] == [6, 5, 3, 0, 7, 8, 2, 4]


def _files(tmp_path, count):
    namespace = {}
    exec(_WRITE_IDX, namespace)
    return namespace['write_idx'](str(tmp_path), count)


def test_gz_files_scale_and_shapes(tmp_path):
    image, label, images, labels = _files(tmp_path, 6)
    for path in (image, label):
        with open(path, 'rb') as src, gzip.open(path + '.gz', 'wb') as dst:
            dst.write(src.read())
        os.remove(path)
    # a .gz name, and a plain name that finds the .gz beside it
    it = mx.io.MNISTIter(image=image + '.gz', label=label, batch_size=4, shuffle=False,
                         flat=True, silent=True)
    batch = it.next()
    assert batch.data[0].shape == (4, 12) and batch.label[0].shape == (4,)
    np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                  images[:4].reshape(4, 12).astype(np.float32) / 256)
    np.testing.assert_array_equal(batch.label[0].asnumpy(), labels[:4])
    with pytest.raises(StopIteration):
        it.next()     # the short last batch is dropped, as in MXNet


def test_bad_files_are_reported(tmp_path):
    image, label, _, _ = _files(tmp_path, 6)
    with pytest.raises(mx.MXNetError, match='not a file'):
        mx.io.MNISTIter(image=str(tmp_path / 'missing'), label=label)
    with pytest.raises(mx.MXNetError, match='not an IDX file'):
        mx.io.MNISTIter(image=label, label=label)
    other = tmp_path / 'other'
    other.mkdir()
    _, fewer, _, _ = _files(other, 5)
    with pytest.raises(mx.MXNetError, match='6 images but .* 5 labels'):
        mx.io.MNISTIter(image=image, label=fewer, batch_size=2)
    with pytest.raises(mx.MXNetError, match='fewer examples than one batch'):
        mx.io.MNISTIter(image=image, label=label, batch_size=7)
    with pytest.warns(UserWarning, match='ignores unknown parameters data_shape'):
        mx.io.MNISTIter(image=image, label=label, batch_size=2, data_shape=(12,))
