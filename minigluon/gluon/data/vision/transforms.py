"""Image transforms with Gluon's names and conventions.

A transform is called on one image and returns the same kind of object: an NDArray
gives an NDArray on the same context, a numpy (or CuPy) array gives an array.
Images are HWC (height, width, channels), uint8 or float; ``ToTensor`` turns them
into CHW float32 in [0, 1] and ``Normalize`` works on CHW tensors. Sizes follow
MXNet: an int, or ``(width, height)``. Randomness comes from numpy's global
generator (``np.random.seed`` reproduces it; DataLoader workers are seeded apart).

Every transform is vectorised numpy (geometry as views where possible); resizing
uses Pillow. Colour transforms on uint8 images compute in float32 and saturate back
to uint8.
"""
import numbers

import numpy as np

from .... import backend
from ....base import MXNetError
from ....ndarray import NDArray

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'RandomCrop', 'CenterCrop', 'Resize',
           'RandomResizedCrop', 'RandomFlipLeftRight', 'RandomFlipTopBottom',
           'RandomBrightness', 'RandomContrast', 'RandomSaturation', 'RandomHue',
           'RandomColorJitter', 'RandomLighting']

_GRAY_COEF = (0.299, 0.587, 0.114)  # ITU-R 601 luma, as MXNet's colour ops


def _array_module(data):
    if isinstance(data, np.ndarray) or backend.is_device_array(data):
        return backend.get_array_module(data)
    raise MXNetError('transforms take an NDArray or a numpy/CuPy array, got %s'
                     % type(data).__name__)


class Transform:
    """Base class: ``forward(data)`` maps a raw array to a raw array."""

    def __call__(self, x):
        if isinstance(x, NDArray):
            ctx = x.context
            with ctx.device():
                return NDArray(self.forward(x.handle), ctx)
        return self.forward(x)

    def forward(self, data):
        raise NotImplementedError

    def hybridize(self, *args, **kwargs):
        """Accepted for Gluon compatibility: there is nothing to compile."""

    def __repr__(self):
        args = ', '.join('%s=%r' % (k.lstrip('_'), v) for k, v in vars(self).items())
        return '%s(%s)' % (type(self).__name__, args)


class Compose(Transform):
    """Applies ``transforms`` one after the other."""

    def __init__(self, transforms):
        self._transforms = list(transforms)
        for t in self._transforms:
            if not callable(t):
                raise MXNetError('Compose: %r is not callable' % (t,))

    def __call__(self, x):
        for t in self._transforms:
            x = t(x)
        return x

    def forward(self, data):
        return self(data)

    def __len__(self):
        return len(self._transforms)

    def __getitem__(self, i):
        return self._transforms[i]

    def __repr__(self):
        inner = ''.join('\n  (%d): %r' % (i, t) for i, t in enumerate(self._transforms))
        return 'Compose(%s\n)' % inner


class Cast(Transform):
    """Cast to ``dtype`` (float32 by default)."""

    def __init__(self, dtype='float32'):
        self._dtype = np.dtype(dtype)

    def forward(self, data):
        return data.astype(self._dtype, copy=False)


def _check_image(name, data):
    if data.ndim not in (3, 4):
        raise MXNetError('%s expects an HWC image (or an NHWC batch), got shape %s'
                         % (name, data.shape))


class ToTensor(Transform):
    """HWC (or NHWC) image with values in [0, 255] -> CHW (NCHW) float32 in [0, 1]."""

    def forward(self, data):
        _check_image('ToTensor', data)
        xp = _array_module(data)
        axes = (2, 0, 1) if data.ndim == 3 else (0, 3, 1, 2)
        moved = data.transpose(axes)
        out = xp.empty(moved.shape, np.float32)
        xp.divide(moved, np.float32(255), out=out)
        return out


def _per_channel(name, values, channels):
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    if values.size not in (1, channels):
        raise MXNetError('Normalize: %s has %d values but the tensor has %d channels'
                         % (name, values.size, channels))
    return values


