"""RMSProp (Tieleman & Hinton), and the centered variant of Graves (2013)."""
from .optimizer import Optimizer, clip, prepared_grad, register


def rmsprop_update(xp, weight, grad, n, lr, wd, gamma1, epsilon, rescale_grad, clip_gradient,
                   clip_weights=None):
    """``n = (1-gamma1)*g^2 + gamma1*n; w -= lr * g / sqrt(n + eps)``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient, wd)
    n *= gamma1
    n += (1 - gamma1) * g * g
    weight -= lr * g / xp.sqrt(n + epsilon)
    clip(xp, weight, clip_weights)


def rmspropalex_update(xp, weight, grad, n, g_avg, delta, lr, wd, gamma1, gamma2, epsilon,
                       rescale_grad, clip_gradient, clip_weights=None):
    """Centered: ``delta = gamma2*delta - lr * g / sqrt(n - g_avg^2 + eps); w += delta``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient, wd)
    n *= gamma1
    n += (1 - gamma1) * g * g
    g_avg *= gamma1
    g_avg += (1 - gamma1) * g
    delta *= gamma2
    delta -= lr * g / xp.sqrt(n - g_avg * g_avg + epsilon)
    weight += delta
    clip(xp, weight, clip_weights)


@register
class RMSProp(Optimizer):
    """RMSProp; ``centered=True`` normalises by the gradient's variance, not its second moment."""
    hyperparameters = ('gamma1', 'gamma2', 'epsilon', 'centered', 'clip_weights')

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False,
                 clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered, self.clip_weights = centered, clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (self._zeros_like(weight), self._zeros_like(weight), self._zeros_like(weight))
        return (self._zeros_like(weight),)  # a 1-tuple, as MXNet's

    def step(self, xp, weight, grad, state, lr, wd, t):
        if self.centered:
            rmspropalex_update(xp, weight, grad, state[0], state[1], state[2], lr, wd,
                               self.gamma1, self.gamma2, self.epsilon, self.rescale_grad,
                               self.clip_gradient, self.clip_weights)
        else:
            n = state[0] if isinstance(state, tuple) else state  # bare array: older saves
            rmsprop_update(xp, weight, grad, n, lr, wd, self.gamma1, self.epsilon,
                           self.rescale_grad, self.clip_gradient, self.clip_weights)
