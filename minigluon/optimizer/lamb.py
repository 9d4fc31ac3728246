"""LAMB (You et al. 2019): Adam steps rescaled per layer by a trust ratio."""
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def lamb_update(xp, weight, grad, mean, var, lr, wd, t, beta1, beta2, epsilon, lower_bound,
                upper_bound, bias_correction, rescale_grad, clip_gradient):
    """``r = m_hat/(sqrt(v_hat)+eps) + wd*w; w -= lr * (||w|| / ||r||) * r``, the weight
    norm clipped to [lower_bound, upper_bound] when given."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    mean *= beta1
    mean += (1 - beta1) * g
    var *= beta2
    var += (1 - beta2) * g * g
    if bias_correction:
        r = (mean / (1 - beta1 ** t)) / (xp.sqrt(var / (1 - beta2 ** t)) + epsilon)
    else:
        r = mean / (xp.sqrt(var) + epsilon)
    if wd:
        r += wd * weight
    w_norm = float(xp.sqrt((weight.astype('float64') ** 2).sum()))
    if lower_bound is not None:
        w_norm = max(w_norm, lower_bound)
    if upper_bound is not None:
        w_norm = min(w_norm, upper_bound)
    r_norm = float(xp.sqrt((r.astype('float64') ** 2).sum()))
    ratio = w_norm / r_norm if w_norm > 0 and r_norm > 0 else 1.0
    weight -= lr * ratio * r


@register
class LAMB(Optimizer):
    """LAMB with MXNet's defaults (learning_rate 0.001, epsilon 1e-6)."""
    hyperparameters = ('beta1', 'beta2', 'epsilon', 'lower_bound', 'upper_bound',
                       'bias_correction')

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        lamb_update(xp, weight, grad, state[0], state[1], lr, wd, t, self.beta1, self.beta2,
                    self.epsilon, self.lower_bound, self.upper_bound, self.bias_correction,
                    self.rescale_grad, self.clip_bound)
