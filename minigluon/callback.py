"""``mx.callback``: what ``Module.fit`` calls after each batch or epoch.

A batch-end callback receives a ``mx.model.BatchEndParam`` (epoch, nbatch, eval_metric,
locals); an epoch-end callback receives ``(epoch, symbol, arg_params, aux_params)``.
The log lines are MXNet 1.x's, word for word, on the root logger, so scripts and the
tools that read their logs see what they saw under MXNet.
"""
import logging
import math
import time

from .model import save_checkpoint

__all__ = ['module_checkpoint', 'do_checkpoint', 'log_train_metric', 'Speedometer',
           'ProgressBar', 'LogValidationMetricsCallback']


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback that calls ``mod.save_checkpoint(prefix, epoch + 1, ...)``
    every ``period`` epochs.

    Parameters
    ----------
    mod : BaseModule
        The module to save.
    prefix : str
        The checkpoint files' prefix.
    period : int
        Epochs between checkpoints (at least 1).
    save_optimizer_states : bool
        Also write ``prefix-NNNN.states``.
    """
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):  # pylint: disable=unused-argument
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """An epoch-end callback writing ``prefix-symbol.json`` and ``prefix-NNNN.params``
    (NNNN: the number of epochs done) every ``period`` epochs, with
    ``mx.model.save_checkpoint``.

    Example
    -------
    >>> module.fit(train_iter, num_epoch=2,
    ...            epoch_end_callback=mx.callback.do_checkpoint('mymodel'))
    """
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging ``Iter[e] Batch[n] Train-<metric>=<value>`` every
    ``period`` batches; ``auto_reset`` resets the metric's local state after each log."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info('Iter[%d] Batch[%d] Train-%s=%f', param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """A batch-end callback logging the training speed and the metric every
    ``frequent`` batches, as MXNet does::

        Epoch[0] Batch [20-40]\tSpeed: 1910.41 samples/sec\taccuracy=0.200000

    Parameters
    ----------
    batch_size : int
        Samples per batch (the speed is ``frequent * batch_size`` over the time taken).
    frequent : int
        Batches between logs.
    auto_reset : bool
        Reset the metric's local state after each log, so each line shows the batches
        since the last one (``[20-40]``); otherwise lines show the epoch so far
        (``[0-40]``).
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        """Log when ``param.nbatch`` is a multiple of ``frequent`` (the first call of an
        epoch only starts the clock)."""
        count = param.nbatch
        if self.last_count > count:  # a new epoch
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float('inf')
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            values = sum(name_value, ())
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = 'Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec' \
                    + '\t%s=%f' * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *values)
            else:
                msg = 'Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec' \
                    + '\t%s=%f' * len(name_value)
                logging.info(msg, param.epoch, count, speed, *values)
        else:
            logging.info('Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec', param.epoch, count,
                         speed)
        self.tic = time.time()


class ProgressBar:
    """A batch-end callback logging a bar of the share of the ``total`` batches of an
    epoch done, ``length`` characters wide: ``[========--------] 50%``."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        """Log the bar for ``param.nbatch`` batches done."""
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = '=' * filled_len + '-' * (self.bar_len - filled_len)
        logging.info('[%s] %s%s\r', prog_bar, percents, '%')


class LogValidationMetricsCallback:
    """An eval-end callback logging ``Epoch[e] Validation-<metric>=<value>``."""

    def __call__(self, param):
        """Log each of ``param.eval_metric``'s values (nothing without a metric)."""
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info('Epoch[%d] Validation-%s=%f', param.epoch, name, value)
