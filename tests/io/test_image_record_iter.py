"""mx.io.ImageRecordIter on small .rec files written here: batches computed in numpy,
the record order (round_batch, shuffle, parts), labels, dtypes, the mean image, the
random augmentations, worker processes, clear errors, the OpenCV and libstdc++
emulation underneath, and the same batches as MXNet 1.9.1's ImageRecordIter."""
import os

import numpy as np
import pytest

import minigluon as mx
from minigluon import recordio
from minigluon.base import MXNetError
from minigluon.io.image_record_aug import StdRandom
from minigluon.ndarray.image_cv import cv_bgr_to_hls, cv_hls_to_bgr, cv_resize, cv_warp_affine
from minigluon.io.image_record_iter import (ImageRecordInt8Iter, ImageRecordIter,
                                            ImageRecordUInt8Iter)

N, H, W = 10, 10, 12          # records, and the stored size of the 'exact' images


def _smooth(rng, h, w, c=3):
    """A natural-looking image (smooth waves plus noise), HxWxC uint8 RGB."""
    y, x = np.mgrid[0:h, 0:w]
    planes = [127.5 + 100 * np.sin(a * x + b * y + 6 * p) + rng.normal(0, 12, (h, w))
              for a, b, p in rng.uniform(0.05, 0.5, (c, 3))]
    return np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)


def _write(folder, name, images, labels=None, fmt='.png', index=True):
    """``name``.rec (and .idx) holding ``images`` (RGB, packed BGR as OpenCV holds them)."""
    rec, idx = str(folder / (name + '.rec')), str(folder / (name + '.idx'))
    writer = recordio.MXIndexedRecordIO(idx, rec, 'w') if index else \
        recordio.MXRecordIO(rec, 'w')
    for i, img in enumerate(images):
        label = float(i) if labels is None else labels[i]
        pixels = img[:, :, [2, 1, 0, 3][:img.shape[2]]] if img.shape[2] > 1 else img[:, :, 0]
        packed = recordio.pack_img(recordio.IRHeader(0, label, i, 0), pixels, quality=90,
                                   img_fmt=fmt)
        if index:
            writer.write_idx(i, packed)
        else:
            writer.write(packed)
    writer.close()
    return rec, idx


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp('records')
    rng = np.random.RandomState(0)
    exact = [_smooth(rng, H, W) for _ in range(N)]
    sized = [_smooth(rng, 14 + (i * 7) % 11, 13 + (i * 5) % 13) for i in range(13)]
    out = {'exact_images': exact, 'sized_images': sized, 'folder': folder}
    out['exact'], out['exact_idx'] = _write(folder, 'exact', exact)
    out['sized'], out['sized_idx'] = _write(folder, 'sized', sized)
    out['jpg'], _ = _write(folder, 'jpg', sized[:5], fmt='.jpg')
    out['rgba_images'] = [_smooth(rng, H, W, 4) for _ in range(4)]
    out['rgba'], _ = _write(folder, 'rgba', out['rgba_images'])
    out['multi'], _ = _write(folder, 'multi', exact[:6],
                             labels=[np.array([i, 10 + i, 20 + i], np.float32)
                                     for i in range(6)])
    return out


def _iter(path, **kwargs):
    kwargs.setdefault('preprocess_threads', 0)
    kwargs.setdefault('verbose', False)
    kwargs.setdefault('batch_size', 4)
    kwargs.setdefault('data_shape', (3, H, W))
    return ImageRecordIter(path_imgrec=path, **kwargs)


