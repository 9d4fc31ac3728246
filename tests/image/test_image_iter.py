"""mx.image.ImageIter over .rec files (with and without an index), list files and
in-memory lists: batches, labels, the three last-batch modes, parts, shuffling, and the
same batches as MXNet 1.9.1's ImageIter on the same files."""
import os
import random

import numpy as np
import pytest
from PIL import Image

import minigluon as mx
from minigluon import recordio
from minigluon.base import MXNetError

N_IMAGES = 7
H, W = 10, 12            # stored images
SHAPE = (3, 8, 8)        # after the default centre crop (no resize)


def _images(n=N_IMAGES, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.randint(0, 256, size=(H, W, 3)).astype(np.uint8) for _ in range(n)]


def _expected(img):
    """The CHW float32 centre crop of an RGB image, as a batch holds it."""
    top, left = (H - SHAPE[1]) // 2, (W - SHAPE[2]) // 2
    return img[top:top + SHAPE[1], left:left + SHAPE[2]].transpose(2, 0, 1).astype(np.float32)


def _write_rec(folder, images, labels, with_idx=True, name='data'):
    """A .rec (PNG images, packed BGR as OpenCV holds them) and its .idx."""
    rec, idx = str(folder / (name + '.rec')), str(folder / (name + '.idx'))
    writer = recordio.MXIndexedRecordIO(idx, rec, 'w') if with_idx \
        else recordio.MXRecordIO(rec, 'w')
    for i, (img, label) in enumerate(zip(images, labels)):
        packed = recordio.pack_img(recordio.IRHeader(0, label, i, 0), img[:, :, ::-1],
                                   img_fmt='.png')
        if with_idx:
            writer.write_idx(i, packed)
        else:
            writer.write(packed)
    writer.close()
    return rec, idx


def _write_files(folder, images):
    names = []
    for i, img in enumerate(images):
        names.append('img%d.png' % i)
        Image.fromarray(img).save(str(folder / names[-1]))
    return names


def _epoch(it):
    """Every batch of one pass: (data, labels, pad)."""
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def _flat(batches):
    data = np.concatenate([d[:len(d) - p] for d, _, p in batches])
    labels = np.concatenate([lbl[:len(lbl) - p] for _, lbl, p in batches])
    return data, labels


@pytest.fixture
def dataset(tmp_path):
    images = _images()
    labels = [float(i % 4) for i in range(N_IMAGES)]
    rec, idx = _write_rec(tmp_path, images, labels)
    return images, labels, rec, idx


def test_a_rec_file_in_order_with_and_without_index(tmp_path, dataset):
    images, labels, rec, idx = dataset
    for path_imgidx in (idx, None):
        it = mx.image.ImageIter(3, SHAPE, path_imgrec=rec, path_imgidx=path_imgidx)
        assert isinstance(it, mx.io.DataIter)
        assert it.provide_data == [('data', (3,) + SHAPE)]
        assert it.provide_label == [('softmax_label', (3,))]
        batches = _epoch(it)
        assert [p for _, _, p in batches] == [0, 0, 2]
        for data, label, _ in batches:
            assert data.shape == (3,) + SHAPE and data.dtype == np.float32
            assert label.shape == (3,) and label.dtype == np.float32
        data, got = _flat(batches)
        np.testing.assert_array_equal(data, np.stack([_expected(i) for i in images]))
        np.testing.assert_array_equal(got, labels)
        # the padding repeats the first images
        np.testing.assert_array_equal(batches[-1][0][1:], data[:2])
        it.reset()
        np.testing.assert_array_equal(_flat(_epoch(it))[0], data)


def test_an_image_list_file_and_an_in_memory_list(tmp_path):
    images = _images()
    names = _write_files(tmp_path, images)
    with open(tmp_path / 'data.lst', 'w') as f:
        for i, name in enumerate(names):
            f.write('%d\t%f\t%s\n' % (i, i % 3, name))
    expected = np.stack([_expected(i) for i in images])
    for dtype in ('float32', 'int32'):
        from_file = mx.image.ImageIter(4, SHAPE, path_imglist=str(tmp_path / 'data.lst'),
                                       path_root=str(tmp_path), dtype=dtype)
        data, labels = _flat(_epoch(from_file))
        np.testing.assert_array_equal(data, expected)
        np.testing.assert_array_equal(labels, [i % 3 for i in range(N_IMAGES)])
    in_memory = mx.image.ImageIter(
        4, SHAPE, imglist=[[i % 3, str(tmp_path / n)] for i, n in enumerate(names)])
    data, labels = _flat(_epoch(in_memory))
    np.testing.assert_array_equal(data, expected)
    np.testing.assert_array_equal(labels, [i % 3 for i in range(N_IMAGES)])


