"""Losses: HybridBlocks taking ``(pred, label[, sample_weight])``, one value per sample.

Most losses average over every axis except ``batch_axis`` (KLDivLoss sums, as MXNet
1.9 does; PoissonNLLLoss averages everything). ``weight`` scales the loss globally and
``sample_weight`` (broadcast against the unreduced loss) per element. Log-probabilities
come from ``log_softmax`` and sigmoid losses use ``max(x, 0) - x * z + log(1 + exp(-|x|))``,
so large logits neither overflow nor produce NaN.
"""
import math
import numbers

import numpy as np

from ..base import MXNetError
from ..symbol import Symbol
from .block import HybridBlock

__all__ = ['Loss', 'L1Loss', 'L2Loss', 'SoftmaxCrossEntropyLoss', 'SoftmaxCELoss',
           'SigmoidBinaryCrossEntropyLoss', 'SigmoidBCELoss', 'KLDivLoss', 'CTCLoss',
           'HuberLoss', 'HingeLoss', 'SquaredHingeLoss', 'LogisticLoss', 'TripletLoss',
           'PoissonNLLLoss', 'CosineEmbeddingLoss', 'SDMLLoss']


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise MXNetError('loss weight must be a number, got %s' % type(weight).__name__)
        loss = loss * weight
    return loss


def _reshape_like(label, pred, loss_name):
    if isinstance(label, Symbol):  # traced: shapes are known only when the graph runs
        return label.reshape_like(pred)
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

    def _finish(self, F, loss, sample_weight, weight=None, reduce='mean'):
        loss = _apply_weighting(F, loss, self._weight if weight is None else weight,
                                sample_weight)
        return getattr(F, reduce)(loss, axis=self._batch_axis, exclude=True)

    def __repr__(self):
        return '%s(batch_axis=%s, w=%s)' % (type(self).__name__, self._batch_axis, self._weight)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Compute the loss; every subclass implements it.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        x : NDArray
            The predictions.
        *args : NDArray
            The targets and any further inputs of the loss (``label``, ``sample_weight``, ...).

        Returns
        -------
        NDArray
            The loss, usually one value per sample.
        """
        raise NotImplementedError


class L2Loss(Loss):
    """``weight / 2 * (pred - label) ** 2``, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        """Half the squared error, scaled by ``weight``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, the same size as ``pred`` (reshaped to its shape).
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
        label = _reshape_like(label, pred, 'L2Loss')
        loss = F.square(label - pred)
        half = 0.5 if self._weight is None else self._weight / 2
        return self._finish(F, loss, sample_weight, weight=half)


class L1Loss(Loss):
    """``|pred - label|``, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        """The absolute error, scaled by ``weight`` when given.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, the same size as ``pred`` (reshaped to its shape).
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
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
        """The binary cross-entropy of ``pred`` (logits, or probabilities with
        ``from_sigmoid``) against ``label``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            Logits, or probabilities in [0, 1] when ``from_sigmoid`` is True.
        label : NDArray
            Targets in [0, 1], the size of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.
        pos_weight : NDArray, optional
            Weight of the positive (``label``) term, broadcast against ``label``.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but
            ``batch_axis``.
        """
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
        """The cross-entropy of ``log_softmax(pred)`` (or ``pred`` itself with ``from_logits``)
        against class indices or distributions.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, class indices with ``pred``'s shape less ``axis``
            (``sparse_label``), else distributions the size of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label and not isinstance(pred, Symbol):
            expected = pred.shape[:self._axis % pred.ndim] + pred.shape[self._axis % pred.ndim + 1:]
            if label.size != int(np.prod(expected)):
                raise MXNetError('SoftmaxCrossEntropyLoss: sparse labels of shape %s do not fit '
                                 'pred of shape %s (expected %s class indices); pass '
                                 'sparse_label=False for one-hot or soft labels'
                                 % (label.shape, pred.shape, expected))
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(label, pred, type(self).__name__)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._finish(F, loss, sample_weight)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """Kullback-Leibler divergence ``label * (log(label) - pred)``, summed over every axis
    but ``batch_axis`` (as in MXNet 1.9; 1.8 and earlier averaged).

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
        """The KL divergence ``label * (log(label) - pred)`` of the log-probabilities ``pred``
        (``log_softmax`` is applied first unless ``from_logits``).

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, a probability distribution the shape of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, summed over every axis but ``batch_axis``.
        """
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        return self._finish(F, loss, sample_weight, reduce='sum')


class HuberLoss(Loss):
    """Smooth L1: ``0.5 / rho * d**2`` where ``d = |pred - label| <= rho``, else ``d - rho / 2``."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        """The smooth L1 error, quadratic below ``rho`` and linear above.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, the same size as ``pred`` (reshaped to its shape).
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
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
        """``max(0, margin - pred * label)``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, in {-1, 1}, the size of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
        label = _reshape_like(label, pred, 'HingeLoss')
        return self._finish(F, F.relu(self._margin - pred * label), sample_weight)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label) ** 2`` for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        """``max(0, margin - pred * label) ** 2``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, in {-1, 1}, the size of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
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
            raise ValueError("LogisticLoss: label_format must be 'signed' or 'binary', got %r"
                             % (label_format,))
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        """``log(1 + exp(-pred * label))``, computed stably.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The predictions.
        label : NDArray
            The targets, in {-1, 1} (``label_format='signed'``) or {0, 1}
            ('binary'), the size of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights, broadcast against the unreduced loss.

        Returns
        -------
        NDArray
            Shape ``(N,)``: the loss of each sample, averaged over every axis but ``batch_axis``.
        """
        label = _reshape_like(label, pred, 'LogisticLoss')
        if self._label_format == 'signed':
            label = (label + 1.0) / 2.0  # to {0, 1}
        loss = F.relu(pred) - pred * label + F.softrelu(-F.abs(pred))
        return self._finish(F, loss, sample_weight)


