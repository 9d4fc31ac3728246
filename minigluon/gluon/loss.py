"""Losses: HybridBlocks taking ``(pred, label[, sample_weight])``, one value per sample.

Each loss averages over every axis except ``batch_axis``. ``weight`` scales the loss
globally and ``sample_weight`` (broadcast against the unreduced loss) per element.
Log-probabilities come from ``log_softmax`` and sigmoid losses use
``max(x, 0) - x * z + log(1 + exp(-|x|))``, so large logits neither overflow nor
produce NaN.
"""
import numbers

import numpy as np

from ..base import MXNetError
from .block import HybridBlock

__all__ = ['Loss', 'L1Loss', 'L2Loss', 'SoftmaxCrossEntropyLoss', 'SoftmaxCELoss',
           'SigmoidBinaryCrossEntropyLoss', 'SigmoidBCELoss', 'KLDivLoss', 'HuberLoss',
           'HingeLoss', 'SquaredHingeLoss', 'LogisticLoss']


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise MXNetError('loss weight must be a number, got %s' % type(weight).__name__)
        loss = loss * weight
    return loss


def _reshape_like(label, pred, loss_name):
    if label.shape == pred.shape:
        return label
    if label.size != pred.size:
        raise MXNetError('%s: label of shape %s does not match pred of shape %s; both need the '
                         'same number of elements' % (loss_name, label.shape, pred.shape))
    return label.reshape(pred.shape)


class Loss(HybridBlock):
    """Base class of losses.

    Parameters
    ----------
    weight : float or None
        Global scalar weight of the loss.
    batch_axis : int, default 0
        The axis that indexes samples; every other axis is averaged.
    """

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def _finish(self, F, loss, sample_weight, weight=None):
        loss = _apply_weighting(F, loss, self._weight if weight is None else weight,
                                sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)

    def __repr__(self):
        return '%s(batch_axis=%s, w=%s)' % (type(self).__name__, self._batch_axis, self._weight)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class L2Loss(Loss):
    """``weight / 2 * (pred - label) ** 2``, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred, 'L2Loss')
        loss = F.square(label - pred)
        half = 0.5 if self._weight is None else self._weight / 2
        return self._finish(F, loss, sample_weight, weight=half)


class L1Loss(Loss):
    """``|pred - label|``, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred, 'L1Loss')
        return self._finish(F, F.abs(label - pred), sample_weight)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``sigmoid(pred)`` against labels in [0, 1].

    Parameters
    ----------
    from_sigmoid : bool, default False
        Whether ``pred`` already holds probabilities (else logits, handled stably).

    Inputs: ``pred``, ``label`` of the same size, optional ``sample_weight`` and
    ``pos_weight`` (a weight of the positive term, broadcast against ``label``).
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(label, pred, type(self).__name__)
        if not self._from_sigmoid:
            # -z*log(s(x)) - (1-z)*log(1-s(x)) = max(x, 0) - x*z + log(1 + exp(-|x|))
            log1p_exp = F.softrelu(-F.abs(pred))
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + log1p_exp
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (log1p_exp + F.relu(-pred))
        else:
            eps = 1e-12
            pos = F.log(pred + eps) * label
            if pos_weight is not None:
                pos = F.broadcast_mul(pos, pos_weight)
            loss = -(pos + F.log(1. - pred + eps) * (1. - label))
        return self._finish(F, loss, sample_weight)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred)`` along ``axis`` against class labels.

    Parameters
    ----------
    axis : int, default -1
        The class axis.
    sparse_label : bool, default True
        Labels are class indices (shape of ``pred`` without ``axis``), else a
        distribution of the shape of ``pred``.
    from_logits : bool, default False
        Whether ``pred`` already holds log-probabilities.
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            expected = pred.shape[:self._axis % pred.ndim] + pred.shape[self._axis % pred.ndim + 1:]
            if label.size != int(np.prod(expected)):
                raise MXNetError('SoftmaxCrossEntropyLoss: sparse labels of shape %s do not fit '
                                 'pred of shape %s (expected %s class indices); pass '
                                 'sparse_label=False for one-hot or soft labels'
                                 % (label.shape, pred.shape, expected))
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(label, pred, type(self).__name__)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._finish(F, loss, sample_weight)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """Kullback-Leibler divergence ``label * (log(label) - pred)``.

    Parameters
    ----------
    from_logits : bool, default True
        Whether ``pred`` holds log-probabilities; else ``log_softmax`` is applied.
    axis : int, default -1
        The class axis, used when ``from_logits`` is False.
    """

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        return self._finish(F, loss, sample_weight)


class HuberLoss(Loss):
    """Smooth L1: ``0.5 / rho * d**2`` where ``d = |pred - label| <= rho``, else ``d - rho / 2``."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred, 'HuberLoss')
        diff = F.abs(label - pred)
        loss = F.where(diff > self._rho, diff - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(diff))
        return self._finish(F, loss, sample_weight)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred, 'HingeLoss')
        return self._finish(F, F.relu(self._margin - pred * label), sample_weight)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label) ** 2`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred, 'SquaredHingeLoss')
        return self._finish(F, F.square(F.relu(self._margin - pred * label)), sample_weight)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``, computed stably.

    Parameters
    ----------
    label_format : {'signed', 'binary'}, default 'signed'
        Labels in {-1, 1} or in {0, 1}.
    """

    def __init__(self, weight=None, batch_axis=0, label_format='signed', **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ('signed', 'binary'):
            raise MXNetError("LogisticLoss: label_format must be 'signed' or 'binary', got %r"
                             % (label_format,))
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(label, pred, 'LogisticLoss')
        if self._label_format == 'signed':
            label = (label + 1.0) / 2.0  # to {0, 1}
        loss = F.relu(pred) - pred * label + F.softrelu(-F.abs(pred))
        return self._finish(F, loss, sample_weight)
