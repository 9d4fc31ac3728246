"""SGLD: stochastic gradient Langevin dynamics (Welling & Teh 2011)."""
import math

from ..ndarray import random as _random
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def sgld_update(xp, weight, grad, noise, lr, wd, rescale_grad, clip_gradient):
    """``w += -lr/2 * (clip(rescale*grad) + wd*w) + noise``, ``noise ~ N(0, lr)``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    g += wd * weight
    weight -= lr / 2 * g
    weight += noise


@register
class SGLD(Optimizer):
    """Half a gradient step plus Gaussian noise of variance ``lr``: samples the posterior
    instead of finding its mode. The noise comes from ``mx.random``, so
    ``mx.random.seed`` makes runs repeatable."""

    def update(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            super().update(index, weight, grad, state)
            return
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        noise = _random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                               ctx=weight.context)
        with weight.context.device():
            sgld_update(weight.context.xp, weight._data, grad._data, noise._data, lr, wd,
                        self.rescale_grad, self.clip_bound)
