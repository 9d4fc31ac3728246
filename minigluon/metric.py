"""``mx.metric``: online evaluation metrics with MXNet 1.x's ``EvalMetric`` API.

Every metric accumulates ``sum_metric`` / ``num_inst`` (local, cleared by
``reset_local``) and ``global_sum_metric`` / ``global_num_inst`` (cleared only by
``reset``); ``get()`` returns ``(name, sum_metric / num_inst)``, or ``(name, nan)``
before any sample. ``update(labels, preds)`` takes one array or a list of arrays (one
per device, as ``split_and_load`` gives); NDArrays are read with ``.asnumpy()`` and
the maths runs in numpy.
"""
import json
import math
from collections import OrderedDict

import numpy

from . import backend
from .registry import Registry

_REGISTRY = Registry('metric')


# ---- inputs ----------------------------------------------------------------------------
def _as_list(arrays):
    """One array -> ``[array]``; a list or tuple of arrays -> a list."""
    return list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]


def _to_numpy(array):
    """A numpy array from an NDArray, a numpy / CuPy array or nested Python numbers."""
    if hasattr(array, 'asnumpy'):
        return array.asnumpy()
    return backend.to_host(array)


def _pairs(labels, preds, metric):
    """(label, pred) numpy pairs, one per device; error if the counts differ."""
    labels, preds = _as_list(labels), _as_list(preds)
    if len(labels) != len(preds):
        raise ValueError('%s: got %d label arrays but %d prediction arrays; pass one label '
                         'array per prediction array (e.g. one of each per device)'
                         % (metric, len(labels), len(preds)))
    return [(_to_numpy(l), _to_numpy(p)) for l, p in zip(labels, preds)]


def _mismatch(metric, label, pred, expected):
    return ValueError('%s: labels of shape %s do not match predictions of shape %s; %s'
                      % (metric, tuple(label.shape), tuple(pred.shape), expected))


def _regression_pair(metric, label, pred):
    """float64 (batch, k) views of label and pred; a 1-D array counts as (batch, 1)."""
    label2 = label.reshape(-1, 1) if label.ndim == 1 else label
    pred2 = pred.reshape(-1, 1) if pred.ndim == 1 else pred
    if label2.shape != pred2.shape:
        raise _mismatch(metric, label, pred, 'expected the same shape ((batch,) and '
                        '(batch, 1) count as equal)')
    return label2.astype(numpy.float64), pred2.astype(numpy.float64)


