"""Max and average pooling (1-D, 2-D, 3-D, channels first or last), global or windowed.

Windows are visited one kernel offset at a time: each offset is a strided slice of
the padded input covering every output position, so the work is a handful of
vectorised passes and no Python loop runs over batch or pixels.
"""
import itertools

import numpy as np

from ...base import MXNetError
from ..accumulate import sum_over
from ..registry import register
from . import compiled, host_threads
from .conv import LAYOUTS, _spatial, _tuple, channels_first, in_layout, is_channels_last, \
    pad_spatial


def _offset_slices(offset, stride, out_sp):
    return _spatial(slice(o, o + s * (m - 1) + 1, s) for o, s, m in zip(offset, stride, out_sp))


@register('Pooling', choices={'pool_type': ('avg', 'max', 'sum'),
                               'pooling_convention': ('full', 'same', 'valid')})
def pooling(xp, data, kernel=None, pool_type='max', stride=None, pad=None, global_pool=False,
            pooling_convention='valid', count_include_pad=True, layout=None, cudnn_off=None):
    """Pool over windows of ``kernel``; ``pooling_convention='full'`` is ceil mode, 'same'
    (1-D only, no pad) gives ``ceil(width / stride)`` windows clipped at the end.

    ``pool_type`` is 'max', 'avg' or 'sum'. With ``count_include_pad=False`` an average
    divides by the number of real (unpadded) elements in each window. ``layout`` is
    channels first (NCW, NCHW, NCDHW; the default) or last (NWC, NHWC, NDHWC).
    """
    if layout is not None and LAYOUTS.get(layout) != data.ndim - 2:
        raise MXNetError('Pooling: layout %r does not fit data of shape %s; use one of %s'
                         % (layout, data.shape, ', '.join(k for k, v in LAYOUTS.items()
                                                          if v == data.ndim - 2)))
    if not is_channels_last(layout):
        return _pooling(xp, data, kernel, pool_type, stride, pad, global_pool,
                        pooling_convention, count_include_pad)
    out, backward = _pooling(xp, channels_first(data), kernel, pool_type, stride, pad,
                             global_pool, pooling_convention, count_include_pad)
    return in_layout(out, True), lambda dy: (in_layout(backward(channels_first(dy))[0], True),)


