"""Functions on one image: read, decode, resize, crop and rotate.

Images are HWC NDArrays (uint8 as decoded, or float), except for ``imrotate`` which
takes CHW float32 tensors (or NCHW batches), as in MXNet. Decoding uses Pillow where
MXNet uses OpenCV; resizing reproduces OpenCV's arithmetic, with its interpolation codes
(see ``nd.image.resize``). Random choices come from the generators MXNet draws them from:
Python's ``random`` for crop windows and interpolation codes, numpy's for rotations.
"""
import numbers
import random

import numpy as np

from ..base import MXNetError, MXNetTypeError, MXNetValueError
from ..ndarray import NDArray, array
from ..ndarray import image as _nd_image
from ..ndarray.image import rotate_raw, scale_down
from ..ndarray.image_codec import decode_raw

__all__ = ['imread', 'imdecode', 'imresize', 'scale_down', 'copyMakeBorder', 'resize_short',
           'fixed_crop', 'random_crop', 'center_crop', 'color_normalize', 'random_size_crop',
           'imrotate', 'random_rotate']




def _result(data, out):
    if out is None:
        return array(data, dtype=data.dtype)
    out[:] = array(data, dtype=data.dtype, ctx=out.context)
    return out


def imread(filename, flag=1, to_rgb=True, out=None):
    """Read and decode an image file to an HWC uint8 NDArray.

    Parameters
    ----------
    filename : str
    flag : {0, 1}, default 1
        1 for three colour channels, 0 for grayscale (one channel).
    to_rgb : bool, default True
        RGB channel order (MXNet's default); False gives BGR (OpenCV's).
    out : NDArray, optional
    """
    try:
        with open(filename, 'rb') as f:
            data = f.read()
    except OSError as exc:
        raise MXNetError('imread: cannot read %r: %s' % (filename, exc.strerror or exc)) \
            from None
    return _result(decode_raw(data, flag, to_rgb, repr(filename)), out)


def imdecode(buf, flag=1, to_rgb=True, out=None):
    """Decode an image held in memory to an HWC uint8 NDArray.

    Parameters
    ----------
    buf : bytes, bytearray, numpy.ndarray or NDArray
        The encoded image (JPEG, PNG, ... as Pillow reads them); arrays hold its bytes.
    flag : {0, 1}, default 1
        1 for three colour channels, 0 for grayscale (one channel).
    to_rgb : bool, default True
        RGB channel order (MXNet's default); False gives BGR (OpenCV's).
    out : NDArray, optional
        Write the image into this array instead.

    Returns
    -------
    NDArray

    Raises
    ------
    MXNetError
        If the bytes are not an image Pillow can decode.
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy()
    if not isinstance(buf, (bytes, bytearray, np.ndarray)):
        raise MXNetValueError('buf must be of type bytes, bytearray or numpy.ndarray, got %s; '
                              'encode a str to bytes first' % type(buf).__name__)
    raw = bytes(buf) if not isinstance(buf, np.ndarray) else buf.astype(np.uint8).tobytes()
    return _result(decode_raw(raw, flag, to_rgb, 'the buffer'), out)


def imresize(src, w, h, interp=1, out=None):
    """``src`` (HWC) resized to ``w x h``.

    Parameters
    ----------
    src : NDArray
        An HWC image.
    w, h : int
        The new width and height.
    interp : int, default 1
        OpenCV's interpolation code: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
        4 lanczos, 9 auto, 10 random.
    out : NDArray, optional
        Write the result into this array instead.

    Returns
    -------
    NDArray
        The ``(h, w, C)`` image.
    """
    result = _nd_image.resize(src, size=(int(w), int(h)), interp=interp)
    if out is None:
        return result
    out[:] = result
    return out




# OpenCV's border types (MXNet passes the code through) as numpy.pad modes: 0 constant,
# 1 replicate (aaa|abcd), 2 reflect (cba|abcd), 3 wrap (bcd|abcd), 4 reflect 101
# (dcb|abcd).
_BORDER_MODES = {0: 'constant', 1: 'edge', 2: 'symmetric', 3: 'wrap', 4: 'reflect'}


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(), out=None):
    """Pad an HWC image: ``type`` 0 constant (``value``, or one of ``values`` per
    channel), 1 reflect, 2 reflect-101, 3 replicate, 4 wrap (OpenCV's codes)."""
    # pylint: disable=redefined-builtin
    if type not in _BORDER_MODES:
        raise MXNetValueError('copyMakeBorder: type must be 0-4 (OpenCV border types), got %r'
                              % (type,))
    data = src.asnumpy()
    widths = ((top, bot), (left, right), (0, 0))
    if type != 0:
        padded = np.pad(data, widths, mode=_BORDER_MODES[type])
    elif values:
        fill = np.asarray(values, dtype=data.dtype)
        padded = np.pad(data, widths)
        mask = np.ones(padded.shape[:2], bool)
        mask[top:top + data.shape[0], left:left + data.shape[1]] = False
        padded[mask] = fill[:data.shape[2]] if fill.size > 1 else fill
    else:
        padded = np.pad(data, widths, constant_values=value)
    result = array(padded, dtype=padded.dtype, ctx=src.context)
    if out is None:
        return result
    out[:] = result
    return out


def resize_short(src, size, interp=2):
    """Resize so that the shorter side of the HWC image is ``size``, keeping the
    aspect ratio (the longer side is rounded down).

    Parameters
    ----------
    src : NDArray
        An HWC image.
    size : int
        The new length of the shorter side.
    interp : int, default 2
        OpenCV's interpolation code: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
        4 lanczos, 9 auto, 10 random.

    Returns
    -------
    NDArray
    """
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, _nd_image.interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The ``w x h`` crop at (``x0``, ``y0``), resized to ``size`` (w, h) when given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1],
                       _nd_image.interp_method(interp, (h, w, size[1], size[0])))
    return out


