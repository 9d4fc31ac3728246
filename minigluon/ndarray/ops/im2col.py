"""MXNet's ``im2col`` and ``col2im``: the sliding windows of a convolution as columns,
and columns summed back into an image. Each is the other's gradient.

The columns are channels first, as MXNet lays them out: row ``c * K + k`` holds channel
``c`` at kernel offset ``k`` (offsets row-major, K of them) for every output position,
so a convolution is ``weight.reshape(F, -1)`` times the columns. (The convolution op
itself works channels-last, conv.py.)
"""
import itertools
import math

from ...base import MXNetError
from ..registry import register
from .conv import Geometry, pad_spatial


def _geometry(data_ndim, kernel, stride, dilate, pad, name):
    geo = Geometry(kernel, stride, pad, dilate, 1)
    if data_ndim != len(geo.kernel) + 2:
        raise MXNetError('%s: a %d-d kernel %s needs %d-d data (batch, channels, spatial...), '
                         'got %d-d data' % (name, len(geo.kernel), geo.kernel,
                                            len(geo.kernel) + 2, data_ndim))
    return geo


def _out_size(geo, in_size, name):
    out = geo.out_size(in_size)
    if any(o < 1 for o in out):
        raise MXNetError('%s: the spatial size %s with padding %s is smaller than the dilated '
                         'kernel %s (dilate %s)' % (name, tuple(in_size), geo.pad, geo.kernel,
                                                     geo.dilate))
    return out


def _offset_slices(geo, offset, out_sp):
    """The slices of the padded image that kernel element ``offset`` reads, one per output
    position."""
    return (Ellipsis,) + tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                               zip(offset, geo.dilate, geo.stride, out_sp))


def _to_columns(xp, data, geo):
    """The windows of ``data`` (N, C, *spatial) as columns (N, C * K, L)."""
    n, c, spatial = data.shape[0], data.shape[1], data.shape[2:]
    out_sp = _out_size(geo, spatial, 'im2col')
    padded = pad_spatial(xp, data, geo.pad)
    cols = xp.empty((n, c) + geo.kernel + out_sp, data.dtype)
    for offset in itertools.product(*(range(k) for k in geo.kernel)):
        cols[(slice(None), slice(None)) + offset] = padded[_offset_slices(geo, offset, out_sp)]
    return cols.reshape(n, -1, math.prod(out_sp))


def _from_columns(xp, col, geo, image_size):
    """Columns (N, C * K, L) summed into the image of spatial size ``image_size``."""
    out_sp = _out_size(geo, image_size, 'col2im')
    n, rows, positions = col.shape
    per_channel = math.prod(geo.kernel)
    if rows % per_channel or positions != math.prod(out_sp):
        raise MXNetError('col2im: columns of shape %s do not fit kernel %s over an image of '
                         '%s: expected (N, C*%d, %d)' % (col.shape, geo.kernel,
                                                         tuple(image_size), per_channel,
                                                         math.prod(out_sp)))
    c = rows // per_channel
    cols = col.reshape((n, c) + geo.kernel + out_sp)
    padded = xp.zeros((n, c) + tuple(s + 2 * p for s, p in zip(image_size, geo.pad)), col.dtype)
    for offset in itertools.product(*(range(k) for k in geo.kernel)):
        padded[_offset_slices(geo, offset, out_sp)] += cols[(slice(None), slice(None)) + offset]
    return padded[(Ellipsis,) + tuple(slice(p, p + s) for p, s in zip(geo.pad, image_size))]


@register('im2col')
def im2col(xp, data, kernel=None, stride=(), dilate=(), pad=()):
    """The sliding windows of ``data`` (N, C, *spatial; 1 to 3 spatial axes) as columns
    (N, C * prod(kernel), number of windows), the columns of a convolution with these
    ``kernel``, ``stride``, ``dilate`` and ``pad`` (zeros on both sides)."""
    geo = _geometry(data.ndim, kernel, stride, dilate, pad, 'im2col')
    out = _to_columns(xp, data, geo)
    image_size = data.shape[2:]
    return out, lambda dy: (_from_columns(xp, dy, geo, image_size),)


@register('col2im')
def col2im(xp, data, output_size=None, kernel=None, stride=(), dilate=(), pad=()):
    """Columns (N, C * prod(kernel), number of windows), as ``im2col`` makes them, summed
    into an image (N, C, *output_size): each window's values are added where the window
    lies, so overlapping windows add up. It is the gradient of ``im2col``, not its inverse."""
    if output_size is None:
        raise MXNetError('col2im needs output_size, the spatial size of the image')
    image_size = (output_size,) if isinstance(output_size, int) else tuple(output_size)
    geo = _geometry(len(image_size) + 2, kernel, stride, dilate, pad, 'col2im')
    if data.ndim != 3:
        raise MXNetError('col2im takes columns of shape (N, C * prod(kernel), windows), got '
                         'shape %s' % (data.shape,))
    out = xp.ascontiguousarray(_from_columns(xp, data, geo, image_size))
    return out, lambda dy: (_to_columns(xp, dy, geo),)
