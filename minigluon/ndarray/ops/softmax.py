"""Softmax and log-softmax along an axis, stable for large inputs; MXNet's legacy
``SoftmaxOutput`` loss layer."""
import numpy as np

from ...base import MXNetError
from ..registry import register, shape_rule


def _scaled(data, temperature):
    return data if temperature is None or temperature == 1 else data / temperature


@register('softmax')
def softmax(xp, data, axis=-1, temperature=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (optionally ``x / temperature``)."""
    x = _scaled(data, temperature)
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)

    def backward(dy):
        g = y * (dy - (dy * y).sum(axis=axis, keepdims=True))
        return (g if temperature is None or temperature == 1 else g / temperature,)
    return y, backward


@register('log_softmax')
def log_softmax(xp, data, axis=-1, temperature=None):
    """``log(softmax(x))`` along ``axis``, computed as ``x - logsumexp(x)``."""
    x = _scaled(data, temperature)
    shifted = x - x.max(axis=axis, keepdims=True)
    y = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(dy):
        g = dy - xp.exp(y) * dy.sum(axis=axis, keepdims=True)
        return (g if temperature is None or temperature == 1 else g / temperature,)
    return y, backward


@register('softmin')
def softmin(xp, data, axis=-1, temperature=None):
    """``softmax(-x)`` along ``axis``: the largest weight on the smallest value."""
    y, softmax_backward = softmax(xp, -data, axis, temperature)
    return y, lambda dy: (-softmax_backward(dy)[0],)


@register('SoftmaxOutput', num_inputs=2)
def softmax_output(xp, data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                   use_ignore=False, preserve_shape=False, normalization='null',
                   out_grad=False, smooth_alpha=0.0):
    """Softmax in the forward pass, the gradient of cross-entropy with ``label`` in the
    backward pass (MXNet's legacy output layer: the gradient arriving from above is
    ignored unless ``out_grad``).

    The softmax runs over axis 1 with ``multi_output`` (label ``(N, *rest)``), over the
    last axis with ``preserve_shape``, else over the flattened ``(N, -1)`` rows. A label
    of the output's shape holds probabilities. ``normalization`` divides the gradient
    by nothing (``'null'``), the batch size (``'batch'``) or the count of labels that
    are not ``ignore_label`` (``'valid'``).
    """
    if normalization not in ('null', 'batch', 'valid'):
        raise MXNetError("SoftmaxOutput: normalization must be 'null', 'batch' or 'valid', "
                         "got %r" % (normalization,))
    shape = data.shape
    if multi_output:
        rows = xp.moveaxis(data.reshape(shape[0], shape[1], -1), 1, -1).reshape(-1, shape[1])
    elif preserve_shape:
        rows = data.reshape(-1, shape[-1])
    else:
        rows = data.reshape(shape[0], -1)
    e = xp.exp(rows - rows.max(axis=-1, keepdims=True))
    prob = e / e.sum(axis=-1, keepdims=True)
    if multi_output:
        out = xp.moveaxis(prob.reshape(shape[0], -1, shape[1]), -1, 1).reshape(shape)
    else:
        out = prob.reshape(shape)

    def backward(dy):
        if label.shape == shape:  # probabilities as the label
            grad = (out - label) * grad_scale
            return (grad * dy if out_grad else grad).astype(data.dtype, copy=False), None
        labels = label.reshape(-1).astype(np.int64)
        classes = prob.shape[-1]
        target = xp.zeros_like(prob)
        valid = (labels >= 0) & (labels < classes)
        target[xp.arange(len(labels))[valid], labels[valid]] = 1
        if smooth_alpha and not multi_output:
            target = target * (1 - smooth_alpha) + (1 - target) * (smooth_alpha / (classes - 1))
        grad = prob - target
        ignored = labels == int(ignore_label)
        if use_ignore:
            grad[ignored] = 0
        scale = grad_scale
        if normalization == 'valid':
            scale /= max(int(len(labels) - ignored.sum()), 1)
        elif multi_output:  # MXNet averages over the positions of each sample
            scale /= (len(labels) // shape[0]) * (shape[0] if normalization == 'batch' else 1)
        elif normalization == 'batch':
            scale /= len(labels)
        if multi_output:
            grad = xp.moveaxis(grad.reshape(shape[0], -1, shape[1]), -1, 1)
        grad = grad.reshape(shape) * scale
        if out_grad:
            grad = grad * dy
        return grad.astype(data.dtype, copy=False), None
    return out, backward


@shape_rule('SoftmaxOutput')
def _softmax_output_shapes(data, label, multi_output=False, **_):
    """The label holds one class per row: ``(N, *rest)`` with ``multi_output``, else the
    data's shape without its last axis (or the data's own shape, for probabilities)."""
    if label or len(data) < 2:
        return data, label
    return data, (data[:1] + data[2:]) if multi_output else data[:-1]
