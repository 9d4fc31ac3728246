"""FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the Trenches")."""
from .optimizer import Optimizer, prepared_grad, register


def ftrl_update(xp, weight, grad, z, n, lr, wd, lamda1, beta, rescale_grad, clip_gradient):
    """With ``g = clip(rescale*grad)``: ``z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr;
    n += g^2; w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient)
    z += g - (xp.sqrt(n + g * g) - xp.sqrt(n)) * weight / lr
    n += g * g
    weight[...] = ((xp.sign(z) * lamda1 - z) / ((beta + xp.sqrt(n)) / lr + wd)
                   * (xp.abs(z) > lamda1))


@register
class Ftrl(Optimizer):
    """FTRL with L1 strength ``lamda1`` (weights with ``|z| <= lamda1`` are exactly 0)
    and per-coordinate rates ``lr / (beta + sqrt(sum g^2))``; state ``(z, n)``."""
    hyperparameters = ('lamda1', 'beta')

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = lamda1, beta

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        ftrl_update(xp, weight, grad, state[0], state[1], lr, wd, self.lamda1, self.beta,
                    self.rescale_grad, self.clip_gradient)
