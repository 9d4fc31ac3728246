"""Adam (Kingma & Ba), as MXNet's adam_update with bias correction folded into lr."""
import math

from .optimizer import Optimizer, prepared_grad, register


def adam_update(xp, weight, grad, mean, var, lr, wd, t, beta1, beta2, epsilon, rescale_grad,
                clip_gradient):
    """``g = clip(rescale*grad + wd*w)``; moments; ``w -= lr_t * m / (sqrt(v) + eps)`` with
    ``lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient, wd)
    mean *= beta1
    mean += (1 - beta1) * g
    var *= beta2
    var += (1 - beta2) * g * g
    lr_t = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    weight -= lr_t * mean / (xp.sqrt(var) + epsilon)


@register
class Adam(Optimizer):
    """Adam with MXNet's defaults (learning_rate 0.001, betas 0.9/0.999, epsilon 1e-8)."""
    hyperparameters = ('beta1', 'beta2', 'epsilon', 'lazy_update')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        adam_update(xp, weight, grad, state[0], state[1], lr, wd, t, self.beta1, self.beta2,
                    self.epsilon, self.rescale_grad, self.clip_gradient)
