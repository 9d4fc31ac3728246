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
from ....base import MXNetError, MXNetTypeError, MXNetValueError
from ....ndarray.image import rotate_raw, scale_down
from ....ndarray import NDArray
from ....ndarray import image as _nd_image
from ....ndarray.image import resize_raw, resized_hw

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'RandomCrop', 'CenterCrop', 'Resize',
           'CropResize', 'RandomResizedCrop', 'RandomFlipLeftRight', 'RandomFlipTopBottom',
           'Rotate', 'RandomRotation', 'RandomApply',
           'RandomBrightness', 'RandomContrast', 'RandomSaturation', 'RandomHue',
           'RandomColorJitter', 'RandomLighting']

_GRAY_COEF = (0.299, 0.587, 0.114)  # ITU-R 601 luma, as MXNet's colour ops


def _array_module(data):
    if backend.is_host_array(data) or backend.is_device_array(data):
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
        """Apply the transform to one raw array; subclasses implement it.

        Calling the transform wraps this: an NDArray argument is unwrapped, transformed on
        its own device and wrapped again.

        Parameters
        ----------
        data : numpy.ndarray or cupy.ndarray
            The sample, usually an HWC image (or a CHW tensor for the tensor transforms).

        Returns
        -------
        numpy.ndarray or cupy.ndarray
            The transformed sample.
        """
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
        return _nd_image._image_to_tensor(_array_module(data), data)


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

    def forward(self, data):
        out, _ = _nd_image._image_normalize(_array_module(data), data, self._mean, self._std)
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


def _crop_resize(data, x0, y0, w, h, size_wh, interp):
    out = data[y0:y0 + h, x0:x0 + w]
    if (w, h) != size_wh:
        out = resize_raw(_array_module(data), out, size_wh[0], size_wh[1], interp)
    return out


