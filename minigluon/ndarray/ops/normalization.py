"""Normalisation layers' ops: BatchNorm, LayerNorm, InstanceNorm, GroupNorm.

Statistics are computed in float32 or wider (also for float16 data), and each op is
arranged as ``(before, channel, after)`` so one code path serves every axis.
"""
import numpy as np

from ... import backend
from .. import tape
from ...base import MXNetError
from ..registry import register, shape_rule
from ..accumulate import channel_dots, channel_sums, sum_over
from . import compiled


def _three_axes(shape, axis):
    """``shape`` as ``(prod before axis, shape[axis], prod after axis)``."""
    ax = axis % len(shape)
    before = int(np.prod(shape[:ax], dtype=np.int64))
    after = int(np.prod(shape[ax + 1:], dtype=np.int64))
    return before, shape[ax], after


def _stat_dtype(dtype):
    return np.float32 if dtype == np.float16 else dtype


def _per_channel(v):
    return v.reshape(1, -1, 1)


class _ChannelView:
    """Arrays of one shape as C-contiguous ``(pre, C, post)`` views in ``like``'s memory order.

    Convolution outputs are channels-last; for them ``pre`` is every other axis and
    ``post`` is 1, so no copy is made and each per-channel pass streams rows of
    channel vectors. Other arrays are read channels-first as ``(before, C, after)``.
    """

    def __init__(self, xp, like, axis):
        self.xp, self.shape, self.axis = xp, like.shape, axis % like.ndim
        moved = xp.moveaxis(like, self.axis, -1)
        self.last = not like.flags.c_contiguous and moved.flags.c_contiguous
        self.moved_shape = moved.shape

    def of(self, a):
        xp = self.xp
        if self.last:
            moved = xp.ascontiguousarray(xp.moveaxis(a, self.axis, -1))
            return moved.reshape(-1, self.shape[self.axis], 1)
        return xp.ascontiguousarray(a).reshape(_three_axes(self.shape, self.axis))

    def back(self, a3):
        if self.last:
            return self.xp.moveaxis(a3.reshape(self.moved_shape), -1, self.axis)
        return a3.reshape(self.shape)


def _compiled(xp, x3):
    """The fused BatchNorm kernels for ``x3``: CUDA ones on a GPU, numba's on the host
    when they are on; else None (the array-module path)."""
    if backend.is_device_array(x3):
        if x3.dtype not in (np.float16, np.float32, np.float64):
            return None
        from . import normalization_gpu
        return normalization_gpu
    if not compiled.applies(xp, x3):
        return None
    from . import normalization_cpu
    return normalization_cpu


def _as(xp, dtype, *vectors):
    """Per-channel vectors in ``dtype``, as the numpy path casts them for its steps."""
    return [xp.ascontiguousarray(v, dtype=dtype) for v in vectors]


@register('BatchNorm', num_inputs=5)
def batch_norm(xp, data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
               fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1,
               cudnn_off=None, training=None):
    """Batch normalisation over every axis but ``axis``.

    In training mode (``autograd.is_training()`` unless ``training`` says otherwise) it
    uses the batch's mean and (biased) variance; otherwise, or with ``use_global_stats``,
    it uses the moving statistics. As in MXNet 1.x on the CPU, ``moving_mean`` and
    ``moving_var`` change when the backward pass runs through a training-mode node (once
    per backward), in place as ``m = momentum * m + (1 - momentum) * batch_stat``: a
    forward alone, recorded or not, leaves them as they were. ``output_mean_var`` also
    returns the mean and the inverse standard deviation ``1 / sqrt(var + eps)`` used, as
    MXNet's BatchNorm does.
    """
    (out, mean, _, inv_std), backward = _batch_norm(
        xp, data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
        use_global_stats, axis, training)
    if output_mean_var:
        return (out, mean, inv_std), lambda dys: backward(dys[0])
    return out, backward