class Normalize(Transform):
    """``(x - mean) / std`` per channel of a CHW (or NCHW) float tensor.

    Parameters
    ----------
    mean : float or sequence of floats, default 0
    std : float or sequence of floats, default 1
    """

    def __init__(self, mean=0.0, std=1.0):
        self._mean = mean
        self._std = std
        std_arr = np.asarray(std, dtype=np.float32)
        if np.any(std_arr == 0):
            raise MXNetError('Normalize: std must not contain zeros, got %r' % (std,))
        self._cache = {}

    def _params(self, xp, data, channels):
        key = (xp.__name__, getattr(getattr(data, 'device', None), 'id', None), channels)
        if key not in self._cache:
            mean = _per_channel('mean', self._mean, channels)
            inv_std = 1 / _per_channel('std', self._std, channels)
            self._cache[key] = (xp.asarray(mean.reshape(-1, 1, 1)),
                                xp.asarray(inv_std.reshape(-1, 1, 1)))
        return self._cache[key]

    def forward(self, data):
        if data.ndim not in (3, 4) or data.dtype.kind != 'f':
            raise MXNetError('Normalize expects a CHW (or NCHW) float tensor, got %s of shape %s; '
                             'apply ToTensor first' % (data.dtype, data.shape))
        xp = _array_module(data)
        mean, inv_std = self._params(xp, data, data.shape[-3])
        out = xp.subtract(data, mean, dtype=np.result_type(data.dtype, np.float32))
        out *= inv_std
        return out

    def __repr__(self):
        return 'Normalize(mean=%r, std=%r)' % (self._mean, self._std)


# ---- geometry ------------------------------------------------------------------------------
def _size_wh(name, size):
    """MXNet's size argument: an int (square) or (width, height)."""
    if isinstance(size, numbers.Integral):
        size = (size, size)
    try:
        w, h = (int(s) for s in size)
    except (TypeError, ValueError):
        raise MXNetError('%s: size must be an int or (width, height), got %r'
                         % (name, size)) from None
    if w <= 0 or h <= 0:
        raise MXNetError('%s: size must be positive, got %r' % (name, size))
    return w, h


_PIL_FILTERS = {0: 'NEAREST', 1: 'BILINEAR', 2: 'BICUBIC', 3: 'BOX', 4: 'LANCZOS'}


def _interp_code(name, interp, src_wh, dst_wh):
    """MXNet/OpenCV codes: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos,
    9 auto (bicubic up, area down, bilinear otherwise), 10 random."""
    if interp == 9:
        if dst_wh[0] > src_wh[0] and dst_wh[1] > src_wh[1]:
            return 2
        if dst_wh[0] < src_wh[0] and dst_wh[1] < src_wh[1]:
            return 3
        return 1
    if interp == 10:
        return int(np.random.randint(0, 5))
    if interp not in _PIL_FILTERS:
        raise MXNetError('%s: interpolation must be 0-4, 9 or 10, got %r' % (name, interp))
    return interp


def imresize(data, w, h, interp=1):
    """Resize an HWC image to ``w x h`` with Pillow (uint8 fast path, float per channel)."""
    from PIL import Image
    xp = _array_module(data)
    host = backend.to_host(data)
    code = _interp_code('resize', interp, (host.shape[1], host.shape[0]), (w, h))
    resample = getattr(Image, _PIL_FILTERS[code])
    if host.dtype == np.uint8 and host.shape[2] in (1, 3, 4):
        img = Image.fromarray(np.ascontiguousarray(host if host.shape[2] > 1 else host[:, :, 0]))
        out = np.asarray(img.resize((w, h), resample))
        out = out.reshape(h, w, host.shape[2])
    else:
        planes = [np.asarray(Image.fromarray(np.ascontiguousarray(host[:, :, c], np.float32))
                             .resize((w, h), resample)) for c in range(host.shape[2])]
        out = np.stack(planes, axis=2).astype(host.dtype, copy=False)
    return out if xp is np else xp.asarray(out)


def _scale_down(src_wh, size_wh):
    """The biggest crop of ``size_wh``'s aspect ratio that fits in ``src_wh`` (MXNet's rule)."""
    w, h = size_wh
    sw, sh = src_wh
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _crop_resize(data, x0, y0, w, h, size_wh, interp):
    out = data[y0:y0 + h, x0:x0 + w]
    if (w, h) != size_wh:
        out = imresize(out, size_wh[0], size_wh[1], interp)
    return out


