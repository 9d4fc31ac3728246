"""AdaMax: Adam under the infinity norm (Kingma & Ba, section 7)."""
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def adamax_update(xp, weight, grad, mean, u, lr, wd, t, beta1, beta2, rescale_grad,
                  clip_gradient):
    """``m = b1*m + (1-b1)*g; u = max(b2*u, |g|); w -= lr/(1-b1^t) * m/u``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    mean *= beta1
    mean += (1 - beta1) * g
    xp.maximum(beta2 * u, xp.abs(g), out=u)
    weight -= lr / (1 - beta1 ** t) * mean / u


@register
class Adamax(Optimizer):
    """AdaMax with MXNet's defaults (learning_rate 0.002, betas 0.9/0.999)."""
    hyperparameters = ('beta1', 'beta2')

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        adamax_update(xp, weight, grad, state[0], state[1], lr, wd, t, self.beta1, self.beta2,
                      self.rescale_grad, self.clip_bound)
