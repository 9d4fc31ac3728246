"""Convolution and transposed convolution (1-D, 2-D, 3-D, channels first).

Both are GEMMs over im2col columns: a strided view of the padded input gathers each
output position's receptive field, one batched matmul per layer does the work, and
col2im scatters column gradients back with one vectorised add per kernel offset.
Columns are rebuilt in backward rather than kept, trading a copy for memory.
"""
import itertools

from ...base import MXNetError
from ..registry import register

_LAYOUTS = {'NCW': 1, 'NCHW': 2, 'NCDHW': 3}


class Geometry:
    """Kernel, stride, padding, dilation and groups of one convolution."""
    __slots__ = ('kernel', 'stride', 'pad', 'dilate', 'groups')

    def __init__(self, kernel, stride, pad, dilate, groups, layout=None):
        kernel = _tuple(kernel, None, 'kernel')
        nd_ = len(kernel)
        if layout is not None and _LAYOUTS.get(layout) != nd_:
            raise MXNetError('layout %r does not fit a %d-D kernel %s; minigluon supports the '
                             'channels-first layouts NCW, NCHW and NCDHW' % (layout, nd_, kernel))
        self.kernel = kernel
        self.stride = _tuple(stride, nd_, 'stride', 1)
        self.pad = _tuple(pad, nd_, 'pad', 0)
        self.dilate = _tuple(dilate, nd_, 'dilate', 1)
        self.groups = int(groups)

    def out_size(self, in_size):
        return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in
                     zip(in_size, self.kernel, self.stride, self.pad, self.dilate))

    @property
    def is_pointwise(self):
        return all(k == 1 for k in self.kernel) and all(s == 1 for s in self.stride) \
            and not any(self.pad)


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


def _im2col(xp, x, geo, out_sp):
    """Columns ``(N, C*prod(kernel), prod(out))`` of the padded input."""
    n, c = x.shape[:2]
    positions = 1
    for o in out_sp:
        positions *= o
    if geo.is_pointwise:
        return x.reshape(n, c, positions)
    xpad = pad_spatial(xp, x, geo.pad)
    strides = xpad.strides
    dims = len(geo.kernel)
    view = xp.lib.stride_tricks.as_strided(
        xpad, x.shape[:2] + geo.kernel + tuple(out_sp),
        strides[:2] + tuple(strides[2 + i] * geo.dilate[i] for i in range(dims))
        + tuple(strides[2 + i] * geo.stride[i] for i in range(dims)))
    return view.reshape(n, -1, positions)


def _col2im(xp, cols, x_shape, geo, out_sp):
    """Sum column gradients back into an input-shaped gradient (inverse of im2col)."""
    n, c = x_shape[:2]
    if geo.is_pointwise:
        return cols.reshape(x_shape)
    padded = x_shape[:2] + tuple(s + 2 * p for s, p in zip(x_shape[2:], geo.pad))
    grad = xp.zeros(padded, dtype=cols.dtype)
    cols = cols.reshape((n, c) + geo.kernel + tuple(out_sp))
    for offset in itertools.product(*(range(k) for k in geo.kernel)):
        target = _spatial(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in
                          zip(offset, geo.dilate, geo.stride, out_sp))
        grad[target] += cols[(slice(None), slice(None)) + offset]
    return grad[_spatial(slice(p, p + s) for p, s in zip(geo.pad, x_shape[2:]))]