def _center_crop(data, size_wh, interp):
    sh, sw = data.shape[:2]
    w, h = _scale_down((sw, sh), size_wh)
    return _crop_resize(data, (sw - w) // 2, (sh - h) // 2, w, h, size_wh, interp)


def _pad_widths(pad):
    """``pad`` as ((top, bottom), (left, right)) from an int or numpy-style widths."""
    if isinstance(pad, numbers.Integral):
        return (pad, pad), (pad, pad)
    pad = tuple(pad)
    if len(pad) == 1:
        return _pad_widths(pad[0]) if isinstance(pad[0], numbers.Integral) \
            else (tuple(pad[0]), tuple(pad[0]))
    if len(pad) in (2, 3) and all(len(p) == 2 for p in pad):
        if len(pad) == 3 and tuple(pad[2]) != (0, 0):
            raise MXNetError('RandomCrop: the channel axis cannot be padded, got pad=%r' % (pad,))
        return tuple(pad[0]), tuple(pad[1])
    raise MXNetError('RandomCrop: pad must be an int or ((top, bottom), (left, right)), got %r'
                     % (pad,))


class RandomCrop(Transform):
    """A random ``size`` crop, after padding the image with ``pad_value``.

    ``RandomCrop(32, pad=4)`` is the usual CIFAR augmentation: pad 4 zero pixels on
    every side, crop a random 32 x 32 window. An image smaller than ``size`` (after
    padding) gives the biggest crop of the same aspect ratio, resized to ``size``.

    Parameters
    ----------
    size : int or (width, height)
    pad : int or ((top, bottom), (left, right)), optional
    pad_value : number, default 0
    interpolation : int, default 1 (bilinear)
    """

    def __init__(self, size, pad=None, pad_value=0, interpolation=1):
        self._size = _size_wh('RandomCrop', size)
        self._pad = _pad_widths(pad) if pad is not None else ((0, 0), (0, 0))
        if min(min(p) for p in self._pad) < 0:
            raise MXNetError('RandomCrop: pad widths must be >= 0, got %r' % (pad,))
        self._pad_value = pad_value
        self._interpolation = interpolation

    def forward(self, data):
        if data.ndim != 3:
            raise MXNetError('RandomCrop expects an HWC image, got shape %s' % (data.shape,))
        (top, bottom), (left, right) = self._pad
        h, w = data.shape[:2]
        ph, pw = h + top + bottom, w + left + right
        cw, ch = self._size
        if ph < ch or pw < cw:  # too small: pad for real, then crop-and-resize
            xp = _array_module(data)
            padded = xp.pad(data, ((top, bottom), (left, right), (0, 0)),
                            constant_values=self._pad_value)
            nw, nh = _scale_down((pw, ph), (cw, ch))
            x0, y0 = np.random.randint(0, pw - nw + 1), np.random.randint(0, ph - nh + 1)
            return _crop_resize(padded, x0, y0, nw, nh, self._size, self._interpolation)
        y0 = np.random.randint(0, ph - ch + 1)
        x0 = np.random.randint(0, pw - cw + 1)
        if top <= y0 and y0 + ch <= top + h and left <= x0 and x0 + cw <= left + w:
            return data[y0 - top:y0 - top + ch, x0 - left:x0 - left + cw]  # no padding seen
        # Only the part of the window that overlaps the image is copied; the rest is padding.
        xp = _array_module(data)
        out = xp.full((ch, cw, data.shape[2]), self._pad_value, dtype=data.dtype)
        ys, ye = max(y0, top), min(y0 + ch, top + h)
        xs, xe = max(x0, left), min(x0 + cw, left + w)
        if ys < ye and xs < xe:
            out[ys - y0:ye - y0, xs - x0:xe - x0] = data[ys - top:ye - top, xs - left:xe - left]
        return out


class CenterCrop(Transform):
    """The central ``size`` crop; a smaller image is cropped to its aspect ratio and resized.

    Parameters
    ----------
    size : int or (width, height)
    interpolation : int, default 1 (bilinear)
    """

    def __init__(self, size, interpolation=1):
        self._size = _size_wh('CenterCrop', size)
        self._interpolation = interpolation

    def forward(self, data):
        if data.ndim != 3:
            raise MXNetError('CenterCrop expects an HWC image, got shape %s' % (data.shape,))
        return _center_crop(data, self._size, self._interpolation)


class Resize(Transform):
    """Resize to ``size``.

    Parameters
    ----------
    size : int or (width, height)
        With an int and ``keep_ratio``, the shorter side becomes ``size`` and the
        longer one keeps the aspect ratio; with an int alone, ``size x size``.
    keep_ratio : bool, default False
    interpolation : int, default 1 (bilinear)
    """

    def __init__(self, size, keep_ratio=False, interpolation=1):
        self._keep = bool(keep_ratio)
        self._size = size if isinstance(size, numbers.Integral) else _size_wh('Resize', size)
        if isinstance(size, numbers.Integral) and size <= 0:
            raise MXNetError('Resize: size must be positive, got %r' % (size,))
        self._interpolation = interpolation

    def _target(self, h, w):
        if not isinstance(self._size, numbers.Integral):
            return self._size
        if not self._keep:
            return self._size, self._size
        if h > w:
            return self._size, int(h * self._size / w)
        return int(w * self._size / h), self._size

    def forward(self, data):
        if data.ndim == 4:
            return _array_module(data).stack([self.forward(d) for d in data])
        if data.ndim != 3:
            raise MXNetError('Resize expects an HWC image (or NHWC batch), got shape %s'
                             % (data.shape,))
        w, h = self._target(*data.shape[:2])
        return imresize(data, w, h, self._interpolation)


class RandomResizedCrop(Transform):
    """A crop of random area and aspect ratio, resized to ``size`` (Inception-style).

    Parameters
    ----------
    size : int or (width, height)
    scale : (float, float), default (0.08, 1.0)
        Range of the crop's area as a fraction of the image's.
    ratio : (float, float), default (3/4, 4/3)
        Range of the crop's aspect ratio (width / height), drawn log-uniformly.
    interpolation : int, default 1 (bilinear)
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        self._size = _size_wh('RandomResizedCrop', size)
        if isinstance(scale, numbers.Real):
            scale = (scale, 1.0)
        self._scale = tuple(scale)
        self._ratio = tuple(ratio)
        if not 0 < self._scale[0] <= self._scale[1] or not 0 < self._ratio[0] <= self._ratio[1]:
            raise MXNetError('RandomResizedCrop: scale and ratio must be increasing positive '
                             'ranges, got scale=%r ratio=%r' % (scale, ratio))
        self._interpolation = interpolation

    def forward(self, data):
        if data.ndim != 3:
            raise MXNetError('RandomResizedCrop expects an HWC image, got shape %s'
                             % (data.shape,))
        h, w = data.shape[:2]
        log_ratio = np.log(self._ratio)
        for _ in range(10):
            area = np.random.uniform(*self._scale) * h * w
            aspect = np.exp(np.random.uniform(*log_ratio))
            cw = int(round(np.sqrt(area * aspect)))
            ch = int(round(np.sqrt(area / aspect)))
            if 0 < cw <= w and 0 < ch <= h:
                x0 = np.random.randint(0, w - cw + 1)
                y0 = np.random.randint(0, h - ch + 1)
                return _crop_resize(data, x0, y0, cw, ch, self._size, self._interpolation)
        return _center_crop(data, self._size, self._interpolation)


class RandomFlipLeftRight(Transform):
    """Mirror the image horizontally with probability 1/2 (a view, no copy)."""

    def forward(self, data):
        _check_image('RandomFlipLeftRight', data)
        return data[..., ::-1, :] if np.random.random_sample() < 0.5 else data


class RandomFlipTopBottom(Transform):
    """Flip the image vertically with probability 1/2 (a view, no copy)."""

    def forward(self, data):
        _check_image('RandomFlipTopBottom', data)
        return data[..., ::-1, :, :] if np.random.random_sample() < 0.5 else data


# ---- colour --------------------------------------------------------------------------------
def _rgb(name, data):
    if data.ndim not in (3, 4) or data.shape[-1] != 3:
        raise MXNetError('%s expects RGB images in HWC layout (3 channels last), got shape %s; '
                         'apply colour transforms before ToTensor' % (name, data.shape))
    return data


def _as_float(data):
    return data.astype(np.float32) if data.dtype.kind != 'f' else data


def _like_input(out, data):
    """Back to the input's dtype; integer images saturate (clip) as in MXNet."""
    if data.dtype == out.dtype:
        return out
    if data.dtype.kind in 'iu':
        info = np.iinfo(data.dtype)
        out = _array_module(out).clip(out, info.min, info.max)
    return out.astype(data.dtype)


def _gray(xp, data):
    """Per-pixel luma, shape (..., H, W, 1)."""
    coef = xp.asarray(_GRAY_COEF, dtype=np.float32)
    return (data * coef).sum(axis=-1, keepdims=True)


def adjust_brightness(data, alpha):
    """``x * alpha``."""
    return _like_input(_as_float(data) * np.float32(alpha), data)


def adjust_contrast(data, alpha):
    """Blend with the image's mean luma: ``x * alpha + mean_gray * (1 - alpha)``."""
    x = _as_float(data)
    mean = _gray(_array_module(x), x).mean(axis=(-3, -2, -1), keepdims=True)
    return _like_input(x * np.float32(alpha) + mean * np.float32(1 - alpha), data)


def adjust_saturation(data, alpha):
    """Blend with the per-pixel luma: ``x * alpha + gray * (1 - alpha)``."""
    x = _as_float(data)
    gray = _gray(_array_module(x), x)
    return _like_input(x * np.float32(alpha) + gray * np.float32(1 - alpha), data)


def adjust_hue(data, alpha):
    """Rotate every pixel's hue by ``alpha`` turns (``alpha * 360`` degrees).

    Lightness and saturation (HLS) are kept: each pixel keeps its largest and
    smallest channel values and the hue moves around the colour wheel.
    """
    xp = _array_module(data)
    x = _as_float(data)
    top, bottom = x.max(axis=-1), x.min(axis=-1)
    spread = top - bottom
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    safe = xp.where(spread > 0, spread, 1)
    hue = xp.where(top == r, ((g - b) / safe) % 6,
                   xp.where(top == g, (b - r) / safe + 2, (r - g) / safe + 4))
    hue = (hue + np.float32(6 * alpha)) % 6
    out = xp.empty_like(x)
    for channel, n in enumerate((5, 3, 1)):  # HSV -> RGB with k = (n + hue) mod 6
        k = (n + hue) % 6
        out[..., channel] = top - spread * xp.clip(xp.minimum(k, 4 - k), 0, 1)
    return _like_input(out, data)


_EIGVAL = np.array([55.46, 4.794, 1.148], dtype=np.float32)
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]], dtype=np.float32)