def _batch_norm_with_variance(xp, data, gamma, beta, moving_mean, moving_var, eps, momentum,
                              fix_gamma, use_global_stats, output_mean_var, training):
    """Batch normalisation over every axis but 1 whose ``output_mean_var`` gives the
    variance itself (MXNet's legacy BatchNorm_v1 and SyncBatchNorm)."""
    (out, mean, var, _), backward = _batch_norm(
        xp, data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
        use_global_stats, 1, training)
    if output_mean_var:
        return (out, mean, var), lambda dys: backward(dys[0])
    return out, backward


@register('BatchNorm_v1', num_inputs=5)
def batch_norm_v1(xp, data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
                  fix_gamma=True, use_global_stats=False, output_mean_var=False,
                  training=None):
    """MXNet's legacy BatchNorm: ``BatchNorm`` over axis 1, whose ``output_mean_var``
    returns the batch's mean and (biased) variance."""
    return _batch_norm_with_variance(xp, data, gamma, beta, moving_mean, moving_var, eps,
                                     momentum, fix_gamma, use_global_stats, output_mean_var,
                                     training)


@register('_contrib_SyncBatchNorm', num_inputs=5)
def sync_batch_norm(xp, data, gamma, beta, moving_mean, moving_var, eps=1e-3, momentum=0.9,
                    fix_gamma=True, use_global_stats=False, output_mean_var=False, ndev=1,
                    key=None, training=None):
    """Batch normalisation over axis 1 with the statistics of the whole batch across
    ``ndev`` devices (the calls sharing ``key``). minigluon runs the calls of one process
    one after another, so only ``ndev=1`` can be met: normalise the whole batch in one
    call instead. ``output_mean_var`` returns the mean and the (biased) variance."""
    if key is None:
        raise MXNetError('SyncBatchNorm: give key, the name its calls on every device share')
    if int(ndev) != 1:
        raise MXNetError('SyncBatchNorm: ndev=%s devices cannot meet here, as each call '
                         'runs to its end before the next starts; use ndev=1 on the batch '
                         'of all devices together (key %r)' % (ndev, key))
    return _batch_norm_with_variance(xp, data, gamma, beta, moving_mean, moving_var, eps,
                                     momentum, fix_gamma, use_global_stats, output_mean_var,
                                     training)


