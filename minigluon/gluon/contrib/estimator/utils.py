"""Checks the Estimator and its handlers share, and what they ask of the Trainer's store."""
from ....kvstore import KVStoreBase
from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss


def _check_metrics(metrics):
    """``metrics`` (a metric, a composite, a list or None) as a flat list of EvalMetrics."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for metric in metrics.metrics for m in _check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(metric, EvalMetric) for metric in metrics):
        raise ValueError('metrics must be an EvalMetric or a list of EvalMetric (e.g. '
                         'mx.metric.Accuracy()), got %r' % (metrics,))
    return metrics


def _check_handler_metric_ref(handler, known_metrics):
    """Every metric a handler holds must be one of the Estimator's own metric objects."""
    for name, value in vars(handler).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for metric in values:
            if isinstance(metric, EvalMetric) and metric not in known_metrics:
                raise ValueError(
                    '%s.%s refers to the metric %r, which is neither in '
                    'estimator.train_metrics nor in estimator.val_metrics; give the handler '
                    'those metric objects instead' % (type(handler).__name__, name, metric.name))


def _suggest_metric_for_loss(loss):
    """The metric worth tracking beside ``loss`` when none is given (or None)."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None


def _kvstore_of(trainer):
    """The store the Trainer aggregates through, or None (created with its first step)."""
    # The Trainer creates a store named by a string lazily; one passed in is known at once.
    store = getattr(trainer, '_kvstore', None) or getattr(trainer, '_kvstore_arg', None)
    return store if isinstance(store, KVStoreBase) else None


def _rank(trainer):
    """This worker's rank in the Trainer's store (0 without a distributed store)."""
    store = _kvstore_of(trainer)
    return store.rank if store is not None else 0


def _in_lock_step(trainer):
    """Whether the workers of a job step together, so they must also stop together."""
    store = _kvstore_of(trainer)
    return (store is not None and store.is_distributed and not store.is_async
            and store.num_workers > 1)