def adjust_lighting(data, alpha_rgb):
    """AlexNet's PCA lighting noise: add ``eigvec @ (alpha_rgb * eigval)`` to every pixel."""
    xp = _array_module(data)
    shift = _EIGVEC @ (np.asarray(alpha_rgb, dtype=np.float32) * _EIGVAL)
    return _like_input(_as_float(data) + xp.asarray(shift), data)


def _factor(name, value):
    if not isinstance(value, numbers.Real) or value < 0:
        raise MXNetError('%s must be a number >= 0, got %r' % (name, value))
    return float(value)


class RandomBrightness(Transform):
    """Scale brightness by a factor drawn from ``[1 - brightness, 1 + brightness]``."""

    def __init__(self, brightness):
        self._brightness = _factor('RandomBrightness: brightness', brightness)

    def forward(self, data):
        b = self._brightness
        return adjust_brightness(_rgb('RandomBrightness', data), 1 + np.random.uniform(-b, b))


class RandomContrast(Transform):
    """Scale contrast by a factor drawn from ``[1 - contrast, 1 + contrast]``."""

    def __init__(self, contrast):
        self._contrast = _factor('RandomContrast: contrast', contrast)

    def forward(self, data):
        c = self._contrast
        return adjust_contrast(_rgb('RandomContrast', data), 1 + np.random.uniform(-c, c))


