"""``mx.nd.image``: MXNet's image ops on HWC images (NHWC batches) and CHW tensors.

The ops are in the op table (forward and backward side by side) under MXNet's
internal names (``_image_crop``, ...); the functions here are the public spellings.
Resizing runs OpenCV 3.4's arithmetic on the host (``image_cv``), so it gives MXNet's
pixels; the other ops run on the array's own device.
"""
import numbers
import random

import numpy as np

from .. import backend
from ..base import MXNetError
from .dispatch import invoke
from .image_cv import cv_resize
from .registry import get_op, register

__all__ = ['to_tensor', 'normalize', 'flip_left_right', 'flip_top_bottom',
           'random_flip_left_right', 'random_flip_top_bottom', 'crop', 'resize',
           'adjust_lighting']

# OpenCV's codes as MXNet uses them: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos.
_INTERP_CODES = (0, 1, 2, 3, 4)


def interp_method(interp, sizes=()):
    """An interpolation code 0-4 from MXNet's ``interp`` (9: bicubic to enlarge, area to
    shrink, bilinear otherwise; 10: a random one), ``sizes`` = (old_h, old_w, new_h, new_w)."""
    if interp == 9:
        if not sizes:
            return 2
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)   # Python's generator, as MXNet draws it
    if interp not in _INTERP_CODES:
        raise MXNetError('interpolation must be 0 (nearest), 1 (bilinear), 2 (bicubic), '
                         '3 (area), 4 (lanczos), 9 (auto) or 10 (random), got %r' % (interp,))
    return int(interp)


def _resize_like_opencv(host, w, h, code):
    """Resizing as OpenCV 3.4 does it, which MXNet's resize ops call: no antialiasing
    when shrinking (unlike Pillow's filters). uint8 images take OpenCV's fixed-point
    arithmetic, float32/float64 ones its floating-point paths (both what MXNet 1.9.1
    gives); other dtypes are resized in float32 and rounded back."""
    if host.dtype in (np.uint8, np.float32, np.float64) or code == 0:
        return cv_resize(host, w, h, code)      # nearest takes pixels of any dtype
    out = cv_resize(host.astype(np.float32), w, h, code)
    if host.dtype.kind in 'iu':
        info = np.iinfo(host.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return out.astype(host.dtype, copy=False)


def resize_raw(xp, data, w, h, interp=1):
    """An HWC (or NHWC) host or device array resized to ``w x h`` as OpenCV (and so
    MXNet) resizes it."""
    if data.ndim == 4:
        return xp.stack([resize_raw(xp, d, w, h, interp) for d in data])
    if data.ndim != 3:
        raise MXNetError('resize expects an HWC image or an NHWC batch, got shape %s'
                         % (data.shape,))
    host = backend.to_host(data)
    code = interp_method(interp, (host.shape[0], host.shape[1], h, w))
    out = _resize_like_opencv(np.ascontiguousarray(host), w, h, code)
    return out if xp is np else xp.asarray(out)


def resized_hw(data_h, data_w, size, keep_ratio):
    """MXNet's output (height, width) for ``size`` = an int or (width, height)."""
    size = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    if len(size) not in (1, 2):
        raise MXNetError('resize: size must be an int or (width, height), got %r' % (size,))
    if any(not isinstance(s, numbers.Integral) or s <= 0 for s in size):
        raise MXNetError('resize: sizes must be positive ints, got %r' % (size,))
    if len(size) == 2:
        return int(size[1]), int(size[0])
    s = int(size[0])
    if not keep_ratio:
        return s, s
    if data_h > data_w:  # the shorter side becomes ``size``
        return data_h * s // data_w, s
    return s, data_w * s // data_h


def _check_hwc(name, data):
    if data.ndim not in (3, 4):
        raise MXNetError('%s expects an HWC image or an NHWC batch, got shape %s'
                         % (name, data.shape))


@register('_image_resize', differentiable=False)
def _image_resize(xp, data, size=(), keep_ratio=False, interp=1):
    """Resize an HWC image (or NHWC batch) to ``size``: an int (a square, or with
    ``keep_ratio`` the shorter side) or (width, height)."""
    _check_hwc('resize', data)
    h, w = resized_hw(data.shape[-3], data.shape[-2], size, keep_ratio)
    return resize_raw(xp, data, w, h, interp)


@register('_image_crop')
def _image_crop(xp, data, x, y, width, height):
    """The ``width x height`` window at column ``x``, row ``y`` of an HWC image (or batch)."""
    _check_hwc('crop', data)
    rows, cols = data.shape[-3], data.shape[-2]
    if width <= 0 or height <= 0:
        raise MXNetError('crop: width and height must be > 0, got %d x %d' % (width, height))
    if x < 0 or y < 0 or x + width > cols or y + height > rows:
        raise MXNetError('crop: the window x=%d, y=%d, %d x %d does not fit in the %d x %d '
                         'image' % (x, y, width, height, cols, rows))
    window = (Ellipsis, slice(y, y + height), slice(x, x + width), slice(None))
    shape, dtype = data.shape, data.dtype

    def backward(dy):
        grad = xp.zeros(shape, dtype)
        grad[window] = dy
        return (grad,)
    return data[window].copy(), backward


@register('_image_flip_left_right')
def _image_flip_left_right(xp, data):
    """Mirror an HWC image (or NHWC batch) horizontally."""
    _check_hwc('flip_left_right', data)
    return xp.flip(data, axis=-2).copy(), lambda dy: (xp.flip(dy, axis=-2),)


@register('_image_flip_top_bottom')
def _image_flip_top_bottom(xp, data):
    """Flip an HWC image (or NHWC batch) upside down."""
    _check_hwc('flip_top_bottom', data)
    return xp.flip(data, axis=-3).copy(), lambda dy: (xp.flip(dy, axis=-3),)


@register('_image_to_tensor', differentiable=False)
def _image_to_tensor(xp, data):
    """HWC (NHWC) with values in [0, 255] -> CHW (NCHW) float32 in [0, 1]."""
    if data.ndim not in (3, 4):
        raise MXNetError('to_tensor expects an HWC image or an NHWC batch, got shape %s'
                         % (data.shape,))
    moved = data.transpose((2, 0, 1) if data.ndim == 3 else (0, 3, 1, 2))
    out = xp.empty(moved.shape, np.float32)
    xp.divide(moved, np.float32(255), out=out)
    return out


def per_channel(name, values, channels):
    """``values`` (a number or one per channel) as a float32 vector for ``channels``."""
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    if values.size not in (1, channels):
        raise MXNetError('normalize: %s has %d values but the tensor has %d channels'
                         % (name, values.size, channels))
    return values


@register('_image_normalize')
def _image_normalize(xp, data, mean=0.0, std=1.0):
    """``(x - mean) / std`` per channel of a CHW (NCHW) float tensor."""
    if data.ndim not in (3, 4) or data.dtype.kind != 'f':
        raise MXNetError('normalize expects a CHW tensor or an NCHW batch of floats, got %s of '
                         'shape %s; apply ToTensor (nd.image.to_tensor) first'
                         % (data.dtype, data.shape))
    channels = data.shape[-3]
    inv_std = 1 / per_channel('std', std, channels)
    mean = xp.asarray(per_channel('mean', mean, channels).reshape(-1, 1, 1))
    inv_std = xp.asarray(inv_std.reshape(-1, 1, 1))
    out = xp.subtract(data, mean, dtype=np.result_type(data.dtype, np.float32))
    out *= inv_std
    return out.astype(data.dtype, copy=False), \
        lambda dy: ((dy * inv_std).astype(dy.dtype, copy=False),)


# AlexNet's PCA of ImageNet's RGB values: eigenvalue times eigenvector, as MXNet's
# kernel holds them (float32 products of the float64 constants).
_LIGHTING_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                          [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                          [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]]).astype(np.float32)


