"""The Estimator: a training loop of MXNet 1.6+ whose steps are event handlers."""
import copy
import logging
import sys
import warnings

from .... import ndarray as nd
from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler, _check_event_handlers)
from .utils import (_check_handler_metric_ref, _check_metrics, _in_lock_step, _kvstore_of,
                    _suggest_metric_for_loss)

__all__ = ['Estimator']


def _initialized(param):
    try:
        param.list_ctx()
    except RuntimeError:
        return False
    return True


def _batches(loader):
    try:
        return len(loader)
    except TypeError:
        return None


class Estimator:
    """Trains and evaluates a network with a loss, metrics and a Trainer.

    ``fit`` loops over the training data; what happens around each batch and epoch is
    done by event handlers (the weight update, the metrics, validation, logging,
    stopping), to which more can be added (checkpoints, early stopping, your own).
    With a ``dist_sync`` Trainer, every worker of a launched job runs ``fit`` on its
    own part of the data; the workers stop together, and checkpoints are written by
    the worker of rank 0 only.

    Parameters
    ----------
    net : gluon.Block
        The network to train.
    loss : gluon.loss.Loss
        The loss to minimise.
    train_metrics : EvalMetric or list of EvalMetric, optional
        Metrics of the training data. Default: accuracy for
        ``SoftmaxCrossEntropyLoss``; a ``metric.Loss`` of the loss is always added then.
        Their names get the prefix 'training '.
    val_metrics : EvalMetric or list of EvalMetric, optional
        Metrics of the validation data (default: copies of the training metrics),
        named 'validation ...'.
    initializer : Initializer, optional
        Initializes the parameters not initialized yet.
    trainer : Trainer, optional
        Default: SGD with learning rate 0.001 (with a warning).
    context : Context or list of Context, optional
        The devices to train on; default ``gpu(0)`` if there is a GPU, else ``cpu()``.
    val_net : gluon.Block, optional
        The network to evaluate (default: ``net``), e.g. one sharing ``net``'s parameters.
    val_loss : gluon.loss.Loss, optional
        The loss on the validation data (default: ``loss``).
    batch_processor : BatchProcessor, optional
        Does the work on each batch (default: ``BatchProcessor()``).

    Attributes
    ----------
    logger : logging.Logger
        Where the Estimator and its handlers log (INFO and above, to stdout); add
        handlers to it, e.g. ``est.logger.addHandler(logging.FileHandler(path))``.
    """

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = logging.Logger(name='Estimator', level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = self.max_batch = None
        self.batch_axis = 0
        self._train_batches = self._eval_batches = None   # batches per pass, for ETAs
        self._eval_batch_axis = 0

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError('loss must be a gluon.loss.Loss (e.g. '
                             'gluon.loss.SoftmaxCrossEntropyLoss()), got %r' % (loss,))
        return loss

    @staticmethod
    def _check_context(context):
        if not context:
            if num_gpus() > 1:
                warnings.warn('Several GPUs found; gpu(0) is used. Pass '
                              'context=[mx.gpu(0), mx.gpu(1), ...] to use them all.')
            return [gpu(0)] if num_gpus() > 0 else [cpu()]
        if isinstance(context, Context):
            context = [context]
        if not isinstance(context, (list, tuple)) or \
                not all(isinstance(c, Context) for c in context):
            raise ValueError('context must be a Context or a list of Contexts, e.g. mx.cpu() '
                             'or [mx.gpu(0), mx.gpu(1)], got %r' % (context,))
        gpus = num_gpus()
        for ctx in context:
            if ctx.device_type == 'gpu' and ctx.device_id >= gpus:
                raise ValueError('%s is not available: this machine has %d GPU(s); use '
                                 'mx.cpu() or one of gpu(0..%d)' % (ctx, gpus, gpus - 1))
        return list(context)

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not callable(getattr(batch_processor, 'fit_batch', None)) or \
                not callable(getattr(batch_processor, 'evaluate_batch', None)):
            raise ValueError('batch_processor must have fit_batch() and evaluate_batch() '
                             'methods, as BatchProcessor has')
        return batch_processor

    def _initialize(self, initializer):
        """Initialize the parameters that are not (all of them, or a new layer's)."""
        missing = [p for p in self.net.collect_params().values() if not _initialized(p)]
        for param in missing:
            param.initialize(None, self.context, initializer)
        if not missing and initializer:
            warnings.warn('Network already fully initialized, skipping initialization; no '
                          'initializer is needed for an initialized network. Use '
                          'net.initialize(init=..., force_reinit=True) to re-initialize.')

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn('No trainer specified: SGD with learning rate 0.001 is used.')
            return Trainer(self.net.collect_params(), 'sgd', {'learning_rate': 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError('trainer must be a gluon.Trainer, got %r' % (trainer,))
        return trainer

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(metric_loss(self.loss.name.rstrip('0123456789')))
        for metric in self._train_metrics:
            metric.name = 'training ' + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if 'training' in metric.name:
                metric.name = metric.name.replace('training', 'validation')
            else:
                metric.name = 'validation ' + metric.name

    @property
    def train_metrics(self):
        """The metrics of the training data (list of EvalMetric)."""
        return self._train_metrics

    @property
    def val_metrics(self):
        """The metrics of the validation data (list of EvalMetric)."""
        return self._val_metrics

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Evaluate the model on ``val_data``, updating ``val_metrics``.

        Parameters
        ----------
        val_data : DataLoader
            Batches of ``(data, label)``.
        batch_axis : int, default 0
            The axis of the samples, along which batches are split over the devices.
        event_handlers : EventHandler or list of EventHandler, optional
            Handlers of the validation pass; a MetricHandler and a LoggingHandler of
            the validation metrics are added unless given.
        """
        if not isinstance(val_data, DataLoader):
            raise ValueError('Estimator.evaluate takes a gluon.data.DataLoader, got %s; wrap '
                             'arrays in gluon.data.ArrayDataset and a DataLoader'
                             % type(val_data).__name__)
        for metric in self.val_metrics:
            metric.reset()
        self._eval_batches, self._eval_batch_axis = _batches(val_data), batch_axis
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Train for ``epochs`` epochs or ``batches`` batches (exactly one of them).

        Parameters
        ----------
        train_data : DataLoader
            Batches of ``(data, label)``.
        val_data : DataLoader, optional
            Validation data; a ValidationHandler evaluating it every epoch is added
            unless one is given.
        epochs : int, optional
            Epochs to train.
        event_handlers : EventHandler or list of EventHandler, optional
            Handlers to run; a StoppingHandler, a GradientUpdateHandler, a MetricHandler
            and a LoggingHandler are added unless given.
        batches : int, optional
            Batches to train.
        batch_axis : int, default 0
            The axis of the samples, along which batches are split over the devices.
        """
        if not isinstance(train_data, DataLoader):
            raise ValueError('Estimator.fit takes a gluon.data.DataLoader, got %s; wrap arrays '
                             'in gluon.data.ArrayDataset and a DataLoader'
                             % type(train_data).__name__)
        if (not epochs) == (not batches):
            raise ValueError('Estimator.fit needs exactly one of epochs and batches, got '
                             'epochs=%r, batches=%r' % (epochs, batches))
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        self._train_batches = _batches(train_data)
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stop = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                        for handler in batch_end]
                if self._stop_together(any(stop)):
                    break
            stop = [handler.epoch_end(self) for handler in epoch_end]
            if self._stop_together(any(stop)):
                break
        for handler in train_end:
            handler.train_end(self)

    def _stop_together(self, stop):
        """Whether any worker stops: workers stepping in lock-step must stop together."""
        if not _in_lock_step(self.trainer):
            return stop
        flag = nd.array([1.0 if stop else 0.0])
        _kvstore_of(self.trainer).allreduce('estimator:stop', flag)
        return flag.asscalar() > 0

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if val_data and not any(isinstance(h, ValidationHandler) for h in handlers):
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        mixing = handlers and added
        handlers.extend(added)
        if mixing:
            known = set(self.train_metrics + self.val_metrics)
            for handler in handlers:
                _check_handler_metric_ref(handler, known)
        handlers.sort(key=lambda handler: getattr(handler, 'priority', 0))
        return handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        mixing = handlers and added
        handlers.extend(added)
        if mixing:
            known = set(self.val_metrics)
            for handler in handlers:
                _check_handler_metric_ref(handler, known)
        handlers.sort(key=lambda handler: getattr(handler, 'priority', 0))
        return handlers

    @staticmethod
    def _categorize_handlers(event_handlers):
        """The handlers of each event: train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end and train_end lists, so events without handlers cost nothing."""
        events = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, event)] for event in events)
