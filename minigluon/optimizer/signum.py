"""Signum / signSGD (Bernstein et al. 2018): step along the sign of the momentum
(MXNet's signum_update / signsgd_update)."""
from ..ndarray.ops.updates import signum_step
from .optimizer import Optimizer, register


@register
class Signum(Optimizer):
    """Signum with momentum (signSGD when ``momentum=0``); ``wd_lh`` is decoupled decay."""
    hyperparameters = ('momentum', 'wd_lh')

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum, self.wd_lh = momentum, wd_lh

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def step(self, xp, weight, grad, state, lr, wd, t):
        signum_step(xp, weight, grad, state, lr, wd, self.momentum, self.wd_lh,
                    self.rescale_grad, self.clip_bound)
