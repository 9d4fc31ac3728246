"""Convolution and transposed convolution (1-D, 2-D, 3-D; channels first or last at the API).

Inside, the work is channels-last: with the input as ``(N, *spatial, C)`` each output
position's receptive field is a run of whole channel vectors, so im2col is one cheap
copy of a strided view into columns ``(images*positions, kernel*C)``, multiplied by
the weight in one GEMM per group. Outputs are returned as ``(N, F, *spatial)`` views
of channels-last memory (what PyTorch calls channels_last): elementwise ops keep that
layout and the next convolution reads it without a copy.

3x3 stride-1 'same' layers skip im2col for Winograd's F(2x2, 3x3) (conv_winograd.py),
4/9 of the multiplies. On the host a layer runs a few images at a time, so that its
columns or tiles are still in cache when the GEMM reads them, and its blocks of images
are split over the host threads, each with a one-threaded BLAS (host_threads.py).

Backward rebuilds the columns (or tiles) rather than keeping them (9x the input for
3x3 kernels). The data gradient of a stride-1 convolution is itself a convolution of the
output gradient with the flipped kernel; other strides, and kernels whose flipped
convolution would read far more columns than the input has (a 224x224 kernel over a
224x224 image), scatter column gradients back with one add per kernel offset (col2im).

The channels-last layouts (NWC, NHWC, NDHWC, weight ``(F, *kernel, C/g)``) are views
of the same arrays with the channel axis moved: the work inside is the same.
"""
import itertools

import numpy as np

from ...base import MXNetError
from ..accumulate import sum_over
from ..registry import register, shape_rule
from . import conv_winograd as winograd, host_threads

# layout -> number of spatial axes
LAYOUTS = {'NCW': 1, 'NCHW': 2, 'NCDHW': 3, 'NWC': 1, 'NHWC': 2, 'NDHWC': 3}


class Geometry:
    """Kernel, stride, padding, dilation and groups of one convolution."""
    __slots__ = ('kernel', 'stride', 'pad', 'dilate', 'groups')

    def __init__(self, kernel, stride, pad, dilate, groups, layout=None):
        kernel = _tuple(kernel, None, 'kernel')
        nd_ = len(kernel)
        if layout is not None and LAYOUTS.get(layout) != nd_:
            raise MXNetError('layout %r does not fit a %d-D kernel %s; use one of %s'
                             % (layout, nd_, kernel, ', '.join(k for k, v in LAYOUTS.items()
                                                               if v == nd_)))
        self.kernel = kernel
        self.stride = _tuple(stride, nd_, 'stride', 1)
        self.pad = _tuple(pad, nd_, 'pad', 0)
        self.dilate = _tuple(dilate, nd_, 'dilate', 1)
        self.groups = int(groups)

    def out_size(self, in_size):
        """The spatial output size for the spatial input size ``in_size``.

        Each axis gives ``(n + 2*pad - dilate*(kernel - 1) - 1) // stride + 1``.

        Parameters
        ----------
        in_size : tuple of int
            The input's spatial dimensions, one per kernel dimension.

        Returns
        -------
        tuple of int
        """
        return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in
                     zip(in_size, self.kernel, self.stride, self.pad, self.dilate))

    def transposed(self, in_size=None, channels=None, filters=None):
        """The stride-1 convolution that computes this one's data gradient, or None.

        With stride 1, ``dx`` is ``dy`` convolved with the flipped kernel under padding
        ``dilate * (kernel - 1) - pad``; a larger padding would need cropping. Given the
        input size and channel counts, None also when that convolution's columns
        (input positions x filters) outnumber col2im's (output positions x channels)
        more than ``_FLIPPED_MAX_RATIO`` times.
        """
        if any(s != 1 for s in self.stride):
            return None
        if in_size is not None and not all(k == 1 for k in self.kernel):
            flipped = _positions(in_size) * filters
            if flipped > _FLIPPED_MAX_RATIO * _positions(self.out_size(in_size)) * channels:
                return None
        pad = tuple(d * (k - 1) - p for k, p, d in zip(self.kernel, self.pad, self.dilate))
        if any(p < 0 for p in pad):
            return None
        return Geometry(self.kernel, 1, pad, self.dilate, self.groups)


