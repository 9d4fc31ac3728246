"""FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the Trenches"),
MXNet's ftrl_update."""
from ..ndarray.ops.updates import ftrl_step
from .optimizer import Optimizer, register


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
        ftrl_step(xp, weight, grad, state[0], state[1], lr, wd, self.lamda1, self.beta,
                  self.rescale_grad, self.clip_bound)
