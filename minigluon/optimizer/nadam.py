"""Nadam: Adam with Nesterov momentum and Dozat's momentum schedule."""
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def nadam_update(xp, weight, grad, mean, var, m_schedule, lr, wd, t, beta1, beta2, epsilon,
                 schedule_decay, rescale_grad, clip_gradient):
    """Dozat (2016), algorithm 2; ``m_schedule`` (shape (1,)) is the running product of
    the momentum schedule, kept per parameter."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    momentum_t = beta1 * (1 - 0.5 * 0.96 ** (t * schedule_decay))
    momentum_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * schedule_decay))
    m_schedule *= momentum_t
    schedule = float(m_schedule[0])
    schedule_next = schedule * momentum_next
    mean *= beta1
    mean += (1 - beta1) * g
    var *= beta2
    var += (1 - beta2) * g * g
    m_bar = (1 - momentum_t) * g / (1 - schedule) + momentum_next * mean / (1 - schedule_next)
    v_hat = var / (1 - beta2 ** t)
    weight -= lr * m_bar / (xp.sqrt(v_hat) + epsilon)


@register
class Nadam(Optimizer):
    """Nadam with MXNet's defaults (learning_rate 0.001, schedule_decay 0.004)."""
    hyperparameters = ('beta1', 'beta2', 'epsilon', 'schedule_decay')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay

    def create_state(self, index, weight):
        xp = weight.context.xp
        from ..ndarray.ndarray import NDArray
        schedule = NDArray(xp.ones((1,), dtype='float64'), weight.context)
        return (self._zeros_like(weight), self._zeros_like(weight), schedule)

    def step(self, xp, weight, grad, state, lr, wd, t):
        nadam_update(xp, weight, grad, state[0], state[1], state[2], lr, wd, t, self.beta1,
                     self.beta2, self.epsilon, self.schedule_decay, self.rescale_grad,
                     self.clip_bound)
