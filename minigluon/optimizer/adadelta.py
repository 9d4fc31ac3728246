"""AdaDelta (Zeiler 2012): no learning rate in the step, as in MXNet."""
from ..ndarray.ops.updates import rescaled_grad
from .optimizer import Optimizer, register


def adadelta_update(xp, weight, grad, acc_g, acc_delta, wd, rho, epsilon, rescale_grad,
                    clip_gradient):
    """``Eg2 = rho*Eg2 + (1-rho)*g^2; d = sqrt(Ed2+eps)/sqrt(Eg2+eps)*g;
    Ed2 = rho*Ed2 + (1-rho)*d^2; w -= d + wd*w``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    acc_g *= rho
    acc_g += (1 - rho) * g * g
    delta = xp.sqrt(acc_delta + epsilon) / xp.sqrt(acc_g + epsilon) * g
    acc_delta *= rho
    acc_delta += (1 - rho) * delta * delta
    if wd:
        delta += wd * weight
    weight -= delta


@register
class AdaDelta(Optimizer):
    """AdaDelta with MXNet's defaults ``rho=0.9``, ``epsilon=1e-5``."""
    hyperparameters = ('rho', 'epsilon')

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def create_state(self, index, weight):
        return (self._zeros_like(weight), self._zeros_like(weight))

    def step(self, xp, weight, grad, state, lr, wd, t):
        adadelta_update(xp, weight, grad, state[0], state[1], wd, self.rho, self.epsilon,
                        self.rescale_grad, self.clip_bound)