def _class_scores(metric, label, pred):
    """Flat int64 labels and (batch, classes) scores, checked against each other."""
    label = label.ravel().astype(numpy.int64)
    if pred.ndim != 2 or pred.shape[0] != label.size:
        raise ValueError('%s: predictions must be class scores of shape (batch, classes) with '
                         'one label per row; got labels of shape %s and predictions of shape %s'
                         % (metric, label.shape, pred.shape))
    return label, pred


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that labels and predictions agree, as MXNet's helper of that name does.

    Parameters
    ----------
    labels, preds : array or list of arrays
    wrap : bool, default False
        Wrap a single array into a one-element list (before comparing).
    shape : bool, default False
        Compare ``.shape`` if True, otherwise ``len()``.

    Returns
    -------
    labels, preds
        The inputs, wrapped into lists if ``wrap``.
    """
    if wrap:
        labels, preds = _as_list(labels), _as_list(preds)
    seen = (labels.shape, preds.shape) if shape else (len(labels), len(preds))
    if seen[0] != seen[1]:
        raise ValueError('%s of labels %s does not match %s of predictions %s'
                         % ('shape' if shape else 'length', seen[0],
                            'shape' if shape else 'length', seen[1]))
    return labels, preds


# ---- base class and registry -----------------------------------------------------------
class EvalMetric:
    """Base class of the evaluation metrics.

    Subclasses implement ``update``; built-in metrics keep global statistics next to
    the local ones (``has_global_stats=True``), other subclasses answer
    ``get_global`` with their local value, as in MXNet.

    Parameters
    ----------
    name : str
        Name of the metric, as ``get()`` reports it.
    output_names : list of str, optional
        Predictions ``update_dict`` uses (default: all, in order).
    label_names : list of str, optional
        Labels ``update_dict`` uses (default: all, in order).
    **kwargs
        Constructor arguments of the subclass, kept for ``get_config``.
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop('has_global_stats', False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return 'EvalMetric: {}'.format(dict(self.get_name_value()))

    def get_config(self):
        """Constructor arguments as a dict; ``mx.metric.create(**config)`` rebuilds it."""
        config = dict(self._kwargs)
        config.update({'metric': type(self).__name__, 'name': self.name,
                       'output_names': self.output_names, 'label_names': self.label_names})
        return config

    def update_dict(self, label, pred):
        """Update with name -> array mappings, selected by ``label_names`` / ``output_names``.

        Parameters
        ----------
        label : dict of str to NDArray
        pred : dict of str to NDArray
        """
        pred = ([pred[n] for n in self.output_names] if self.output_names is not None
                else list(pred.values()))
        label = ([label[n] for n in self.label_names] if self.label_names is not None
                 else list(label.values()))
        self.update(label, pred)

    def update(self, labels, preds):
        """Add a batch to the metric.

        Parameters
        ----------
        labels : NDArray or numpy array, or a list of them (one per device)
        preds : NDArray or numpy array, or a list of them (one per device)
        """
        raise NotImplementedError('%s must override update' % type(self).__name__)

    def _add(self, value, num):
        """Accumulate ``value`` over ``num`` instances into the local and global sums."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += num
        self.global_num_inst += num

    def reset(self):
        """Clear the local and the global statistics."""
        self.reset_local()
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local statistics only (e.g. at the end of an epoch)."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _value(self, sum_metric, num_inst):
        return float('nan') if num_inst == 0 else float(sum_metric / num_inst)

    def get(self):
        """The local result.

        Returns
        -------
        (str, float)
            The name and ``sum_metric / num_inst`` (``nan`` before any sample).
        """
        return self.name, self._value(self.sum_metric, self.num_inst)

    def get_global(self):
        """The result since the last ``reset()``; see ``get``."""
        if not self._has_global_stats:
            return self.get()
        return self.name, self._value(self.global_sum_metric, self.global_num_inst)

    def get_name_value(self):
        """The local result as a list of ``(name, value)`` pairs."""
        return _zip_result(*self.get())

    def get_global_name_value(self):
        """The global result as a list of ``(name, value)`` pairs."""
        return _zip_result(*self.get_global())


def _zip_result(name, value):
    if not isinstance(name, list):
        name, value = [name], [value]
    return list(zip(name, value))


def register(klass):
    """Class decorator: make a metric creatable by its lower-cased class name.

    Examples
    --------
    >>> @mx.metric.register
    ... class MyAcc(mx.metric.EvalMetric): ...
    >>> mx.metric.create('myacc')
    """
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise ValueError('register expects an EvalMetric subclass, got %r' % (klass,))
    return _REGISTRY.register(klass)


def alias(*aliases):
    """Class decorator: more names under which ``create`` finds the metric."""
    return lambda klass: _REGISTRY.register(klass, *aliases)


def create(metric, *args, **kwargs):
    """Create a metric from a name, an instance, a class, a function, a config or a list.

    Parameters
    ----------
    metric : str, EvalMetric, callable, dict or list
        A registered name (``'acc'``, ``'ce'``, ``'rmse'``, ...); an ``EvalMetric``
        (returned as is); a function ``feval(label, pred)`` (wrapped in
        ``CustomMetric``); a ``get_config()`` dict, or that dict as a JSON string
        (``'{"metric": "Accuracy", "axis": 0, ...}'``, or ``'["acc", {"axis": 0}]'``);
        or a list of any of these (a ``CompositeEvalMetric``).
    *args, **kwargs
        Passed to the metric's constructor (to every one, for a list).

    Returns
    -------
    EvalMetric
    """
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise ValueError('%r is already a metric instance; extra arguments %r %r cannot '
                             'be applied' % (metric, args, kwargs))
        return metric
    if isinstance(metric, dict):
        if 'metric' not in metric:
            raise ValueError("a metric config needs a 'metric' key naming the metric (as "
                             "get_config() gives); got keys %s" % sorted(metric))
        return create(*args, **dict(metric, **kwargs))
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, str) and metric.startswith(('{', '[')):
        return create(_parse_config(metric, args, kwargs))
    if isinstance(metric, str):
        klass = _REGISTRY.get(metric)
        if klass is None:
            raise ValueError('unknown metric %r; known: %s (register new ones with '
                             'mx.metric.register)' % (metric, ', '.join(_REGISTRY.names())))
        return klass(*args, **kwargs)
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    raise ValueError('cannot create a metric from %r; pass a name, an EvalMetric, a function '
                     'feval(label, pred) or a list of these' % (metric,))


def _parse_config(text, args, kwargs):
    """A metric config dict from its JSON: a ``get_config()`` object, or ``[name, kwargs]``."""
    if args or kwargs:
        raise ValueError('a metric given as JSON takes no other arguments; put them in the '
                         'JSON, got %r %r' % (args, kwargs))
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ValueError('cannot read metric config %r: %s' % (text, exc)) from None
    if isinstance(config, list):
        if len(config) != 2 or not isinstance(config[0], str) or \
                not isinstance(config[1], dict):
            raise ValueError('a metric config list must be ["name", {kwargs}], got %r' % text)
        config = dict(config[1], metric=config[0])
    if not isinstance(config, dict):
        raise ValueError('a metric config must be a JSON object, got %r' % text)
    return config


@register
@alias('composite')
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values.

    Parameters
    ----------
    metrics : list, optional
        Child metrics, or anything ``create`` accepts for each.
    name : str, default 'composite'
    output_names, label_names : list of str, optional
        Filter the mappings given to ``update_dict`` before the children see them.
    """

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        self.metrics = [create(m) for m in metrics or []]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric):
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError('metric index %d is out of range: this composite holds %d metrics'
                             % (index, len(self.metrics))) from None

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        super().reset()
        for metric in self.metrics:
            metric.reset()

    def reset_local(self):
        super().reset_local()
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, which):
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, which)()
            if isinstance(name, str):
                name, value = [name], [value]
            names.extend(name)
            values.extend(value)
        return names, values

    def get(self):
        """Lists of the children's names and local values."""
        return self._collect('get')

    def get_global(self):
        """Lists of the children's names and global values."""
        return self._collect('get_global')

    def get_config(self):
        config = super().get_config()
        config['metrics'] = [m.get_config() for m in self.metrics]
        return config


