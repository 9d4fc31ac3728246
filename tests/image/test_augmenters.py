"""mx.image's augmenters: each one against its formula in numpy float64, the random
draws MXNet makes (Python's ``random``, numpy for the lighting noise), CreateAugmenter's
lists and dumps(), and the same outputs as MXNet 1.9.1 under the same seeds."""
import json
import os
import random
import warnings

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

LUMA = np.array([0.299, 0.587, 0.114])


def _image(h=6, w=8, seed=0):
    """A float64 HWC image of values in [0, 255)."""
    return np.random.RandomState(seed).uniform(0, 255, size=(h, w, 3))


def _run(aug, src, seed, ctx=mx.cpu()):
    """``aug`` on a float32 copy of ``src`` on ``ctx``, with Python's and numpy's
    generators seeded."""
    random.seed(seed)
    np.random.seed(seed)
    out = aug(nd.array(src, ctx=ctx))
    assert out.context == ctx
    assert out.dtype == np.float32 and out.shape == src.shape
    return out.asnumpy()


def _close(actual, expected):
    # float32 arithmetic on values up to a few hundred
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-3)


def _uniform(seed, bound):
    random.seed(seed)
    return random.uniform(-bound, bound)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_brightness_scales_by_one_plus_u(seed, ctx):
    src = _image()
    alpha = 1.0 + _uniform(seed, 0.3)
    _close(_run(mx.image.BrightnessJitterAug(0.3), src, seed, ctx), src * alpha)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_contrast_blends_with_the_mean_gray(seed, ctx):
    src = _image()
    alpha = 1.0 + _uniform(seed, 0.4)
    mean_gray = (src * LUMA).sum(axis=2).mean()
    _close(_run(mx.image.ContrastJitterAug(0.4), src, seed, ctx),
           alpha * src + (1 - alpha) * mean_gray)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_saturation_blends_each_pixel_with_its_gray(seed, ctx):
    src = _image()
    alpha = 1.0 + _uniform(seed, 0.5)
    gray = (src * LUMA).sum(axis=2, keepdims=True)
    _close(_run(mx.image.SaturationJitterAug(0.5), src, seed, ctx),
           alpha * src + (1 - alpha) * gray)


def _hue_rotated(src, turns):
    """Rotate each pixel's (I, Q) by ``turns`` * 180 degrees in YIQ space."""
    to_yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                       [0.211, -0.523, 0.311]])
    to_rgb = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
    y, i, q = np.moveaxis(src @ to_yiq.T, 2, 0)
    theta = turns * np.pi
    rotated = np.stack([y, np.cos(theta) * i - np.sin(theta) * q,
                        np.sin(theta) * i + np.cos(theta) * q], axis=2)
    return rotated @ to_rgb.T


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_hue_rotates_the_iq_plane(seed, ctx):
    src = _image()
    turns = _uniform(seed, 0.25)
    _close(_run(mx.image.HueJitterAug(0.25), src, seed, ctx), _hue_rotated(src, turns))


def test_hue_without_rotation_keeps_the_colours():
    # The YIQ matrices are inverses to their three decimals: within a level of 255.
    src = _image()
    np.testing.assert_allclose(_run(mx.image.HueJitterAug(0.0), src, 0), src, atol=1.0)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_lighting_adds_pca_noise_drawn_from_numpy(seed, ctx):
    src = _image()
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    np.random.seed(seed)
    alpha = np.random.normal(0, 0.1, size=3)
    shift = eigvec @ (alpha * eigval)
    _close(_run(mx.image.LightingAug(0.1, eigval, eigvec), src, seed, ctx), src + shift)


@pytest.mark.parametrize('as_nd', [True, False])
def test_color_normalize(as_nd, ctx):
    src = _image()
    mean, std = np.array([120.0, 110.0, 100.0]), np.array([50.0, 60.0, 70.0])
    wrap = nd.array if as_nd else (lambda x: x)
    _close(_run(mx.image.ColorNormalizeAug(wrap(mean), wrap(std)), src, 0, ctx),
           (src - mean) / std)
    _close(_run(mx.image.ColorNormalizeAug(wrap(mean), None), src, 0, ctx), src - mean)
    _close(_run(mx.image.ColorNormalizeAug(None, wrap(std)), src, 0, ctx), src / std)


