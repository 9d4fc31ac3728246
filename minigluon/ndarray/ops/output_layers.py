"""MXNet 1.x's legacy output layers, the last node of a ``Module``'s symbol.

Each passes a prediction forward and, backward, gives the gradient of its loss with
respect to ``data``, ignoring the gradient that arrives from above (``Module`` calls
``backward()`` with no head gradients); ``label`` gets no gradient. The scalings are
MXNet's: the regression layers divide by the number of outputs of one sample,
``SoftmaxOutput`` and ``MakeLoss`` by what ``normalization`` names.
"""
import numpy as np

from ...base import MXNetError
from ..registry import register, shape_rule
from .elemwise import _sigmoid
from .softmax import softmax

_NORMALIZATIONS = ('null', 'batch', 'valid')


def _check_normalization(op_name, normalization):
    if normalization not in _NORMALIZATIONS:
        raise MXNetError("%s: normalization must be 'null', 'batch' or 'valid', got %r"
                         % (op_name, normalization))


# ---- regression: LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput ----

def _regression(op_name, xp, data, label, out, grad_scale, error_grad):
    """``out`` forward; backward ``error_grad(out - label) * grad_scale / m``, ``m`` the
    outputs per sample (the label's size over its first axis, as MXNet counts them)."""
    if label.size != data.size or (label.ndim and data.ndim and label.shape[0] != data.shape[0]):
        raise MXNetError('%s: label of shape %s does not fit data of shape %s: it needs the '
                         "data's size and batch size (e.g. %s)"
                         % (op_name, label.shape, data.shape, data.shape))
    per_sample = label.size // max(label.shape[0], 1) if label.ndim else 1
    scale = grad_scale / max(per_sample, 1)

    def backward(dy):
        error = out - label.reshape(out.shape).astype(out.dtype, copy=False)
        return (error_grad(xp, error) * scale).astype(data.dtype, copy=False), None
    return out, backward


def _plain(xp, error):
    return error


def _sign_of(xp, error):
    # MXNet's ``minus_sign``: a zero error counts as negative
    return xp.where(error > 0, 1, -1).astype(error.dtype)


@register('LinearRegressionOutput', num_inputs=2)
def linear_regression_output(xp, data, label, grad_scale=1.0):
    """``data`` unchanged; backward the squared loss's gradient
    ``grad_scale * (data - label) / m``, ``m`` the outputs per sample."""
    return _regression('LinearRegressionOutput', xp, data, label, data.copy(), grad_scale,
                       _plain)


@register('LogisticRegressionOutput', num_inputs=2)
def logistic_regression_output(xp, data, label, grad_scale=1.0):
    """``sigmoid(data)``; backward the binary cross-entropy's gradient
    ``grad_scale * (sigmoid(data) - label) / m``, ``m`` the outputs per sample."""
    return _regression('LogisticRegressionOutput', xp, data, label, _sigmoid(xp, data)[0],
                       grad_scale, _plain)


@register('MAERegressionOutput', num_inputs=2)
def mae_regression_output(xp, data, label, grad_scale=1.0):
    """``data`` unchanged; backward the absolute error's gradient
    ``grad_scale * sign(data - label) / m`` (-1 where they are equal), ``m`` the outputs
    per sample."""
    return _regression('MAERegressionOutput', xp, data, label, data.copy(), grad_scale,
                       _sign_of)


@shape_rule('LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput')
def _regression_shapes(data, label, **_):
    """The label has the data's shape, but ``(N,)`` for data ``(N, 1)``."""
    if label or not data or 0 in data:
        return data, label
    return data, (data[0],) if len(data) == 2 and data[1] == 1 else data


# ---- SoftmaxOutput ----