# The flipped convolution copies its columns with one strided view, col2im adds one
# kernel offset at a time. Data gradients of 3x3 'same' layers at batch 8 (2 cores):
# 16 -> 16 channels at 28x28, as many columns either way, flipped 0.7 ms, col2im 1.6;
# 16 -> 32, twice the columns, 1.2 vs 1.6; 16 -> 64, 4x, 2.4 vs 2.0; 3 -> 64 at 56x56,
# 21x, 25 vs 7 ms. (A 224x224 kernel over a 224x224 image: 50,000x, gigabytes per image.)
_FLIPPED_MAX_RATIO = 4


def _tuple(value, n, name, default=None):
    if value is None or value == ():
        if default is None:
            raise MXNetError('%s is required' % name)
        return (default,) * n
    if isinstance(value, int):
        return (value,) * (n or 1)
    value = tuple(int(v) for v in value)
    if n is not None and len(value) != n:
        raise MXNetError('%s=%s must have %d entries, one per spatial axis' % (name, value, n))
    return value


def _spatial(slices_after):
    return (slice(None), slice(None)) + tuple(slices_after)


def pad_spatial(xp, x, pad, value=0, extra=None):
    """Pad the spatial axes of ``x`` by ``pad`` on both sides (+ ``extra`` at the end)."""
    extra = extra or (0,) * len(pad)
    if not any(pad) and not any(extra):
        return x
    shape = x.shape[:2] + tuple(n + 2 * p + e for n, p, e in zip(x.shape[2:], pad, extra))
    out = xp.full(shape, value, dtype=x.dtype) if value else xp.zeros(shape, dtype=x.dtype)
    out[_spatial(slice(p, p + n) for p, n in zip(pad, x.shape[2:]))] = x
    return out


# ---- channels-last helpers ---------------------------------------------------------------
def channels_last(xp, x):
    """``(N, C, *spatial)`` as a C-contiguous ``(N, *spatial, C)``: free for conv outputs."""
    return xp.ascontiguousarray(xp.moveaxis(x, 1, -1))


def channels_first(x):
    """The ``(N, C, *spatial)`` view of a channels-last array (no copy)."""
    return x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1)))


def is_channels_last(layout):
    """True for MXNet's channels-last layouts (NWC, NHWC, NDHWC)."""
    return layout is not None and layout.startswith('N') and layout.endswith('C')


def in_layout(x, last):
    """A channels-first result as the caller's layout: with ``last``, the view with the
    channel axis moved to the end (no copy); None stays None."""
    if x is None or not last:
        return x
    return x.transpose((0,) + tuple(range(2, x.ndim)) + (1,))


# Host convolutions run a few images at a time, so each block's columns (or Winograd
# tiles) are still in cache when the GEMM reads them. A 3x3 layer's columns are 9x its
# input (150 MB for ResNet's first stage at batch 64); streamed through memory whole,
# that layer's im2col forward took 40 ms, in blocks of 1-6 MB 25-28 ms, best at 3 MB
# over all of ResNet-18's layers (2 cores, 2 MB L2 each, 32 MB L3). A block has at
# least 256 rows, though: thinner GEMMs re-read the weight too often (the 512-channel
# 4x4 layers' weight gradient took 23 ms in 3 MB blocks, 17 ms in 256-row ones).
# A GPU gets one GEMM per layer.
_HOST_BLOCK_BYTES = 3 << 20
_MIN_BLOCK_ROWS = 256