def test_random_gray_and_flip_follow_their_probability(ctx):
    src = _image()
    gray = (src * np.array([0.21, 0.72, 0.07])).sum(axis=2, keepdims=True)
    _close(_run(mx.image.RandomGrayAug(1.0), src, 0, ctx), np.repeat(gray, 3, axis=2))
    _close(_run(mx.image.RandomGrayAug(0.0), src, 0, ctx), src)
    _close(_run(mx.image.HorizontalFlipAug(1.0), src, 0, ctx), src[:, ::-1])
    _close(_run(mx.image.HorizontalFlipAug(0.0), src, 0, ctx), src)
    # p = 0.5: the flip happens exactly when random.random() < 0.5
    for seed in range(6):
        random.seed(seed)
        flips = random.random() < 0.5
        _close(_run(mx.image.HorizontalFlipAug(0.5), src, seed, ctx),
               src[:, ::-1] if flips else src)


def test_cast():
    src = nd.array(_image().astype(np.uint8), dtype='uint8')
    out = mx.image.CastAug()(src)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy())
    assert mx.image.CastAug('float64')(src).dtype == np.float64


def _uint8(h, w, seed=0):
    return nd.array(_image(h, w, seed).astype(np.uint8), dtype='uint8')


def test_resize_augmenters():
    img = _uint8(6, 8)
    out = mx.image.ResizeAug(3, interp=1)(img)
    assert out.shape == (3, 4, 3) and out.dtype == np.uint8
    # The resizing itself (OpenCV's sampling) is checked in tests/ndarray/test_nd_image.py.
    expected = nd.image.resize(img, (4, 3), interp=1).asnumpy()
    np.testing.assert_array_equal(out.asnumpy(), expected)
    assert mx.image.ResizeAug(12)(_uint8(8, 6)).shape == (16, 12, 3)
    out = mx.image.ForceResizeAug((5, 7), interp=1)(img)
    expected = nd.image.resize(img, (5, 7), interp=1).asnumpy()
    np.testing.assert_array_equal(out.asnumpy(), expected)
    # 9: bicubic to enlarge both sides, area (box) to shrink both
    out = mx.image.ForceResizeAug((16, 12), interp=9)(img)
    expected = nd.image.resize(img, (16, 12), interp=2).asnumpy()
    np.testing.assert_array_equal(out.asnumpy(), expected)


def test_crop_augmenters_cut_windows_of_the_image():
    img = _uint8(6, 8)
    src = img.asnumpy()
    out = mx.image.CenterCropAug((4, 2))(img).asnumpy()
    np.testing.assert_array_equal(out, src[2:4, 2:6])
    for seed in range(5):
        random.seed(seed)
        np.random.seed(seed)
        out = mx.image.RandomCropAug((3, 5))(img).asnumpy()
        assert out.shape == (5, 3, 3)
        windows = [src[y:y + 5, x:x + 3] for y in range(2) for x in range(6)]
        assert any(np.array_equal(out, w) for w in windows)
    # the whole area at aspect ratio 1 of a square image is the image itself
    square = _uint8(7, 7)
    out = mx.image.RandomSizedCropAug((7, 7), (1.0, 1.0), (1.0, 1.0))(square)
    np.testing.assert_array_equal(out.asnumpy(), square.asnumpy())
    assert mx.image.RandomSizedCropAug((4, 3), 0.08, (0.75, 1.33))(img).shape == (3, 4, 3)


def test_random_sized_crop_arguments():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        aug = mx.image.RandomSizedCropAug((4, 4), None, (0.75, 1.33), min_area=0.5)
    assert aug.area == 0.5
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    with pytest.raises(TypeError, match='unexpected keyword'):
        mx.image.RandomSizedCropAug((4, 4), 0.1, (0.75, 1.33), area_max=0.5)


