"""Image transforms against independent numpy (and colorsys) references."""
import colorsys

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError
from minigluon.gluon.data.vision import transforms as T


def _image(h=10, w=12, seed=0, dtype=np.uint8):
    rng = np.random.RandomState(seed)
    return rng.randint(0, 256, size=(h, w, 3)).astype(dtype)


def _draws(seed, fn):
    """What ``fn`` draws from numpy's global generator after ``np.random.seed(seed)``."""
    np.random.seed(seed)
    return fn()


def test_ndarray_in_ndarray_out_numpy_in_numpy_out():
    img = _image()
    out = T.ToTensor()(nd.array(img, dtype='uint8', ctx=mx.cpu(1)))
    assert isinstance(out, nd.NDArray) and out.context == mx.cpu(1)
    assert isinstance(T.ToTensor()(img), np.ndarray)


def test_to_tensor_matches_numpy():
    img = _image()
    ref = np.stack([img[:, :, c] for c in range(3)]).astype(np.float32) / 255
    out = T.ToTensor()(nd.array(img, dtype='uint8'))
    assert out.shape == (3, 10, 12) and out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)
    batch = np.stack([img, img[::-1]])
    np.testing.assert_allclose(T.ToTensor()(batch)[1], ref[:, ::-1], rtol=1e-6)
    with pytest.raises(MXNetError, match='expects an HWC image'):
        T.ToTensor()(np.zeros((4, 4), np.uint8))


def test_normalize_matches_numpy():
    x = np.random.RandomState(1).uniform(size=(3, 4, 5)).astype(np.float32)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    ref = np.empty_like(x)
    for c in range(3):
        ref[c] = (x[c] - mean[c]) / std[c]
    out = T.Normalize(mean, std)(nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(0.5, 0.5)(x), (x - 0.5) / 0.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(mean, std)(np.stack([x, x]))[1], ref, rtol=1e-5,
                               atol=1e-6)
    assert T.Normalize(mean, std)(x.astype(np.float64)).dtype == np.float64


def test_normalize_errors():
    with pytest.raises(MXNetError, match='mean has 2 values but the tensor has 3 channels'):
        T.Normalize((0.1, 0.2), 1)(np.zeros((3, 2, 2), np.float32))
    with pytest.raises(MXNetError, match='apply ToTensor'):
        T.Normalize(0.5, 0.5)(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(MXNetError, match='must not contain zeros'):
        T.Normalize(0, (1, 0, 1))


def test_cast_and_compose():
    img = _image()
    assert T.Cast()(img).dtype == np.float32
    assert T.Cast('float16')(nd.array(img, dtype='uint8')).dtype == np.float16
    pipeline = T.Compose([T.ToTensor(), T.Normalize(0.5, 0.25)])
    np.testing.assert_allclose(pipeline(img), (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.25,
                               rtol=1e-5, atol=1e-5)
    assert len(pipeline) == 2 and isinstance(pipeline[1], T.Normalize)
    assert 'Normalize(mean=0.5, std=0.25)' in repr(pipeline)
    pipeline.hybridize()  # accepted, as in Gluon


def test_random_crop_with_padding_is_a_window_of_the_zero_padded_image():
    img = _image(32, 32)
    padded = np.zeros((40, 40, 3), np.uint8)
    padded[4:36, 4:36] = img
    crop = T.RandomCrop(32, pad=4)
    offsets = set()
    for seed in range(40):
        np.random.seed(seed)
        out = crop(nd.array(img, dtype='uint8')).asnumpy()
        assert out.shape == (32, 32, 3) and out.dtype == np.uint8
        matches = [(y, x) for y in range(9) for x in range(9)
                   if np.array_equal(padded[y:y + 32, x:x + 32], out)]
        assert matches, 'seed %d: not a window of the padded image' % seed
        offsets.add(matches[0])
    assert len(offsets) > 20  # offsets are spread over the 9 x 9 possibilities


def test_random_crop_draws_row_then_column_offsets():
    img = _image(20, 30)
    y0, x0 = _draws(5, lambda: (np.random.randint(0, 20 + 4 - 16 + 1),
                                np.random.randint(0, 30 + 6 - 10 + 1)))
    padded = np.pad(img, ((2, 2), (3, 3), (0, 0)), constant_values=7)
    np.random.seed(5)
    out = T.RandomCrop((10, 16), pad=((2, 2), (3, 3)), pad_value=7)(img)
    np.testing.assert_array_equal(out, padded[y0:y0 + 16, x0:x0 + 10])


def test_random_crop_smaller_image_is_resized_to_size():
    out = T.RandomCrop(16)(_image(8, 8))
    assert out.shape == (16, 16, 3)


def test_center_crop():
    img = _image(10, 12)
    np.testing.assert_array_equal(T.CenterCrop(4)(img), img[3:7, 4:8])
    np.testing.assert_array_equal(T.CenterCrop((6, 2))(img), img[4:6, 3:9])
    assert T.CenterCrop(20)(img).shape == (20, 20, 3)


def test_resize_nearest_integer_upscale_repeats_pixels():
    img = _image(3, 4)
    out = T.Resize((8, 6), interpolation=0)(nd.array(img, dtype='uint8')).asnumpy()
    np.testing.assert_array_equal(out, img.repeat(2, axis=0).repeat(2, axis=1))


def test_resize_shapes_and_float_images():
    img = _image(10, 20)
    assert T.Resize(5)(img).shape == (5, 5, 3)
    assert T.Resize(5, keep_ratio=True)(img).shape == (5, 10, 3)
    assert T.Resize(5, keep_ratio=True)(_image(20, 10)).shape == (10, 5, 3)
    flt = img.astype(np.float32) / 255
    out = T.Resize((10, 5), interpolation=0)(flt)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, flt[::2, ::2], rtol=1e-6)  # OpenCV: floor(i * scale)
    assert T.Resize(4)(np.stack([img, img])).shape == (2, 4, 4, 3)
    with pytest.raises(MXNetError, match='interpolation must be'):
        T.Resize(4, interpolation=7)(img)


def test_random_resized_crop():
    img = _image(16, 16)
    np.random.seed(0)
    for _ in range(20):
        assert T.RandomResizedCrop(8)(img).shape == (8, 8, 3)
    whole = T.RandomResizedCrop(16, scale=(1.0, 1.0), ratio=(1.0, 1.0))(img)
    np.testing.assert_array_equal(whole, img)
    with pytest.raises(MXNetError, match='increasing positive ranges'):
        T.RandomResizedCrop(8, scale=(0.5, 0.1))


@pytest.mark.parametrize('cls, flip', [(T.RandomFlipLeftRight, lambda x: x[:, ::-1]),
                                       (T.RandomFlipTopBottom, lambda x: x[::-1])])
def test_random_flips(cls, flip):
    img = _image()
    seen = set()
    for seed in range(20):
        np.random.seed(seed)
        out = cls()(nd.array(img, dtype='uint8')).asnumpy()
        if np.array_equal(out, img):
            seen.add('same')
        else:
            np.testing.assert_array_equal(out, flip(img))
            seen.add('flipped')
    assert seen == {'same', 'flipped'}


def _luma(img):
    return 0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]