@register('_image_adjust_lighting')
def _image_adjust_lighting(xp, data, alpha=None):
    """AlexNet's lighting noise: add ``eig @ alpha`` to every RGB pixel of an HWC image,
    in float32 (float64 for float64 images); integer images are clipped to their range
    and truncated."""
    if data.ndim != 3 or data.shape[2] not in (1, 3):
        raise MXNetError('adjust_lighting expects an HWC image with 1 or 3 channels, got '
                         'shape %s' % (data.shape,))
    alpha = np.asarray(alpha, dtype=np.float32).reshape(-1)
    if alpha.size != 3:
        raise MXNetError('adjust_lighting: alpha must be 3 floats (R, G, B), got %r' % (alpha,))
    if data.shape[2] == 1:  # a gray image has no colour to shift
        return data.copy(), lambda dy: (dy,)
    f32 = np.float32
    shift = np.array([f32(f32(e[0] * alpha[0]) + f32(e[1] * alpha[1])) + f32(e[2] * alpha[2])
                      for e in _LIGHTING_EIG], dtype=f32)
    work = np.float64 if data.dtype == np.float64 else f32
    out = data.astype(work) + xp.asarray(shift.astype(work))
    if data.dtype.kind in 'iu':
        info = np.iinfo(data.dtype)
        out = xp.clip(out, info.min, info.max)
    return out.astype(data.dtype), lambda dy: (dy,)


def _run(name, data, **params):
    return invoke(get_op(name), [data], params)


def to_tensor(data):
    """HWC (NHWC) image(s) with values in [0, 255] -> CHW (NCHW) float32 in [0, 1]."""
    return _run('_image_to_tensor', data)