class RandomSaturation(Transform):
    """Scale saturation by a factor drawn from ``[1 - saturation, 1 + saturation]``."""

    def __init__(self, saturation):
        self._saturation = _factor('RandomSaturation: saturation', saturation)

    def forward(self, data):
        s = self._saturation
        return adjust_saturation(_rgb('RandomSaturation', data), 1 + np.random.uniform(-s, s))


class RandomHue(Transform):
    """Rotate hue by a fraction of a turn drawn from ``[-hue, hue]``."""

    def __init__(self, hue):
        self._hue = _factor('RandomHue: hue', hue)

    def forward(self, data):
        return adjust_hue(_rgb('RandomHue', data), np.random.uniform(-self._hue, self._hue))


class RandomColorJitter(Transform):
    """Random brightness, contrast, saturation and hue changes, in a random order.

    A factor of 0 leaves that property unchanged.
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self._jitters = [cls(value) for cls, value in
                         ((RandomBrightness, brightness), (RandomContrast, contrast),
                          (RandomSaturation, saturation), (RandomHue, hue)) if value]

    def forward(self, data):
        _rgb('RandomColorJitter', data)
        for i in np.random.permutation(len(self._jitters)):
            data = self._jitters[i].forward(data)
        return data


class RandomLighting(Transform):
    """AlexNet-style PCA lighting noise with standard deviation ``alpha``."""

    def __init__(self, alpha):
        self._alpha = _factor('RandomLighting: alpha', alpha)

    def forward(self, data):
        _rgb('RandomLighting', data)
        if self._alpha == 0:
            return data
        return adjust_lighting(data, np.random.normal(0, self._alpha, size=3))
