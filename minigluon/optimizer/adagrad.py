"""AdaGrad (Duchi et al.), as MXNet's: weight decay outside the accumulated history."""
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def adagrad_update(xp, weight, grad, history, lr, wd, epsilon, rescale_grad, clip_gradient):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)`` with ``g = clip(rescale*grad)``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    history += g * g
    update = g / xp.sqrt(history + epsilon)
    if wd:
        update += wd * weight
    weight -= lr * update


@register
class AdaGrad(Optimizer):
    """AdaGrad with MXNet's default ``eps=1e-7``."""
    hyperparameters = ('eps',)

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.eps = eps

    def create_state(self, index, weight):
        return self._zeros_like(weight)

    def step(self, xp, weight, grad, state, lr, wd, t):
        adagrad_update(xp, weight, grad, state, lr, wd, self.eps, self.rescale_grad,
                       self.clip_bound)
