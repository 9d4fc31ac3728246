"""The image side of ``ImageRecordIter``: decoding, MXNet's default augmenter and the
normalisation, computed as MXNet 1.x's C++ iterator computes them.

MXNet draws its random numbers from ``std::mt19937`` through libstdc++'s
distributions and transforms images with OpenCV 3.4; ``StdRandom`` below and the
kernels of ``ndarray/image_cv.py`` reproduce both bit for bit, so a record augmented
with the same seed gives the same pixels as in MXNet.
"""
import math

import numpy as np

from ..base import MXNetError
from ..ndarray.image_codec import decode_raw
from ..ndarray.image_cv import (add_weighted, convert_scale, cv_bgr_to_hls, cv_copy_make_border,
                                cv_hls_to_bgr, cv_resize, cv_rgb_to_gray, cv_warp_affine)

__all__ = ['StdRandom', 'AugmentParams', 'decode_record_image', 'augment',
           'draw_normalization', 'normalize']

_F32 = np.float32
_F32_EPS = np.finfo(np.float32).eps
_U32 = 1 << 32


# ---- std::mt19937 with libstdc++'s distributions -------------------------------------------
class StdRandom:
    """``std::mt19937`` seeded with ``seed``, drawn through libstdc++'s (GCC 4.8)
    distributions the way MXNet's C++ iterators use them.

    numpy's legacy ``RandomState(seed)`` is the same Mersenne Twister with the same
    seeding; each full-range 32-bit draw consumes one output.
    """

    def __init__(self, seed):
        self._state = np.random.RandomState(int(seed) % _U32)

    def reseed(self, seed):
        """Start again from ``seed`` (much cheaper than a new generator)."""
        self._state.seed(int(seed) % _U32)
        return self

    def copy(self):
        """An independent generator in the same state."""
        twin = StdRandom(0)
        twin._state.set_state(self._state.get_state())
        return twin

    def raw(self):
        """The next 32-bit output."""
        return int(self._state.randint(0, _U32, dtype=np.uint64))

    def raw_block(self, count):
        """The next ``count`` outputs as an int64 array."""
        return self._state.randint(0, _U32, size=count, dtype=np.uint64).astype(np.int64)

    def uniform_int(self, low, high):
        """``std::uniform_int_distribution(low, high)``: rejection then division."""
        span = high - low
        if span >= _U32 - 1:
            return self.raw() + low
        scaling = (_U32 - 1) // (span + 1)
        past = (span + 1) * scaling
        value = self.raw()
        while value >= past:
            value = self.raw()
        return value // scaling + low

    def canonical_float(self):
        """``std::generate_canonical<float, 24>``: one draw over 2^32, in float."""
        return _F32(self.raw()) / _F32(_U32)

    def uniform_float(self, low, high):
        """``std::uniform_real_distribution<float>(low, high)``."""
        low, high = _F32(low), _F32(high)
        return _F32(self.canonical_float() * _F32(high - low) + low)

    def coin(self):
        """``std::bernoulli_distribution(0.5)``: two draws make a double in [0, 1)."""
        first = float(self.raw())
        second = float(self.raw()) * 4294967296.0
        return (first + second) / 18446744073709551616.0 < 0.5

    def normal_pair(self, stddev):
        """Two draws of ``std::normal_distribution<float>(0, stddev)`` (Marsaglia's polar
        method, which makes them in pairs): the first returned, then the saved one."""
        one, two = _F32(1), _F32(2)
        while True:
            x = _F32(two * self.canonical_float() - one)
            y = _F32(two * self.canonical_float() - one)
            r2 = _F32(x * x + y * y)
            if not (r2 > 1 or r2 == 0):
                break
        mult = np.sqrt(_F32(_F32(-2) * np.log(r2)) / r2, dtype=_F32)
        return [_F32(y * mult) * _F32(stddev), _F32(x * mult) * _F32(stddev)]

    def shuffle(self, items):
        """``std::shuffle``: ``items`` (a list or an array) permuted in place.

        Fisher-Yates from the front, the partner of item ``i`` a ``uniform_int(0, i)``.
        The draws are made in blocks of exactly as many as still needed, so the
        generator ends where the one-at-a-time loop would; a rejected draw shifts the
        rest of its block to the next position.
        """
        n, i = len(items), 1
        unread = np.empty(0, np.int64)
        while i < n:
            want = min(n - i, 4096)
            if len(unread) < want:
                unread = np.concatenate([unread, self.raw_block(want - len(unread))])
            bounds = np.arange(i, i + want, dtype=np.int64) + 1
            scaling = (_U32 - 1) // bounds
            accepted = unread[:want] < bounds * scaling
            good = want if accepted.all() else int(np.argmin(accepted))
            partners = (unread[:good] // scaling[:good]).tolist()
            for k, j in enumerate(partners, i):
                items[k], items[j] = items[j], items[k]
            i += good
            unread = unread[good + (good < want):]
        return items


# ---- decoding ------------------------------------------------------------------------------
def decode_record_image(payload, channels, what):
    """The image in a record's payload as OpenCV decodes it for MXNet's iterator: HxWxC
    uint8 in BGR(A) order, C = ``channels`` (1, 3 or 4; one channel is OpenCV's gray:
    libjpeg's luma for JPEGs, libpng's weights for colour PNGs)."""
    img = decode_raw(payload, {1: 0, 3: 1}.get(channels, -1), False, what)
    if img.shape[2] != channels:
        raise MXNetError('%s has %d channel(s) but data_shape asks for 4: an image with an '
                         'alpha channel (e.g. an RGBA PNG) is needed, or use data_shape with '
                         '3 channels' % (what, img.shape[2]))
    return img


# ---- MXNet's default augmenter -------------------------------------------------------------
class AugmentParams:
    """The parameters of MXNet's ``aug_default`` augmenter and of the normalisation, with
    MXNet's defaults; ``data_shape`` is (channels, height, width)."""

    FIELDS = {
        'resize': -1, 'rand_crop': False, 'random_resized_crop': False,
        'max_rotate_angle': 0, 'max_aspect_ratio': 0.0, 'min_aspect_ratio': None,
        'max_shear_ratio': 0.0, 'max_crop_size': -1, 'min_crop_size': -1,
        'max_random_scale': 1.0, 'min_random_scale': 1.0, 'max_random_area': 1.0,
        'min_random_area': 1.0, 'max_img_size': 1e10, 'min_img_size': 0.0,
        'brightness': 0.0, 'contrast': 0.0, 'saturation': 0.0, 'pca_noise': 0.0,
        'random_h': 0, 'random_s': 0, 'random_l': 0, 'rotate': -1, 'rotate_list': (),
        'fill_value': 255, 'inter_method': 1, 'pad': 0,
        # the normalisation done while copying into the batch
        'mirror': False, 'rand_mirror': False, 'mean_r': 0.0, 'mean_g': 0.0,
        'mean_b': 0.0, 'mean_a': 0.0, 'std_r': 1.0, 'std_g': 1.0, 'std_b': 1.0,
        'std_a': 1.0, 'scale': 1.0, 'max_random_contrast': 0.0,
        'max_random_illumination': 0.0,
    }

    def __init__(self, data_shape, **values):
        self.data_shape = tuple(int(d) for d in data_shape)
        for name, default in self.FIELDS.items():
            setattr(self, name, values.get(name, default))
        f32 = _F32
        if self.min_aspect_ratio is not None:
            self.aspect_range = (f32(self.min_aspect_ratio), f32(self.max_aspect_ratio))
        else:
            self.aspect_range = (f32(1) - f32(self.max_aspect_ratio),
                                 f32(1) + f32(self.max_aspect_ratio))
        lo, hi = self.aspect_range
        self.affine = (self.max_rotate_angle > 0 or self.max_shear_ratio > 0 or self.rotate > 0
                       or len(self.rotate_list) > 0 or f32(self.max_random_scale) != 1
                       or f32(self.min_random_scale) != 1
                       or (not self.random_resized_crop and (lo != 1 or hi != 1))
                       or f32(self.max_img_size) != f32(1e10)
                       or f32(self.min_img_size) != 0)
        if self.random_resized_crop and (
                self.min_random_scale != 1 or self.max_random_scale != 1
                or self.min_crop_size != -1 or self.max_crop_size != -1 or self.rand_crop):
            raise MXNetError('random_resized_crop=True conflicts with min_random_scale, '
                             'max_random_scale, min_crop_size, max_crop_size and rand_crop: '
                             'leave those at their defaults')


def _inter_method(params, old_w, old_h, new_w, new_h, rng):
    """MXNet's GetInterMethod: 9 picks by the size change, 10 draws one."""
    code = params.inter_method
    if code == 9:
        if new_w > old_w and new_h > old_h:
            return 2        # bicubic
        if new_w < old_w and new_h < old_h:
            return 3        # area
        return 1            # bilinear
    if code == 10:
        return rng.uniform_int(0, 4)
    return code


def _affine(params, img, rng):
    """Rotation, shear, scale and aspect change in one warp."""
    f32 = _F32
    shear = f32(rng.canonical_float() * f32(params.max_shear_ratio) * f32(2)
                - f32(params.max_shear_ratio))
    angle = rng.uniform_int(-params.max_rotate_angle, params.max_rotate_angle)
    if params.rotate > 0:
        angle = params.rotate
    if params.rotate_list:
        angle = params.rotate_list[rng.uniform_int(0, len(params.rotate_list) - 1)]
    a = f32(math.cos(angle / 180.0 * math.pi))
    b = f32(math.sin(angle / 180.0 * math.pi))
    scale = ratio = f32(1)
    if not params.random_resized_crop:
        scale = f32(rng.canonical_float() * (f32(params.max_random_scale)
                                             - f32(params.min_random_scale))
                    + f32(params.min_random_scale))
        lo, hi = params.aspect_range
        ratio = f32(rng.canonical_float() * (hi - lo) + lo)
    hs = f32(f32(2) * scale / (f32(1) + ratio))
    ws = f32(ratio * hs)
    rows, cols = img.shape[:2]
    new_w = max(f32(params.min_img_size), min(f32(params.max_img_size), f32(scale * f32(cols))))
    new_h = max(f32(params.min_img_size), min(f32(params.max_img_size), f32(scale * f32(rows))))
    m00 = f32(f32(hs * a) - f32(f32(shear * b) * ws))
    m10 = f32(-b * ws)
    m01 = f32(f32(hs * b) + f32(f32(shear * a) * ws))
    m11 = f32(a * ws)
    center_w = f32(f32(m00 * f32(cols)) + f32(m01 * f32(rows)))
    center_h = f32(f32(m10 * f32(cols)) + f32(m11 * f32(rows)))
    m02 = f32((new_w - center_w) / f32(2))
    m12 = f32((new_h - center_h) / f32(2))
    matrix = np.array([[m00, m01, m02], [m10, m11, m12]], _F32)
    interp = _inter_method(params, cols, rows, int(new_w), int(new_h), rng)
    return cv_warp_affine(img, matrix, int(new_w), int(new_h), interp, params.fill_value)


def _random_resized_crop(params, img, rng):
    """Up to 10 tries of a random area and aspect ratio; None when none fits."""
    lo, hi = params.aspect_range
    area_lo, area_hi = _F32(params.min_random_area), _F32(params.max_random_area)
    rows, cols = img.shape[:2]
    area = _F32(rows * cols)
    _, out_h, out_w = params.data_shape
    for _ in range(10):
        rand_area = _F32(rng.canonical_float() * (area_hi - area_lo) + area_lo)
        ratio = _F32(rng.canonical_float() * (hi - lo) + lo)
        target = _F32(area * rand_area)
        y_area = int(round_half_away(float(np.sqrt(_F32(target / ratio)))))
        x_area = int(round_half_away(float(np.sqrt(_F32(target * ratio)))))
        if rng.canonical_float() > 0.5:
            y_area, x_area = x_area, y_area
        if y_area <= rows and x_area <= cols:
            y = rng.uniform_int(0, rows - y_area)
            x = rng.uniform_int(0, cols - x_area)
            interp = _inter_method(params, x_area, y_area, out_w, out_h, rng)
            return cv_resize(img[y:y + y_area, x:x + x_area], out_w, out_h, interp)
    return None


def round_half_away(value):
    """std::round: halves away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _window_corner(params, spare_rows, spare_cols, rng):
    """The top-left corner of a crop window with this much room: drawn (rows first, as
    MXNet draws them) with ``rand_crop``, else centred."""
    if params.rand_crop:
        return rng.uniform_int(0, spare_rows), rng.uniform_int(0, spare_cols)
    return spare_rows // 2, spare_cols // 2


def _crop(params, img, rng):
    """The crop to data_shape: a random-size square, or a centred / random window."""
    _, out_h, out_w = params.data_shape
    rows, cols = img.shape[:2]
    if not params.random_resized_crop and (params.max_crop_size != -1
                                           or params.min_crop_size != -1):
        if not (cols >= params.max_crop_size and rows >= params.max_crop_size
                and params.max_crop_size >= params.min_crop_size):
            raise MXNetError('input image size %dx%d smaller than max_crop_size=%d (or '
                             'min_crop_size=%d > max_crop_size)'
                             % (cols, rows, params.max_crop_size, params.min_crop_size))
        size = rng.uniform_int(params.min_crop_size, params.max_crop_size)
        if size <= 0:
            raise MXNetError('the random crop size drawn from [min_crop_size, max_crop_size] '
                             '= [%d, %d] is %d: set both to positive sizes'
                             % (params.min_crop_size, params.max_crop_size, size))
        y, x = _window_corner(params, rows - size, cols - size, rng)
        interp = _inter_method(params, size, size, out_w, out_h, rng)
        return cv_resize(img[y:y + size, x:x + size], out_w, out_h, interp)
    interp = _inter_method(params, cols, rows, out_w, out_h, rng)
    if rows < out_h:
        new_cols = int(_F32(_F32(out_h) / _F32(rows) * _F32(cols)))
        img = cv_resize(img, new_cols, out_h, interp)
        rows, cols = img.shape[:2]
    if cols < out_w:
        new_rows = int(_F32(_F32(out_w) / _F32(cols) * _F32(rows)))
        img = cv_resize(img, out_w, new_rows, interp)
        rows, cols = img.shape[:2]
    if rows < out_h or cols < out_w:
        raise MXNetError('input image size %dx%d smaller than input shape %dx%d'
                         % (cols, rows, out_w, out_h))
    y, x = _window_corner(params, rows - out_h, cols - out_w, rng)
    return img[y:y + out_h, x:x + out_w]


def _color_jitter(params, img, rng):
    """Brightness, contrast and saturation in a random order (OpenCV's RGB2GRAY applied
    to BGR pixels, as MXNet does)."""
    f32 = _F32
    alpha_b = f32(1) + rng.uniform_float(-params.brightness, params.brightness)
    alpha_c = f32(1) + rng.uniform_float(-params.contrast, params.contrast)
    alpha_s = f32(1) + rng.uniform_float(-params.saturation, params.saturation)
    order = rng.shuffle([0, 1, 2])
    for step in order:
        if step == 0:
            img = convert_scale(img, alpha_b, 0)
        elif step == 1:
            mean = float(cv_rgb_to_gray(img).mean(dtype=np.float64))
            img = convert_scale(img, alpha_c, (1 - float(alpha_c)) * mean)
        else:
            gray = np.repeat(cv_rgb_to_gray(img), 3, axis=2)
            img = add_weighted(img, alpha_s, gray, f32(1) - alpha_s)
    return img


def _hls_jitter(params, img, rng):
    f32 = _F32
    shifts = []
    for limit in (params.random_h, params.random_s, params.random_l):
        r = rng.canonical_float()
        r = f32(r + f32(4) * rng.canonical_float())
        r = f32(r / f32(5))
        shifts.append(int(f32(f32(r * f32(limit)) * f32(2)) - f32(limit)))
    h, s, l = shifts
    hls = cv_bgr_to_hls(img).astype(np.int64)
    hls += np.array([h, l, s])
    hls = np.clip(hls, 0, np.array([180, 255, 255]))
    return cv_hls_to_bgr(hls.astype(np.uint8))


# ImageNet's eigenvalues times eigenvectors, as MXNet stores them
_PCA = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], _F32)


def _pca_noise(params, img, rng):
    first = rng.normal_pair(params.pca_noise)
    third = rng.normal_pair(params.pca_noise)[0]
    alpha = [first[0], first[1], third]
    r, g, b = (_F32(_F32(_F32(v[0] * alpha[0]) + _F32(v[1] * alpha[1])) + _F32(v[2] * alpha[2]))
               for v in _PCA)
    noise = np.array([b, g, r], _F32)
    shifted = (img.astype(_F32) + noise).astype(np.int64)   # int += float truncates
    return np.clip(shifted, 0, 255).astype(np.uint8)


def augment(params, img, rng):
    """MXNet's ``aug_default`` on a decoded HxWxC BGR(A) image, drawing from ``rng`` in
    MXNet's order; returns the data_shape-sized image."""
    if params.resize != -1:
        rows, cols = img.shape[:2]
        if rows > cols:
            new_h, new_w = params.resize * rows // cols, params.resize
        else:
            new_h, new_w = params.resize, params.resize * cols // rows
        img = cv_resize(img, new_w, new_h, _inter_method(params, cols, rows, new_w, new_h, rng))
    if params.affine:
        if params.inter_method not in (1, 2, 3, 4, 9, 10):
            raise MXNetError('inter_method=%r cannot rotate, shear or scale an image: use '
                             '1, 2, 3, 4, 9 or 10' % (params.inter_method,))
        img = _affine(params, img, rng)
    if params.pad > 0:
        img = cv_copy_make_border(img, params.pad, params.fill_value)
    cropped = None
    if params.random_resized_crop:
        lo, hi = params.aspect_range
        if (params.max_random_area != 1 or params.min_random_area != 1 or lo != 1
                or hi != 1):
            cropped = _random_resized_crop(params, img, rng)
    img = cropped if cropped is not None else _crop(params, img, rng)
    if params.brightness > 0 or params.contrast > 0 or params.saturation > 0:
        img = _color_jitter(params, img, rng)
    if params.random_h != 0 or params.random_s != 0 or params.random_l != 0:
        img = _hls_jitter(params, img, rng)
    if params.pca_noise > 0:
        img = _pca_noise(params, img, rng)
    return img


def draw_normalization(params, rng, dtype, channels):
    """The per-record draws of the copy into the batch, in MXNet's order: whether to
    mirror, then (not for uint8) the contrast and illumination, folded with ``scale``
    and the standard deviations into per-channel ``(mirrored, mult, bias)``."""
    mirrored = bool((params.rand_mirror and rng.coin()) or params.mirror)
    if dtype == np.uint8:
        return mirrored, None, None
    f32 = _F32
    contrast = f32(f32(f32(f32(rng.canonical_float() * f32(params.max_random_contrast))
                           * f32(2)) - f32(params.max_random_contrast)) + f32(1))
    contrast = f32(contrast * f32(params.scale))
    illumination = f32(f32(f32(rng.canonical_float() * f32(params.max_random_illumination))
                           * f32(2)) - f32(params.max_random_illumination))
    illumination = f32(illumination * f32(params.scale))
    stds = [params.std_r, params.std_g, params.std_b, params.std_a][:channels]
    mult = np.array([f32(contrast / f32(s)) for s in stds], _F32)[:, None, None]
    bias = np.array([f32(illumination / f32(s)) for s in stds], _F32)[:, None, None]
    return mirrored, mult, bias


def normalize(params, img, draws, dtype, mean_img, out=None):
    """The batch entry for an augmented HxWxC BGR(A) image: CHW in RGB(A) order, for
    float32 ``(x - mean) * mult + bias`` (``mult`` = contrast * scale / std, ``bias`` =
    illumination * scale / std), for int8 ``x - round(mean)`` saturated, for uint8 the
    pixels; mirrored when drawn (``draws`` from ``draw_normalization``).

    ``mean_img`` (CxHxW float32, or None for the per-channel means) is the mean image;
    mirroring moves each pixel together with its mean, as MXNet does. The result goes
    to ``out`` when given (a row of the batch).
    """
    mirrored, mult, bias = draws
    cn = img.shape[2]
    chw = img.transpose(2, 0, 1)
    # BGR(A) -> RGB(A); a view for three channels (a gathered copy costs a third more)
    chw = chw[::-1] if cn == 3 else chw[[2, 1, 0, 3][:cn]] if cn == 4 else chw
    if mirrored:
        chw = chw[:, :, ::-1]
        mean_img = mean_img[:, :, ::-1] if mean_img is not None else None
    if out is None:
        out = np.empty(chw.shape, dtype)
    means = [params.mean_r, params.mean_g, params.mean_b, params.mean_a][:cn]
    if dtype == np.uint8:
        out[...] = chw
    elif dtype == np.int8:
        mean = mean_img if mean_img is not None else np.array(means, _F32)[:, None, None]
        # std::round of the float32 mean: halves away from zero
        mean = np.asarray(mean, _F32).astype(np.float64)
        shift = np.where(mean >= 0, np.floor(mean + 0.5), -np.floor(0.5 - mean))
        out[...] = np.clip(chw.astype(np.int64) - shift.astype(np.int64), -128, 127)
    else:
        mean = mean_img if mean_img is not None else np.array(means, _F32)[:, None, None]
        np.subtract(chw, mean, out=out, dtype=_F32)
        out *= mult
        out += bias
    return out
