"""Image decoding and encoding: Pillow and simplejpeg give the same pixels, the flags
and channel orders mean what OpenCV's do, and MXNet 1.9.1 decodes the same pixels."""
import io

import numpy as np
import pytest
from PIL import Image

import minigluon as mx
from minigluon.ndarray import image_codec
from minigluon.ndarray.image_codec import decode_raw, encode_raw


def _simplejpeg_missing():
    try:
        import simplejpeg  # noqa: F401
    except ImportError as exc:
        return "simplejpeg does not import (%s); `pip install 'minigluon[jpeg]'`" % exc
    return None


@pytest.fixture(params=[
    'pillow',
    pytest.param('simplejpeg', marks=pytest.mark.skipif(_simplejpeg_missing() is not None,
                                                        reason=str(_simplejpeg_missing()))),
])
def decoder(request, monkeypatch):
    monkeypatch.setenv(image_codec.VARIABLE, request.param)
    return request.param


def photo(seed=0, size=(40, 56)):
    """A smooth colour field with fine noise, encoded as JPEG."""
    rng = np.random.RandomState(seed)
    coarse = Image.fromarray(rng.randint(0, 256, size=(4, 4, 3)).astype(np.uint8))
    field = np.asarray(coarse.resize(size[::-1], Image.BICUBIC), dtype=np.int16)
    pixels = np.clip(field + rng.randint(-10, 11, size=field.shape), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, 'JPEG', quality=90)
    return out.getvalue()


def test_both_decoders_give_the_same_pixels(monkeypatch):
    if _simplejpeg_missing():
        pytest.skip(_simplejpeg_missing())
    jpeg = photo()
    for flag, to_rgb in [(1, True), (1, False), (0, True)]:
        monkeypatch.setenv(image_codec.VARIABLE, 'pillow')
        slow = decode_raw(jpeg, flag, to_rgb, 'x')
        monkeypatch.setenv(image_codec.VARIABLE, 'simplejpeg')
        fast = decode_raw(jpeg, flag, to_rgb, 'x')
        assert slow.shape == fast.shape == (40, 56, 3 if flag else 1)
        assert (slow == fast).all(), (flag, to_rgb)


def test_flags_and_channel_orders(decoder):
    rgb = decode_raw(photo(), 1, True, 'x')
    assert (decode_raw(photo(), 1, False, 'x') == rgb[:, :, ::-1]).all()
    luma = decode_raw(io.BytesIO(photo()), 0, True, 'x')[:, :, 0].astype(float)
    # libjpeg's Y channel is BT.601 luma of the decoded RGB, give or take rounding and
    # the clipping of saturated colours after chroma upsampling.
    error = np.abs(luma - rgb @ [0.299, 0.587, 0.114])
    assert error.mean() < 1 and error.max() < 8
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 200, np.uint8)])
    png = encode_raw(rgba, '.png', 3, from_rgb=True)
    assert (decode_raw(png, -1, True, 'x') == rgba).all()
    assert (decode_raw(png, -1, False, 'x') == rgba[:, :, [2, 1, 0, 3]]).all()
    assert (decode_raw(png, 1, True, 'x') == rgb).all()


def test_a_cmyk_jpeg_falls_back_to_pillow(decoder):
    out = io.BytesIO()
    Image.new('CMYK', (8, 6), (0, 255, 255, 0)).save(out, 'JPEG')
    pixels = decode_raw(out.getvalue(), 1, True, 'x')
    assert pixels.shape == (6, 8, 3)


def test_bad_input_and_settings_are_reported(decoder, monkeypatch):
    with pytest.raises(mx.MXNetError, match='cannot decode the thing'):
        decode_raw(b'\xff\xd8 not really a jpeg', 1, True, 'the thing')
    with pytest.raises(mx.MXNetError, match='cannot decode'):
        decode_raw(b'', 1, True, 'the thing')
    with pytest.raises(mx.MXNetError, match="'.gif'"):
        encode_raw(np.zeros((2, 2, 3), np.uint8), '.gif', 95, True)
    with pytest.raises(mx.MXNetError, match='uint8'):
        encode_raw(np.zeros((2, 2, 3), np.float32), '.png', 95, True)
    with pytest.raises(mx.MXNetError, match='HxWxC'):
        encode_raw(np.zeros((2, 2, 5), np.uint8), '.png', 95, True)
    monkeypatch.setenv(image_codec.VARIABLE, 'turbo')
    with pytest.raises(mx.MXNetError, match="MINIGLUON_JPEG_DECODER='turbo'"):
        decode_raw(photo(), 1, True, 'x')


DECODE_WITH_MXNET = '''
import sys
import numpy as np
import mxnet as mx
data = open(sys.argv[1] + '/photo.jpg', 'rb').read()
np.savez(sys.argv[1] + '/mx.npz', color=mx.image.imdecode(data).asnumpy(),
         gray=mx.image.imdecode(data, flag=0).asnumpy())
'''


def test_mxnet_decodes_the_same_pixels(tmp_path, run_mxnet, decoder):
    (tmp_path / 'photo.jpg').write_bytes(photo(3, (61, 47)))
    run_mxnet(tmp_path, DECODE_WITH_MXNET)
    expected = np.load(str(tmp_path / 'mx.npz'))
    data = (tmp_path / 'photo.jpg').read_bytes()
    assert (decode_raw(data, 1, True, 'x') == expected['color']).all()
    assert (decode_raw(data, 0, True, 'x') == expected['gray']).all()


GRAY_PNG_WITH_MXNET = '''
import sys
import numpy as np
import mxnet as mx
data = open(sys.argv[1] + '/colour.png', 'rb').read()
np.save(sys.argv[1] + '/mx.npy', mx.image.imdecode(data, flag=0).asnumpy())
'''


def test_a_colour_png_decoded_gray_is_opencvs_gray(tmp_path, run_mxnet):
    rgb = np.random.RandomState(6).randint(0, 256, size=(9, 11, 3)).astype(np.uint8)
    png = encode_raw(rgb, '.png', 1, from_rgb=True)
    gray = decode_raw(png, 0, True, 'x')[:, :, 0]
    weights = np.array([9797, 19234, 3737])
    assert (gray == (rgb.astype(np.int64) @ weights) >> 15).all()
    (tmp_path / 'colour.png').write_bytes(png)
    run_mxnet(tmp_path, GRAY_PNG_WITH_MXNET)
    assert (np.load(str(tmp_path / 'mx.npy'))[:, :, 0] == gray).all()


def test_encoding_from_bgr_swaps_the_channels():
    rgba = np.random.RandomState(7).randint(0, 256, size=(5, 4, 4)).astype(np.uint8)
    for channels in (3, 4):
        rgb = rgba[:, :, :channels]
        png = encode_raw(np.ascontiguousarray(rgb[:, :, [2, 1, 0, 3][:channels]]), '.png', 1,
                         from_rgb=False)
        assert (decode_raw(png, -1, True, 'x') == rgb).all()
