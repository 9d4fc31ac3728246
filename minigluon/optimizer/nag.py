"""Nesterov accelerated gradient: MXNet's nag_mom_update."""
from ..ndarray.ops.updates import nag_step
from .optimizer import Optimizer, register


@register
class NAG(Optimizer):
    """SGD with Nesterov momentum; multi-precision state is ``(momentum, master)``.

    The momentum holds learning-rate-scaled steps, as MXNet 1.x's does; without
    momentum this is plain SGD.
    """
    hyperparameters = ('momentum',)
    master_copy_first = False

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def step(self, xp, weight, grad, state, lr, wd, t):
        nag_step(xp, weight, grad, state, lr, wd, self.momentum, self.rescale_grad,
                 self.clip_bound)
