"""nd.image: MXNet's image ops against numpy references (gradients: op_cases.py)."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError
from minigluon.ndarray.image import interp_method, resized_hw


def _hwc(h=4, w=5, c=3, seed=0):
    return np.random.RandomState(seed).randint(0, 256, size=(h, w, c)).astype(np.uint8)


def test_flips_match_numpy_for_images_and_batches():
    img = _hwc()
    np.testing.assert_array_equal(nd.image.flip_left_right(nd.array(img, dtype='uint8')).asnumpy(),
                                  img[:, ::-1])
    np.testing.assert_array_equal(nd.image.flip_top_bottom(nd.array(img, dtype='uint8')).asnumpy(),
                                  img[::-1])
    batch = np.stack([img, _hwc(seed=1)])
    np.testing.assert_array_equal(nd.image.flip_left_right(nd.array(batch)).asnumpy(),
                                  batch[:, :, ::-1])


def test_to_tensor_and_normalize():
    img = _hwc()
    t = nd.image.to_tensor(nd.array(img, dtype='uint8'))
    assert t.dtype == np.float32 and t.shape == (3, 4, 5)
    np.testing.assert_allclose(t.asnumpy(), img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    out = nd.image.normalize(t, mean=(0.1, 0.2, 0.3), std=(0.5, 1.0, 2.0)).asnumpy()
    ref = (img.transpose(2, 0, 1) / 255.0 - np.array([0.1, 0.2, 0.3])[:, None, None]) \
        / np.array([0.5, 1.0, 2.0])[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError, match='expects an HWC image'):
        nd.image.to_tensor(nd.zeros((1, 2, 3, 4, 3)))
    with pytest.raises(MXNetError, match='3 values but the tensor has 4 channels'):
        nd.image.normalize(nd.zeros((4, 2, 2)), mean=(0, 1, 2), std=(1, 1, 1))


def test_normalize_gradient_is_one_over_std():
    x = nd.ones((2, 2, 2))
    x.attach_grad()
    with autograd.record():
        y = nd.image.normalize(x, mean=(0.0, 1.0), std=(2.0, 4.0))
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy()[:, 0, 0], [0.5, 0.25])


def test_crop_is_a_window_and_checks_it_fits():
    img = _hwc(6, 5)
    np.testing.assert_array_equal(nd.image.crop(nd.array(img), 1, 2, 3, 4).asnumpy(),
                                  img[2:6, 1:4])
    with pytest.raises(MXNetError, match='does not fit'):
        nd.image.crop(nd.array(img), 3, 0, 3, 2)
    with pytest.raises(MXNetError, match='must be > 0'):
        nd.image.crop(nd.array(img), 0, 0, -1, 2)


def test_resize_sizes_as_mxnet():
    assert resized_hw(300, 200, 150, True) == (225, 150)   # shorter side 150, rest scaled
    assert resized_hw(200, 300, 150, True) == (150, 225)
    assert resized_hw(7, 3, 2, True) == (4, 2)              # integer division, as MXNet
    assert resized_hw(300, 200, (100, 50), False) == (50, 100)   # size is (width, height)
    assert nd.image.resize(nd.zeros((10, 20, 3)), 5).shape == (5, 5, 3)
    assert nd.image.resize(nd.zeros((2, 10, 20, 3)), (4, 6)).shape == (2, 6, 4, 3)
    for bad in (-1, (1, 2, 3), (0, 4)):
        with pytest.raises(MXNetError, match='size'):
            nd.image.resize(nd.zeros((4, 4, 3)), bad)


def test_resize_nearest_doubles_pixels_and_keeps_dtype():
    img = _hwc(2, 3)
    for dtype in ('uint8', 'float32', 'float64'):
        out = nd.image.resize(nd.array(img, dtype=dtype), (6, 4), interp=0)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.asnumpy(), img.repeat(2, 0).repeat(2, 1))


def test_interp_method_auto_and_errors():
    assert interp_method(9, (10, 10, 20, 20)) == 2   # enlarge: bicubic
    assert interp_method(9, (10, 10, 5, 5)) == 3     # shrink: area
    assert interp_method(9, (10, 10, 20, 5)) == 1
    assert interp_method(10) in range(5)
    with pytest.raises(MXNetError, match='interpolation must be'):
        interp_method(7)


def opencv_bilinear(img, w, h):
    """OpenCV's INTER_LINEAR in plain loops, float64: centres aligned, edges repeated."""
    src_h, src_w = img.shape[:2]
    out = np.zeros((h, w, img.shape[2]))
    for i in range(h):
        y = min(max((i + 0.5) * src_h / h - 0.5, 0), src_h - 1)
        for j in range(w):
            x = min(max((j + 0.5) * src_w / w - 0.5, 0), src_w - 1)
            y0, x0 = int(y), int(x)
            y1, x1 = min(y0 + 1, src_h - 1), min(x0 + 1, src_w - 1)
            dy, dx = y - y0, x - x0
            out[i, j] = ((1 - dy) * ((1 - dx) * img[y0, x0] + dx * img[y0, x1])
                         + dy * ((1 - dx) * img[y1, x0] + dx * img[y1, x1]))
    return out


