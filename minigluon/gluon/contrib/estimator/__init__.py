"""``gluon.contrib.estimator``: a training loop with event handlers, as in MXNet 1.6+.

``Estimator(net, loss, train_metrics, val_metrics, trainer=trainer, context=ctx)``
runs ``fit(train_data, val_data, epochs=N)`` (or ``batches=N``) and ``evaluate``;
handlers hook into its events (``TrainBegin``, ``EpochBegin``, ``BatchBegin``,
``BatchEnd``, ``EpochEnd``, ``TrainEnd``) to update weights and metrics, validate,
log, checkpoint and stop.
"""
from . import batch_processor, estimator, event_handler
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (BatchBegin, BatchEnd, CheckpointHandler, EarlyStoppingHandler,
                            EpochBegin, EpochEnd, EventHandler, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler)

__all__ = ['Estimator', 'BatchProcessor', 'EventHandler', 'TrainBegin', 'TrainEnd',
           'EpochBegin', 'EpochEnd', 'BatchBegin', 'BatchEnd', 'StoppingHandler',
           'MetricHandler', 'ValidationHandler', 'LoggingHandler', 'CheckpointHandler',
           'EarlyStoppingHandler', 'GradientUpdateHandler']
