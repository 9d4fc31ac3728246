"""The one door to image codecs: encoded bytes to HWC uint8 numpy arrays and back.

Pillow decodes and encodes everything. JPEGs decode through simplejpeg (libjpeg-turbo
straight into a numpy array) when it is installed, the ``jpeg`` extra: a 224x224 photo
decodes in about half of Pillow's time, which is most of an image pipeline's cost.
Both use libjpeg-turbo's accurate DCT and fancy upsampling, so the pixels are the same.
``MINIGLUON_JPEG_DECODER`` chooses, read on each call:

- ``auto`` (default): simplejpeg for JPEGs when it imports, Pillow otherwise;
- ``simplejpeg``: simplejpeg for JPEGs, and an error naming the fix when it is missing;
- ``pillow``: Pillow always.

Gray JPEGs are libjpeg's own luma (the Y channel), as OpenCV decodes them.
"""
import io
import os

import numpy as np

from ..base import MXNetError

VARIABLE = 'MINIGLUON_JPEG_DECODER'
DECODERS = ('auto', 'simplejpeg', 'pillow')
_JPEG_START = b'\xff\xd8'


def _simplejpeg():
    choice = os.environ.get(VARIABLE, 'auto').strip().lower() or 'auto'
    if choice not in DECODERS:
        raise MXNetError('%s=%r is not one of %s' % (VARIABLE, os.environ[VARIABLE],
                                                    ', '.join(DECODERS)))
    if choice == 'pillow':
        return None
    try:
        import simplejpeg
    except ImportError as exc:
        if choice == 'simplejpeg':
            raise MXNetError("%s=simplejpeg but simplejpeg does not import (%s); install it "
                             "with `pip install 'minigluon[jpeg]'`, or set %s=auto"
                             % (VARIABLE, exc, VARIABLE)) from None
        return None
    return simplejpeg


def decode_raw(source, flag, to_rgb, what):
    """The encoded image ``source`` (bytes-like, or a binary file) as an HWC uint8 numpy
    array: ``flag`` 0 gray (one channel), 1 three channels, -1 as stored (1, 3, or 4
    with an alpha channel); colour channels RGB(A), or BGR(A) with ``to_rgb=False``;
    ``what`` names the source in the error."""
    data = source.read() if hasattr(source, 'read') else source
    if flag in (0, 1) and bytes(data[:2]) == _JPEG_START:
        fast = _simplejpeg()
        if fast is not None:
            space = 'GRAY' if flag == 0 else ('RGB' if to_rgb else 'BGR')
            try:
                return fast.decode_jpeg(data, colorspace=space, fastdct=False,
                                        fastupsample=False)
            except ValueError:
                pass        # e.g. a CMYK JPEG, which Pillow converts: let Pillow try
    return _decode_with_pillow(data, flag, to_rgb, what)


def _decode_with_pillow(data, flag, to_rgb, what):
    from PIL import Image, UnidentifiedImageError
    try:
        img = Image.open(io.BytesIO(data))
        if flag == 0 and img.format == 'JPEG':
            img.draft('L', img.size)   # libjpeg's own luma, as OpenCV decodes gray JPEGs
        if flag == 0 and img.mode not in ('L', 'I;16', 'I', 'F', '1'):
            rgb = np.asarray(img.convert('RGB'), dtype=np.int32)
            return _libpng_gray(rgb)[:, :, None]
        if flag == 0:
            mode = 'L'
        elif flag == 1 or img.mode in ('RGB', 'L'):
            mode = img.mode if flag < 0 else 'RGB'
        else:
            keeps_alpha = 'A' in img.mode or 'transparency' in img.info
            mode = 'RGBA' if keeps_alpha else 'RGB'
        if img.mode != mode:
            img = img.convert(mode)
        pixels = np.asarray(img, dtype=np.uint8)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise MXNetError('cannot decode %s as an image: %s' % (what, exc)) from None
    if pixels.ndim == 2:
        return pixels[:, :, None]
    if to_rgb:
        return pixels
    return np.ascontiguousarray(pixels[:, :, [2, 1, 0, 3][:pixels.shape[2]]])


def _libpng_gray(rgb):
    """Gray from colour as OpenCV decodes colour PNGs to gray (libpng's fixed-point
    weights, truncated); Pillow's own conversion rounds, off by one on half the pixels."""
    gray = (9797 * rgb[:, :, 0] + 19234 * rgb[:, :, 1] + 3737 * rgb[:, :, 2]) >> 15
    return gray.astype(np.uint8)


# What OpenCV's imencode takes as a file extension, as Pillow's format names.
_ENCODE_FORMATS = {'.jpg': 'JPEG', '.jpeg': 'JPEG', '.png': 'PNG'}


def encode_raw(data, ext, quality, from_rgb):
    """The HW, HWC (1, 3 or 4 channels) uint8 numpy image ``data`` encoded as ``ext``
    ('.jpg' or '.png') bytes; ``quality`` is JPEG's quality (1-100) or PNG's
    compression level (clipped to 0-9, as OpenCV does); channels are RGB(A), or
    BGR(A) with ``from_rgb=False``."""
    from PIL import Image
    fmt = _ENCODE_FORMATS.get(str(ext).lower())
    if fmt is None:
        raise MXNetError('cannot encode images as %r: use one of %s'
                         % (ext, ', '.join(sorted(_ENCODE_FORMATS))))
    data = np.asarray(data)
    if data.dtype != np.uint8:
        raise MXNetError('encoding an image needs uint8 pixels, got %s: convert it with '
                         '.astype(numpy.uint8) after clipping to 0..255' % data.dtype)
    if data.ndim == 3 and data.shape[2] == 1:
        data = data[:, :, 0]
    if data.ndim not in (2, 3) or (data.ndim == 3 and data.shape[2] not in (3, 4)):
        raise MXNetError('cannot encode an image of shape %s: it must be HxW or HxWxC with '
                         'C in 1, 3, 4' % (data.shape,))
    data = np.ascontiguousarray(data)
    if data.ndim == 3 and not from_rgb:
        # Pillow's raw unpacker swaps the channels in C, ten times faster than numpy.
        mode, raw = ('RGB', 'BGR') if data.shape[2] == 3 else ('RGBA', 'BGRA')
        img = Image.frombuffer(mode, data.shape[1::-1], data, 'raw', raw, 0, 1)
    else:
        img = Image.fromarray(data)
    if fmt == 'JPEG' and img.mode == 'RGBA':
        img = img.convert('RGB')       # JPEG has no alpha; OpenCV drops it too
    out = io.BytesIO()
    if fmt == 'JPEG':
        img.save(out, fmt, quality=int(quality))
    else:
        img.save(out, fmt, compress_level=min(max(int(quality), 0), 9))
    return out.getvalue()