@pytest.mark.parametrize('size', [(5, 3), (13, 11), (3, 9), (1, 1)])
def test_resize_bilinear_samples_as_opencv_without_antialiasing(size):
    img = np.random.RandomState(4).uniform(0, 255, size=(7, 6, 3))
    w, h = size
    reference = opencv_bilinear(img, w, h)
    # OpenCV (so MXNet) keeps the weights in float32 even for float64 images
    out64 = nd.image.resize(nd.array(img, dtype='float64'), size, interp=1).asnumpy()
    np.testing.assert_allclose(out64, reference, rtol=1e-6, atol=1e-5)
    out32 = nd.image.resize(nd.array(img, dtype='float32'), size, interp=1).asnumpy()
    np.testing.assert_allclose(out32, reference, rtol=1e-5, atol=1e-4)
    # uint8: weights rounded to 11 bits, the result rounded: within one level.
    out8 = nd.image.resize(nd.array(img.round(), dtype='uint8'), size, interp=1).asnumpy()
    assert out8.dtype == np.uint8
    assert np.abs(out8 - opencv_bilinear(img.round(), w, h)).max() <= 1


def test_resize_nearest_takes_floor_of_the_scaled_index():
    img = np.arange(7 * 5 * 1, dtype=np.float32).reshape(7, 5, 1)
    out = nd.image.resize(nd.array(img), (3, 4), interp=0).asnumpy()
    rows, cols = [int(i * 7 / 4) for i in range(4)], [int(j * 5 / 3) for j in range(3)]
    np.testing.assert_array_equal(out, img[rows][:, cols])


RESIZE_WITH_MXNET = '''
import sys
import numpy as np
import mxnet as mx
img = mx.nd.array(np.load(sys.argv[1] + '/img.npy'), dtype='uint8')
out = {}
for w, h in [(40, 30), (150, 97), (9, 61)]:
    for interp in (0, 1, 2, 3, 4):
        out['%d_%d_%d' % (w, h, interp)] = mx.image.imresize(img, w, h, interp).asnumpy()
        out['nd%d_%d_%d' % (w, h, interp)] = mx.nd.image.resize(
            img, size=(w, h), interp=interp).asnumpy()
        out['f%d_%d_%d' % (w, h, interp)] = mx.nd.image.resize(
            img.astype('float32'), size=(w, h), interp=interp).asnumpy()
out['short'] = mx.image.resize_short(img, 20).asnumpy()
np.savez(sys.argv[1] + '/mx.npz', **out)
'''


def test_resize_of_uint8_images_matches_mxnet_bit_for_bit(tmp_path, run_mxnet):
    rng = np.random.RandomState(5)
    img = np.clip(np.linspace(0, 255, 83)[None, :, None] + rng.randint(-30, 31, (71, 83, 3)),
                  0, 255).astype(np.uint8)
    np.save(str(tmp_path / 'img.npy'), img)
    run_mxnet(tmp_path, RESIZE_WITH_MXNET)
    expected = np.load(str(tmp_path / 'mx.npz'))
    src = nd.array(img, dtype='uint8')
    assert (mx.image.resize_short(src, 20).asnumpy() == expected['short']).all()
    for key in expected.files:
        if key == 'short':
            continue
        w, h, interp = map(int, key.lstrip('ndf').split('_'))
        if key.startswith('f'):     # float images: OpenCV's float paths, to rounding
            out = nd.image.resize(src.astype('float32'), (w, h), interp=interp).asnumpy()
            np.testing.assert_allclose(out, expected[key], rtol=1e-6, atol=1e-3, err_msg=key)
            continue
        out = nd.image.resize(src, (w, h), interp=interp).asnumpy()
        assert (out == expected[key]).all(), key
        out = mx.image.imresize(src, w, h, interp=interp).asnumpy()
        assert (out == expected[key]).all(), key


# MXNet 1.9.1's pixels for _probe() shrunk to 5x4 (w x h): bicubic, area and (by default,
# bicubic) resize_short; Pillow's antialiased filters give other values.
_PROBE_CUBIC = [[49, 159, 27, 228, 96], [158, 23, 224, 92, 202], [19, 206, 88, 198, 126],
                [202, 84, 180, 122, 49]]
_PROBE_AREA = [[110, 146, 102, 154, 110], [158, 98, 150, 106, 142], [94, 162, 102, 138, 126],
               [158, 98, 150, 122, 110]]


def _probe():
    return (np.arange(16 * 20).reshape(16, 20, 1) * 37 % 256).astype(np.uint8)


def test_resize_bicubic_and_area_give_mxnets_pixels():
    src = nd.array(_probe(), dtype='uint8')
    cubic = mx.image.imresize(src, 5, 4, interp=2).asnumpy()[:, :, 0]
    assert cubic.tolist() == _PROBE_CUBIC
    assert nd.image.resize(src, (5, 4), interp=3).asnumpy()[:, :, 0].tolist() == _PROBE_AREA
    assert mx.image.resize_short(src, 4).asnumpy()[:, :, 0].tolist() == _PROBE_CUBIC


def test_resize_nearest_of_float_images_picks_opencvs_pixels():
    # OpenCV maps x to floor(x * (1 / (dst / src))): for 6 -> 34 that differs from
    # floor(x * src / dst) at some x, and float images must pick what uint8 ones pick
    # (which equal MXNet's, above).
    img = np.arange(6 * 6 * 3).reshape(6, 6, 3) % 251
    for size in [(34, 34), (68, 6), (6, 94)]:
        as_uint8 = nd.image.resize(nd.array(img, dtype='uint8'), size, interp=0).asnumpy()
        as_float = nd.image.resize(nd.array(img, dtype='float32'), size, interp=0).asnumpy()
        np.testing.assert_array_equal(as_float, as_uint8)
