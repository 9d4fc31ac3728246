"""mx.image: decoding with Pillow, MXNet's crop/resize helpers and rotation."""
import io

import numpy as np
import pytest
from PIL import Image

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError


def _hwc(h=6, w=8, seed=0):
    return np.random.RandomState(seed).randint(0, 256, size=(h, w, 3)).astype(np.uint8)


def _png(img):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format='PNG')
    return buf.getvalue()


def test_imdecode_and_imread_round_trip_a_png(tmp_path):
    img = _hwc()
    data = _png(img)
    out = mx.image.imdecode(data)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.asnumpy(), img)
    np.testing.assert_array_equal(mx.img.imdecode(data, to_rgb=False).asnumpy(), img[:, :, ::-1])
    gray = mx.image.imdecode(np.frombuffer(data, np.uint8), flag=0).asnumpy()
    assert gray.shape == (6, 8, 1)
    # OpenCV's (libpng's) gray, which MXNet gives: weights in 15 bits, truncated.
    ref = (img.astype(np.int64) @ np.array([9797, 19234, 3737])) >> 15
    np.testing.assert_array_equal(gray[:, :, 0], ref)
    path = tmp_path / 'x.png'
    path.write_bytes(data)
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), img)
    with pytest.raises(ValueError, match='bytes'):
        mx.image.imdecode('not bytes')
    with pytest.raises(MXNetError, match='cannot decode'):
        mx.image.imdecode(b'garbage')


def test_scale_down_and_crops():
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    img = nd.array(_hwc(6, 8), dtype='uint8')
    out, rect = mx.image.center_crop(img, (4, 2))
    assert rect == (2, 2, 4, 2)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[2:4, 2:6])
    out, (x0, y0, w, h) = mx.image.random_crop(img, (3, 5))
    assert (w, h) == (3, 5) and 0 <= x0 <= 5 and 0 <= y0 <= 1
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[y0:y0 + 5, x0:x0 + 3])
    assert mx.image.fixed_crop(img, 1, 1, 4, 4, size=(8, 8)).shape == (8, 8, 3)
    assert mx.image.resize_short(img, 3).shape == (3, 4, 3)
    out, _ = mx.image.random_size_crop(img, (5, 5), 0.3, (0.75, 1.33))
    assert out.shape == (5, 5, 3)


def test_imresize_is_nd_image_resize():
    img = nd.random.uniform(0, 255, (9, 7, 3))
    out = mx.image.imresize(img, 4, 5, 2)
    assert out.shape == (5, 4, 3)
    np.testing.assert_array_equal(out.asnumpy(), nd.image.resize(img, (4, 5), interp=2).asnumpy())


@pytest.mark.parametrize('kind,mode', [(1, 'edge'), (2, 'symmetric'), (3, 'wrap'),
                                       (4, 'reflect')])
def test_copy_make_border_modes(kind, mode):
    img = _hwc(4, 5)
    out = mx.image.copyMakeBorder(nd.array(img, dtype='uint8'), 1, 2, 3, 2, type=kind)
    np.testing.assert_array_equal(out.asnumpy(),
                                  np.pad(img, ((1, 2), (3, 2), (0, 0)), mode=mode))


def test_copy_make_border_constant_values():
    img = nd.array(_hwc(2, 2), dtype='uint8')
    out = mx.image.copyMakeBorder(img, 1, 0, 0, 1, values=(1, 2, 3)).asnumpy()
    np.testing.assert_array_equal(out[0, 0], [1, 2, 3])
    np.testing.assert_array_equal(out[1:, :2], img.asnumpy())
    assert (mx.image.copyMakeBorder(img, 1, 1, 1, 1, value=7).asnumpy()[0] == 7).all()


def test_color_normalize():
    x = nd.array(np.ones((2, 2, 3)) * 4)
    out = mx.image.color_normalize(x, nd.array([1, 2, 3]), nd.array([1, 2, 0.5]))
    np.testing.assert_allclose(out.asnumpy()[0, 0], [3, 1, 2])