def test_pad_discard_and_roll_over(dataset):
    _, _, rec, idx = dataset
    every = _flat(_epoch(mx.image.ImageIter(1, SHAPE, path_imgrec=rec, path_imgidx=idx)))[0]

    pad = mx.image.ImageIter(3, SHAPE, path_imgrec=rec, path_imgidx=idx)
    batches = _epoch(pad)
    assert [p for _, _, p in batches] == [0, 0, 2]
    np.testing.assert_array_equal(batches[2][0], every[[6, 0, 1]])

    discard = mx.image.ImageIter(3, SHAPE, path_imgrec=rec, path_imgidx=idx,
                                 last_batch_handle='discard')
    for _ in range(2):
        batches = _epoch(discard)
        assert len(batches) == 2 and all(p == 0 for _, _, p in batches)
        np.testing.assert_array_equal(_flat(batches)[0], every[:6])
        discard.reset()

    roll = mx.image.ImageIter(3, SHAPE, path_imgrec=rec, path_imgidx=idx,
                              last_batch_handle='roll_over')
    first = _epoch(roll)
    assert len(first) == 2
    np.testing.assert_array_equal(_flat(first)[0], every[:6])
    roll.reset()
    second = _epoch(roll)
    # image 6 left over, completed by the next epoch's first two; pad counts those two
    assert [p for _, _, p in second] == [2, 0]
    np.testing.assert_array_equal(second[0][0], every[[6, 0, 1]])
    np.testing.assert_array_equal(second[1][0], every[2:5])
    roll.reset()
    third = _epoch(roll)
    assert [p for _, _, p in third] == [1, 0, 0]
    np.testing.assert_array_equal(third[0][0], every[[5, 6, 0]])
    roll.hard_reset()
    np.testing.assert_array_equal(_epoch(roll)[0][0], every[:3])


@pytest.mark.parametrize('source', ['rec', 'list'])
def test_parts_are_disjoint_and_cover_the_data(tmp_path, source):
    images = _images(8)
    labels = [float(i) for i in range(8)]
    rec, idx = _write_rec(tmp_path, images, labels)
    names = _write_files(tmp_path, images)
    with open(tmp_path / 'data.lst', 'w') as f:
        for i, name in enumerate(names):
            f.write('%d\t%d\t%s\n' % (i, i, name))
    kwargs = dict(path_imgrec=rec, path_imgidx=idx) if source == 'rec' else \
        dict(path_imglist=str(tmp_path / 'data.lst'), path_root=str(tmp_path))

    def part_labels(part_index, num_parts):
        it = mx.image.ImageIter(2, SHAPE, part_index=part_index, num_parts=num_parts,
                                **kwargs)
        return _flat(_epoch(it))[1].tolist()

    parts = [part_labels(i, 4) for i in range(4)]
    assert parts == [[0, 1], [2, 3], [4, 5], [6, 7]]
    # as MXNet: equal parts of len // num_parts keys; the remainder belongs to none
    assert [part_labels(i, 3) for i in range(3)] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(MXNetError, match='part_index'):
        mx.image.ImageIter(2, SHAPE, part_index=3, num_parts=3, **kwargs)


def test_shuffle_is_a_new_permutation_each_epoch_from_random(dataset):
    images, _, rec, idx = dataset
    every = np.stack([_expected(i) for i in images])
    random.seed(5)
    it = mx.image.ImageIter(7, SHAPE, path_imgrec=rec, path_imgidx=idx, shuffle=True)
    orders = []
    for _ in range(3):
        (data, _, pad), = _epoch(it)
        assert pad == 0
        order = [int(np.flatnonzero((every == d).all(axis=(1, 2, 3)))[0]) for d in data]
        assert sorted(order) == list(range(7))
        orders.append(order)
        it.reset()
    assert orders[0] != orders[1] or orders[1] != orders[2]
    # the permutations are random.shuffle's on the keys
    random.seed(5)
    keys = list(range(7))
    random.shuffle(keys)
    assert orders[0] == keys
    with pytest.raises(MXNetError, match='path_imgidx'):
        mx.image.ImageIter(2, SHAPE, path_imgrec=rec, shuffle=True)


def test_label_width_two(tmp_path):
    images = _images(5)
    labels = [[float(i), 10.0 + i] for i in range(5)]
    rec, idx = _write_rec(tmp_path, images, labels)
    it = mx.image.ImageIter(2, SHAPE, label_width=2, path_imgrec=rec, path_imgidx=idx)
    assert it.provide_label == [('softmax_label', (2, 2))]
    np.testing.assert_array_equal(_flat(_epoch(it))[1], labels)
    names = _write_files(tmp_path, images)
    with open(tmp_path / 'two.lst', 'w') as f:
        for i, name in enumerate(names):
            f.write('%d\t%d\t%d\t%s\n' % (i, i, 10 + i, name))
    it = mx.image.ImageIter(2, SHAPE, label_width=2, path_imglist=str(tmp_path / 'two.lst'),
                            path_root=str(tmp_path))
    np.testing.assert_array_equal(_flat(_epoch(it))[1], labels)
    it = mx.image.ImageIter(2, SHAPE, label_width=2,
                            imglist=[[i, 10 + i, str(tmp_path / n)] for i, n in enumerate(names)])
    np.testing.assert_array_equal(_flat(_epoch(it))[1], labels)
    with pytest.raises(MXNetError, match='label_width'):
        _epoch(mx.image.ImageIter(2, SHAPE, path_imgrec=rec, path_imgidx=idx))


