"""Signum / signSGD (Bernstein et al. 2018): step along the sign of the momentum."""
from .optimizer import Optimizer, prepared_grad, register


def signum_update(xp, weight, grad, mom, lr, wd, momentum, wd_lh, rescale_grad, clip_gradient):
    """``mom = momentum*mom - (1-momentum)*(wd*w + clip(rescale*grad));
    w = (1-lr*wd_lh)*w + lr*sign(mom)``; without momentum (signSGD)
    ``w = (1-lr*(wd+wd_lh))*w - lr*sign(grad)``, MXNet's kernels."""
    if mom is None:
        sign = xp.sign(grad)
        weight *= 1 - lr * (wd + wd_lh)
        weight -= lr * sign
        return
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient)
    g += wd * weight
    mom *= momentum
    mom -= (1 - momentum) * g
    if wd_lh:
        weight *= 1 - lr * wd_lh
    weight += lr * xp.sign(mom)


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
        signum_update(xp, weight, grad, state, lr, wd, self.momentum, self.wd_lh,
                      self.rescale_grad, self.clip_gradient)