class CTCLoss(Loss):
    """Connectionist temporal classification loss of unnormalised scores against label
    sequences of varying lengths.

    Parameters
    ----------
    layout : {'NTC', 'TNC'}, default 'NTC'
        Layout of ``pred``: batch, time steps and classes.
    label_layout : {'NT', 'TN'}, default 'NT'
        Layout of ``label``.
    weight : float or None

    Inputs: ``pred`` (scores before softmax; class ``C - 1`` is the blank, so ``C`` is
    the alphabet size plus one), ``label`` (class indices, each row padded with -1),
    optional ``pred_lengths`` and ``label_lengths`` ``(N,)`` (then padding values are
    ignored) and ``sample_weight``. Output: ``(N,)``, ``-log p(label | pred)``.
    """

    def __init__(self, layout='NTC', label_layout='NT', weight=None, **kwargs):
        if layout not in ('NTC', 'TNC'):
            raise ValueError("CTCLoss: layout must be 'NTC' or 'TNC', got %r" % (layout,))
        if label_layout not in ('NT', 'TN'):
            raise ValueError("CTCLoss: label_layout must be 'NT' or 'TN', got %r"
                             % (label_layout,))
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find('N'), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        """The CTC loss ``-log p(label | pred)`` of each sequence.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            Unnormalised class scores in ``layout``; the last class is the blank.
        label : NDArray
            Class indices in ``label_layout``, each sequence padded with -1.
        pred_lengths : NDArray, optional
            ``(N,)`` valid time steps of each ``pred`` sequence.
        label_lengths : NDArray, optional
            ``(N,)`` length of each label sequence.
        sample_weight : NDArray, optional
            Per-sample weights.

        Returns
        -------
        NDArray
            Shape ``(N,)``.
        """
        if self._layout == 'NTC':
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        loss = F.CTCLoss(pred, label, pred_lengths, label_lengths,
                         use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label='last')
        return _apply_weighting(F, loss, self._weight, sample_weight)


class TripletLoss(Loss):
    """``max(|positive - pred|^2 - |negative - pred|^2 + margin, 0)`` per sample, the
    squared distances summed over every axis but ``batch_axis``.

    Inputs: ``pred``, ``positive``, ``negative`` of the same size. Output: ``(N,)``.
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        """The triplet margin loss of anchors ``pred`` against ``positive`` and ``negative``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred, positive, negative : NDArray
            Anchors, positive and negative examples, all the size of ``pred``.

        Returns
        -------
        NDArray
            Shape ``(N,)``: ``max(|positive - pred|^2 - |negative - pred|^2 + margin, 0)``.
        """
        positive = _reshape_like(positive, pred, 'TripletLoss')
        negative = _reshape_like(negative, pred, 'TripletLoss')
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        return _apply_weighting(F, F.relu(loss + self._margin), self._weight)


class PoissonNLLLoss(Loss):
    """Negative log likelihood of ``target`` under a Poisson distribution of mean ``pred``:
    ``pred - target * log(pred)``, averaged over every element (a single value).

    Parameters
    ----------
    weight : float or None
    from_logits : bool, default True
        ``pred`` is the log of the mean: the loss is ``exp(pred) - target * pred``.
    batch_axis : int, default 0
    compute_full : bool, default False
        Add Stirling's approximation of ``log(target!)``,
        ``target * log(target) - target + 0.5 * log(2 * pi * target)``, where target > 1.

    Inputs: ``pred``, ``target`` of the same size, optional ``sample_weight`` and
    ``epsilon`` (default 1e-8, added to ``pred`` inside the log). Output: shape (1,).
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        """The Poisson negative log likelihood of ``target`` given the mean ``pred``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        pred : NDArray
            The log of the mean (``from_logits``), else the mean.
        target : NDArray
            Observed counts, the size of ``pred``.
        sample_weight : NDArray, optional
            Per-element weights.
        epsilon : float, default 1e-8
            Added to ``pred`` inside the log when ``from_logits`` is False.

        Returns
        -------
        NDArray
            Shape ``(1,)``: the mean over every element.
        """
        target = _reshape_like(target, pred, 'PoissonNLLLoss')
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # only where target > 1, and never log(0): MXNet's formula gives NaN at 0
            above_one = target > 1
            safe = F.where(above_one, target, F.ones_like(target))
            stirling = safe * F.log(safe) - safe + 0.5 * F.log(2 * math.pi * safe)
            loss = loss + stirling * above_one
        return F.mean(_apply_weighting(F, loss, self._weight, sample_weight))