def _batch_norm(xp, data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
                use_global_stats, axis, training):
    """``(out, mean, var, inv_std), backward(dy)`` of BatchNorm over every axis but
    ``axis``; see ``batch_norm``."""
    if training is None:
        training = tape.is_training()
    shape = data.shape
    channels = shape[axis % data.ndim]
    if gamma.shape != (channels,) or beta.shape != (channels,):
        raise MXNetError('BatchNorm: gamma %s and beta %s must have shape (%d,) for data %s '
                         'with axis=%d' % (gamma.shape, beta.shape, channels, shape, axis))
    sdt = _stat_dtype(data.dtype)
    view = _ChannelView(xp, data, axis)
    x3 = view.of(data)
    count = x3.shape[0] * x3.shape[2]
    g = xp.ones(channels, sdt) if fix_gamma else gamma.astype(sdt, copy=False)
    batch_stats = training and not use_global_stats
    kernels = _compiled(xp, x3) if batch_stats else None
    if kernels is not None:  # three passes instead of seven, the same roundings per element
        mean = (kernels.sums(x3) / count).astype(sdt)
        var = (kernels.centred_squares(x3, mean.astype(data.dtype)) / count).astype(sdt)
    elif batch_stats:
        mean = channel_sums(xp, x3, sdt) / count
        out = x3 - _per_channel(mean).astype(data.dtype, copy=False)
        var = channel_dots(xp, out, out, sdt) / count  # two passes: no cancellation
    if batch_stats:
        inv_std = 1 / xp.sqrt(var + eps)
        scale = g * inv_std
        if kernels is not None:
            out = xp.empty_like(x3)
            kernels.normalise(x3, *_as(xp, data.dtype, mean, scale, beta), out)
        else:
            out *= _per_channel(scale).astype(data.dtype, copy=False)  # the centred x
            out += _per_channel(beta).astype(data.dtype, copy=False)
    else:
        mean = moving_mean.astype(sdt)  # copies: later training steps update these in place
        var = moving_var.astype(sdt)
        inv_std = 1 / xp.sqrt(var + eps)
        scale = g * inv_std
        out = x3 * _per_channel(scale).astype(data.dtype, copy=False)
        out += _per_channel(beta.astype(sdt, copy=False) - mean * scale).astype(data.dtype,
                                                                                 copy=False)

    def update_moving_statistics():
        for moving, batch in ((moving_mean, mean), (moving_var, var)):
            moving *= momentum
            moving += (1 - momentum) * batch.astype(moving.dtype, copy=False)

    def backward(dy):
        if batch_stats:
            update_moving_statistics()
        dy3 = view.of(dy)
        if kernels is not None and dy3.dtype == x3.dtype:
            return compiled_backward(dy3)
        dbeta = channel_sums(xp, dy3, sdt)
        # x - mean, not x: sum(dy * x) - mean * sum(dy) cancels when |mean| >> std
        centred = x3 - _per_channel(mean).astype(x3.dtype, copy=False)
        dgamma = channel_dots(xp, dy3, centred, sdt) * inv_std  # sum(dy * xhat)
        dx = dy3 * _per_channel(scale).astype(dy.dtype, copy=False)
        if batch_stats:
            # dx = scale * (dy - dbeta/M - xhat * dgamma/M)
            centred *= _per_channel(-scale * inv_std * dgamma / count).astype(dy.dtype,
                                                                             copy=False)
            dx += centred
            dx -= _per_channel(scale * dbeta / count).astype(dy.dtype, copy=False)
        return gradients(dx, dgamma, dbeta)

    def compiled_backward(dy3):
        # the numpy path's sums and its float32 steps in two passes
        dsum, dot = kernels.gradient_sums(dy3, x3, mean.astype(x3.dtype))
        dbeta, dgamma = dsum.astype(sdt), dot.astype(sdt) * inv_std
        dx = xp.empty_like(dy3)
        kernels.data_gradient(dy3, x3, *_as(xp, dy3.dtype, mean, scale, -scale * inv_std
                                            * dgamma / count, scale * dbeta / count), dx)
        return gradients(dx, dgamma, dbeta)

    def gradients(dx, dgamma, dbeta):
        dg = xp.zeros_like(gamma) if fix_gamma else dgamma.astype(gamma.dtype, copy=False)
        return view.back(dx), dg, dbeta.astype(beta.dtype, copy=False), None, None
    return (view.back(out), mean, var, inv_std), backward


def _normalize_along(xp, x3, gamma, beta, reduce_axis, eps):
    """Normalise ``x3`` over ``reduce_axis`` and apply a per-channel (axis 1) affine."""
    sdt = _stat_dtype(x3.dtype)
    count = x3.shape[reduce_axis]

    def mean(a):
        return sum_over(xp, a, (reduce_axis,), sdt, keepdims=True) / count
    centered = x3 - mean(x3)
    inv_std = 1 / xp.sqrt(mean(centered * centered) + eps)
    xhat = (centered * inv_std).astype(x3.dtype, copy=False)
    g, b = _per_channel(gamma), _per_channel(beta)
    out = xhat * g + b

    def backward(dy3):
        dxhat = dy3 * g
        dx = inv_std * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
        dgamma = channel_dots(xp, dy3, xhat, sdt)
        dbeta = channel_sums(xp, dy3, sdt)
        return dx.astype(x3.dtype, copy=False), dgamma.astype(gamma.dtype, copy=False), \
            dbeta.astype(beta.dtype, copy=False)
    return out.astype(x3.dtype, copy=False), backward