def random_crop(src, size, interp=2):
    """A random crop of ``size`` (w, h), upsampled when the image is smaller.

    When ``src`` is smaller than ``size``, the largest region of ``size``'s aspect
    ratio that fits is cropped and resized to ``size``.

    Parameters
    ----------
    src : NDArray
        An HWC image.
    size : tuple of int
        The crop's ``(width, height)``.
    interp : int, default 2
        OpenCV's interpolation code: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
        4 lanczos, 9 auto, 10 random.

    Returns
    -------
    NDArray
        The HWC crop, of ``size``.
    tuple of int
        ``(x, y, width, height)`` of the region cropped from ``src``.
    """
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """The central crop of ``size`` (w, h), upsampled when the image is smaller.

    When ``src`` is smaller than ``size``, the largest central region of ``size``'s
    aspect ratio that fits is cropped and resized to ``size``.

    Parameters
    ----------
    src : NDArray
        An HWC image.
    size : tuple of int
        The crop's ``(width, height)``.
    interp : int, default 2
        OpenCV's interpolation code: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
        4 lanczos, 9 auto, 10 random.

    Returns
    -------
    NDArray
        The HWC crop, of ``size``.
    tuple of int
        ``(x, y, width, height)`` of the region cropped from ``src``.
    """
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = (w - new_w) // 2, (h - new_h) // 2
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std``, in place when ``src`` allows it (as MXNet)."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2):
    """A crop of random area (a fraction in ``area``: a float minimum or a (min, max)
    range) and aspect ratio (``ratio`` range, drawn log-uniformly), resized to ``size``.

    Falls back to ``center_crop`` after ten draws that do not fit. Returns the crop and
    its (x, y, width, height) in ``src``.
    """
    h, w, _ = src.shape
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * h * w
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)






def _check_float32(src):
    if np.dtype(src.dtype) != np.float32:
        raise MXNetTypeError('rotation only supports float32 images, got %s; call it after '
                             'ToTensor (or cast the image)' % np.dtype(src.dtype).name)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate a CHW float32 image (or an NCHW batch) by ``rotation_degrees``.

    Parameters
    ----------
    src : NDArray
        CHW or NCHW, float32.
    rotation_degrees : float, or one per image of a batch (NDArray or sequence)
    zoom_in : bool, default False
        Zoom so that no padding shows in the output.
    zoom_out : bool, default False
        Zoom out so that the whole input stays in view.
    """
    if zoom_in and zoom_out:
        raise MXNetValueError('`zoom_in` and `zoom_out` cannot be both True')
    _check_float32(src)
    if src.ndim == 3:
        if not isinstance(rotation_degrees, numbers.Number):
            raise MXNetTypeError('When a single image is passed the rotation angle is required '
                                 'to be a scalar, got %r' % (rotation_degrees,))
        return imrotate(src.expand_dims(axis=0), rotation_degrees, zoom_in, zoom_out)[0]
    if src.ndim != 4:
        raise MXNetValueError('imrotate supports CHW images and NCHW batches, got shape %s'
                              % (src.shape,))
    if isinstance(rotation_degrees, numbers.Number):
        degrees = np.full(src.shape[0], float(rotation_degrees))
    else:
        degrees = rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray) \
            else np.asarray(rotation_degrees, dtype=np.float64)
        degrees = degrees.reshape(-1)
        if degrees.size != src.shape[0]:
            raise MXNetValueError('The number of images (%d) must be equal to the number of '
                                  'rotation angles (%d)' % (src.shape[0], degrees.size))
    ctx = src.context
    with ctx.device():
        return NDArray(rotate_raw(ctx.xp, src.handle, degrees, zoom_in, zoom_out), ctx)


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotate by an angle (one per image of a batch) drawn uniformly from ``angle_limits``
    = (lowest, highest) degrees."""
    if src.ndim == 3:
        return imrotate(src, float(np.random.uniform(*angle_limits)), zoom_in, zoom_out)
    return imrotate(src, np.random.uniform(*angle_limits, size=src.shape[0]), zoom_in, zoom_out)
