"""DC-ASGD: asynchronous SGD with delay compensation (Zheng et al. 2017)."""
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def dcasgd_update(xp, weight, grad, mom, previous, lr, wd, momentum, lamda, rescale_grad,
                  clip_gradient):
    """``step = -lr * (g + wd*w + lamda*g*g*(w - w_prev))`` with ``g = clip(rescale*grad)``;
    ``mom = momentum*mom + step`` (just ``step`` without momentum); ``w_prev = w; w += mom``.
    The ``g*g*(w - w_prev)`` term corrects a gradient computed on stale weights."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    step = -lr * (g + wd * weight + lamda * g * g * (weight - previous))
    if mom is not None:
        mom *= momentum
        mom += step
        step = mom
    previous[...] = weight
    weight += step


@register
class DCASGD(Optimizer):
    """DC-ASGD; state ``(momentum or None, previous weight)``."""
    hyperparameters = ('momentum', 'lamda')

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.lamda = momentum, lamda

    def create_state(self, index, weight):
        mom = self._zeros_like(weight) if self.momentum != 0 else None
        return (mom, weight.copy())

    def step(self, xp, weight, grad, state, lr, wd, t):
        dcasgd_update(xp, weight, grad, state[0], state[1], lr, wd, self.momentum, self.lamda,
                      self.rescale_grad, self.clip_bound)
