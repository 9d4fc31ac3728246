"""Adam (Kingma & Ba): MXNet's adam_update, with the bias correction folded into lr."""
import math

from ..ndarray.ops.updates import adam_step
from .optimizer import Optimizer, register


@register
class Adam(Optimizer):
    """Adam with MXNet's defaults (learning_rate 0.001, betas 0.9/0.999, epsilon 1e-8).

    The update op has no bias correction: the step ``t`` scales the learning rate to
    ``lr * sqrt(1 - beta2^t) / (1 - beta1^t)``, as MXNet's class does.
    """
    hyperparameters = ('beta1', 'beta2', 'epsilon', 'lazy_update')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        lr_t = lr * math.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)
        adam_step(xp, weight, grad, state[0], state[1], lr_t, wd, self.beta1, self.beta2,
                  self.epsilon, self.rescale_grad, self.clip_bound)