class CosineEmbeddingLoss(Loss):
    """``1 - cos(input1, input2)`` for pairs labelled 1, ``max(0, cos - margin)`` for pairs
    labelled -1, the cosine taken along the last axis.

    Parameters
    ----------
    weight : float or None
    batch_axis : int, default 0
    margin : float, default 0

    Inputs: ``input1``, ``input2`` of the same size, ``label`` of 1 or -1 per pair,
    optional ``sample_weight``. Output: ``(N, 1)``, as MXNet returns it.
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        """The cosine embedding loss of pairs ``(input1, input2)``.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        input1, input2 : NDArray
            The pairs' embeddings, of the same size; the cosine is taken along the last axis.
        label : NDArray
            1 for similar pairs, -1 for dissimilar ones, one per pair.
        sample_weight : NDArray, optional
            Per-pair weights.

        Returns
        -------
        NDArray
            Shape ``(N, 1)``: ``1 - cos`` for similar pairs, ``max(0, cos - margin)`` for
            dissimilar ones.
        """
        input1 = _reshape_like(input1, input2, 'CosineEmbeddingLoss')
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        similar = (1 - cos_sim) * (label == 1)
        dissimilar = F.relu((label == -1) * (cos_sim - self._margin))
        return _apply_weighting(F, similar + dissimilar, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F, x, y, axis=-1):
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F.maximum(x_norm * y_norm, 1e-12)


class SDMLLoss(Loss):
    """Batchwise smoothed deep metric learning loss (Bonadiman et al., 2019).

    ``x1[i]`` and ``x2[i]`` are a positive pair and every other row of the batch a
    negative: the softmax of the negative squared distances from ``x1[i]`` to all of
    ``x2`` is fitted (KL divergence) to the identity smoothed by
    ``smoothing_parameter``, spread over the other ``batch_size - 1`` rows.

    Parameters
    ----------
    smoothing_parameter : float, default 0.3
        Probability mass given to the negatives; must be below 1.
    weight : float, default 1
    batch_axis : int, default 0

    Inputs: ``x1``, ``x2`` of shape ``(batch_size, dim)``, batch_size >= 2. Output:
    ``(batch_size,)``.
    """

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if not 0 <= smoothing_parameter < 1:
            raise ValueError('SDMLLoss: smoothing_parameter must be in [0, 1), got %r'
                             % (smoothing_parameter,))
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_labels(self, F, batch_size, like):
        gold = F.eye(batch_size, ctx=like.context, dtype=like.dtype)
        return gold * (1 - self.smoothing_parameter) \
            + (1 - gold) * self.smoothing_parameter / (batch_size - 1)

    def hybrid_forward(self, F, x1, x2):
        """The smoothed deep metric learning loss of a batch of positive pairs.

        Parameters
        ----------
        F : module
            The op namespace, ``minigluon.ndarray``.
        x1, x2 : NDArray
            ``(batch_size, dim)`` embeddings; row ``i`` of each forms a positive pair and the
            other rows are its negatives. ``batch_size`` must be at least 2.

        Returns
        -------
        NDArray
            Shape ``(batch_size,)``.

        Raises
        ------
        MXNetError
            If the shapes differ, are not 2-D, or the batch has fewer than 2 rows.
        """
        if x1.shape != x2.shape or x1.ndim != 2 or x1.shape[0] < 2:
            raise MXNetError('SDMLLoss: x1 %s and x2 %s must both be (batch_size, dim) with '
                             'batch_size >= 2' % (x1.shape, x2.shape))
        distances = F.sum(F.square(x1.expand_dims(1) - x2.expand_dims(0)), axis=2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        loss = self.kl_loss(log_probabilities, self._compute_labels(F, x1.shape[0], x1))
        return _apply_weighting(F, loss, self._weight)