# ---- classification --------------------------------------------------------------------
@register
@alias('acc')
class Accuracy(EvalMetric):
    """Fraction of predictions equal to the label.

    Predictions whose shape differs from the labels' are class scores and are
    argmax'ed over ``axis`` first, as in MXNet.

    Parameters
    ----------
    axis : int, default 1
        The class axis of score predictions.
    name : str, default 'accuracy'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, axis=1, name='accuracy', output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds, 'Accuracy'):
            pred_label = pred
            if pred.shape != label.shape:
                if not -pred.ndim <= self.axis < pred.ndim:
                    raise _mismatch('Accuracy', label, pred, 'scores need a class axis %d to '
                                    'argmax over' % self.axis)
                pred_label = numpy.argmax(pred, axis=self.axis)
            if pred_label.size != label.size:
                raise _mismatch('Accuracy', label, pred, 'expected one prediction per label')
            correct = pred_label.astype(numpy.int32).ravel() == label.astype(numpy.int32).ravel()
            self._add(int(correct.sum()), label.size)


@register
@alias('top_k_accuracy', 'top_k_acc')
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest scores.

    Parameters
    ----------
    top_k : int, default 1
        How many of the best-scored classes count as a hit (1 = ``Accuracy``).
    name : str, default 'top_k_accuracy'
        ``'_<top_k>'`` is appended, as in MXNet.
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None, label_names=None):
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError('top_k must be an integer >= 1, got %r' % (top_k,))
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self._base_name = self.name
        self.top_k = top_k
        self.name += '_%d' % top_k

    def get_config(self):
        config = super().get_config()
        config['name'] = self._base_name  # the constructor appends the suffix again
        return config

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds, 'TopKAccuracy'):
            if pred.ndim == 1:  # class indices, not scores
                if pred.size != label.size:
                    raise _mismatch('TopKAccuracy', label, pred, 'expected one class per label')
                hits = pred.astype(numpy.int64) == label.ravel().astype(numpy.int64)
            else:
                label, pred = _class_scores('TopKAccuracy', label, pred)
                k = min(self.top_k, pred.shape[1])
                best = numpy.argpartition(pred, -k, axis=1)[:, -k:]
                hits = (best == label[:, None]).any(axis=1)
            self._add(int(hits.sum()), hits.size)


class _BinaryStats:
    """Confusion counts of a binary classifier, and the scores computed from them."""

    def __init__(self):
        self.tp = self.fp = self.fn = self.tn = 0

    def add_batch(self, metric, label, pred):
        label, pred = _class_scores(metric, label, pred)
        distinct = numpy.unique(label)
        if distinct.size > 2:
            raise ValueError('%s supports binary classification only (class 1 is positive); '
                             'the labels hold %d distinct values %s'
                             % (metric, distinct.size, distinct.tolist()))
        pred_pos = numpy.argmax(pred, axis=1) == 1
        label_pos = label == 1
        self.tp += int((pred_pos & label_pos).sum())
        self.fp += int((pred_pos & ~label_pos).sum())
        self.fn += int((~pred_pos & label_pos).sum())
        self.tn += int((~pred_pos & ~label_pos).sum())

    def merge(self, other):
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.tn += other.tn

    @property
    def total(self):
        return self.tp + self.fp + self.fn + self.tn

    def fscore(self):
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    def mcc(self):
        if not self.total:
            return 0.0
        # as MXNet: zero factors are left out of the denominator rather than dividing by 0
        denom = 1.0
        for term in (self.tp + self.fp, self.tp + self.fn, self.tn + self.fp,
                     self.tn + self.fn):
            if term:
                denom *= term
        return (self.tp * self.tn - self.fp * self.fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 / MCC: 'macro' averages the per-update score, 'micro' scores all samples."""
    _score = None

    def __init__(self, name, average, output_names, label_names):
        if average not in ('macro', 'micro'):
            raise ValueError("average must be 'macro' or 'micro', got %r" % (average,))
        self.average = average
        self._local, self._global = _BinaryStats(), _BinaryStats()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         average=average, has_global_stats=True)

    def update(self, labels, preds):
        batch = _BinaryStats()
        for label, pred in _pairs(labels, preds, type(self).__name__):
            batch.add_batch(type(self).__name__, label, pred)
        if self.average == 'macro':
            self._add(self._score(batch), 1)
            return
        self._local.merge(batch)
        self._global.merge(batch)
        self.num_inst, self.global_num_inst = self._local.total, self._global.total
        self.sum_metric = self._score(self._local) * self._local.total
        self.global_sum_metric = self._score(self._global) * self._global.total

    def reset(self):
        super().reset()
        self._global = _BinaryStats()

    def reset_local(self):
        super().reset_local()
        self._local = _BinaryStats()