def test_brightness_contrast_saturation_match_references():
    img = _image().astype(np.float32)
    a = _draws(3, lambda: 1 + np.random.uniform(-0.4, 0.4))
    np.random.seed(3)
    np.testing.assert_allclose(T.RandomBrightness(0.4)(img), img * a, rtol=1e-5)

    np.random.seed(3)
    mean = _luma(img.astype(np.float64)).mean()
    np.testing.assert_allclose(T.RandomContrast(0.4)(img), img * a + mean * (1 - a),
                               rtol=1e-4, atol=1e-3)

    np.random.seed(3)
    gray = _luma(img.astype(np.float64))[:, :, None]
    np.testing.assert_allclose(T.RandomSaturation(0.4)(img), img * a + gray * (1 - a),
                               rtol=1e-4, atol=1e-3)


def test_uint8_colour_changes_saturate():
    img = np.full((2, 2, 3), 200, np.uint8)
    brighten = T.RandomBrightness(0.9)
    results = set()
    for seed in range(10):
        np.random.seed(seed)
        res = brighten(img)
        assert res.dtype == np.uint8
        results.add(int(res[0, 0, 0]))
    assert 255 in results and min(results) < 200


def test_hue_rotation_matches_colorsys():
    img = _image(4, 5, seed=2).astype(np.float32)
    alpha = _draws(1, lambda: np.random.uniform(-0.3, 0.3))
    ref = np.empty_like(img)
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            h, l, s = colorsys.rgb_to_hls(*(img[i, j] / 255.0))
            ref[i, j] = np.array(colorsys.hls_to_rgb((h + alpha) % 1.0, l, s)) * 255
    np.random.seed(1)
    out = T.RandomHue(0.3)(nd.array(img)).asnumpy()
    np.testing.assert_allclose(out, ref, atol=1e-3)
    gray = np.full((2, 2, 3), 77, np.uint8)
    np.testing.assert_array_equal(T.RandomHue(0.5)(gray), gray)