def test_imrotate_quarter_turns_move_pixels_exactly():
    img = nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    expected = {90: (0, 1), 180: (1, 0), 270: (2, 1), 360: (1, 2)}
    for degrees, (row, col) in expected.items():
        ref = np.zeros((1, 3, 3), np.float32)
        ref[0, row, col] = 1
        np.testing.assert_allclose(mx.image.imrotate(img, degrees).asnumpy(), ref, atol=1e-6)


def _rotated_reference(src, degrees):
    """Pixel by pixel: rotate each output position about the centre into the source and
    interpolate its four neighbours, those outside the image counting as 0."""
    h, w = src.shape
    cy, cx = (h - 1) / 2, (w - 1) / 2
    t = np.deg2rad(degrees)
    out = np.zeros((h, w))
    for i in range(h):
        for j in range(w):
            y, x = i - cy, j - cx
            sx = x * np.cos(t) - y * np.sin(t) + cx
            sy = x * np.sin(t) + y * np.cos(t) + cy
            x0, y0 = int(np.floor(sx)), int(np.floor(sy))
            for yy in (y0, y0 + 1):
                for xx in (x0, x0 + 1):
                    if 0 <= yy < h and 0 <= xx < w:
                        out[i, j] += src[yy, xx] * (1 - abs(sx - xx)) * (1 - abs(sy - yy))
    return out


@pytest.mark.parametrize('degrees', [45.0, -20.0, 123.0])
def test_imrotate_interpolates_bilinearly_with_zeros_outside(degrees):
    src = np.random.RandomState(0).uniform(size=(5, 6))
    out = mx.image.imrotate(nd.array(src[None], dtype='float32'), degrees).asnumpy()[0]
    np.testing.assert_allclose(out, _rotated_reference(src, degrees), rtol=1e-5, atol=1e-6)


def test_imrotate_zoom_and_batches():
    batch = nd.ones((2, 1, 10, 20))
    plain = mx.image.imrotate(batch, nd.array([30.0, -30.0])).asnumpy()
    inside = mx.image.imrotate(batch, nd.array([30.0, -30.0]), zoom_in=True).asnumpy()
    assert (plain < 0.999).sum() > 100  # the corners show padding
    np.testing.assert_allclose(inside[..., 1:-1, 1:-1], 1.0, atol=1e-5)  # zoomed in: none
    whole = mx.image.imrotate(batch, 30.0, zoom_out=True).asnumpy()
    assert whole.min() == 0 and whole.max() == pytest.approx(1.0)
    with pytest.raises(TypeError, match='float32'):
        mx.image.imrotate(nd.ones((1, 3, 3), dtype='uint8'), 10)
    with pytest.raises(TypeError, match='scalar'):
        mx.image.imrotate(nd.ones((1, 3, 3)), [10.0])
    with pytest.raises(ValueError, match='number of rotation angles'):
        mx.image.imrotate(batch, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match='both True'):
        mx.image.imrotate(batch, 1.0, zoom_in=True, zoom_out=True)
    assert mx.image.random_rotate(batch, (-5, 5)).shape == (2, 1, 10, 20)


BORDERS_WITH_MXNET = '''
import sys
import numpy as np
import mxnet as mx
img = mx.nd.array(np.load(sys.argv[1] + '/img.npy'), dtype='uint8')
np.savez(sys.argv[1] + '/mx.npz', *[mx.image.copyMakeBorder(img, 1, 2, 3, 2, type=kind).asnumpy()
                                    for kind in range(5)])
'''


def test_copy_make_border_types_are_opencvs_as_mxnet_passes_them(tmp_path, run_mxnet):
    img = _hwc(4, 5)
    np.save(str(tmp_path / 'img.npy'), img)
    run_mxnet(tmp_path, BORDERS_WITH_MXNET)
    expected = list(np.load(str(tmp_path / 'mx.npz')).values())
    for kind in range(5):
        out = mx.image.copyMakeBorder(nd.array(img, dtype='uint8'), 1, 2, 3, 2, type=kind)
        np.testing.assert_array_equal(out.asnumpy(), expected[kind])


def test_imread_of_a_missing_file_is_an_mxnet_error(tmp_path):
    with pytest.raises(mx.MXNetError, match=r"imread: cannot read .*nothing\.jpg"):
        mx.image.imread(str(tmp_path / 'nothing.jpg'))