@register
class F1(_BinaryMetric):
    """F1 score (harmonic mean of precision and recall) of a binary classifier.

    Labels are 0/1 (class 1 is positive); predictions are scores of shape
    (batch, 2), argmax'ed over axis 1.

    Parameters
    ----------
    name : str, default 'f1'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    average : {'macro', 'micro'}, default 'macro'
        'macro' averages the F1 of each ``update`` call; 'micro' computes F1 over
        every sample seen.
    """
    _score = staticmethod(_BinaryStats.fscore)

    def __init__(self, name='f1', output_names=None, label_names=None, average='macro'):
        super().__init__(name, average, output_names, label_names)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier.

    Labels are 0/1 (class 1 is positive); predictions are scores of shape
    (batch, 2), argmax'ed over axis 1.

    Parameters
    ----------
    name : str, default 'mcc'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    average : {'macro', 'micro'}, default 'macro'
        'macro' averages the MCC of each ``update`` call; 'micro' computes MCC over
        every sample seen.
    """
    _score = staticmethod(_BinaryStats.mcc)

    def __init__(self, name='mcc', output_names=None, label_names=None, average='macro'):
        super().__init__(name, average, output_names, label_names)


@register
class PCC(EvalMetric):
    """Pearson correlation of a K x K confusion matrix: MCC generalised to K classes.

    With two classes it equals :class:`MCC` (micro) and the Pearson correlation of
    labels and predicted classes. It ranges up to +1; its minimum lies between -1 and
    0, depending on the class distribution. The confusion matrix grows as larger
    class indices appear, so the order and grouping of updates do not change the score.

    Labels are class indices; predictions are class scores (batch, classes),
    argmax'ed over axis 1, or class indices shaped like the labels.

    Parameters
    ----------
    name : str, default 'pcc'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    has_global_stats : bool, default True
    """

    def __init__(self, name='pcc', output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), 'constant')
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), 'constant')
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float('nan')
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds, 'PCC'):
            label = label.ravel().astype(numpy.int64)
            if pred.ndim == 2 and pred.shape[0] == label.size and pred.size != label.size:
                pred = numpy.argmax(pred, axis=1)
            pred = pred.ravel().astype(numpy.int64)
            if pred.size != label.size:
                raise _mismatch('PCC', label, pred, 'expected class scores (batch, classes) '
                                'or one class index per label')
            if not label.size:
                continue
            if min(label.min(), pred.min()) < 0:
                raise ValueError('PCC: class indices must be >= 0, got labels in [%d, %d] and '
                                 'predicted classes in [%d, %d]' % (label.min(), label.max(),
                                                                    pred.min(), pred.max()))
            top = int(max(pred.max(), label.max()))
            if top >= self.k:
                self._grow(top + 1 - self.k)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        """The PCC of the local confusion matrix times the local instance count, so that
        ``sum_metric / num_inst`` is the score.
        """
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        """The PCC of the global confusion matrix times the global instance count, so that
        ``global_sum_metric / global_num_inst`` is the global score.
        """
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self):
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))


# ---- regression ------------------------------------------------------------------------
class _BatchAveraged(EvalMetric):
    """Mean over ``update`` arrays of a per-array value (MXNet 1.x's MAE/MSE/RMSE)."""

    def __init__(self, name, output_names, label_names):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds, type(self).__name__):
            label, pred = _regression_pair(type(self).__name__, label, pred)
            self._add(self._batch_value(label - pred), 1)