def _image_blocks(xp, n, bytes_per_image, rows_per_image):
    """``(lo, hi)`` ranges of images for one block each; with several host threads
    (``host_threads``), as many blocks for each thread, all of one size where the
    batch allows (so a 512-channel layer's one block of 16 images becomes two of 8)."""
    if xp is not np:
        return [(0, n)]
    step = max(_HOST_BLOCK_BYTES // max(1, bytes_per_image),
               -(-_MIN_BLOCK_ROWS // max(1, rows_per_image)), 1)
    threads = host_threads.threads()
    if threads > 1:
        per_thread = -(-n // (threads * step))
        step = max(1, -(-n // (threads * per_thread)))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def _positions(out_sp):
    p = 1
    for o in out_sp:
        p *= o
    return p


def _columns(xp, xl, geo, out_sp):
    """im2col of channels-last ``xl``: ``(groups, N*positions, kernel*C/groups)``.

    Column entries run kernel offset major, channel minor. A 1x1 stride-1 convolution
    needs no copy at all.
    """
    n, c, g = xl.shape[0], xl.shape[-1], geo.groups
    rows = n * _positions(out_sp)
    pointwise = all(k == 1 for k in geo.kernel) and not any(geo.pad)
    if pointwise and g == 1 and all(s == 1 for s in geo.stride):
        return xl.reshape(1, rows, c)
    dims = len(geo.kernel)
    if any(geo.pad):
        padded = xp.zeros((n,) + tuple(s + 2 * p for s, p in zip(xl.shape[1:-1], geo.pad))
                          + (c,), dtype=xl.dtype)
        padded[(slice(None),) + tuple(slice(p, p + s) for p, s in
                                      zip(geo.pad, xl.shape[1:-1]))] = xl
        xl = padded
    st = xl.strides
    cg = c // g
    # (group, N, *out, *kernel, C/g): every window of every output position, as a view
    view = xp.lib.stride_tricks.as_strided(
        xl, (g, n) + tuple(out_sp) + geo.kernel + (cg,),
        (st[-1] * cg, st[0]) + tuple(st[1 + i] * geo.stride[i] for i in range(dims))
        + tuple(st[1 + i] * geo.dilate[i] for i in range(dims)) + (st[-1],))
    return view.reshape(g, rows, -1)


def _weight_matrix(w, groups):
    """Weight ``(F, C/g, *kernel)`` as ``(g, kernel*C/g, F/g)``, rows ordered as columns."""
    f, cg = w.shape[:2]
    dims = w.ndim - 2
    wg = w.reshape((groups, f // groups, cg) + w.shape[2:])
    return wg.transpose((0,) + tuple(range(3, 3 + dims)) + (2, 1)).reshape(groups, -1,
                                                                           f // groups)


def _grouped_rows(yl, groups):
    """Channels-last ``(N, *sp, F)`` as ``(g, N*positions, F/g)`` (a view)."""
    f = yl.shape[-1]
    return yl.reshape(-1, groups, f // groups).transpose(1, 0, 2)


def _check_fits(x_shape, geo, out_sp):
    if any(o <= 0 for o in out_sp):
        raise MXNetError('convolution: input %s is smaller than the dilated kernel %s with '
                         'padding %s' % (tuple(x_shape), geo.kernel, geo.pad))


# ---- one convolution's weight, in the form its GEMMs read ---------------------------------
class ConvKernel:
    """The weight of one convolution call, prepared once for its forward and backward.

    3x3 'same' layers hold the Winograd-transformed weight, the others the im2col
    weight matrix. Arrays in and out are channels-last.
    """

    def __init__(self, xp, geo, w=None, winograd_u=None):
        self.xp, self.geo, self.w = xp, geo, w
        if winograd_u is None and winograd.applies(geo, w.shape[1] * geo.groups, w.shape[0]):
            winograd_u = winograd.transform_weight(xp, w)
        self.u = winograd_u
        self.matrix = _weight_matrix(w, geo.groups) if winograd_u is None else None

    def __call__(self, xl):
        """``(N, *in, C)`` -> ``(N, *out, F)``."""
        xp, geo = self.xp, self.geo
        n, out_sp = xl.shape[0], geo.out_size(xl.shape[1:-1])
        _check_fits(xl.shape, geo, out_sp)
        weight = self.u if self.u is not None else self.matrix
        filters = weight.shape[2] * (1 if self.u is not None else geo.groups)
        y = xp.empty((n,) + out_sp + (filters,), xp.result_type(xl.dtype, weight.dtype))
        if self.u is not None:
            tiles = winograd.tiles(out_sp)

            def blocks(chunk):
                for lo, hi in chunk:
                    v = winograd.transform_input(xp, xl[lo:hi])
                    winograd.transform_output(xp, xp.matmul(v, self.u), y[lo:hi])
            host_threads.map_chunks(blocks, _image_blocks(
                xp, n, 16 * tiles * xl.shape[-1] * xl.itemsize, tiles))
            return y
        g, k, fg = weight.shape
        positions = _positions(out_sp)

        def column_blocks(chunk):
            for lo, hi in chunk:
                cols = _columns(xp, xl[lo:hi], geo, out_sp)
                if g == 1:
                    xp.matmul(cols[0], weight[0], out=y[lo:hi].reshape(-1, fg))
                else:
                    _grouped_rows(y[lo:hi], g)[...] = xp.matmul(cols, weight)
        host_threads.map_chunks(column_blocks, _image_blocks(
            xp, n, positions * k * g * xl.itemsize, positions))
        return y

    def data_grad(self, dyl, x_shape):
        """Gradient ``(N, *in, C)`` of the input of shape ``x_shape`` (channels first)."""
        if self.u is not None:  # Winograd: 'same' 3x3, and no weight matrix for col2im
            geo = self.geo.transposed()
        else:
            geo = self.geo.transposed(x_shape[2:], x_shape[1], dyl.shape[-1])
        if geo is not None:
            return self._flipped(geo)(dyl)
        return self._col2im(dyl, x_shape)

    def _flipped(self, geo):
        """The kernel of the stride-1 convolution that computes the data gradient."""
        if self.u is not None:
            return ConvKernel(self.xp, geo, winograd_u=winograd.flip(self.u))
        # (F, C/g, *k) -> (C, F/g, *k), kernel flipped
        w, g = self.w, self.geo.groups
        f, cg, dims = w.shape[0], w.shape[1], w.ndim - 2
        wt = w.reshape((g, f // g, cg) + w.shape[2:]).swapaxes(1, 2)
        wt = wt[(Ellipsis,) + (slice(None, None, -1),) * dims]
        return ConvKernel(self.xp, geo, wt.reshape((g * cg, f // g) + w.shape[2:]))

    def weight_grad(self, xl, dyl):
        """Gradient of the weight from the input and output gradient (channels-last): a
        sum over blocks of images, with the columns or tiles rebuilt (saves memory)."""
        xp, geo, w_shape = self.xp, self.geo, self.w.shape
        g, n, c = geo.groups, xl.shape[0], xl.shape[-1]
        out_sp = dyl.shape[1:-1]
        if self.u is not None:
            tiles = winograd.tiles(out_sp)

            def tile_sums(chunk):
                total = None
                for lo, hi in chunk:
                    v = winograd.transform_input(xp, xl[lo:hi])
                    dm = winograd.transform_output_grad(xp, dyl[lo:hi])
                    part = xp.matmul(dm.transpose(0, 2, 1), v)  # (16, F, C), over tiles
                    total = part if total is None else xp.add(total, part, out=total)
                return total
            parts = host_threads.map_chunks(
                tile_sums, _image_blocks(xp, n, 16 * tiles * c * xl.itemsize, tiles))
            return winograd.weight_grad(xp, host_threads.add_in_order(parts))
        k, positions = self.matrix.shape[1], _positions(out_sp)  # k = kernel * C/g

        def column_sums(chunk):
            total = None
            for lo, hi in chunk:
                cols = _columns(xp, xl[lo:hi], geo, out_sp)
                part = xp.matmul(cols.transpose(0, 2, 1), _grouped_rows(dyl[lo:hi], g))
                total = part if total is None else xp.add(total, part, out=total)
            return total
        total = host_threads.add_in_order(host_threads.map_chunks(
            column_sums, _image_blocks(xp, n, positions * k * g * xl.itemsize, positions)))
        # (g, *kernel, C/g, F/g) -> (F, C/g, *kernel)
        dims = len(w_shape) - 2
        dw = total.reshape((g,) + tuple(w_shape[2:]) + (w_shape[1], w_shape[0] // g))
        dw = dw.transpose((0, dims + 2, dims + 1) + tuple(range(1, dims + 1)))
        return xp.ascontiguousarray(dw).reshape(w_shape)

    def _col2im(self, dyl, x_shape):
        """Column gradients of each block of images, scattered one kernel offset at a time
        into a padded gradient."""
        xp, geo = self.xp, self.geo
        g = geo.groups
        n, out_sp, c = dyl.shape[0], dyl.shape[1:-1], x_shape[1]
        wmat_t = self.matrix.transpose(0, 2, 1)  # (g, F/g, K*C/g)
        dx = xp.empty((n,) + tuple(x_shape[2:]) + (c,), xp.result_type(dyl.dtype, wmat_t.dtype))
        padded = tuple(s + 2 * p for s, p in zip(x_shape[2:], geo.pad))
        crop = (slice(None),) + tuple(slice(p, p + s) for p, s in zip(geo.pad, x_shape[2:]))
        dims = len(geo.kernel)
        per_image = _positions(out_sp) * wmat_t.shape[2] * g * dx.itemsize

        def blocks(chunk):
            for lo, hi in chunk:
                dcols = xp.matmul(_grouped_rows(dyl[lo:hi], g), wmat_t)
                # (images, *out, *kernel, g, C/g)
                dcols = xp.moveaxis(dcols.reshape((g, hi - lo) + out_sp + geo.kernel
                                                  + (c // g,)), 0, -2)
                if any(geo.pad):
                    grad = xp.zeros((hi - lo,) + padded + (g, c // g), dtype=dx.dtype)
                else:  # sum straight into the result
                    grad = dx[lo:hi].reshape((hi - lo,) + padded + (g, c // g))
                    grad[...] = 0
                for offset in itertools.product(*(range(k) for k in geo.kernel)):
                    target = (slice(None),) + tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                                                    for o, d, s, m in
                                                    zip(offset, geo.dilate, geo.stride, out_sp))
                    grad[target] += dcols[(slice(None),) * (1 + dims) + offset]
                if any(geo.pad):
                    dx[lo:hi] = grad[crop].reshape((hi - lo,) + dx.shape[1:])
        host_threads.map_chunks(blocks, _image_blocks(xp, n, per_image, _positions(out_sp)))
        return dx


def _check_conv_shapes(x, w, geo, num_filter, weight_in_axis, name):
    dims = len(geo.kernel)
    if x.ndim != dims + 2:
        raise MXNetError('%s: data of shape %s needs %d dimensions (N, C, %d spatial) for '
                         'kernel %s' % (name, x.shape, dims + 2, dims, geo.kernel))
    if w.shape[2:] != geo.kernel:
        raise MXNetError('%s: weight shape %s does not match kernel %s'
                         % (name, w.shape, geo.kernel))
    if x.shape[1] % geo.groups or num_filter % geo.groups:
        raise MXNetError('%s: channels (%d in, %d out) must divide by num_group=%d'
                         % (name, x.shape[1], num_filter, geo.groups))
    expected = x.shape[1] // geo.groups if weight_in_axis else x.shape[1]
    if w.shape[weight_in_axis] != expected:
        raise MXNetError('%s: weight shape %s does not fit data with %d channels and '
                         'num_group=%d' % (name, w.shape, x.shape[1], geo.groups))


def _bias_shape(ndim):
    return (1, -1) + (1,) * (ndim - 2)


def _bias_grad(xp, dy, use_bias):
    return sum_over(xp, dy, (0,) + tuple(range(2, dy.ndim))) if use_bias else None


@register('Convolution', num_inputs=3, takes_needs_grad=True)
def convolution(xp, data, weight, bias=None, kernel=None, stride=None, dilate=None, pad=None,
                num_filter=None, num_group=1, no_bias=False, layout=None, workspace=None,
                cudnn_tune=None, cudnn_off=None, *, needs_grad=(True, True, True)):
    """N-D convolution: data ``(N, C, *spatial)``, weight ``(F, C/num_group, *kernel)``.

    With a channels-last ``layout`` (NWC, NHWC, NDHWC) data is ``(N, *spatial, C)``,
    weight ``(F, *kernel, C/num_group)`` and the output ``(N, *spatial, F)``.
    """
    last = is_channels_last(layout)
    if last:
        data, weight = channels_first(data), channels_first(weight)
    geo = Geometry(kernel if kernel is not None else weight.shape[2:], stride, pad, dilate,
                   num_group, layout)
    num_filter = weight.shape[0] if num_filter is None else num_filter
    if weight.shape[0] != num_filter:
        raise MXNetError('Convolution: weight has %d filters but num_filter=%d'
                         % (weight.shape[0], num_filter))
    _check_conv_shapes(data, weight, geo, num_filter, 1, 'Convolution')
    kernel = ConvKernel(xp, geo, weight)
    xl = channels_last(xp, data)
    out = channels_first(kernel(xl))
    use_bias = bias is not None and not no_bias
    if use_bias:
        out += bias.reshape(_bias_shape(out.ndim))
    # e.g. the first layer's input needs no gradient: skip that GEMM and its col2im
    want_dx, want_dw = needs_grad[0], needs_grad[1]

    def backward(dy):
        if last:
            dy = channels_first(dy)
        dyl = channels_last(xp, dy)
        return (in_layout(channels_first(kernel.data_grad(dyl, data.shape)) if want_dx
                          else None, last),
                in_layout(kernel.weight_grad(xl, dyl) if want_dw else None, last),
                _bias_grad(xp, dy, use_bias))
    return in_layout(out, last), backward


def _kernel_of(kernel, weight, data):
    return tuple(_tuple(kernel, None, 'kernel')) if kernel else weight[2:len(data)]


def _data_from_output(data, out, kernel, stride, dilate, pad, layout):
    """What a convolution's output tells of its data, as MXNet infers it: the batch size,
    and each spatial size whose stride is 1."""
    if not out or len(out) != len(data) or not kernel:
        return data
    n = len(data) - 2
    stride, dilate = _tuple(stride, n, 'stride', 1), _tuple(dilate, n, 'dilate', 1)
    pad, kernel = _tuple(pad, n, 'pad', 0), _tuple(kernel, n, 'kernel')
    first = 1 if is_channels_last(layout) else 2
    data = list(data)
    data[0] = data[0] or out[0]
    for i in range(n):
        if not data[first + i] and out[first + i] and stride[i] == 1:
            data[first + i] = out[first + i] + dilate[i] * (kernel[i] - 1) - 2 * pad[i]
    return tuple(data)


@shape_rule('Convolution')
def _convolution_shapes(data, weight, bias=None, kernel=None, num_filter=None, num_group=1,
                        layout=None, stride=None, dilate=None, pad=None, out_shapes=None, **_):
    """weight ``(num_filter, C/num_group, *kernel)`` (``(num_filter, *kernel, C/num_group)``
    for channels-last layouts), bias ``(num_filter,)``; data's batch and stride-1 spatial
    sizes from the output's."""
    if out_shapes:
        data = _data_from_output(data, out_shapes[0], kernel, stride, dilate, pad, layout)
    num_filter = num_filter or weight[0]
    if layout is not None and layout.endswith('C'):
        kernel = tuple(_tuple(kernel, None, 'kernel')) if kernel else weight[1:-1]
        weight = (num_filter,) + kernel + (data[-1] // num_group,)
    else:
        weight = (num_filter, data[1] // num_group) + _kernel_of(kernel, weight, data)
    return data, weight, None if bias is None else (num_filter,)


def _pad_for_target(geo, in_size, target_shape):
    """``(pad, adj)`` giving a transposed convolution of ``geo`` the output size
    ``target_shape`` (which then overrides the given pad and adj, as in MXNet): the excess
    over the unpadded size is split evenly, an odd one going to ``adj``."""
    pad, adj = [], []
    for n, k, s, d, t in zip(in_size, geo.kernel, geo.stride, geo.dilate,
                             _tuple(target_shape, len(geo.kernel), 'target_shape')):
        full = s * (n - 1) + d * (k - 1) + 1
        if full < t:
            raise MXNetError('Deconvolution: target_shape %s is too big: at most %d fits an '
                             'input of size %d along an axis with kernel %d and stride %d'
                             % (tuple(target_shape), full, n, k, s))
        pad.append((full - t + 1) // 2)
        adj.append((full - t) % 2)
    return tuple(pad), tuple(adj)


@register('Deconvolution', num_inputs=3, takes_needs_grad=True)
def deconvolution(xp, data, weight, bias=None, kernel=None, stride=None, dilate=None, pad=None,
                  adj=None, target_shape=None, num_filter=None, num_group=1, no_bias=True,
                  layout=None, workspace=None, cudnn_tune=None, cudnn_off=None, *,
                  needs_grad=(True, True, True)):
    """Transposed convolution: data ``(N, C, *spatial)``, weight ``(C, F/num_group, *kernel)``.

    Output size per axis: ``(in - 1) * stride - 2 * pad + dilate * (kernel - 1) + 1 + adj``.
    With a channels-last ``layout`` data is ``(N, *spatial, C)``, weight
    ``(C, *kernel, F/num_group)`` and the output ``(N, *spatial, F)``.
    """
    last = is_channels_last(layout)
    if last:
        data, weight = channels_first(data), channels_first(weight)
    geo = Geometry(kernel if kernel is not None else weight.shape[2:], stride, pad, dilate,
                   num_group, layout)
    adj = _tuple(adj, len(geo.kernel), 'adj', 0)
    if target_shape is not None and any(_tuple(target_shape, len(geo.kernel), 'target_shape')):
        geo.pad, adj = _pad_for_target(geo, data.shape[2:], target_shape)
    num_filter = weight.shape[1] * geo.groups if num_filter is None else num_filter
    if weight.shape[0] != data.shape[1] or weight.shape[1] * geo.groups != num_filter:
        raise MXNetError('Deconvolution: weight shape %s does not fit data with %d channels, '
                         'num_filter=%d and num_group=%d'
                         % (weight.shape, data.shape[1], num_filter, geo.groups))
    if any(a >= s and a for a, s in zip(adj, geo.stride)):
        raise MXNetError('Deconvolution: adj %s must be smaller than stride %s' % (adj, geo.stride))
    out_sp = tuple((n - 1) * s - 2 * p + d * (k - 1) + 1 + a for n, k, s, p, d, a in
                   zip(data.shape[2:], geo.kernel, geo.stride, geo.pad, geo.dilate, adj))
    out_shape = (data.shape[0], num_filter) + out_sp
    # The transposed conv is the data gradient of a conv from out_shape to data's shape.
    kernel = ConvKernel(xp, geo, weight)
    xl = channels_last(xp, data)
    out = channels_first(kernel.data_grad(xl, out_shape))
    use_bias = bias is not None and not no_bias
    if use_bias:
        out += bias.reshape(_bias_shape(out.ndim))
    want_dx, want_dw = needs_grad[0], needs_grad[1]

    def backward(dy):
        if last:
            dy = channels_first(dy)
        dyl = channels_last(xp, dy)
        return (in_layout(channels_first(kernel(dyl)) if want_dx else None, last),
                in_layout(kernel.weight_grad(dyl, xl) if want_dw else None, last),
                _bias_grad(xp, dy, use_bias))
    return in_layout(out, last), backward



@shape_rule('Deconvolution')
def _deconvolution_shapes(data, weight, bias=None, kernel=None, num_filter=None, num_group=1,
                          **_):
    """weight ``(C, num_filter/num_group, *kernel)``, bias ``(num_filter,)``."""
    num_filter = num_filter or weight[1] * num_group
    weight = (data[1], num_filter // num_group) + _kernel_of(kernel, weight, data)
    return data, weight, None if bias is None else (num_filter,)