def _center_crop(data, size_wh, interp):
    sh, sw = data.shape[:2]
    w, h = scale_down((sw, sh), size_wh)
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
            nw, nh = scale_down((pw, ph), (cw, ch))
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
    """Resize to ``size`` (the arguments are checked when it is applied, as in MXNet).

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
        self._size = size
        self._interpolation = interpolation

    def forward(self, data):
        _check_image('Resize', data)
        h, w = resized_hw(data.shape[-3], data.shape[-2], self._size, self._keep)
        return resize_raw(_array_module(data), data, w, h, self._interpolation)


class CropResize(Transform):
    """The ``width x height`` window at column ``x``, row ``y``, resized to ``size``
    when given.

    Parameters
    ----------
    x, y : int
        Left and top edges of the window.
    width, height : int
    size : int or (width, height), optional
    interpolation : int, optional
        For the resize; bilinear by default.
    """

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        self._window = (x, y, width, height)
        self._size = size
        self._interpolation = interpolation

    def forward(self, data):
        xp = _array_module(data)
        out, _ = _nd_image._image_crop(xp, data, *self._window)
        if self._size:
            h, w = resized_hw(out.shape[-3], out.shape[-2], self._size, False)
            interp = 1 if self._interpolation is None else self._interpolation
            out = resize_raw(xp, out, w, h, interp)
        return out


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


def _rotated(name, data, degrees, zoom_in, zoom_out):
    if np.dtype(data.dtype) != np.float32:
        raise MXNetTypeError('%s only supports float32 CHW tensors, got %s; apply it after '
                             'ToTensor' % (name, data.dtype))
    if data.ndim not in (3, 4):
        raise MXNetValueError('%s expects a CHW tensor or an NCHW batch, got shape %s'
                              % (name, data.shape))
    batch = data[None] if data.ndim == 3 else data
    degrees = np.broadcast_to(np.asarray(degrees, dtype=np.float64), (batch.shape[0],))
    out = rotate_raw(_array_module(data), batch, degrees, zoom_in, zoom_out)
    return out[0] if data.ndim == 3 else out


class Rotate(Transform):
    """Rotate a CHW float32 tensor (or NCHW batch) by ``rotation_degrees``, keeping its
    shape (see ``mx.image.imrotate``).

    Parameters
    ----------
    rotation_degrees : float
        Counter-clockwise.
    zoom_in : bool, default False
        Zoom so that no padding shows.
    zoom_out : bool, default False
        Zoom out so that the whole image stays in view.
    """

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        if zoom_in and zoom_out:
            raise MXNetValueError('Rotate: `zoom_in` and `zoom_out` cannot be both True')
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, data):
        return _rotated('Rotate', data, *self._args)


class RandomRotation(Transform):
    """Rotate by an angle drawn uniformly from ``angle_limits`` (one per image of a
    batch), with probability ``rotate_with_proba``.

    Parameters
    ----------
    angle_limits : (float, float)
        Lowest and highest angle in degrees.
    zoom_in, zoom_out : bool, default False
        As for ``Rotate``.
    rotate_with_proba : float, default 1
    """

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        lower, upper = angle_limits
        if lower >= upper:
            raise MXNetValueError('RandomRotation: `angle_limits` must be an ordered pair '
                                  '(lower, upper), got %r' % (angle_limits,))
        if not 0 <= rotate_with_proba <= 1:
            raise MXNetValueError('RandomRotation: the probability of rotating must be between '
                                  '0 and 1, got %r' % (rotate_with_proba,))
        if zoom_in and zoom_out:
            raise MXNetValueError('RandomRotation: `zoom_in` and `zoom_out` cannot be both True')
        self._limits = (float(lower), float(upper))
        self._zoom = (zoom_in, zoom_out)
        self._proba = rotate_with_proba

    def forward(self, data):
        if np.random.random_sample() > self._proba:
            return data
        count = 1 if data.ndim == 3 else data.shape[0]
        degrees = np.random.uniform(*self._limits, size=count)
        return _rotated('RandomRotation', data, degrees, *self._zoom)


class RandomApply(Transform):
    """Apply ``transforms`` (a transform or any callable) with probability ``p``.

    Parameters
    ----------
    transforms : callable
    p : float, default 0.5
    """

    def __init__(self, transforms, p=0.5):
        if not callable(transforms):
            raise MXNetError('RandomApply: %r is not callable' % (transforms,))
        self._transforms = transforms
        self._p = p

    def __call__(self, x):
        return x if np.random.random_sample() > self._p else self._transforms(x)

    def forward(self, data):
        return self(data)


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
    """Scale brightness: ``x * alpha``.

    Parameters
    ----------
    data : numpy.ndarray or cupy.ndarray
        An HWC RGB image (or a batch of them), any dtype.
    alpha : float
        The factor; 1 leaves the image unchanged.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The adjusted image in ``data``'s dtype; integer images are clipped to the
        dtype's range.
    """
    return _like_input(_as_float(data) * np.float32(alpha), data)


def adjust_contrast(data, alpha):
    """Blend with the image's mean luma: ``x * alpha + mean_gray * (1 - alpha)``.

    Parameters
    ----------
    data : numpy.ndarray or cupy.ndarray
        An HWC RGB image (or a batch of them), any dtype.
    alpha : float
        The factor; 1 leaves the image unchanged.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The adjusted image in ``data``'s dtype; integer images are clipped to the
        dtype's range.
    """
    x = _as_float(data)
    mean = _gray(_array_module(x), x).mean(axis=(-3, -2, -1), keepdims=True)
    return _like_input(x * np.float32(alpha) + mean * np.float32(1 - alpha), data)


def adjust_saturation(data, alpha):
    """Blend with the per-pixel luma: ``x * alpha + gray * (1 - alpha)``.

    Parameters
    ----------
    data : numpy.ndarray or cupy.ndarray
        An HWC RGB image (or a batch of them), any dtype.
    alpha : float
        The factor; 1 leaves the image unchanged.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The adjusted image in ``data``'s dtype; integer images are clipped to the
        dtype's range.
    """
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
    """AlexNet's PCA lighting noise: add ``eigvec @ (alpha_rgb * eigval)`` to every pixel.

    Parameters
    ----------
    data : numpy.ndarray or cupy.ndarray
        An HWC RGB image (or a batch of them), any dtype.
    alpha_rgb : sequence of 3 floats
        The weights of the three principal components of ImageNet's RGB values.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The adjusted image in ``data``'s dtype; integer images are clipped to the
        dtype's range.
    """
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