@register
class MAE(_BatchAveraged):
    """Mean absolute error, averaged per array then over arrays (as MXNet 1.x).

    Parameters
    ----------
    name : str, default 'mae'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, name='mae', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch_value(diff):
        return numpy.abs(diff).mean()


@register
class MSE(_BatchAveraged):
    """Mean squared error, averaged per array then over arrays (as MXNet 1.x).

    Parameters
    ----------
    name : str, default 'mse'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, name='mse', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch_value(diff):
        return (diff ** 2).mean()


@register
class RMSE(_BatchAveraged):
    """Root mean squared error of each array, averaged over arrays (as MXNet 1.x).

    Note this is the mean of per-batch RMSEs, not the square root of the overall MSE.

    Parameters
    ----------
    name : str, default 'rmse'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch_value(diff):
        return numpy.sqrt((diff ** 2).mean())


# ---- probabilistic ---------------------------------------------------------------------
@register
@alias('ce')
class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples, from probabilities (batch, classes).

    Parameters
    ----------
    eps : float, default 1e-12
        Added to the probability so a zero does not give ``inf``.
    name : str, default 'cross-entropy'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        metric = type(self).__name__
        for label, pred in _pairs(labels, preds, metric):
            label, pred = _class_scores(metric, label, pred)
            if label.size and (label.min() < 0 or label.max() >= pred.shape[1]):
                raise ValueError('%s: labels must be class indices in [0, %d), got values in '
                                 '[%d, %d]' % (metric, pred.shape[1], label.min(), label.max()))
            # in the predictions' precision (at least float32), as MXNet computes it
            prob = pred[numpy.arange(label.size), label]
            prob = prob.astype(numpy.result_type(prob.dtype, numpy.float32), copy=False)
            self._add(float(-numpy.log(prob + self.eps).sum()), label.size)


@register
@alias('nll_loss')
class NegativeLogLikelihood(CrossEntropy):
    """Negative log-likelihood of the labels under predicted probabilities.

    Computed exactly like :class:`CrossEntropy`: mean of ``-log(p[label] + eps)``.

    Parameters
    ----------
    eps : float, default 1e-12
    name : str, default 'nll-loss'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-probability of the labels.

    Parameters
    ----------
    ignore_label : int or None
        Label positions equal to this (e.g. padding) are left out.
    axis : int, default -1
        The class axis of the predicted probabilities.
    name : str, default 'perplexity'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, ignore_label=None, axis=-1, name='perplexity', output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, axis=axis,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        loss, num = 0.0, 0
        for label, pred in _pairs(labels, preds, 'Perplexity'):
            if not -pred.ndim <= self.axis < pred.ndim:
                raise _mismatch('Perplexity', label, pred, 'predictions need a class axis %d'
                                % self.axis)
            probs = numpy.moveaxis(pred, self.axis, -1)
            probs = probs.reshape(-1, probs.shape[-1])
            flat = label.ravel().astype(numpy.int64)
            if flat.size != probs.shape[0]:
                raise _mismatch('Perplexity', label, pred, 'expected one label per position '
                                'of the non-class axes')
            keep = numpy.ones(flat.shape, bool) if self.ignore_label is None \
                else flat != self.ignore_label
            # Out-of-range labels pick the nearest class, as MXNet's pick (mode 'clip') does.
            classes = numpy.clip(flat, 0, probs.shape[-1] - 1)
            picked = probs[numpy.arange(flat.size), classes][keep]
            loss -= float(numpy.log(numpy.maximum(1e-10, picked.astype(numpy.float64))).sum())
            num += int(keep.sum())
        self._add(loss, num)

    def _value(self, sum_metric, num_inst):
        return float('nan') if num_inst == 0 else math.exp(sum_metric / num_inst)


