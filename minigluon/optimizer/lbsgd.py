"""LBSGD: large-batch SGD, emulating a batch ``batch_scale`` times larger (MXNet's).

Gradients are summed per parameter over ``batch_scale`` calls; every ``batch_scale``-th
call makes one momentum-SGD step with their mean, its learning rate multiplied by a
warm-up factor (linear, power2, sqrt) or by the layer's LARS ratio.
"""
import math

from ..base import MXNetError
from ..ndarray.ops.updates import sgd_step
from .optimizer import Optimizer, _raw, register

WARMUP_STRATEGIES = ('linear', 'power2', 'sqrt', 'lars')


def warmup_multiplier(strategy, num_update, warmup_updates, batch_scale):
    """The learning-rate multiplier after ``num_update`` updates: it grows from 1 to
    ``batch_scale`` over ``warmup_updates`` updates, along ``strategy``."""
    top = float(batch_scale)
    if num_update >= warmup_updates:
        return top
    if warmup_updates <= 1:
        return 1.0
    frac = num_update / warmup_updates
    if strategy == 'linear':
        return 1.0 + (top - 1) * frac
    if strategy == 'power2':
        return 1.0 + (top - 1) * frac * frac
    if strategy == 'sqrt':
        return 1.0 + (top - 1) * math.sqrt(frac)
    return 1.0


def lars_multiplier(xp, weight, grad, wd):
    """``sqrt(|w|^2 / (|g|^2 + wd*|w|^2))`` clipped to [0.01, 100] (MXNet's LBSGD form)."""
    w2 = float((weight.astype('float64') ** 2).sum())
    g2 = float((grad.astype('float64') ** 2).sum())
    return min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100.0)


@register
class LBSGD(Optimizer):
    """Large-batch SGD with momentum and weight decay.

    Parameters
    ----------
    momentum : float, default 0.0
    warmup_strategy : {'linear', 'power2', 'sqrt', 'lars'}, default 'linear'
    warmup_epochs : int, default 5
    batch_scale : int, default 1
        How many calls make one large batch (batch size times number of workers).
    updates_per_epoch : int, default 32
        Used to turn ``warmup_epochs`` and ``begin_epoch`` into update counts.
    begin_epoch : int, default 0
    num_epochs : int, default 60

    The gradient sums live in the optimizer, not in the per-parameter state, so they
    are not saved with ``save_states`` (as in MXNet).
    """
    hyperparameters = ('momentum', 'warmup_strategy', 'warmup_epochs', 'batch_scale',
                       'updates_per_epoch', 'begin_epoch', 'num_epochs')

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy='linear',
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in WARMUP_STRATEGIES:
            raise MXNetError('LBSGD: warmup_strategy must be one of %s, got %r'
                             % (', '.join(WARMUP_STRATEGIES), warmup_strategy))
        if not isinstance(batch_scale, int) or batch_scale < 1:
            raise MXNetError('LBSGD: batch_scale must be an int >= 1, got %r' % (batch_scale,))
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.begin_epoch = begin_epoch
        self.num_epochs = num_epochs
        self.init_updates = begin_epoch * updates_per_epoch
        self.cumgrads = {}   # index -> [gradient sum or None, calls counted]

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def update(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            super().update(index, weight, grad, state)
            return
        lr, wd = self._get_lr(index), self._get_wd(index)  # before counting, as MXNet
        self._update_count(index)
        entry = self.cumgrads.get(index)
        if entry is None:
            entry = self.cumgrads[index] = [None, self.init_updates]
        entry[0] = grad._data.copy() if entry[0] is None else entry[0] + grad._data
        entry[1] += 1
        if entry[1] % self.batch_scale:
            return
        xp = weight.context.xp
        with weight.context.device():
            g = entry[0] / self.batch_scale
            if self.warmup_strategy == 'lars':
                lr *= lars_multiplier(xp, weight._data, g, wd)
            else:
                lr *= warmup_multiplier(self.warmup_strategy, entry[1],
                                        self.warmup_epochs * self.updates_per_epoch,
                                        self.batch_scale)
            sgd_step(xp, weight._data, g, _raw(state), lr, wd, self.momentum,
                     self.rescale_grad, self.clip_bound)
        entry[0] = None
