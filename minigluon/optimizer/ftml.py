"""FTML: Follow the Moving Leader (Zheng & Kwok, ICML 2017)."""
from .optimizer import Optimizer, prepared_grad, register


def ftml_update(xp, weight, grad, d_prev, v, z, lr, wd, t, beta1, beta2, epsilon, rescale_grad,
                clip_gradient):
    """``v = b2*v + (1-b2)*g^2; d = (1-b1^t)/lr * (sqrt(v/(1-b2^t)) + eps);
    z = b1*z + (1-b1)*g - (d - b1*d_prev)*w; w = -z/d``."""
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient, wd)
    v *= beta2
    v += (1 - beta2) * g * g
    d = (1 - beta1 ** t) / lr * (xp.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z *= beta1
    z += (1 - beta1) * g - (d - beta1 * d_prev) * weight
    d_prev[...] = d
    weight[...] = -z / d


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
        ftml_update(xp, weight, grad, state[0], state[1], state[2], lr, wd, t, self.beta1,
                    self.beta2, self.epsilon, self.rescale_grad, self.clip_gradient)
