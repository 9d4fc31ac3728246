"""Nesterov accelerated gradient (MXNet's nag_mom_update)."""
from .optimizer import Optimizer, prepared_grad, register


def nag_update(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """``g = clip(rescale*grad) + wd*w; mom = momentum*mom + g; w -= lr*(g + momentum*mom)``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient)
    if wd:
        g += wd * weight
    if mom is None:
        weight -= lr * g
        return
    mom *= momentum
    mom += g
    g += momentum * mom
    weight -= lr * g


@register
class NAG(Optimizer):
    """SGD with Nesterov momentum."""
    hyperparameters = ('momentum',)

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def step(self, xp, weight, grad, state, lr, wd, t):
        nag_update(xp, weight, grad, state, lr, wd, self.momentum, self.rescale_grad,
                   self.clip_gradient)