def test_sequential_and_random_order():
    src = _image()
    seq = mx.image.SequentialAug([mx.image.HorizontalFlipAug(1.0),
                                  mx.image.ColorNormalizeAug(np.array([1.0, 2.0, 3.0]), None)])
    _close(_run(seq, src, 0), src[:, ::-1] - [1.0, 2.0, 3.0])
    # The order is random.shuffle's on the list, then each augmenter draws in turn.
    for seed in range(4):
        ts = [mx.image.BrightnessJitterAug(0.2), mx.image.SaturationJitterAug(0.3)]
        random.seed(seed)
        order = list(ts)
        random.shuffle(order)
        expected = src.copy()
        for aug in order:
            if isinstance(aug, mx.image.BrightnessJitterAug):
                expected = expected * (1.0 + random.uniform(-0.2, 0.2))
            else:
                alpha = 1.0 + random.uniform(-0.3, 0.3)
                gray = (expected * LUMA).sum(axis=2, keepdims=True)
                expected = alpha * expected + (1 - alpha) * gray
        _close(_run(mx.image.RandomOrderAug(ts), src, seed), expected)


def test_color_jitter_holds_the_jitters_asked_for():
    aug = mx.image.ColorJitterAug(0.1, 0, 0.2)
    assert [type(t) for t in aug.ts] == [mx.image.BrightnessJitterAug,
                                         mx.image.SaturationJitterAug]
    assert isinstance(aug, mx.image.RandomOrderAug)
    assert len(mx.image.ColorJitterAug(0.1, 0.1, 0.1).ts) == 3


def _all_options():
    return mx.image.CreateAugmenter((3, 5, 5), resize=7, rand_crop=True, rand_resize=True,
                                    rand_mirror=True, mean=True, std=True, brightness=0.2,
                                    contrast=0.2, saturation=0.2, hue=0.2, pca_noise=0.1,
                                    rand_gray=0.3)


def _through(augs, img):
    for aug in augs:
        img = aug(img)
    return img.asnumpy()


def test_seeded_runs_repeat():
    img = _uint8(9, 11)
    outs = []
    for seed in (3, 3, 4):
        random.seed(seed)
        np.random.seed(seed)
        augs = _all_options()
        outs.append(np.stack([_through(augs, img.copy()) for _ in range(4)]))
    assert outs[0].shape == (4, 5, 5, 3) and outs[0].dtype == np.float32
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.allclose(outs[0], outs[2])


def test_create_augmenter_lists():
    def kinds(**kwargs):
        return [type(a).__name__ for a in mx.image.CreateAugmenter((3, 4, 4), **kwargs)]
    assert kinds() == ['CenterCropAug', 'CastAug']
    assert kinds(resize=8, rand_crop=True, rand_mirror=True, mean=True) == [
        'ResizeAug', 'RandomCropAug', 'HorizontalFlipAug', 'CastAug', 'ColorNormalizeAug']
    assert [type(a).__name__ for a in _all_options()] == [
        'ResizeAug', 'RandomSizedCropAug', 'HorizontalFlipAug', 'CastAug', 'ColorJitterAug',
        'HueJitterAug', 'LightingAug', 'RandomGrayAug', 'ColorNormalizeAug']
    assert kinds(contrast=0.1, std=np.array([2.0])) == ['CenterCropAug', 'CastAug',
                                                        'ColorJitterAug', 'ColorNormalizeAug']
    norm = mx.image.CreateAugmenter((3, 4, 4), mean=True, std=True)[-1]
    np.testing.assert_allclose(norm.mean.asnumpy(), [123.68, 116.28, 103.53], rtol=1e-6)
    np.testing.assert_allclose(norm.std.asnumpy(), [58.395, 57.12, 57.375], rtol=1e-6)
    crop = mx.image.CreateAugmenter((3, 4, 6), rand_crop=True, inter_method=1)[0]
    assert (crop.size, crop.interp) == ((6, 4), 1)
    with pytest.raises(MXNetError, match='rand_crop'):
        mx.image.CreateAugmenter((3, 4, 4), rand_resize=True)
    with pytest.raises(MXNetError, match='mean'):
        mx.image.CreateAugmenter((3, 4, 4), mean=[1.0, 2.0, 3.0])
    with pytest.raises(MXNetError, match='std'):
        mx.image.CreateAugmenter((3, 4, 4), std=np.ones(2))