def test_the_steps_a_subclass_can_override(dataset):
    images, _, rec, idx = dataset
    it = mx.image.ImageIter(2, SHAPE, path_imgrec=rec, path_imgidx=idx,
                            aug_list=[mx.image.ForceResizeAug((8, 8))])
    label, raw = it.next_sample()
    img = it.imdecode(raw)
    np.testing.assert_array_equal(img.asnumpy(), images[0])
    out = it.postprocess_data(it.augmentation_transform(img))
    assert out.shape == SHAPE
    it.check_valid_image(img)
    assert label == 0.0


def test_bad_arguments_and_broken_images(tmp_path, dataset):
    _, _, rec, idx = dataset
    with pytest.raises(MXNetError, match='path_imgrec'):
        mx.image.ImageIter(2, SHAPE)
    with pytest.raises(ValueError, match='dtype'):
        mx.image.ImageIter(2, SHAPE, path_imgrec=rec, dtype='uint8')
    with pytest.raises(ValueError, match='last_batch_handle'):
        mx.image.ImageIter(2, SHAPE, path_imgrec=rec, last_batch_handle='keep')
    with pytest.raises(ValueError, match='3 channels'):
        mx.image.ImageIter(2, (1, 8, 8), path_imgrec=rec)
    with pytest.raises(ValueError, match='length 3'):
        mx.image.ImageIter(2, (8, 8), path_imgrec=rec)
    with pytest.raises(MXNetError, match='data_shape'):   # no crop to 8x8
        mx.image.ImageIter(2, SHAPE, path_imgrec=rec, aug_list=[]).next()
    (tmp_path / 'bad.lst').write_text('0\timg.png\n')
    with pytest.raises(MXNetError, match='bad.lst, line 1'):
        mx.image.ImageIter(2, SHAPE, path_imglist=str(tmp_path / 'bad.lst'))
    broken = str(tmp_path / 'broken.rec')
    writer = recordio.MXRecordIO(broken, 'w')
    writer.write(recordio.pack(recordio.IRHeader(0, 1.0, 42, 0), b'not an image'))
    writer.close()
    with pytest.raises(MXNetError, match='Broken image record id 42'):
        mx.image.ImageIter(2, SHAPE, path_imgrec=broken).next()


_MXNET_ITER = '''
import os, random, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
rec, idx = os.path.join(folder, 'data.rec'), os.path.join(folder, 'data.idx')
out = {}
cases = {
    'seq_pad': dict(path_imgrec=rec),
    'idx_pad': dict(path_imgrec=rec, path_imgidx=idx),
    'discard': dict(path_imgrec=rec, path_imgidx=idx, last_batch_handle='discard'),
    'roll': dict(path_imgrec=rec, path_imgidx=idx, last_batch_handle='roll_over'),
    'shuffle': dict(path_imgrec=rec, path_imgidx=idx, shuffle=True),
    'part': dict(path_imgrec=rec, path_imgidx=idx, part_index=1, num_parts=2),
    'list': dict(path_imglist=os.path.join(folder, 'data.lst'), path_root=folder),
}
for name, kwargs in cases.items():
    random.seed(7)
    np.random.seed(7)
    it = mx.image.ImageIter(3, (3, 8, 8), **kwargs)
    for epoch in range(3):
        for b, batch in enumerate(it):
            key = '%s_%d_%d_' % (name, epoch, b)
            out[key + 'data'] = batch.data[0].asnumpy()
            out[key + 'label'] = batch.label[0].asnumpy()
            out[key + 'pad'] = np.array(batch.pad)
        it.reset()
np.savez(os.path.join(folder, 'mxnet.npz'), **out)
'''


def test_same_batches_as_mxnet(tmp_path, run_mxnet, run_minigluon):
    images = _images()
    labels = [float(i % 4) for i in range(N_IMAGES)]
    rec, idx = _write_rec(tmp_path, images, labels)
    names = _write_files(tmp_path, images)
    with open(tmp_path / 'data.lst', 'w') as f:
        for i, name in enumerate(names):
            f.write('%d\t%d\t%s\n' % (i, (i * 3) % 5, name))
    # One script, run by MXNet 1.9.1 and by minigluon, each writing its own batches.
    run_mxnet(tmp_path, _MXNET_ITER)
    os.replace(tmp_path / 'mxnet.npz', tmp_path / 'expected.npz')
    run_minigluon(tmp_path, _MXNET_ITER)
    expected = np.load(tmp_path / 'expected.npz', allow_pickle=False)
    got = np.load(tmp_path / 'mxnet.npz', allow_pickle=False)
    assert sorted(got.files) == sorted(expected.files)
    for key in expected.files:
        assert got[key].dtype == expected[key].dtype, key
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)