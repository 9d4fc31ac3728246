"""SGD with optional momentum (MXNet's sgd_update / sgd_mom_update)."""
from .optimizer import Optimizer, prepared_grad, register


def sgd_update(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """``mom = momentum*mom - lr*(g + wd*w); w += mom`` (plain ``w -= lr*(g + wd*w)``
    without momentum), with ``g = clip(rescale_grad * grad)``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient, wd)
    if mom is None:
        weight -= lr * g
    else:
        mom *= momentum
        mom -= lr * g
        weight += mom


@register
class SGD(Optimizer):
    """Stochastic gradient descent, with momentum when ``momentum > 0``."""
    hyperparameters = ('momentum', 'lazy_update')

    def __init__(self, momentum=0.0, lazy_update=False, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def step(self, xp, weight, grad, state, lr, wd, t):
        sgd_update(xp, weight, grad, state, lr, wd, self.momentum, self.rescale_grad,
                   self.clip_gradient)
