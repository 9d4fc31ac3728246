"""contrib's DeformableConvolution (Dai et al. 2017) and ModulatedDeformableConvolution
(DCNv2, Zhu et al. 2019), following MXNet 1.x's CPU kernels.

Each kernel tap of each output pixel reads the input at its regular place plus a learnt
offset, by bilinear interpolation; the modulated form also scales each tap by a learnt
mask. Sampled taps make a column matrix ``(N, C * kh * kw, oh * ow)`` (im2col with
offsets), and the convolution is a matrix product of the weights with it. The sampling
differs between the two ops as MXNet's kernels do: DeformableConvolution reads points
with ``0 <= y < H`` (clamping the neighbours at the far border), the modulated op points
with ``-1 < y < H`` (neighbours outside the image count as 0).
"""
import numpy as np

from ... import backend
from ...base import MXNetError
from ..registry import register, shape_rule


def _tuple2(name, value, default):
    if value is None or value == ():
        return default
    value = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(value) != 2:
        raise MXNetError('DeformableConvolution supports 2-D (NCHW) only: %s must have two '
                         'values, got %r' % (name, value))
    return value


def _corners(xp, y, x, height, width, zero_padded):
    """Flat indices ``(4, ...)`` of the four neighbours of the points ``(y, x)``, their
    bilinear weights and the weights' derivatives along y and along x."""
    dtype = y.dtype
    if zero_padded:
        inside = (y > -1) & (x > -1) & (y < height) & (x < width)
    else:
        inside = (y >= 0) & (x >= 0) & (y < height) & (x < width)
    y_low, x_low = xp.floor(y).astype(np.int64), xp.floor(x).astype(np.int64)
    if zero_padded:
        y_high, x_high = y_low + 1, x_low + 1
        ly, lx = y - y_low.astype(dtype), x - x_low.astype(dtype)
        dly = dlx = xp.ones_like(y)
        rows = [(y_low, (y_low >= 0)), (y_high, (y_high <= height - 1))]
        cols = [(x_low, (x_low >= 0)), (x_high, (x_high <= width - 1))]
    else:
        y_top, x_top = y_low >= height - 1, x_low >= width - 1
        y_low = xp.where(y_top, height - 1, y_low)
        x_low = xp.where(x_top, width - 1, x_low)
        y_high, x_high = xp.where(y_top, y_low, y_low + 1), xp.where(x_top, x_low, x_low + 1)
        ly = xp.where(y_top, 0, y - y_low.astype(dtype)).astype(dtype)
        lx = xp.where(x_top, 0, x - x_low.astype(dtype)).astype(dtype)
        dly, dlx = (~y_top).astype(dtype), (~x_top).astype(dtype)
        rows = [(y_low, True), (y_high, True)]
        cols = [(x_low, True), (x_high, True)]
    hy, hx = 1 - ly, 1 - lx
    # per corner (row r, column c): weight, d weight / dy, d weight / dx
    factors = {(0, 0): (hy * hx, -hx * dly, -hy * dlx), (0, 1): (hy * lx, -lx * dly, hy * dlx),
               (1, 0): (ly * hx, hx * dly, -ly * dlx), (1, 1): (ly * lx, lx * dly, ly * dlx)}
    index, weight, d_y, d_x = [], [], [], []
    for (r, c), (w, wy, wx) in factors.items():
        (row, row_ok), (col, col_ok) = rows[r], cols[c]
        ok = inside & row_ok & col_ok
        index.append(xp.where(ok, row * width + col, 0))
        weight.append(w * ok)
        d_y.append(wy * ok)
        d_x.append(wx * ok)
    return index, weight, d_y, d_x