@register
@alias('pearsonr')
class PearsonCorrelation(EvalMetric):
    """Pearson correlation coefficient between labels and predictions.

    Parameters
    ----------
    name : str, default 'pearsonr'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    average : {'macro', 'micro'}, default 'macro'
        'macro' averages the coefficient of each array; 'micro' computes one
        coefficient over every sample seen.
    """

    def __init__(self, name='pearsonr', output_names=None, label_names=None, average='macro'):
        if average not in ('macro', 'micro'):
            raise ValueError("average must be 'macro' or 'micro', got %r" % (average,))
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         average=average, has_global_stats=True)

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds, 'PearsonCorrelation'):
            label, pred = _regression_pair('PearsonCorrelation', label, pred)
            label, pred = label.ravel(), pred.ravel()
            if self.average == 'macro':
                self._add(_pearson(*_moments(label, pred)), 1)
                continue
            batch = _moments(label, pred)
            self._local = _merge_moments(self._local, batch)
            self._global = _merge_moments(self._global, batch)
            self.num_inst += 1
            self.global_num_inst += 1
            self.sum_metric = _pearson(*self._local) * self.num_inst
            self.global_sum_metric = _pearson(*self._global) * self.global_num_inst

    def reset(self):
        super().reset()
        self._global = (0, 0.0, 0.0, 0.0, 0.0, 0.0)

    def reset_local(self):
        super().reset_local()
        self._local = (0, 0.0, 0.0, 0.0, 0.0, 0.0)