def test_lighting_adds_the_pca_colour_shift():
    img = _image().astype(np.float32)
    alpha = _draws(4, lambda: np.random.normal(0, 0.1, size=3))
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009],
                       [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    shift = [sum(eigvec[c, k] * eigval[k] * alpha[k] for k in range(3)) for c in range(3)]
    np.random.seed(4)
    np.testing.assert_allclose(T.RandomLighting(0.1)(img), img + np.array(shift), rtol=1e-5,
                               atol=1e-4)
    np.testing.assert_array_equal(T.RandomLighting(0)(img), img)


def test_color_jitter_applies_each_enabled_change():
    img = _image().astype(np.float32)
    np.random.seed(0)
    out = T.RandomColorJitter(brightness=0.5)(img)
    ratio = out / np.maximum(img, 1)
    assert np.allclose(ratio[img > 0], ratio[img > 0].flat[0], rtol=1e-5)
    np.testing.assert_array_equal(T.RandomColorJitter()(img), img)
    out = T.RandomColorJitter(0.2, 0.2, 0.2, 0.1)(nd.array(img))
    assert out.shape == img.shape and not np.allclose(out.asnumpy(), img)


def test_colour_transforms_need_hwc_rgb():
    with pytest.raises(MXNetError, match='apply colour transforms before ToTensor'):
        T.RandomBrightness(0.1)(np.zeros((3, 8, 8), np.float32))
    with pytest.raises(MXNetError, match='must be a number >= 0'):
        T.RandomContrast(-1)


def test_cifar_training_pipeline_end_to_end():
    img = _image(32, 32)
    pipeline = T.Compose([T.RandomCrop(32, pad=4), T.RandomFlipLeftRight(), T.ToTensor(),
                          T.Normalize((0.49, 0.48, 0.45), (0.2, 0.2, 0.2))])
    out = pipeline(nd.array(img, dtype='uint8'))
    assert out.shape == (3, 32, 32) and out.dtype == np.float32
    assert np.isfinite(out.asnumpy()).all()


def test_transforms_run_on_the_array_context(ctx):
    """The same draws give the same result on every device (CuPy arrays on a GPU)."""
    img = _image(12, 12)
    pipeline = T.Compose([T.RandomCrop(10, pad=2), T.RandomFlipLeftRight(),
                          T.RandomColorJitter(0.3, 0.3, 0.3, 0.1), T.RandomLighting(0.1),
                          T.ToTensor(), T.Normalize((0.4, 0.5, 0.6), (0.2, 0.3, 0.4))])
    np.random.seed(9)
    expected = pipeline(img)
    np.random.seed(9)
    out = pipeline(nd.array(img, dtype='uint8', ctx=ctx))
    assert out.context == ctx and out.shape == (3, 10, 10)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-4, atol=1e-4)


def test_resize_checks_its_size_when_applied():
    bad = T.Resize(-150, keep_ratio=True)  # built without complaint, as in MXNet
    with pytest.raises(MXNetError, match='size'):
        bad(_image())
    with pytest.raises(MXNetError, match='size'):
        T.Resize((100, 100, 100))(_image())
    img = nd.random.uniform(0, 255, (30, 20, 3))
    np.testing.assert_array_equal(T.Resize(15, keep_ratio=True)(img).asnumpy(),
                                  mx.image.imresize(img, 15, 22, 1).asnumpy())


def test_crop_resize():
    img = np.arange(60).reshape(5, 4, 3).astype(np.float32)
    np.testing.assert_array_equal(T.CropResize(1, 2, 2, 3)(img), img[2:5, 1:3])
    batch = np.stack([img, img + 1])
    np.testing.assert_array_equal(T.CropResize(0, 0, 3, 2)(batch), batch[:, 0:2, 0:3])
    out = T.CropResize(0, 0, 2, 2, size=(4, 4), interpolation=0)(img)
    np.testing.assert_array_equal(out, img[0:2, 0:2].repeat(2, 0).repeat(2, 1))
    with pytest.raises(MXNetError, match='does not fit'):
        T.CropResize(3, 0, 2, 2)(img)


def test_rotate_a_tensor_by_quarter_turns():
    x = np.zeros((2, 3, 3), np.float32)
    x[:, 1, 2] = 1
    out = T.Rotate(90)(nd.array(x, dtype='float32')).asnumpy()
    ref = np.zeros_like(x)
    ref[:, 0, 1] = 1
    np.testing.assert_allclose(out, ref, atol=1e-6)
    assert T.Rotate(10)(np.ones((4, 1, 5, 6), np.float32)).shape == (4, 1, 5, 6)
    with pytest.raises(TypeError, match='float32'):
        T.Rotate(10)(nd.ones((3, 4, 4), dtype='uint8'))


def test_random_rotation():
    with pytest.raises(ValueError, match='between 0 and 1'):
        T.RandomRotation((-10, 10), rotate_with_proba=1.5)
    with pytest.raises(ValueError, match='ordered'):
        T.RandomRotation((10, -10))
    x = np.random.RandomState(0).uniform(size=(3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(T.RandomRotation((-90, 90), rotate_with_proba=0)(x), x)
    np.random.seed(3)
    np.random.random_sample()  # the draw that decides whether to rotate
    degrees = np.random.uniform(-90, 90, size=1)
    np.random.seed(3)
    out = T.RandomRotation((-90, 90))(x)
    np.testing.assert_allclose(out, T.Rotate(float(degrees[0]))(x), rtol=1e-6)


def test_random_apply_applies_with_probability_p():
    np.random.seed(0)
    double = T.RandomApply(lambda a: a * 2, p=0.3)
    applied = sum(double(np.ones(1))[0] == 2 for _ in range(2000))
    assert abs(applied / 2000 - 0.3) < 0.05
    assert T.RandomApply(T.Compose([T.Resize(4)]), p=1)(_image()).shape == (4, 4, 3)