def _deformable_conv(xp, data, offset, mask, weight, bias, kernel, stride, dilate, pad,
                     num_filter, num_group, num_deformable_group, no_bias, name, needs_grad):
    if data.ndim != 4:
        raise MXNetError('%s expects 4-D data (batch, channel, height, width), got shape %s'
                         % (name, data.shape))
    kh, kw = _tuple2('kernel', kernel, None)
    sh, sw = _tuple2('stride', stride, (1, 1))
    dh, dw = _tuple2('dilate', dilate, (1, 1))
    ph, pw = _tuple2('pad', pad, (0, 0))
    n, c, h, w = data.shape
    groups, dgroups, filters = int(num_group), int(num_deformable_group), int(num_filter)
    if c % groups or filters % groups or c % dgroups:
        raise MXNetError('%s: channels (%d) must divide by num_group (%d) and '
                         'num_deformable_group (%d), num_filter (%d) by num_group'
                         % (name, c, groups, dgroups, filters))
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    taps, pixels = kh * kw, oh * ow
    if offset.shape != (n, dgroups * 2 * taps, oh, ow):
        raise MXNetError('%s: offset must have shape %s (batch, num_deformable_group * 2 * '
                         'kernel taps, out height, out width), got %s'
                         % (name, (n, dgroups * 2 * taps, oh, ow), offset.shape))
    if mask is not None and mask.shape != (n, dgroups * taps, oh, ow):
        raise MXNetError('%s: mask must have shape %s, got %s'
                         % (name, (n, dgroups * taps, oh, ow), mask.shape))
    if weight.shape != (filters, c // groups, kh, kw):
        raise MXNetError('%s: weight must have shape %s, got %s'
                         % (name, (filters, c // groups, kh, kw), weight.shape))
    dtype = data.dtype
    i, j = np.meshgrid(np.arange(kh), np.arange(kw), indexing='ij')
    base_y = (np.arange(oh)[None, :, None] * sh - ph + i.reshape(-1, 1, 1) * dh)
    base_x = (np.arange(ow)[None, None, :] * sw - pw + j.reshape(-1, 1, 1) * dw)
    moves = offset.reshape(n, dgroups, taps, 2, oh, ow)
    y = (xp.asarray(base_y.astype(dtype)) + moves[:, :, :, 0]).reshape(n, dgroups, 1, -1)
    x = (xp.asarray(base_x.astype(dtype)) + moves[:, :, :, 1]).reshape(n, dgroups, 1, -1)
    index, weights, d_y, d_x = _corners(xp, y, x, h, w, zero_padded=mask is not None)
    per_group = c // dgroups
    image = data.reshape(n, dgroups, per_group, h * w)
    shape = (n, dgroups, per_group, taps * pixels)
    values = [xp.take_along_axis(image, xp.broadcast_to(k, shape), axis=3) for k in index]
    sampled = sum(wt * v for wt, v in zip(weights, values))  # (N, dg, Cg, K * L)
    scale = None if mask is None else mask.reshape(n, dgroups, 1, taps * pixels)
    cols = sampled if scale is None else sampled * scale
    cols = cols.reshape(n, groups, (c // groups) * taps, pixels)
    kernel_mat = weight.reshape(groups, filters // groups, -1)
    out = xp.einsum('gfk,ngkl->ngfl', kernel_mat, cols).reshape(n, filters, oh, ow)
    if not no_bias:
        out = out + bias.reshape(1, -1, 1, 1)
    wants = tuple(needs_grad) if needs_grad is not None else (True,) * 5

    def backward(dy):
        dy = dy.reshape(n, groups, filters // groups, pixels)
        grads = {}
        grads['weight'] = xp.einsum('ngfl,ngkl->gfk', dy, cols).reshape(weight.shape)
        if not no_bias:
            grads['bias'] = dy.sum(axis=(0, 3)).reshape(-1)
        d_cols = xp.einsum('gfk,ngfl->ngkl', kernel_mat, dy).reshape(shape)
        if scale is not None:
            grads['mask'] = (d_cols * sampled).sum(axis=2).reshape(mask.shape)
            d_cols = d_cols * scale
        if wants[0]:
            flat = xp.zeros(n * dgroups * per_group * h * w, dtype=dy.dtype)
            plane = (xp.arange(n * dgroups * per_group) * (h * w)).reshape(shape[:3] + (1,))
            for k, wt in zip(index, weights):
                backend.scatter_add(flat, (plane + k).reshape(-1), (wt * d_cols).reshape(-1))
            grads['data'] = flat.reshape(data.shape)
        along_y = sum(g * v for g, v in zip(d_y, values))
        along_x = sum(g * v for g, v in zip(d_x, values))
        d_off = xp.stack([(d_cols * along_y).sum(axis=2), (d_cols * along_x).sum(axis=2)],
                         axis=2)  # (N, dg, 2, K * L)
        d_off = d_off.reshape(n, dgroups, 2, taps, oh, ow).transpose(0, 1, 3, 2, 4, 5)
        grads['offset'] = d_off.reshape(offset.shape)
        return grads
    return out, backward


_COMMON = """
    ``kernel``, ``stride``, ``dilate`` and ``pad`` are (height, width) pairs; ``weight``
    is ``(num_filter, channels / num_group, kh, kw)``; the channels split into
    ``num_deformable_group`` groups, each with its own offsets. ``offset`` is ``(batch,
    num_deformable_group * 2 * kh * kw, out_h, out_w)``: for tap ``(i, j)`` channel
    ``2 * (i * kw + j)`` moves it along y and the next one along x.
"""


@register('_contrib_DeformableConvolution', num_inputs=4, takes_needs_grad=True)
def deformable_convolution(xp, data, offset, weight, bias=None, kernel=None, stride=None,
                           dilate=None, pad=None, num_filter=None, num_group=1,
                           num_deformable_group=1, workspace=1024, no_bias=False,
                           layout=None, needs_grad=None):
    """Convolution whose kernel taps read the input at learnt fractional offsets
    (bilinear interpolation; points outside the input read 0).
    """
    _check('DeformableConvolution', kernel, num_filter, layout, bias, no_bias)
    grads = tuple(needs_grad or (True,) * 4)
    out, backward = _deformable_conv(
        xp, data, offset, None, weight, bias, kernel, stride, dilate, pad, num_filter,
        num_group, num_deformable_group, no_bias, 'DeformableConvolution', grads)

    def grads_in_order(dy):
        g = backward(dy)
        return g.get('data'), g['offset'], g['weight'], g.get('bias')
    return out, grads_in_order


@register('_contrib_ModulatedDeformableConvolution', num_inputs=5, takes_needs_grad=True)
def modulated_deformable_convolution(xp, data, offset, mask, weight, bias=None, kernel=None,
                                     stride=None, dilate=None, pad=None, num_filter=None,
                                     num_group=1, num_deformable_group=1, workspace=1024,
                                     no_bias=False, im2col_step=64, layout=None,
                                     needs_grad=None):
    """Deformable convolution whose taps are also scaled by a learnt ``mask`` of shape
    ``(batch, num_deformable_group * kh * kw, out_h, out_w)`` (DCNv2).
    """
    _check('ModulatedDeformableConvolution', kernel, num_filter, layout, bias, no_bias)
    grads = tuple(needs_grad or (True,) * 5)
    out, backward = _deformable_conv(
        xp, data, offset, mask, weight, bias, kernel, stride, dilate, pad, num_filter,
        num_group, num_deformable_group, no_bias, 'ModulatedDeformableConvolution', grads)

    def grads_in_order(dy):
        g = backward(dy)
        return g.get('data'), g['offset'], g['mask'], g['weight'], g.get('bias')
    return out, grads_in_order


deformable_convolution.__doc__ += _COMMON
modulated_deformable_convolution.__doc__ += _COMMON


def _check(name, kernel, num_filter, layout, bias, no_bias):
    if kernel is None or num_filter is None:
        raise MXNetError('%s needs kernel and num_filter' % name)
    if layout not in (None, 'NCHW'):
        raise MXNetError('%s supports layout NCHW only, got %r' % (name, layout))
    if bias is None and not no_bias:
        raise MXNetError('%s: pass bias, or no_bias=True' % name)


def _weight_and_bias(data, weight, bias, kernel, num_filter, num_group):
    """The weight ``(num_filter, channels / num_group, kh, kw)`` and the bias
    ``(num_filter,)`` from the data's channels."""
    if not (data and len(data) == 4 and data[1] and num_filter):
        return weight, bias
    weight = (int(num_filter), data[1] // int(num_group)) + _tuple2('kernel', kernel, None)
    return weight, None if bias is None else (int(num_filter),)


@shape_rule('_contrib_DeformableConvolution')
def _deformable_shapes(data, offset, weight, bias=None, kernel=None, num_filter=None,
                       num_group=1, **_):
    weight, bias = _weight_and_bias(data, weight, bias, kernel, num_filter, num_group)
    return data, offset, weight, bias


@shape_rule('_contrib_ModulatedDeformableConvolution')
def _modulated_shapes(data, offset, mask, weight, bias=None, kernel=None, num_filter=None,
                      num_group=1, **_):
    weight, bias = _weight_and_bias(data, weight, bias, kernel, num_filter, num_group)
    return data, offset, mask, weight, bias
