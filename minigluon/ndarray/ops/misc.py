"""Smaller ops of MXNet 1.x: ``smooth_l1``, ``hard_sigmoid``, ``khatri_rao``,
``softmax_cross_entropy``, ``SoftmaxActivation`` and the contrib ops ``quadratic``,
``gradientmultiplier``, ``div_sqrt_dim`` and ``arange_like``."""
import math

import numpy as np

from ...base import MXNetError
from ..registry import register
from .softmax import log_softmax, softmax


def _float32(value):
    """A parameter as MXNet holds it (C ``float``), so float64 data sees the same value."""
    return float(np.float32(value))


def _computed_as(data):
    """Integer data is computed in float64 and truncated back, as MXNet does."""
    return data.astype(np.float64) if data.dtype.kind in 'biu' else data


@register('smooth_l1')
def smooth_l1(xp, data, scalar=1.0):
    """Smooth L1 with ``sigma = scalar``: ``0.5 (sigma x)^2`` where ``|x| < 1/sigma^2``,
    else ``|x| - 0.5/sigma^2``."""
    x = _computed_as(data)
    sigma2 = x.dtype.type(scalar) ** 2
    knee = 1 / sigma2
    out = xp.where(x > knee, x - 0.5 * knee,
                   xp.where(x < -knee, -x - 0.5 * knee, 0.5 * x * x * sigma2))

    def backward(dy):
        slope = xp.where(x > knee, 1.0, xp.where(x < -knee, -1.0, sigma2 * x))
        return ((dy * slope).astype(dy.dtype, copy=False),)
    return out.astype(data.dtype, copy=False), backward


@register('hard_sigmoid')
def hard_sigmoid(xp, data, alpha=0.2, beta=0.5):
    """``max(0, min(1, alpha * x + beta))``; the gradient is ``alpha`` strictly inside."""
    if data.dtype.kind != 'f':
        raise MXNetError('hard_sigmoid supports floating-point data only, got %s; cast it '
                         'with .astype("float32")' % data.dtype)
    alpha, beta = _float32(alpha), _float32(beta)
    linear = data * data.dtype.type(alpha) + data.dtype.type(beta)
    out = xp.clip(linear, 0, 1).astype(data.dtype, copy=False)
    inside = (linear > 0) & (linear < 1)
    return out, lambda dy: ((dy * inside * alpha).astype(dy.dtype, copy=False),)


@register('_contrib_quadratic')
def quadratic(xp, data, a=0.0, b=0.0, c=0.0):
    """``a * x^2 + b * x + c`` elementwise."""
    a, b, c = _float32(a), _float32(b), _float32(c)
    x = _computed_as(data)
    out = (a * x * x + b * x + c).astype(data.dtype, copy=False)
    return out, lambda dy: ((dy * (2 * a * x + b)).astype(dy.dtype, copy=False),)


@register('_contrib_gradientmultiplier')
def gradient_multiplier(xp, data, scalar=1.0):
    """``data`` unchanged, its gradient multiplied by ``scalar`` (a negative one reverses
    it, as domain-adversarial training does)."""
    scale = _float32(scalar)
    return data.copy(), lambda dy: ((dy * scale).astype(dy.dtype, copy=False),)


@register('_contrib_div_sqrt_dim')
def div_sqrt_dim(xp, data):
    """``data / sqrt(data.shape[-1])`` (attention's scaling)."""
    x = _computed_as(data)
    # held in data's dtype, as MXNet does: an integer input divides by int(sqrt(d))
    root = x.dtype.type(data.dtype.type(math.sqrt(data.shape[-1])))
    out = (x / root).astype(data.dtype, copy=False)
    return out, lambda dy: ((dy / root).astype(dy.dtype, copy=False),)


@register('_contrib_arange_like', differentiable=False)
def arange_like(xp, data, start=0.0, step=1.0, repeat=1, ctx=None, axis=None):
    """``start, start + step, ...`` (each value ``repeat`` times) in ``data``'s shape and
    dtype, or along ``axis`` of it (a 1-d result). ``ctx`` is accepted for MXNet's
    signature; the result lives with ``data``."""
    if axis is None:
        shape = data.shape
    else:
        if not -data.ndim <= axis < data.ndim:
            raise MXNetError('arange_like: axis %d is out of range for a %d-d input'
                             % (axis, data.ndim))
        shape = (data.shape[axis],)
    count = int(np.prod(shape))
    values = start + (xp.arange(count) // int(repeat)) * step
    return values.reshape(shape).astype(data.dtype)


@register('khatri_rao', num_inputs=None, differentiable=False)
def khatri_rao(xp, *args):
    """The column-wise Kronecker product of 2-d matrices of one column count: rows
    ``prod(rows)``; MXNet gives it no gradient."""
    if not args:
        raise MXNetError('khatri_rao needs at least one matrix')
    columns = args[0].shape[-1] if args[0].ndim else None
    for m in args:
        if m.ndim != 2 or m.shape[1] != columns:
            raise MXNetError('khatri_rao takes 2-d matrices of one column count, got shapes '
                             '%s' % ([a.shape for a in args],))
        if m.dtype != args[0].dtype:
            raise MXNetError('khatri_rao: matrices of one dtype, got %s'
                             % [str(a.dtype) for a in args])
    out = args[0]
    for m in args[1:]:
        out = (out[:, None, :] * m[None, :, :]).reshape(-1, columns)
    return out.copy() if len(args) == 1 else out


@register('softmax_cross_entropy', num_inputs=2)
def softmax_cross_entropy(xp, data, label):
    """The cross-entropy of ``softmax(data)`` with integer class labels, summed over the
    batch: one value, shape (1,). ``data`` is (batch, classes), ``label`` (batch,);
    probabilities are floored at 1e-8 as in MXNet, and labels outside the classes are
    clipped into them. No gradient for the label."""
    if data.ndim != 2 or label.ndim != 1 or label.shape[0] != data.shape[0]:
        raise MXNetError('softmax_cross_entropy takes 2-d data (batch, classes) and 1-d '
                         'labels (batch,), got %s and %s' % (data.shape, label.shape))
    classes = xp.clip(label.astype(np.int64), 0, data.shape[1] - 1)
    rows = xp.arange(data.shape[0])
    log_p, _ = log_softmax(xp, data)
    picked = xp.maximum(log_p[rows, classes], data.dtype.type(math.log(1e-8)))
    out = (-picked.sum()).reshape(1).astype(data.dtype, copy=False)

    def backward(dy):
        grad = xp.exp(log_p)
        grad[rows, classes] -= 1
        return grad * dy.reshape(()), None
    return out, backward


@register('SoftmaxActivation')
def softmax_activation(xp, data, mode='instance'):
    """Softmax over the last axis (``mode='instance'``) or over axis 1 of an input of at
    least 3 dimensions (``mode='channel'``)."""
    if mode not in ('instance', 'channel'):
        raise MXNetError("SoftmaxActivation: mode must be 'instance' or 'channel', got %r"
                         % (mode,))
    if mode == 'channel' and data.ndim < 3:
        raise MXNetError("SoftmaxActivation: mode='channel' needs an input of at least 3 "
                         'dimensions, got shape %s' % (data.shape,))
    out, softmax_backward = softmax(xp, data, axis=-1 if mode == 'instance' else 1)
    return out, lambda dy: softmax_backward(dy)[:1]  # softmax's length input is not ours