@register('SoftmaxOutput', num_inputs=2)
def softmax_output(xp, data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                   use_ignore=False, preserve_shape=False, normalization='null',
                   out_grad=False, smooth_alpha=0.0):
    """Softmax in the forward pass, the gradient of cross-entropy with ``label`` in the
    backward pass; the gradient arriving from above is ignored (``out_grad`` multiplies
    by the output itself, as MXNet 1.x does).

    The softmax runs over axis 1 with ``multi_output`` (label ``(N, *rest)``), over the
    last axis with ``preserve_shape``, else over the flattened ``(N, -1)`` rows. A label
    of the output's shape holds probabilities. ``normalization`` divides the gradient
    by nothing (``'null'``), the batch size (``'batch'``) or the count of labels that
    are not ``ignore_label`` (``'valid'``); with ``multi_output`` and no ``'valid'``, also
    by the positions per sample.
    """
    _check_normalization('SoftmaxOutput', normalization)
    shape = data.shape
    if multi_output:
        rows = xp.moveaxis(data.reshape(shape[0], shape[1], -1), 1, -1).reshape(-1, shape[1])
    elif preserve_shape:
        rows = data.reshape(-1, shape[-1])
    else:
        rows = data.reshape(shape[0], -1)
    label_size = rows.shape[0] if multi_output else data.size // max(shape[-1], 1)
    if label.shape != shape and label.size != label_size:
        raise MXNetError('SoftmaxOutput: label of shape %s does not fit data of shape %s: it '
                         'needs %d classes or the shape of the data (probabilities)'
                         % (label.shape, shape, label_size))
    prob = softmax(xp, rows)[0]
    if multi_output:
        out = xp.moveaxis(prob.reshape(shape[0], -1, shape[1]), -1, 1).reshape(shape)
    else:
        out = prob.reshape(shape)

    def backward(dy):
        if label.shape == shape:  # probabilities as the label
            grad = (out - label) * grad_scale
            return (grad * out if out_grad else grad).astype(data.dtype, copy=False), None
        every = label.reshape(-1).astype(np.int64)
        # data (N, d1, ..., C) takes a label (N, d1, ...), as MXNet infers it, of which
        # MXNet reads one class per flattened row, the first N; its counts see them all
        labels = every[:prob.shape[0]]
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
            scale /= max(int((every != int(ignore_label)).sum()), 1)
        elif multi_output:  # MXNet averages over the positions of each sample
            scale /= (len(labels) // shape[0]) * (shape[0] if normalization == 'batch' else 1)
        elif normalization == 'batch':
            scale /= len(every)
        if multi_output:
            grad = xp.moveaxis(grad.reshape(shape[0], -1, shape[1]), -1, 1)
        grad = grad.reshape(shape) * scale
        if out_grad:  # MXNet 1.x's backward is handed the output where the head gradient goes
            grad = grad * out
        return grad.astype(data.dtype, copy=False), None
    return out, backward


@shape_rule('SoftmaxOutput')
def _softmax_output_shapes(data, label, multi_output=False, **_):
    """One class per row: ``(N, positions)`` with ``multi_output`` (MXNet also takes
    ``(N, *rest)`` and ``(N, 1, *rest)``), else the data's shape without its last axis; a
    label of the data's own shape holds probabilities."""
    if label or len(data) < 2:
        return data, label
    if multi_output:
        return data, (data[0], int(np.prod(data[2:], dtype=np.int64)))
    return data, data[:-1]


# ---- SVMOutput ----

@register('SVMOutput', num_inputs=2)
def svm_output(xp, data, label, margin=1.0, regularization_coefficient=1.0, use_linear=False):
    """``data`` unchanged; backward the gradient of a one-vs-rest hinge loss on the
    scores of each row (the last axis): the label's class is pushed above ``margin``,
    the others below ``-margin``, squared (L2-SVM) or, with ``use_linear``, not (L1-SVM),
    scaled by ``regularization_coefficient``."""
    shape = data.shape
    if label.size * shape[-1] != data.size:
        raise MXNetError("SVMOutput: label of shape %s does not fit data of shape %s: it takes "
                         "the data's shape without its last axis, %s"
                         % (label.shape, shape, shape[:-1]))

    def backward(dy):
        scores = data.reshape(-1, shape[-1])
        labels = label.reshape(-1).astype(np.int64)
        is_label = xp.arange(shape[-1])[None, :] == labels[:, None]
        # the label's score wants to exceed margin, the others to stay under -margin
        violated = xp.where(is_label, margin > scores, margin > -scores)
        sign = xp.where(is_label, -1.0, 1.0).astype(data.dtype)
        if use_linear:
            grad = sign * violated
        else:
            grad = sign * (2 * (margin + xp.where(is_label, -scores, scores))) * violated
        grad = grad * regularization_coefficient
        return grad.reshape(shape).astype(data.dtype, copy=False), None
    return data.copy(), backward


@shape_rule('SVMOutput')
def _svm_output_shapes(data, label, **_):
    """One class per row: the data's shape without its last axis."""
    if label or not data:
        return data, label
    return data, data[:-1]


# ---- MakeLoss, make_loss ----

@register('MakeLoss')
def make_loss_layer(xp, data, grad_scale=1.0, valid_thresh=0.0, normalization='null'):
    """``data`` unchanged, as a loss: its backward gives ``data`` the gradient
    ``grad_scale`` everywhere, divided by nothing (``normalization='null'``), the rows
    of ``data`` seen as 2-D, all axes but the last together (``'batch'``), or the
    count of elements above ``valid_thresh`` (``'valid'``, at least 1)."""
    _check_normalization('MakeLoss', normalization)
    shape = data.shape

    def backward(dy):
        scale = grad_scale
        if normalization == 'valid':
            scale /= max(int((data > valid_thresh).sum()), 1)
        elif normalization == 'batch' and data.ndim:
            scale /= max(data.size // max(shape[-1], 1), 1)  # MXNet's FlatTo2D rows
        return (xp.full(shape, scale, dtype=data.dtype),)
    return data.copy(), backward


@register('make_loss')
def make_loss(xp, data):
    """``data`` unchanged, as a loss: its backward gives ``data`` a gradient of ones
    (``MakeLoss`` with its defaults)."""
    return make_loss_layer(xp, data)