def test_dumps():
    assert mx.image.ResizeAug(5).dumps() == '["resizeaug", {"size": 5, "interp": 2}]'
    assert json.loads(mx.image.CastAug().dumps()) == ['castaug', {'type': 'float32'}]
    lighting = mx.image.LightingAug(0.1, np.array([1.0, 2.0, 3.0]), nd.array(np.eye(3)))
    assert json.loads(lighting.dumps()) == [
        'lightingaug', {'alphastd': 0.1, 'eigval': [1.0, 2.0, 3.0],
                        'eigvec': np.eye(3).tolist()}]
    # as in MXNet, a composite gives a list holding its children's strings
    seq = mx.image.SequentialAug([mx.image.HorizontalFlipAug(0.5), mx.image.CastAug()])
    assert seq.dumps() == ['sequentialaug', ['["horizontalflipaug", {"p": 0.5}]',
                                             '["castaug", {"type": "float32"}]']]
    assert mx.image.ColorJitterAug(0.1, 0, 0).dumps() == [
        'colorjitteraug', ['["brightnessjitteraug", {"brightness": 0.1}]']]
    with pytest.raises(NotImplementedError):
        mx.image.Augmenter()(nd.zeros((2, 2, 3)))


_MXNET_AUGMENTERS = '''
import json, os, random, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
src = np.load(os.path.join(folder, 'src.npy'))
eigval = np.array([55.46, 4.794, 1.148])
eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                   [-0.5836, -0.6948, 0.4203]])
augs = {
    'brightness': mx.image.BrightnessJitterAug(0.3),
    'contrast': mx.image.ContrastJitterAug(0.3),
    'saturation': mx.image.SaturationJitterAug(0.3),
    'hue': mx.image.HueJitterAug(0.3),
    'lighting': mx.image.LightingAug(0.2, eigval, eigvec),
    'gray': mx.image.RandomGrayAug(0.5),
    'flip': mx.image.HorizontalFlipAug(0.5),
    'jitter': mx.image.ColorJitterAug(0.2, 0.3, 0.4),
    'normalize': mx.image.ColorNormalizeAug(mx.nd.array([120., 110., 100.]),
                                            np.array([50., 60., 70.])),
}
out = {}
for name, aug in augs.items():
    for seed in range(3):
        random.seed(seed)
        np.random.seed(seed)
        out['%s_%d' % (name, seed)] = aug(mx.nd.array(src)).asnumpy()
np.savez(os.path.join(folder, 'mxnet.npz'), **out)
created = mx.image.CreateAugmenter(
    (3, 5, 5), resize=7, rand_crop=True, rand_resize=True, rand_mirror=True, mean=True,
    std=True, brightness=0.2, contrast=0.2, saturation=0.2, hue=0.2, pca_noise=0.1,
    rand_gray=0.3, inter_method=1)
with open(os.path.join(folder, 'dumps.json'), 'w') as f:
    json.dump([a.dumps() for a in created], f)
'''


def test_same_outputs_as_mxnet_under_the_same_seeds(tmp_path, run_mxnet, run_minigluon):
    # One script, run by MXNet 1.9.1 and by minigluon, each writing its own outputs.
    np.save(tmp_path / 'src.npy', _image(5, 7, seed=3).astype(np.float32))
    run_mxnet(tmp_path, _MXNET_AUGMENTERS)
    for name in ('mxnet.npz', 'dumps.json'):
        os.replace(tmp_path / name, tmp_path / ('expected_' + name))
    run_minigluon(tmp_path, _MXNET_AUGMENTERS)
    expected = np.load(tmp_path / 'expected_mxnet.npz', allow_pickle=False)
    got = np.load(tmp_path / 'mxnet.npz', allow_pickle=False)
    assert sorted(got.files) == sorted(expected.files)
    for key in expected.files:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-3,
                                   err_msg=key)
    assert json.loads((tmp_path / 'dumps.json').read_text()) == \
        json.loads((tmp_path / 'expected_dumps.json').read_text())