"""Nesterov accelerated gradient (MXNet's nag_mom_update)."""
from .optimizer import Optimizer, prepared_grad, register
from .sgd import sgd_update


def nag_update(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """With ``step = lr * (clip(rescale*grad) + wd*w)``: ``mom = momentum*mom;
    w += momentum*mom - (1+momentum)*step; mom -= step``.

    The momentum holds learning-rate-scaled steps, as MXNet 1.x's does; without
    momentum this is plain SGD.
    """
    if mom is None:
        sgd_update(xp, weight, grad, None, lr, wd, 0.0, rescale_grad, clip_gradient)
        return
    step = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient)
    step += wd * weight
    step *= lr
    mom *= momentum
    weight += momentum * mom - (1 + momentum) * step
    mom -= step


@register
class NAG(Optimizer):
    """SGD with Nesterov momentum; multi-precision state is ``(momentum, master)``."""
    hyperparameters = ('momentum',)
    master_copy_first = False

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def step(self, xp, weight, grad, state, lr, wd, t):
        nag_update(xp, weight, grad, state, lr, wd, self.momentum, self.rescale_grad,
                   self.clip_gradient)