def _moments(x, y):
    """(n, mean x, mean y, sum dx^2, sum dy^2, sum dx*dy) of two float64 vectors."""
    dx, dy = x - x.mean(), y - y.mean()
    return x.size, x.mean(), y.mean(), (dx * dx).sum(), (dy * dy).sum(), (dx * dy).sum()


def _merge_moments(a, b):
    """Moments of the union of two samples (Chan et al.'s pairwise update)."""
    na, mxa, mya, sxa, sya, cxa = a
    nb, mxb, myb, sxb, syb, cxb = b
    n = na + nb
    if n == 0:
        return a
    dx, dy = mxb - mxa, myb - mya
    w = na * nb / n
    return (n, mxa + dx * nb / n, mya + dy * nb / n,
            sxa + sxb + dx * dx * w, sya + syb + dy * dy * w, cxa + cxb + dx * dy * w)


def _pearson(n, mean_x, mean_y, sxx, syy, sxy):
    denom = math.sqrt(sxx * syy)
    return sxy / denom if denom else float('nan')


@register
class Loss(EvalMetric):
    """Mean of the values passed as ``preds`` (typically per-sample losses); labels unused.

    Parameters
    ----------
    name : str, default 'loss'
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        for pred in _as_list(preds):
            pred = _to_numpy(pred)
            self._add(float(pred.sum(dtype=numpy.float64)), pred.size)


@register
class Torch(Loss):
    """:class:`Loss` named ``'torch'``: the mean of losses computed by a Torch criterion."""

    def __init__(self, name='torch', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """:class:`Loss` named ``'caffe'``: the mean of losses computed by a Caffe layer."""

    def __init__(self, name='caffe', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


# ---- user functions --------------------------------------------------------------------
@register
class CustomMetric(EvalMetric):
    """A metric from a function ``feval(label, pred)`` of numpy arrays.

    ``feval`` returns either a value (averaged over calls) or a tuple
    ``(sum_metric, num_inst)`` to accumulate. It is called once per label/prediction
    pair (once per device).

    Parameters
    ----------
    feval : callable
        ``feval(label, pred) -> float or (float, int)``.
    name : str, optional
        Defaults to ``feval.__name__`` (``'custom(<lambda>)'`` for a lambda).
    allow_extra_outputs : bool, default False
        Allow more prediction arrays than label arrays (the extra ones are ignored).
    output_names, label_names : list of str, optional
        See :class:`EvalMetric`.
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if not callable(feval):
            raise ValueError('feval must be a function feval(label, pred), got %r' % (feval,))
        if name is None:
            name = getattr(feval, '__name__', 'custom')
            if '<' in name:
                name = 'custom(%s)' % name
        super().__init__(name, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        labels, preds = _as_list(labels), _as_list(preds)
        if not self._allow_extra_outputs:
            _pairs(labels, preds, self.name)  # only for the count check
        for label, pred in zip(labels, preds):
            result = self._feval(_to_numpy(label), _to_numpy(pred))
            if isinstance(result, tuple):
                self._add(*result)
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError('CustomMetric %r wraps a Python function and has no config; '
                                  'rebuild it with mx.metric.create(feval)' % self.name)


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A :class:`CustomMetric` from a function of numpy arrays (MXNet's ``mx.metric.np``).

    Parameters
    ----------
    numpy_feval : callable
        ``numpy_feval(label, pred) -> float``.
    name : str, optional
    allow_extra_outputs : bool, default False

    Returns
    -------
    CustomMetric
    """
    return CustomMetric(numpy_feval, name, allow_extra_outputs)