def _epoch(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def _labels(batches):
    return [b[1].astype(int).tolist() for b in batches]


def _chw(img):
    return img.transpose(2, 0, 1).astype(np.float32)


# ---- batches, order and pads -------------------------------------------------------------
def test_batches_are_the_images_in_rgb_chw_with_a_round_robin_last_batch(files):
    it = _iter(files['exact'])
    assert it.provide_data[0].name == 'data'
    assert it.provide_data[0].shape == (4, 3, H, W)
    assert it.provide_data[0].dtype == np.float32
    assert it.provide_label[0].name == 'softmax_label'
    assert it.provide_label[0].shape == (4,)
    batches = _epoch(it)
    assert _labels(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert [b[2] for b in batches] == [0, 0, 2]
    images = files['exact_images']
    for data, label, _ in batches:
        for row, k in zip(data, label.astype(int)):
            np.testing.assert_array_equal(row, _chw(images[k]))
    # the next epoch starts after the two records the last batch borrowed
    it.reset()
    second = _epoch(it)
    assert _labels(second) == [[2, 3, 4, 5], [6, 7, 8, 9]]
    assert [b[2] for b in second] == [0, 0]
    it.reset()
    assert _labels(_epoch(it)) == _labels(batches)


def test_without_round_batch_the_last_batch_is_short_and_zero_filled(files):
    it = _iter(files['exact'], round_batch=False)
    for _ in range(2):
        batches = _epoch(it)
        assert [b[2] for b in batches] == [0, 0, 2]
        data, label, _ = batches[-1]
        assert label.tolist() == [8, 9, 0, 0]
        assert not data[2:].any()
        it.reset()


def test_getdata_iter_next_and_index(files):
    it = _iter(files['exact'])
    assert it.iter_next()
    first = it.getlabel().asnumpy().tolist()
    assert first == [0, 1, 2, 3]
    assert it.getdata().shape == (4, 3, H, W)
    assert it.getpad() == 0
    assert it.getindex().tolist() == [0, 1, 2, 3]      # the records' ids
    while it.iter_next():
        pass
    it.reset()
    assert it.iter_next() and it.getlabel().asnumpy().tolist() == [2, 3, 4, 5]


def test_reset_in_the_middle_of_an_epoch_starts_over(files):
    it = _iter(files['exact'])
    next(it)
    next(it)
    it.reset()
    assert _labels(_epoch(it))[0] == [0, 1, 2, 3]


def test_a_batch_larger_than_the_data_set_wraps_round(files):
    it = _iter(files['exact'], batch_size=16)
    batch = next(it)
    assert batch.pad == 6
    assert batch.label[0].asnumpy().astype(int).tolist() == list(range(10)) + list(range(6))
    with pytest.raises(MXNetError, match='bigger than the batch size'):
        _iter(files['exact'], batch_size=25)


@pytest.mark.parametrize('indexed', [True, False])
def test_shuffle_is_a_seeded_permutation_per_epoch(files, indexed):
    extra = {'path_imgidx': files['exact_idx']} if indexed else {}

    def order(seed, epochs=2):
        it = _iter(files['exact'], shuffle=True, seed=seed, batch_size=5, **extra)
        out = []
        for _ in range(epochs):
            batches = _epoch(it)
            images = files['exact_images']
            for data, label, _ in batches:
                for row, k in zip(data, label.astype(int)):
                    np.testing.assert_array_equal(row, _chw(images[k]))
            out.append(sum(_labels(batches), []))
            it.reset()
        return out

    first, again, other = order(1), order(1), order(2)
    assert first == again
    assert first != other
    for epoch in first + other:
        assert sorted(epoch) == list(range(N))
    assert first[0] != first[1]                 # reshuffled every epoch
    assert first[0] != list(range(N))


@pytest.mark.parametrize('indexed', [True, False])
def test_parts_are_disjoint_and_cover_the_file(files, indexed):
    extra = {'path_imgidx': files['sized_idx']} if indexed else {}
    seen = []
    for part in range(3):
        it = _iter(files['sized'], num_parts=3, part_index=part, round_batch=False,
                   data_shape=(3, 12, 12), **extra)
        labels = []
        for data, label, pad in _epoch(it):
            labels += label[:len(label) - pad].astype(int).tolist()
        assert labels == sorted(labels)                 # a contiguous run of records
        seen.append(labels)
    assert sorted(sum(seen, [])) == list(range(13))
    if indexed:        # by record count: ceil(13 / 3) = 5 per part
        assert [len(s) for s in seen] == [5, 5, 3]


def test_an_empty_part_is_an_error(files):
    with pytest.raises(MXNetError, match='holds no records'):
        _iter(files['exact'], path_imgidx=files['exact_idx'], num_parts=12, part_index=11)


# ---- values: normalisation, dtypes, channels, labels -------------------------------------
def test_mean_std_and_scale(files):
    mean, std, scale = (123.68, 116.28, 103.53), (58.4, 57.1, 57.4), 0.5
    it = _iter(files['exact'], mean_r=mean[0], mean_g=mean[1], mean_b=mean[2],
               std_r=std[0], std_g=std[1], std_b=std[2], scale=scale)
    data, label, _ = _epoch(it)[0]
    for row, k in zip(data, label.astype(int)):
        expected = (_chw(files['exact_images'][k]) - np.array(mean)[:, None, None]) \
            * scale / np.array(std)[:, None, None]
        np.testing.assert_allclose(row, expected, rtol=1e-5, atol=1e-5)


def test_uint8_and_int8_batches(files):
    images = files['exact_images']
    it = ImageRecordUInt8Iter(path_imgrec=files['exact'], data_shape=(3, H, W), batch_size=4,
                              preprocess_threads=0, verbose=False)
    assert it.provide_data[0].dtype == np.uint8
    data = next(it).data[0].asnumpy()
    assert data.dtype == np.uint8
    np.testing.assert_array_equal(data[1], images[1].transpose(2, 0, 1))
    it = ImageRecordInt8Iter(path_imgrec=files['exact'], data_shape=(3, H, W), batch_size=4,
                             preprocess_threads=0, verbose=False, mean_r=100.5, mean_g=128,
                             mean_b=0.4)
    data = next(it).data[0].asnumpy()
    assert data.dtype == np.int8
    shift = np.array([101, 128, 0])[:, None, None]        # std::round: halves away from 0
    expected = np.clip(images[2].transpose(2, 0, 1).astype(int) - shift, -128, 127)
    np.testing.assert_array_equal(data[2], expected)
    with pytest.raises(MXNetError, match='float32, uint8 or int8'):
        _iter(files['exact'], dtype='float16')


def test_gray_and_rgba_records(files):
    img = files['exact_images'][3].astype(np.int64)
    gray = next(_iter(files['exact'], data_shape=(1, H, W))).data[0].asnumpy()[3, 0]
    # OpenCV reads a colour PNG as gray through libpng's integer weights
    expected = (img[..., 0] * 9797 + img[..., 1] * 19234 + img[..., 2] * 3737) >> 15
    np.testing.assert_array_equal(gray, expected)
    rgba = next(_iter(files['rgba'], data_shape=(4, H, W))).data[0].asnumpy()
    np.testing.assert_array_equal(rgba[1], _chw(files['rgba_images'][1]))
    with pytest.raises(MXNetError, match='4'):
        next(_iter(files['exact'], data_shape=(4, H, W)))


def test_multi_labels_and_image_lists(files, tmp_path):
    it = _iter(files['multi'], label_width=3)
    assert it.provide_label[0].shape == (4, 3)
    label = next(it).label[0].asnumpy()
    np.testing.assert_array_equal(label[1], [1, 11, 21])
    with pytest.raises(MXNetError, match='label_width'):
        _iter(files['multi'])
    with pytest.raises(MXNetError, match='label_width'):
        _iter(files['exact'], label_width=2)
    lst = tmp_path / 'labels.lst'
    lst.write_text(''.join('%d\t%d\t%d\timg%d.png\n' % (i, 7 * i, -i, i) for i in range(N)))
    it = _iter(files['exact'], path_imglist=str(lst), label_width=2)
    np.testing.assert_array_equal(next(it).label[0].asnumpy()[3], [21, -3])


def test_resize_and_centre_crop(files):
    images = files['exact_images']
    # resize to the short side is a copy; the crop is centred: rows 1..9, columns 2..10
    data = next(_iter(files['exact'], data_shape=(3, 8, 8), resize=H)).data[0].asnumpy()
    np.testing.assert_array_equal(data[0], _chw(images[0][1:9, 2:10]))
    # images smaller than data_shape are scaled up first
    data = next(_iter(files['sized'], data_shape=(3, 30, 30))).data[0].asnumpy()
    assert data.shape == (4, 3, 30, 30)


def test_a_mean_image_is_computed_saved_and_loaded(files, tmp_path):
    path = str(tmp_path / 'mean.nd')
    it = _iter(files['exact'], mean_img=path)
    assert os.path.exists(path)
    saved = mx.nd.load(path)
    assert list(saved) == ['mean_img']
    images = np.stack([_chw(img) for img in files['exact_images']])
    np.testing.assert_allclose(saved['mean_img'].asnumpy(), images.mean(0), rtol=1e-5)
    data, label, _ = _epoch(it)[0]
    np.testing.assert_allclose(data, images[label.astype(int)] - images.mean(0),
                               rtol=1e-4, atol=1e-4)
    # a second iterator loads the file (here a different one: the loaded values are used)
    mx.nd.save(path, {'mean_img': mx.nd.ones((3, H, W)) * 7})
    data = next(_iter(files['exact'], mean_img=path)).data[0].asnumpy()
    np.testing.assert_allclose(data[0], images[0] - 7)
    mx.nd.save(path, {'mean_img': mx.nd.ones((3, 4, 4))})
    with pytest.raises(MXNetError, match='shape'):
        _iter(files['exact'], mean_img=path)


# ---- random augmentations ----------------------------------------------------------------
AUGMENTATIONS = {
    'crop_mirror': dict(rand_crop=True, rand_mirror=True),
    'rotate': dict(max_rotate_angle=30),
    'scale_shear_aspect': dict(max_random_scale=1.3, min_random_scale=0.8,
                               max_shear_ratio=0.2, max_aspect_ratio=0.3),
    'hsl': dict(random_h=30, random_s=40, random_l=40),
    'illumination_contrast': dict(max_random_illumination=20, max_random_contrast=0.3),
    'color_jitter_pca': dict(brightness=0.3, contrast=0.3, saturation=0.3, pca_noise=0.1),
    'resized_crop': dict(random_resized_crop=True, min_random_area=0.3,
                         max_aspect_ratio=1.33, min_aspect_ratio=0.75),
    'pad_crop_size': dict(pad=2, max_crop_size=12, min_crop_size=8, rand_crop=True),
}


@pytest.mark.parametrize('name', sorted(AUGMENTATIONS))
def test_random_augmentations_repeat_with_seed_aug_and_change_with_another(files, name):
    kwargs = dict(AUGMENTATIONS[name], data_shape=(3, 9, 9))

    def data(seed):
        return next(_iter(files['sized'], seed_aug=seed, **kwargs)).data[0].asnumpy()

    first = data(3)
    assert first.shape == (4, 3, 9, 9)
    np.testing.assert_array_equal(first, data(3))
    assert not np.array_equal(first, data(4))
    plain = next(_iter(files['sized'], data_shape=(3, 9, 9))).data[0].asnumpy()
    assert not np.array_equal(first, plain)


def test_random_crops_and_mirrors_are_windows_of_the_image(files):
    images = files['exact_images']
    it = _iter(files['exact'], data_shape=(3, 6, 7), rand_crop=True, rand_mirror=True)
    flips = set()
    for data, label, _ in _epoch(it):
        for row, k in zip(data, label.astype(int)):
            img = _chw(images[k])
            windows = [img[:, y:y + 6, x:x + 7] for y in range(H - 5) for x in range(W - 6)]
            straight = any(np.array_equal(row, w) for w in windows)
            mirrored = any(np.array_equal(row[:, :, ::-1], w) for w in windows)
            assert straight or mirrored
            flips.add(mirrored and not straight)
    assert flips == {True, False}


def test_without_seed_aug_epochs_differ_and_runs_repeat(files):
    def two_epochs():
        it = _iter(files['exact'], rand_crop=True, data_shape=(3, 6, 6), batch_size=5)
        out = [np.concatenate([b[0] for b in _epoch(it)])]
        it.reset()
        out.append(np.concatenate([b[0] for b in _epoch(it)]))
        return out

    one, two = two_epochs(), two_epochs()
    np.testing.assert_array_equal(one[0], two[0])
    assert not np.array_equal(one[0], one[1])


def test_worker_processes_give_the_same_batches(files):
    kwargs = dict(seed_aug=1, rand_crop=True, rand_mirror=True, max_rotate_angle=20,
                  data_shape=(3, 9, 9), shuffle=True, path_imgidx=files['sized_idx'])
    alone = _iter(files['sized'], **kwargs)
    workers = _iter(files['sized'], preprocess_threads=2, **kwargs)
    # Epochs after the first are decoded from the moment the one before ends; a reset in
    # the middle of an epoch starts the next one afresh.
    for epoch in range(4):
        if epoch == 2:
            next(alone), next(workers)
            alone.reset()
            workers.reset()
        for (d0, l0, p0), (d1, l1, p1) in zip(_epoch(alone), _epoch(workers)):
            np.testing.assert_array_equal(d0, d1)
            np.testing.assert_array_equal(l0, l1)
            assert p0 == p1
        alone.reset()
        workers.reset()


def test_jpeg_records_decode(files):
    import io
    from PIL import Image
    data = next(_iter(files['jpg'], data_shape=(3, 12, 12))).data[0].asnumpy()
    reader = recordio.MXRecordIO(files['jpg'], 'r')
    _, payload = recordio.unpack(reader.read())
    reader.close()
    img = np.asarray(Image.open(io.BytesIO(payload)).convert('RGB'))
    top, left = (img.shape[0] - 12) // 2, (img.shape[1] - 12) // 2
    np.testing.assert_array_equal(data[0], _chw(img[top:top + 12, left:left + 12]))


# ---- errors ----------------------------------------------------------------------------------
def test_clear_errors_for_bad_arguments(files, tmp_path):
    with pytest.raises(MXNetError, match='not a file'):
        _iter(str(tmp_path / 'missing.rec'))
    with pytest.raises(MXNetError, match='1 .gray., 3 .RGB. or 4'):
        _iter(files['exact'], data_shape=(2, H, W))
    with pytest.raises(MXNetError, match='channels, height, width'):
        _iter(files['exact'], data_shape=(3, H))
    with pytest.raises(MXNetError, match='part_index'):
        _iter(files['exact'], num_parts=2, part_index=2)
    with pytest.raises(MXNetError, match='inter_method'):
        _iter(files['exact'], inter_method=7)
    with pytest.raises(MXNetError, match='batch_size'):
        ImageRecordIter(path_imgrec=files['exact'], data_shape=(3, H, W))
    with pytest.warns(UserWarning, match='and_mirror'):
        _iter(files['exact'], and_mirror=True)


def test_corrupt_files_are_reported(files, tmp_path):
    raw = open(files['exact'], 'rb').read()
    truncated = tmp_path / 'truncated.rec'
    truncated.write_bytes(raw[:len(raw) - 100])
    with pytest.raises(MXNetError, match='truncated|ends'):
        _iter(str(truncated))
    # a record whose payload is not an image
    bad = tmp_path / 'bad.rec'
    writer = recordio.MXRecordIO(str(bad), 'w')
    writer.write(recordio.pack(recordio.IRHeader(0, 1.0, 0, 0), b'not an image at all'))
    writer.close()
    with pytest.raises(MXNetError, match='cannot decode'):
        _iter(str(bad), batch_size=1)
    # an index pointing into the middle of a record
    idx = tmp_path / 'bad.idx'
    idx.write_text('0\t0\n1\t12\n')
    with pytest.raises(MXNetError, match='offset 12'):
        _epoch(_iter(files['exact'], path_imgidx=str(idx), batch_size=2))


# ---- the emulation underneath --------------------------------------------------------------
def test_unindexed_files_are_read_in_dmlc_chunks():
    # dmlc-core reads 8 MiB windows: the last record starting in a full window waits for
    # the next one; a window without a second record start doubles
    from minigluon.io.image_record_iter import _chunks
    starts = np.array([0, 100, 200, 300, 400, 500])
    assert _chunks(starts, 600, window_words=50) == [(0, 1), (1, 2), (2, 3), (3, 4),
                                                     (4, 5), (5, 6)]
    assert _chunks(starts, 600, window_words=75) == [(0, 2), (2, 4), (4, 6)]
    assert _chunks(starts, 600, window_words=150) == [(0, 5), (5, 6)]
    assert _chunks(starts, 600, window_words=151) == [(0, 6)]
    assert _chunks(starts[:1], 5000, window_words=10) == [(0, 1)]


def test_std_random_is_mt19937_with_libstdcxx_distributions():
    gen = StdRandom(5489)                     # std::mt19937's default seed
    for _ in range(9999):
        gen.raw()
    assert gen.raw() == 4123659995            # the C++ standard's check value
    one, two = StdRandom(7), StdRandom(7)
    items = list(range(5000))
    one.shuffle(items)
    expected = list(range(5000))
    for i in range(1, 5000):
        j = two.uniform_int(0, i)
        expected[i], expected[j] = expected[j], expected[i]
    assert items == expected
    assert one.raw() == two.raw()             # the block draws end where one-by-one does


def test_opencv_resize_kernels():
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, (8, 10, 3)).astype(np.uint8)
    # exact 2x shrink: bilinear becomes the 2x2 average rounded half up
    blocks = img.astype(int).reshape(4, 2, 5, 2, 3).sum((1, 3))
    np.testing.assert_array_equal(cv_resize(img, 5, 4, 1), (blocks + 2) >> 2)
    # nearest takes floor(x * scale); same size is a copy
    np.testing.assert_array_equal(cv_resize(img, 5, 4, 0), img[::2, ::2])
    np.testing.assert_array_equal(cv_resize(img, 10, 8, 2), img)
    flat = np.full((5, 7, 3), 77, np.uint8)
    for interp in range(5):
        np.testing.assert_array_equal(cv_resize(flat, 11, 3, interp), 77)


def test_opencv_warp_and_hls_kernels():
    rng = np.random.RandomState(1)
    img = rng.randint(0, 256, (6, 7, 3)).astype(np.uint8)
    identity = np.array([[1, 0, 0], [0, 1, 0]], np.float32)
    for interp in (0, 1, 2, 4):
        np.testing.assert_array_equal(cv_warp_affine(img, identity, 7, 6, interp, 9), img)
    shift = np.array([[1, 0, 2], [0, 1, 0]], np.float32)
    moved = cv_warp_affine(img, shift, 7, 6, 1, 9)
    np.testing.assert_array_equal(moved[:, 2:], img[:, :5])
    assert (moved[:, :2] == 9).all()
    # OpenCV's values (cv2.cvtColor), quantisation of the round trip included
    pixels = np.array([[[0, 0, 255], [0, 255, 0], [255, 0, 0], [255, 255, 255], [0, 0, 0],
                        [40, 200, 90]]], np.uint8)
    hls = cv_bgr_to_hls(pixels)
    np.testing.assert_array_equal(hls[0], [[0, 128, 255], [60, 128, 255], [120, 128, 255],
                                           [0, 255, 0], [0, 0, 0], [51, 120, 170]])
    np.testing.assert_array_equal(cv_hls_to_bgr(hls)[0],
                                  [[1, 1, 255], [1, 255, 1], [255, 1, 1], [255, 255, 255],
                                   [0, 0, 0], [40, 200, 88]])


# ---- the same batches as MXNet 1.9.1 ---------------------------------------------------------
# Each case: (file, extra parameters, epochs). PNG records make the comparison exact;
# resizing, warping and colour conversion emulate OpenCV 3.4 and libstdc++'s random
# numbers, so they are exact too (a tolerance would hide a drift).
MXNET_CASES = [
    ('exact', dict(data_shape=(3, H, W)), 2),
    ('exact', dict(data_shape=(3, H, W), mean_r=123.7, mean_g=116.3, mean_b=103.5,
                   std_r=58.4, std_g=57.1, std_b=57.4, scale=0.5), 1),
    ('sized', dict(data_shape=(3, 12, 12), resize=13), 2),
    ('sized', dict(data_shape=(3, 12, 12), resize=13, inter_method=2), 1),
    ('sized', dict(data_shape=(3, 12, 12), resize=17, inter_method=3), 1),
    ('sized', dict(data_shape=(3, 20, 20)), 1),
    ('jpg', dict(data_shape=(3, 12, 12)), 1),
    ('sized', dict(data_shape=(3, 12, 12), shuffle=True, seed=4), 3),
    ('sized', dict(data_shape=(3, 12, 12), shuffle=True, seed=4, use_idx=True), 3),
    ('sized', dict(data_shape=(3, 12, 12), num_parts=2, part_index=0), 2),
    ('sized', dict(data_shape=(3, 12, 12), num_parts=2, part_index=1), 2),
    ('sized', dict(data_shape=(3, 12, 12), num_parts=2, part_index=1, use_idx=True), 2),
    ('sized', dict(data_shape=(3, 9, 9), seed_aug=3, rand_crop=True, rand_mirror=True,
                   max_rotate_angle=25, max_shear_ratio=0.2, max_random_scale=1.2,
                   random_h=20, random_s=30, random_l=30, max_random_illumination=10), 1),
    ('sized', dict(data_shape=(3, 9, 9), seed_aug=5, brightness=0.3, contrast=0.3,
                   saturation=0.3, pca_noise=0.1, random_resized_crop=True,
                   min_random_area=0.4, max_aspect_ratio=1.3, min_aspect_ratio=0.8), 1),
    ('exact', dict(data_shape=(3, H, W), dtype='uint8', mirror=True), 1),
    ('sized', dict(data_shape=(3, 12, 12), round_batch=False, use_idx=True), 2),
    ('exact', dict(data_shape=(1, H, W), mean_r=100), 1),
    ('jpg', dict(data_shape=(1, 12, 12)), 1),
    ('rgba', dict(data_shape=(4, H, W), mean_a=10, std_a=3), 1),
    ('exact', dict(data_shape=(3, H, W), dtype='int8', mean_r=100.5, mean_g=-3.5), 1),
]

MXNET_SCRIPT = '''
import json, os, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
cases = json.load(open(os.path.join(folder, 'cases.json')))
out = {}
for n, (path, idx, kwargs, epochs) in enumerate(cases):
    if idx:
        kwargs['path_imgidx'] = idx
    it = mx.io.ImageRecordIter(path_imgrec=path, batch_size=4, verbose=False, **kwargs)
    k = 0
    for _ in range(epochs):
        for batch in it:
            out['%d_%d_data' % (n, k)] = batch.data[0].asnumpy()
            out['%d_%d_label' % (n, k)] = batch.label[0].asnumpy()
            out['%d_%d_pad' % (n, k)] = np.array(batch.pad)
            k += 1
        it.reset()
    out['%d_batches' % n] = np.array(k)
mean = os.path.join(folder, 'mean_mxnet.nd')
it = mx.io.ImageRecordIter(path_imgrec=cases[0][0], batch_size=4, data_shape=(3, 10, 12),
                           verbose=False, mean_img=mean, std_r=2.0, scale=0.5)
out['mean_data'] = it.next().data[0].asnumpy()
np.savez(os.path.join(folder, 'mxnet.npz'), **out)
'''


def test_mxnet_gives_the_same_batches(files, tmp_path, run_mxnet):
    import json
    cases = []
    for name, kwargs, epochs in MXNET_CASES:
        kwargs = dict(kwargs)
        idx = files[name + '_idx'] if kwargs.pop('use_idx', False) else ''
        cases.append((files[name], idx, kwargs, epochs))
    (tmp_path / 'cases.json').write_text(json.dumps(cases))
    run_mxnet(tmp_path, MXNET_SCRIPT)
    ref = np.load(str(tmp_path / 'mxnet.npz'))
    for n, (path, idx, kwargs, epochs) in enumerate(cases):
        extra = {'path_imgidx': idx} if idx else {}
        it = ImageRecordIter(path_imgrec=path, batch_size=4, verbose=False,
                             preprocess_threads=0, **dict(kwargs, **extra))
        k = 0
        for _ in range(epochs):
            for batch in it:
                what = 'case %d (%s) batch %d' % (n, kwargs, k)
                # MXNet sets pad only on a batch that wraps round; a recycled batch keeps
                # a stale pad, so only the wrapping batches' pads are MXNet's answer.
                # Without round_batch MXNet says pad 0 and leaves stale rows: compare the
                # rows that hold records.
                rows = 4 - batch.pad
                if batch.pad and kwargs.get('round_batch', True):
                    assert batch.pad == int(ref['%d_%d_pad' % (n, k)]), what
                np.testing.assert_array_equal(batch.label[0].asnumpy()[:rows],
                                              ref['%d_%d_label' % (n, k)][:rows], err_msg=what)
                np.testing.assert_allclose(batch.data[0].asnumpy()[:rows],
                                           ref['%d_%d_data' % (n, k)][:rows], rtol=0,
                                           atol=1e-5, err_msg=what)
                k += 1
            it.reset()
        assert k == int(ref['%d_batches' % n])
    # the mean image MXNet computed and saved: minigluon reads it and computes the same
    ours = str(tmp_path / 'mean_minigluon.nd')
    it = ImageRecordIter(path_imgrec=cases[0][0], batch_size=4, data_shape=(3, 10, 12),
                         verbose=False, mean_img=ours, std_r=2.0, scale=0.5,
                         preprocess_threads=0)
    np.testing.assert_array_equal(mx.nd.load(ours)['mean_img'].asnumpy(),
                                  mx.nd.load(str(tmp_path / 'mean_mxnet.nd'))['mean_img']
                                  .asnumpy())
    np.testing.assert_allclose(next(it).data[0].asnumpy(), ref['mean_data'], atol=1e-5)
