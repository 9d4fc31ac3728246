"""FTML: Follow the Moving Leader (Zheng & Kwok, ICML 2017), MXNet's ftml_update."""
from ..ndarray.ops.updates import ftml_step
from .optimizer import Optimizer, register


@register
class FTML(Optimizer):
    """FTML with MXNet 1.x's defaults (learning_rate 0.01, beta1 0.6, beta2 0.999)."""
    hyperparameters = ('beta1', 'beta2', 'epsilon')

    def __init__(self, learning_rate=0.01, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        ftml_step(xp, weight, grad, state[0], state[1], state[2], lr, wd, t, self.beta1,
                  self.beta2, self.epsilon, self.rescale_grad, self.clip_bound)