def normalize(data, mean=0.0, std=1.0):
    """``(data - mean) / std`` per channel of a CHW tensor (or NCHW batch)."""
    if np.any(np.asarray(std, dtype=np.float32) == 0):
        raise MXNetError('normalize: std must not contain zeros, got %r' % (std,))
    return _run('_image_normalize', data, mean=mean, std=std)


def flip_left_right(data):
    """Mirror an HWC image (or NHWC batch) horizontally."""
    return _run('_image_flip_left_right', data)


def flip_top_bottom(data):
    """Flip an HWC image (or NHWC batch) upside down."""
    return _run('_image_flip_top_bottom', data)


def random_flip_left_right(data):
    """``flip_left_right`` with probability 1/2, else ``data`` itself."""
    return flip_left_right(data) if np.random.random_sample() < 0.5 else data


def random_flip_top_bottom(data):
    """``flip_top_bottom`` with probability 1/2, else ``data`` itself."""
    return flip_top_bottom(data) if np.random.random_sample() < 0.5 else data


def crop(data, x, y, width, height):
    """The ``width x height`` window at column ``x``, row ``y`` of an HWC image (or batch)."""
    return _run('_image_crop', data, x=int(x), y=int(y), width=int(width), height=int(height))


def resize(data, size=(), keep_ratio=False, interp=1):
    """Resize an HWC image (or NHWC batch).

    Parameters
    ----------
    size : int or (width, height)
        An int gives a square, or with ``keep_ratio`` the length of the shorter side.
    keep_ratio : bool, default False
    interp : int, default 1
        OpenCV's codes: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos, 9 auto,
        10 random.
    """
    return _run('_image_resize', data, size=size, keep_ratio=keep_ratio, interp=interp)


def adjust_lighting(data, alpha):
    """Add AlexNet's PCA lighting noise with the weights ``alpha`` (R, G, B) to an HWC
    RGB image."""
    return _run('_image_adjust_lighting', data, alpha=tuple(float(a) for a in alpha))


def scale_down(src_size, size):
    """The crop ``size`` (w, h) scaled down, keeping its aspect ratio, to fit in
    ``src_size`` (w, h)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _zoom(h, w, theta, zoom_in):
    """The scale of the sampling grid that keeps the rotated image inside (zoom_in) or
    the whole image in view (zoom_out), per angle in ``theta`` (radians)."""
    rho = np.sqrt(h * h + w * w)
    corner = np.arctan(h / w)
    turn = np.abs(theta)
    max_x = np.maximum(np.abs(rho * np.cos(corner + turn)), np.abs(rho * np.cos(corner - turn)))
    max_y = np.maximum(np.abs(rho * np.sin(corner + turn)), np.abs(rho * np.sin(corner - turn)))
    if zoom_in:
        return np.minimum(w / max_x, h / max_y)
    return np.maximum(max_x / w, max_y / h)


def rotate_raw(xp, data, degrees, zoom_in=False, zoom_out=False):
    """NCHW float array ``data`` rotated by ``degrees`` (one per image), counter-clockwise,
    about each image's centre, sampled bilinearly with zeros outside (MXNet's
    BilinearSampler grid)."""
    n, _, h, w = data.shape
    theta = np.deg2rad(np.asarray(degrees, dtype=np.float64)).reshape(n, 1, 1)
    hc, wc = (h - 1) / 2.0, (w - 1) / 2.0
    ys, xs = np.meshgrid(np.arange(h) - hc, np.arange(w) - wc, indexing='ij')
    cos, sin = np.cos(theta), np.sin(theta)
    src_x = xs * cos - ys * sin
    src_y = xs * sin + ys * cos
    if zoom_in or zoom_out:
        scale = _zoom(float(h), float(w), theta, zoom_in)
        src_x, src_y = src_x * scale, src_y * scale
    src_x, src_y = xp.asarray(src_x + wc), xp.asarray(src_y + hc)
    x0, y0 = xp.floor(src_x), xp.floor(src_y)
    out = xp.zeros(data.shape, np.float64)
    batch = xp.arange(n).reshape(n, 1, 1)
    for dy in (0, 1):
        for dx in (0, 1):
            cx, cy = x0 + dx, y0 + dy
            weight = (1 - xp.abs(src_x - cx)) * (1 - xp.abs(src_y - cy))
            inside = (cx >= 0) & (cx <= w - 1) & (cy >= 0) & (cy <= h - 1)
            ix = xp.clip(cx, 0, w - 1).astype(np.int64)
            iy = xp.clip(cy, 0, h - 1).astype(np.int64)
            corner = data[batch, :, iy, ix]  # (n, h, w, c)
            out += xp.moveaxis(corner * (weight * inside)[..., None], -1, 1)
    return out.astype(data.dtype)