@register('LayerNorm', num_inputs=3)
def layer_norm(xp, data, gamma, beta, axis=-1, eps=1e-5, output_mean_var=False):
    """Normalise over ``axis`` (per sample), then scale by ``gamma`` and shift by ``beta``."""
    shape = data.shape
    pre, dim, post = _three_axes(shape, axis)
    if gamma.shape != (dim,) or beta.shape != (dim,):
        raise MXNetError('LayerNorm: gamma %s and beta %s must have shape (%d,) for data %s with '
                         'axis=%d' % (gamma.shape, beta.shape, dim, shape, axis))
    out, grad = _normalize_along(xp, data.reshape(pre, dim, post), gamma, beta, 1, eps)

    def backward(dy):
        dx, dg, db = grad(dy.reshape(pre, dim, post))
        return dx.reshape(shape), dg, db
    return out.reshape(shape), backward


@register('InstanceNorm', num_inputs=3)
def instance_norm(xp, data, gamma, beta, eps=1e-3):
    """Normalise each sample's channel over its spatial axes; per-channel ``gamma``, ``beta``."""
    shape = data.shape
    if data.ndim < 3 or gamma.shape != (shape[1],) or beta.shape != (shape[1],):
        raise MXNetError('InstanceNorm: needs data (N, C, *spatial) and gamma/beta of shape (C,), '
                         'got %s, %s, %s' % (shape, gamma.shape, beta.shape))
    out, grad = _normalize_along(xp, data.reshape(shape[0], shape[1], -1), gamma, beta, 2, eps)

    def backward(dy):
        dx, dg, db = grad(dy.reshape(shape[0], shape[1], -1))
        return dx.reshape(shape), dg, db
    return out.reshape(shape), backward


@register('GroupNorm', num_inputs=3)
def group_norm(xp, data, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False):
    """Normalise each sample over groups of ``C / num_groups`` channels (with all their
    spatial positions), then scale and shift each group by its ``gamma`` and ``beta``
    (shape ``(num_groups,)``, as in MXNet 1.x).

    With ``output_mean_var`` also returns the mean and standard deviation
    ``sqrt(var + eps)`` of each group, shape ``(N, num_groups)``; as in MXNet, gradients
    flow back through the normalised output only.
    """
    shape = data.shape
    if data.ndim < 3 or shape[1] % num_groups:
        raise MXNetError('GroupNorm: needs data (N, C, *spatial) with C divisible by '
                         'num_groups=%d, got shape %s' % (num_groups, shape))
    if gamma.shape != (num_groups,) or beta.shape != (num_groups,):
        raise MXNetError('GroupNorm: gamma %s and beta %s must have shape (num_groups,) = '
                         '(%d,)' % (gamma.shape, beta.shape, num_groups))
    x3 = data.reshape(shape[0], num_groups, -1)
    out, grad = _normalize_along(xp, x3, gamma, beta, 2, eps)

    def backward(dy):
        dx, dg, db = grad(dy.reshape(x3.shape))
        return dx.reshape(shape), dg, db
    if not output_mean_var:
        return out.reshape(shape), backward
    sdt = _stat_dtype(data.dtype)
    mean = x3.mean(axis=2, dtype=sdt)
    std = xp.sqrt(x3.var(axis=2, dtype=sdt) + eps)
    return (out.reshape(shape), mean.astype(data.dtype), std.astype(data.dtype)), \
        lambda dys: backward(dys[0])


def _one_per_channel(data, params, axis):
    channels = (data[axis],)
    return (data,) + tuple(None if p is None else channels for p in params)


@shape_rule('BatchNorm', 'BatchNorm_v1', '_contrib_SyncBatchNorm', 'InstanceNorm')
def _channel_shapes(data, *params, axis=1, **_):
    """gamma, beta (and BatchNorm's moving statistics): one value per channel of ``axis``."""
    return _one_per_channel(data, params, axis)


@shape_rule('LayerNorm')
def _layer_norm_shapes(data, gamma, beta, axis=-1, **_):
    return _one_per_channel(data, (gamma, beta), axis)
