"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter)."""
import math

from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def adamw_update(xp, weight, grad, mean, var, lr, wd, t, beta1, beta2, epsilon, rescale_grad,
                 clip_gradient, correct_bias=True):
    """``w -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * w)``; the decay never enters the
    moments (``g = clip(rescale*grad)``)."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    mean *= beta1
    mean += (1 - beta1) * g
    var *= beta2
    var += (1 - beta2) * g * g
    step = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t) if correct_bias else lr
    update = step * mean / (xp.sqrt(var) + epsilon)
    if wd:
        update += lr * wd * weight
    weight -= update


@register
class AdamW(Optimizer):
    """Adam whose weight decay shrinks the weights directly instead of the gradient."""
    hyperparameters = ('beta1', 'beta2', 'epsilon', 'correct_bias')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 correct_bias=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.correct_bias = correct_bias

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        adamw_update(xp, weight, grad, state[0], state[1], lr, wd, t, self.beta1, self.beta2,
                     self.epsilon, self.rescale_grad, self.clip_bound, self.correct_bias)