def _grouped(w, groups):
    """Weight ``(F, C/g, *k)`` as ``(g, F/g, C/g*prod(k))`` for batched matmul."""
    return w.reshape(groups, w.shape[0] // groups, -1)


def conv_forward(xp, x, w, geo):
    """``y = conv(x, w)`` without bias; returns y of shape ``(N, F, *out)``."""
    out_sp = geo.out_size(x.shape[2:])
    if any(o <= 0 for o in out_sp):
        raise MXNetError('convolution: input %s is smaller than the dilated kernel %s with '
                         'padding %s' % (x.shape, geo.kernel, geo.pad))
    cols = _im2col(xp, x, geo, out_sp)
    n, g = x.shape[0], geo.groups
    if g == 1:
        out = xp.matmul(w.reshape(w.shape[0], -1), cols)
    else:
        out = xp.matmul(_grouped(w, g)[None], cols.reshape(n, g, -1, cols.shape[-1]))
    return out.reshape((n, w.shape[0]) + out_sp)


def conv_data_grad(xp, dy, w, x_shape, geo):
    """Gradient of ``conv(x, w)`` with respect to ``x`` (also the transposed conv)."""
    n, g = dy.shape[0], geo.groups
    out_sp = dy.shape[2:]
    dy = dy.reshape(n, g, dy.shape[1] // g, -1)
    wg = _grouped(w, g)
    cols = xp.matmul(wg.transpose(0, 2, 1)[None], dy)  # (N, g, C/g*K, P)
    return _col2im(xp, cols.reshape(n, -1, cols.shape[-1]), x_shape, geo, out_sp)


def conv_weight_grad(xp, x, dy, w_shape, geo):
    """Gradient of ``conv(x, w)`` with respect to ``w``."""
    out_sp = dy.shape[2:]
    cols = _im2col(xp, x, geo, out_sp)  # rebuilt: cheaper in memory than keeping it
    n, g = x.shape[0], geo.groups
    if g == 1:
        return xp.tensordot(dy.reshape(n, dy.shape[1], -1), cols,
                            axes=([0, 2], [0, 2])).reshape(w_shape)
    cols = cols.reshape(n, g, -1, cols.shape[-1])
    dy = dy.reshape(n, g, dy.shape[1] // g, -1)
    grads = [xp.tensordot(dy[:, i], cols[:, i], axes=([0, 2], [0, 2])) for i in range(g)]
    return xp.stack(grads).reshape(w_shape)


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


@register('Convolution', num_inputs=3)
def convolution(xp, data, weight, bias=None, kernel=None, stride=None, dilate=None, pad=None,
                num_filter=None, num_group=1, no_bias=False, layout=None, workspace=None,
                cudnn_tune=None, cudnn_off=None):
    """N-D convolution: data ``(N, C, *spatial)``, weight ``(F, C/num_group, *kernel)``."""
    geo = Geometry(kernel if kernel is not None else weight.shape[2:], stride, pad, dilate,
                   num_group, layout)
    num_filter = weight.shape[0] if num_filter is None else num_filter
    if weight.shape[0] != num_filter:
        raise MXNetError('Convolution: weight has %d filters but num_filter=%d'
                         % (weight.shape[0], num_filter))
    _check_conv_shapes(data, weight, geo, num_filter, 1, 'Convolution')
    out = conv_forward(xp, data, weight, geo)
    use_bias = bias is not None and not no_bias
    if use_bias:
        out += bias.reshape(_bias_shape(out.ndim))

    def backward(dy):
        db = dy.sum(axis=(0,) + tuple(range(2, dy.ndim))) if use_bias else None
        return (conv_data_grad(xp, dy, weight, data.shape, geo),
                conv_weight_grad(xp, data, dy, weight.shape, geo), db)
    return out, backward


@register('Deconvolution', num_inputs=3)
def deconvolution(xp, data, weight, bias=None, kernel=None, stride=None, dilate=None, pad=None,
                  adj=None, target_shape=None, num_filter=None, num_group=1, no_bias=True,
                  layout=None, workspace=None, cudnn_tune=None, cudnn_off=None):
    """Transposed convolution: data ``(N, C, *spatial)``, weight ``(C, F/num_group, *kernel)``.

    Output size per axis: ``(in - 1) * stride - 2 * pad + dilate * (kernel - 1) + 1 + adj``.
    """
    geo = Geometry(kernel if kernel is not None else weight.shape[2:], stride, pad, dilate,
                   num_group, layout)
    adj = _tuple(adj, len(geo.kernel), 'adj', 0)
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
    out = conv_data_grad(xp, data, weight, out_shape, geo)
    use_bias = bias is not None and not no_bias
    if use_bias:
        out = out + bias.reshape(_bias_shape(out.ndim))

    def backward(dy):
        db = dy.sum(axis=(0,) + tuple(range(2, dy.ndim))) if use_bias else None
        return (conv_forward(xp, dy, weight, geo),
                conv_weight_grad(xp, dy, data, weight.shape, geo), db)
    return out, backward