def _pooling(xp, data, kernel, pool_type, stride, pad, global_pool, pooling_convention,
             count_include_pad):
    dims = data.ndim - 2
    if dims < 1:
        raise MXNetError('Pooling needs data (N, C, *spatial), got shape %s' % (data.shape,))
    if pool_type not in ('max', 'avg', 'sum'):
        raise MXNetError("Pooling: pool_type must be 'max', 'avg' or 'sum', got %r" % pool_type)
    axes = tuple(range(2, data.ndim))
    if global_pool:
        if pool_type == 'max':
            out = data.max(axis=axes, keepdims=True)

            def backward(dy):
                mask = data == out
                return (mask * (dy / mask.sum(axis=axes, keepdims=True)),)
            return out, backward
        count = 1
        for n in data.shape[2:]:
            count *= n
        out = sum_over(xp, data, axes, keepdims=True)
        scale = 1.0 / count if pool_type == 'avg' else 1.0
        if scale != 1.0:
            out *= scale

        def backward(dy):
            grad = xp.empty_like(data)  # in data's memory order (channels-last after a conv)
            grad[...] = dy * scale
            return (grad,)
        return out, backward

    kernel = _tuple(kernel, dims, 'kernel')
    stride = _tuple(stride, dims, 'stride', 1) if stride else (1,) * dims  # MXNet's default
    if isinstance(pad, (tuple, list)) and len(pad) > dims:
        if pooling_convention == 'same' and any(pad):
            raise MXNetError("Pooling: pooling_convention='same' pads by itself; pass no "
                             "pad (or zeros), got pad=%s" % (tuple(pad),))
        pad = tuple(pad)[:dims]  # as MXNet, the entries past the spatial axes go unused
    pad = _tuple(pad, dims, 'pad', 0)
    if pooling_convention not in ('valid', 'full', 'same'):
        raise MXNetError("Pooling: pooling_convention must be 'valid', 'full' or 'same', "
                         "got %r" % pooling_convention)
    if pooling_convention == 'same' and (dims != 1 or any(pad)):
        raise MXNetError("Pooling: pooling_convention='same' takes 1-D data (N, C, W) and "
                         "no pad, got data of shape %s and pad=%s" % (data.shape, pad))
    out_sp, extra = [], []
    for n, k, s, p in zip(data.shape[2:], kernel, stride, pad):
        span = n + 2 * p - k
        if span < 0:
            raise MXNetError('Pooling: window %s does not fit input %s with padding %s'
                             % (kernel, data.shape, pad))
        if pooling_convention == 'same':  # one window per stride, clipped at the end
            o = -(-n // s)
        else:
            o = (-(-span // s) if pooling_convention == 'full' else span // s) + 1
        out_sp.append(o)
        extra.append(max(0, (o - 1) * s + k - (n + 2 * p)))
    out_sp, extra = tuple(out_sp), tuple(extra)
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    padded_shape = data.shape[:2] + tuple(n + 2 * p + e for n, p, e in
                                         zip(data.shape[2:], pad, extra))
    unpad = _spatial(slice(p, p + n) for p, n in zip(pad, data.shape[2:]))

    if pool_type == 'max' and dims == 2 and len(offsets) < 256 and \
            compiled.applies(xp, data):
        return _compiled_max_pool(data, kernel, stride, pad, out_sp)
    if pool_type == 'max':
        lowest = xp.finfo(data.dtype).min if data.dtype.kind == 'f' else xp.iinfo(data.dtype).min
        xpad = pad_spatial(xp, data, pad, value=lowest, extra=extra)
        out = best = None
        for i, off in enumerate(offsets):
            window = xpad[_offset_slices(off, stride, out_sp)]
            if out is None:
                out = window.copy()
                best = xp.zeros(out.shape, dtype='uint8' if len(offsets) < 256 else 'int32')
            else:
                better = window > out
                xp.copyto(out, window, where=better)
                best[better] = i

        def backward(dy):
            grad = xp.zeros(padded_shape, dtype=dy.dtype)
            for i, off in enumerate(offsets):
                grad[_offset_slices(off, stride, out_sp)] += dy * (best == i)
            return (grad[unpad],)
        return out, backward

    xpad = pad_spatial(xp, data, pad, extra=extra)
    out = xpad[_offset_slices(offsets[0], stride, out_sp)].copy()
    for off in offsets[1:]:
        out += xpad[_offset_slices(off, stride, out_sp)]
    if pool_type == 'sum':
        divisor = 1
    else:
        # Count the elements each window averages: padding counts unless told otherwise,
        # the extra ceil-mode margin never does.
        ones = xp.zeros(padded_shape[2:], dtype=data.dtype)
        real = tuple(slice(0, n + 2 * p) for n, p in zip(data.shape[2:], pad)) \
            if count_include_pad else tuple(slice(p, p + n) for n, p in zip(data.shape[2:], pad))
        ones[real] = 1
        divisor = sum(ones[tuple(slice(o, o + s * (m - 1) + 1, s) for o, s, m in
                                 zip(off, stride, out_sp))] for off in offsets)
        divisor = xp.maximum(divisor, 1)
        out /= divisor

    def backward(dy):
        grad = xp.zeros(padded_shape, dtype=dy.dtype)
        scaled = dy / divisor if pool_type != 'sum' else dy
        for off in offsets:
            grad[_offset_slices(off, stride, out_sp)] += scaled
        return (grad[unpad],)
    return out, backward


def _compiled_max_pool(data, kernel, stride, pad, out_sp):
    """2-D max pooling by the compiled kernels (``pooling_cpu.py``): on channels-last
    memory (a convolution's output) it runs along the channels and returns channels-last
    memory, as convolutions do; otherwise each channel is an image of its own. The
    images are split over the host threads."""
    from . import pooling_cpu
    n, c, height, width = data.shape
    out_h, out_w = out_sp
    last = data.transpose(0, 2, 3, 1)
    channels_last = c > 1 and last.flags.c_contiguous
    if channels_last:
        x4, shape4 = last, (n, out_h, out_w, c)
    else:
        x4, shape4 = np.ascontiguousarray(data).reshape(n * c, height, width, 1), \
            (n * c, out_h, out_w, 1)
    out4 = np.empty(shape4, dtype=data.dtype)
    best = np.empty(shape4, dtype=np.uint8)
    geometry = (kernel[1], stride[0], stride[1], pad[0], pad[1])
    lowest = np.finfo(data.dtype).min
    host_threads.each_run(lambda lo, hi: pooling_cpu.max_pool_forward(
        x4[lo:hi], kernel[0], *geometry, lowest, out4[lo:hi], best[lo:hi]),
        x4.shape[0], x4.size)

    def backward(dy):
        if channels_last:
            dy4 = np.ascontiguousarray(dy.transpose(0, 2, 3, 1))
            grad4 = np.zeros((n, height, width, c), dtype=dy.dtype)
        else:
            dy4 = np.ascontiguousarray(dy).reshape(shape4)
            grad4 = np.zeros((n * c, height, width, 1), dtype=dy.dtype)
        host_threads.each_run(lambda lo, hi: pooling_cpu.max_pool_backward(
            dy4[lo:hi], best[lo:hi], *geometry, grad4[lo:hi]), grad4.shape[0], grad4.size)
        return (grad4.transpose(0, 3, 1, 2) if channels_last else
                grad4.reshape(n, c, height, width),)
    if channels_last:
        return out4.transpose(0, 3, 1, 2), backward
    return out4.reshape(n, c, out_h, out_w), backward
