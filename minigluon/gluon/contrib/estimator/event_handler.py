"""Event handlers of the Estimator: the six events and the handlers MXNet 1.6+ provides.

A handler subclasses the events it reacts to (``TrainBegin``, ``EpochBegin``,
``BatchBegin``, ``BatchEnd``, ``EpochEnd``, ``TrainEnd``) and implements their methods,
which receive the Estimator. ``batch_end`` and ``epoch_end`` return True to stop
training. Handlers run in ascending ``priority`` (default 0): the weight update first
(-2000), then the metrics (-1000), validation (-1000), user handlers, logging last.
"""
import math
import os
import re
import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as metric_loss
from ....progress import Progress, format_duration
from .utils import _check_metrics, _rank

__all__ = ['EventHandler', 'TrainBegin', 'TrainEnd', 'EpochBegin', 'EpochEnd', 'BatchBegin',
           'BatchEnd', 'StoppingHandler', 'MetricHandler', 'ValidationHandler',
           'LoggingHandler', 'CheckpointHandler', 'EarlyStoppingHandler',
           'GradientUpdateHandler']


class EventHandler:
    """Base class of every event handler."""


def _check_event_handlers(handlers):
    """``handlers`` (one, a list or None) as a new list of EventHandlers."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(handler, EventHandler) for handler in handlers):
        raise ValueError('event_handlers must be an EventHandler or a list of EventHandlers, '
                         'got %r' % (handlers,))
    return handlers


class TrainBegin(EventHandler):
    """Reacts when ``fit`` begins."""

    def train_begin(self, estimator, *args, **kwargs):
        """Called once before the first epoch.

        Parameters
        ----------
        estimator : Estimator
        """


class TrainEnd(EventHandler):
    """Reacts when ``fit`` ends."""

    def train_end(self, estimator, *args, **kwargs):
        """Called once after the last epoch.

        Parameters
        ----------
        estimator : Estimator
        """


class EpochBegin(EventHandler):
    """Reacts when an epoch (or a validation pass) begins."""

    def epoch_begin(self, estimator, *args, **kwargs):
        """Called before the first batch of an epoch.

        Parameters
        ----------
        estimator : Estimator
        """


class EpochEnd(EventHandler):
    """Reacts when an epoch (or a validation pass) ends."""

    def epoch_end(self, estimator, *args, **kwargs):
        """Called after the last batch of an epoch.

        Parameters
        ----------
        estimator : Estimator

        Returns
        -------
        bool
            True to stop training.
        """
        return False


class BatchBegin(EventHandler):
    """Reacts before each batch."""

    def batch_begin(self, estimator, *args, **kwargs):
        """Called before a batch is processed.

        Parameters
        ----------
        estimator : Estimator
        batch : tuple
            Keyword: the batch, as the DataLoader gave it.
        """


class BatchEnd(EventHandler):
    """Reacts after each batch."""

    def batch_end(self, estimator, *args, **kwargs):
        """Called after a batch's forward and backward.

        Parameters
        ----------
        estimator : Estimator
        batch : tuple
            Keyword: the batch, as the DataLoader gave it.
        pred, label, loss : list of NDArray
            Keywords: per device, the predictions, labels and per-sample losses.

        Returns
        -------
        bool
            True to stop training.
        """
        return False


def _monitor_op(monitor, mode, who):
    """np.greater or np.less: how ``monitor`` improves; 'auto' reads the metric's name."""
    if mode not in ('auto', 'min', 'max'):
        warnings.warn('%s: mode %r is unknown, using auto: max for accuracy and f1 metrics, '
                      'min for the others' % (who, mode), RuntimeWarning)
        mode = 'auto'
    if mode == 'auto':
        name = monitor.get()[0].lower()
        mode = 'max' if ('acc' in name or 'f1' in name) else 'min'
    return np.greater if mode == 'max' else np.less


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training after the Estimator's ``max_epoch`` epochs or ``max_batch`` batches.

    Parameters
    ----------
    max_epoch : int, optional
        Epochs to train (``fit`` sets it from its ``epochs``).
    max_batch : int, optional
        Batches to train (``fit`` sets it from its ``batches``).
    """

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        """Take the limits from the Estimator and reset the counts.

        Parameters
        ----------
        estimator : Estimator
        """
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator, *args, **kwargs):
        """Count a batch; True once ``max_batch`` are done.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``, and its ``pred``, ``label`` and ``loss`` (lists of NDArray, one
            per device).

        Returns
        -------
        bool
            True to stop training.
        """
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        """Count an epoch; True once ``max_epoch`` are done.

        Parameters
        ----------
        estimator : Estimator

        Returns
        -------
        bool
            True to stop training.
        """
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets metrics when an epoch begins and updates them after each batch.

    ``metric.Loss`` metrics are updated with the batch's losses, the others with its
    labels and predictions.

    Parameters
    ----------
    metrics : EvalMetric or list of EvalMetric
        The metrics to update.
    priority : float, default -1000
        Runs before the handlers that read the metrics.
    """

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        """Reset the metrics.

        Parameters
        ----------
        estimator : Estimator
        """
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        """Update the metrics with the batch's ``label``, ``pred`` and ``loss``.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``, and its ``pred``, ``label`` and ``loss`` (lists of NDArray, one
            per device).

        Returns
        -------
        bool
            True to stop training.
        """
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, kwargs['loss'])
            else:
                metric.update(kwargs['label'], kwargs['pred'])


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Evaluates the model on validation data every few epochs (or batches).

    Parameters
    ----------
    val_data : DataLoader
        The validation data.
    eval_fn : callable
        Called as ``eval_fn(val_data=..., batch_axis=..., event_handlers=...)``; usually
        ``estimator.evaluate``.
    epoch_period : int, default 1
        Validate after every ``epoch_period`` epochs (None: never at epoch end).
    batch_period : int, optional
        Validate after every ``batch_period`` batches too.
    priority : float, default -1000
        Runs before the handlers that read the validation metrics.
    event_handlers : EventHandler or list of EventHandler, optional
        Handlers for the validation passes, given to ``eval_fn``.
    """

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        """Reset the counts.

        Parameters
        ----------
        estimator : Estimator
        """
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        """Validate if ``batch_period`` batches have passed.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``, and its ``pred``, ``label`` and ``loss`` (lists of NDArray, one
            per device).

        Returns
        -------
        bool
            True to stop training.
        """
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                         event_handlers=self.event_handlers)

    def epoch_end(self, estimator, *args, **kwargs):
        """Validate if ``epoch_period`` epochs have passed.

        Parameters
        ----------
        estimator : Estimator

        Returns
        -------
        bool
            True to stop training.
        """
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                         event_handlers=self.event_handlers)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs training: the optimizer, progress during epochs, metrics after each.

    Besides every ``log_interval`` batches, a progress line comes whenever
    ``progress_interval`` seconds have passed without one, with the speed, the metrics
    so far and the epoch's ETA, so a long epoch is never silent. In a terminal (one
    process, stdout a tty, tqdm installed) a bar shows the progress instead. Lines go
    to ``estimator.logger`` (stdout).

    Parameters
    ----------
    log_interval : int or 'epoch', default 'epoch'
        An integer k: also log every k batches (batches 0, k, 2k, ... of an epoch).
    metrics : EvalMetric or list of EvalMetric, optional
        The metrics to log. Default: the Estimator's training and validation metrics
        (``fit``'s own default handler logs the training metrics).
    priority : float, default inf
        Runs last, once every other handler has updated its state.
    progress_interval : float, default 10
        Longest time in seconds between progress lines (None or 0: only by count).
    metrics_file : str, optional
        Append every progress line and every epoch's metrics to this file as JSON
        lines (``{rank}`` in the name is replaced by the worker's rank), for
        ``python -m minigluon.plot``.
    bar : bool, optional
        Force the progress bar on or off (default: in a terminal, when tqdm is installed).
    """

    def __init__(self, log_interval='epoch', metrics=None, priority=np.inf,
                 progress_interval=10.0, metrics_file=None, bar=None):
        if not isinstance(log_interval, int) and log_interval != 'epoch':
            raise ValueError("log_interval must be an integer or 'epoch', got %r"
                             % (log_interval,))
        self._all_metrics = metrics is None
        self.metrics = _check_metrics(metrics)
        self.priority = priority
        self.log_interval = log_interval
        self.progress_interval = progress_interval
        self.metrics_file = metrics_file
        self.bar = bar
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.log_interval_time = 0
        self.train_start = self.epoch_start = None
        self._training = False
        self._batch_metrics = self.metrics
        self._progress = self._loop = None

    def _start_progress(self, estimator):
        self._progress = Progress(rank=_rank(estimator.trainer), interval=self.progress_interval,
                                  metrics_file=self.metrics_file, bar=self.bar,
                                  emit=estimator.logger.info, line=self._line)

    def train_begin(self, estimator, *args, **kwargs):
        """Log the optimizer and the length of training; reset the counts.

        Parameters
        ----------
        estimator : Estimator
        """
        self.train_start = time.time()
        self._training = True
        if self._all_metrics:
            self.metrics = list(estimator.train_metrics) + list(estimator.val_metrics)
        # during an epoch the validation metrics still hold the last validation's values
        self._batch_metrics = [m for m in self.metrics if m not in estimator.val_metrics]
        trainer = estimator.trainer
        estimator.logger.info('Training begin: using optimizer %s with current learning rate '
                              '%.4f ', type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info('Train for %d epochs.', estimator.max_epoch)
        else:
            estimator.logger.info('Train for %d batches.', estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0
        self._start_progress(estimator)

    def train_end(self, estimator, *args, **kwargs):
        """Log the training time and the final metrics.

        Parameters
        ----------
        estimator : Estimator
        """
        train_time = time.time() - self.train_start
        msg = 'Train finished using total %ds with %d epochs. ' % (train_time, self.current_epoch)
        msg += ''.join('%s: %.4f, ' % metric.get() for metric in self.metrics)
        estimator.logger.info(msg.rstrip(', '))
        self._training = False
        self._close()

    def _close(self):
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        if self._progress is not None:
            self._progress.close()
            self._progress = None

    def batch_begin(self, estimator, *args, **kwargs):
        """Note when the batch began.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``: the batch.
        """
        self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        """Count the batch's samples; log if ``log_interval`` batches or enough time passed.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``, and its ``pred``, ``label`` and ``loss`` (lists of NDArray, one
            per device).

        Returns
        -------
        bool
            True to stop training.
        """
        self.log_interval_time += time.time() - getattr(self, 'batch_start', time.time())
        axis = estimator.batch_axis if self._training else estimator._eval_batch_axis
        samples = sum(y.shape[axis] for y in kwargs['label']) if 'label' in kwargs \
            else kwargs['batch'][0].shape[axis]
        self.processed_samples += samples
        if self._loop is not None:
            self._progress.rank = _rank(estimator.trainer)
            due = (self.batch_index % self.log_interval == 0
                   if isinstance(self.log_interval, int) else None)
            if self._loop.update(samples, self._batch_metrics, report=due or None) is not None:
                self.log_interval_time = 0
            if self._loop.total and self._loop.batch >= self._loop.total:
                self._loop.close()  # the bar ends with the data, before validation logs
        self.batch_index += 1

    def _line(self, record):
        msg = '[Epoch %d][Batch %d][Samples %d] time/interval: %.3fs ' % (
            self.current_epoch, self.batch_index, self.processed_samples,
            self.log_interval_time)
        msg += ''.join('%s: %.4f, ' % metric.get() for metric in self._batch_metrics)
        msg += 'speed: %.1f samples/s, ETA: %s' % (record['samples_per_sec'],
                                                    format_duration(record['eta']))
        return msg if self._training else msg.replace('[Epoch %d]' % self.current_epoch,
                                                      '[Validation]', 1)

    def epoch_begin(self, estimator, *args, **kwargs):
        """Log the learning rate (or that validation begins); start timing the epoch.

        Parameters
        ----------
        estimator : Estimator
        """
        self.epoch_start = time.time()
        if self._progress is None:  # a validation pass, without train_begin
            if self._all_metrics:
                self.metrics = list(estimator.val_metrics)
            self._batch_metrics = self.metrics
            self._start_progress(estimator)
        if self._training:
            estimator.logger.info('[Epoch %d] Begin, current learning rate: %.4f',
                                  self.current_epoch, estimator.trainer.learning_rate)
            total = getattr(estimator, '_train_batches', None)
        else:
            estimator.logger.info('Validation Begin')
            total = getattr(estimator, '_eval_batches', None)
        self._loop = self._progress.loop(self.current_epoch, total,
                                         'train' if self._training else 'validation')

    def epoch_end(self, estimator, *args, **kwargs):
        """Log the epoch's time and metrics; write its record to the metrics file.

        Parameters
        ----------
        estimator : Estimator

        Returns
        -------
        bool
            True to stop training.
        """
        epoch_time = time.time() - self.epoch_start
        if self._training:
            msg = '[Epoch %d] Finished in %.3fs, ' % (self.current_epoch, epoch_time)
        else:
            msg = 'Validation finished in %.3fs, ' % epoch_time
        msg += ''.join('%s: %.4f, ' % metric.get() for metric in self.metrics)
        estimator.logger.info(msg.rstrip(', '))
        if self._loop is not None:
            self._loop.summary(self.metrics)
            self._loop = None
        if not self._training:
            self._close()
        self.current_epoch += 1
        self.batch_index = 0
        return False


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves the parameters and trainer states every few epochs (or batches); resumes.

    Files are ``{model_prefix}-epoch{E}batch{B}.params`` and ``.states`` (``B`` counts
    every batch since training began), the last ``max_checkpoints`` of them kept, and
    with ``save_best`` also ``{model_prefix}-best.params`` / ``.states``. With a
    distributed store only the worker of rank 0 writes; every worker reads when
    resuming, so ``model_dir`` must be visible to all of them.

    Parameters
    ----------
    model_dir : str
        Folder of the checkpoints (created when the first one is written).
    model_prefix : str, default 'model'
        Start of every file name.
    monitor : EvalMetric, optional
        The metric deciding which checkpoint is the best.
    verbose : int, default 0
        1: log every checkpoint written.
    save_best : bool, default False
        Also keep the checkpoint with the best ``monitor`` value.
    mode : {'auto', 'min', 'max'}, default 'auto'
        Whether a larger or a smaller ``monitor`` is better; 'auto': larger for
        accuracy and f1, smaller otherwise.
    epoch_period : int, default 1
        Save after every ``epoch_period`` epochs (None: not by epochs).
    batch_period : int, optional
        Save after every ``batch_period`` batches.
    max_checkpoints : int, default 5
        How many epoch/batch checkpoints to keep (the best one is extra).
    resume_from_checkpoint : bool, default False
        Load the latest checkpoint in ``model_dir`` when training begins and train only
        the epochs (or batches) that remain.
    """

    def __init__(self, model_dir, model_prefix='model', monitor=None, verbose=0,
                 save_best=False, mode='auto', epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        if save_best and not isinstance(monitor, EvalMetric):
            raise ValueError('CheckpointHandler(save_best=True) needs monitor: one of the '
                             'metric objects in estimator.train_metrics or val_metrics')
        self.monitor = monitor
        self.verbose = verbose
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.current_batch = 0
        self.current_epoch = 0
        self.trained_epoch = self.trained_batch = -1
        self.saved_checkpoints = []
        self.monitor_op = None
        if save_best:
            self.monitor_op = _monitor_op(monitor, mode, 'CheckpointHandler')
        self.best = None
        self._pattern = re.compile(r'^%s-epoch(\d+)batch(\d+)\.params$' % re.escape(model_prefix))

    def train_begin(self, estimator, *args, **kwargs):
        """Reset the counts; resume from the latest checkpoint if asked.

        Parameters
        ----------
        estimator : Estimator
        """
        self.current_epoch = 0
        self.current_batch = 0
        self.saved_checkpoints = []
        self.trained_epoch = self.trained_batch = -1
        if self.save_best:
            self.best = -np.inf if self.monitor_op is np.greater else np.inf
        if self.resume_from_checkpoint:
            if estimator.max_batch and (not self.batch_period or self.epoch_period):
                raise ValueError('CheckpointHandler: to resume a fit(batches=...), save by '
                                 'batches only (batch_period=k, epoch_period=None)')
            if estimator.max_epoch and (not self.epoch_period or self.batch_period):
                raise ValueError('CheckpointHandler: to resume a fit(epochs=...), save by '
                                 'epochs only (epoch_period=k, batch_period=None)')
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        """Save if ``batch_period`` batches have passed.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``, and its ``pred``, ``label`` and ``loss`` (lists of NDArray, one
            per device).

        Returns
        -------
        bool
            True to stop training.
        """
        if self.current_batch == 0 and _rank(estimator.trainer) == 0:
            self._save_symbol(estimator)  # the graph exists once the first batch ran
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1
        return False

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + '-symbol.json')
        graph = getattr(estimator.net, '_cached_graph', None)
        if graph:
            graph[1].save(symbol_file)
        else:
            estimator.logger.info(
                'Model architecture(symbol file) is not saved, please use HybridBlock to '
                'construct your model, and call net.hybridize() before passing to Estimator '
                'in order to save model architecture as %s.', symbol_file)

    def epoch_end(self, estimator, *args, **kwargs):
        """Save if ``epoch_period`` epochs have passed.

        Parameters
        ----------
        estimator : Estimator

        Returns
        -------
        bool
            True to stop training.
        """
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1
        return False

    def _save_checkpoint(self, estimator):
        if self.resume_from_checkpoint and self.trained_epoch >= 0:
            epoch = self.current_epoch + self.trained_epoch + 1
            batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        else:
            epoch, batch = self.current_epoch, self.current_batch
        if _rank(estimator.trainer) != 0:
            return
        prefix = '%s-epoch%dbatch%d' % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: trained total %d batches, '
                                  'saving model at %s with prefix: %s', self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if not self.save_best:
            return
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn('CheckpointHandler: %s has no value yet, so no best model is saved; '
                          'monitor one of estimator.train_metrics or val_metrics' % name,
                          RuntimeWarning)
        elif self.monitor_op(value, self.best):
            if self.verbose > 0:
                estimator.logger.info('[Epoch %d] CheckpointHandler: %s improved from %0.5f to '
                                      '%0.5f, updating best model at %s with prefix: %s',
                                      self.current_epoch, name, self.best, value,
                                      self.model_dir, self.model_prefix + '-best')
            self._save_params_and_trainer(estimator, self.model_prefix + '-best')
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, '
                                  'skipping updating best model', self.current_epoch, name,
                                  self.best)

    def _save_params_and_trainer(self, estimator, prefix):
        os.makedirs(self.model_dir, exist_ok=True)
        estimator.net.save_parameters(os.path.join(self.model_dir, prefix + '.params'))
        estimator.trainer.save_states(os.path.join(self.model_dir, prefix + '.states'))
        if prefix.endswith('-best'):
            return
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in ('.params', '.states'):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _checkpoints(self):
        """(epoch, batch) of every checkpoint in ``model_dir``, oldest first."""
        if not os.path.isdir(self.model_dir):
            return []
        found = (self._pattern.match(name) for name in os.listdir(self.model_dir))
        return sorted((int(m.group(1)), int(m.group(2))) for m in found if m)

    def _resume_from_checkpoint(self, estimator):
        found = self._checkpoints()
        self.saved_checkpoints = ['%s-epoch%dbatch%d' % (self.model_prefix, e, b)
                                  for e, b in found]
        if not found:
            estimator.logger.info('CheckpointHandler: No checkpoint found, training from '
                                  'scratch for %s', '%d batches' % estimator.max_batch
                                  if estimator.max_batch else '%d epochs' % estimator.max_epoch)
            return
        self.trained_epoch, self.trained_batch = found[-1]
        msg = ('CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to '
               'train for ' % (self.trained_epoch, self.trained_batch))
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError('CheckpointHandler: the checkpoint in %s already reached the '
                                 '%d epochs asked for; give more epochs, or '
                                 'resume_from_checkpoint=False to train from scratch'
                                 % (self.model_dir, estimator.max_epoch))
            estimator.max_epoch -= self.trained_epoch + 1
            msg += '%d epochs ' % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError('CheckpointHandler: the checkpoint in %s already reached the '
                                 '%d batches asked for; give more batches, or '
                                 'resume_from_checkpoint=False to train from scratch'
                                 % (self.model_dir, estimator.max_batch))
            estimator.max_batch -= self.trained_batch + 1
            msg += '%d batches ' % estimator.max_batch
        prefix = os.path.join(self.model_dir, self.saved_checkpoints[-1])
        for ext in ('.params', '.states'):
            if not os.path.exists(prefix + ext):
                raise ValueError('CheckpointHandler: cannot resume, %s is missing'
                                 % (prefix + ext))
        estimator.net.load_parameters(prefix + '.params', ctx=estimator.context)
        estimator.trainer.load_states(prefix + '.states')
        estimator.logger.warning(msg)


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when a monitored metric stops improving.

    Parameters
    ----------
    monitor : EvalMetric
        The metric to watch: one of ``estimator.train_metrics`` or ``val_metrics``.
    min_delta : float, default 0
        The smallest change that counts as an improvement.
    patience : int, default 0
        Epochs without improvement to wait before stopping.
    mode : {'auto', 'min', 'max'}, default 'auto'
        Whether a larger or a smaller value is better; 'auto': larger for accuracy and
        f1, smaller otherwise.
    baseline : float, optional
        The value to improve on (default: the first epoch's).
    """

    def __init__(self, monitor, min_delta=0, patience=0, mode='auto', baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError('EarlyStoppingHandler needs monitor: one of the metric objects in '
                             'estimator.train_metrics or val_metrics')
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError('EarlyStoppingHandler cannot monitor a CompositeEvalMetric; give '
                             'one of its metrics')
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.monitor_op = _monitor_op(monitor, mode, 'EarlyStoppingHandler')
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = None

    def train_begin(self, estimator, *args, **kwargs):
        """Reset the waiting and the best value.

        Parameters
        ----------
        estimator : Estimator
        """
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = -np.inf if self.monitor_op is np.greater else np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        """True once ``patience`` epochs have passed without improvement.

        Parameters
        ----------
        estimator : Estimator

        Returns
        -------
        bool
            True to stop training.
        """
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn('EarlyStoppingHandler: %s has no value; monitor one of '
                          'estimator.train_metrics or val_metrics' % name, RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        """Log the epoch at which training stopped early.

        Parameters
        ----------
        estimator : Estimator
        """
        if self.stopped_epoch > 0:
            estimator.logger.info('[Epoch %d] EarlyStoppingHandler: early stopping due to %s '
                                  'not improving', self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Applies the gradients after each batch: ``trainer.step(samples in the batch)``.

    Parameters
    ----------
    priority : float, default -2000
        Runs first, before the metrics are updated.
    """

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        """Step the trainer by the number of samples the losses cover.

        Parameters
        ----------
        estimator : Estimator
        **kwargs
            ``batch``, and its ``pred``, ``label`` and ``loss`` (lists of NDArray, one
            per device).

        Returns
        -------
        bool
            True to stop training.
        """
        loss = kwargs['loss']
        loss = loss if isinstance(loss, (list, tuple)) else [loss]
        estimator.trainer.step(sum(l.shape[0] for l in loss))
        return False
