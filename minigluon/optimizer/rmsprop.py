"""RMSProp (Tieleman & Hinton), and the centered variant of Graves (2013): MXNet's
rmsprop_update and rmspropalex_update."""
from ..ndarray.ops.updates import NO_CLIP, rmsprop_step, rmspropalex_step
from .optimizer import Optimizer, register


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
        clip_weights = self.clip_weights if self.clip_weights else NO_CLIP  # as clip_bound
        if self.centered:
            rmspropalex_step(xp, weight, grad, state[0], state[1], state[2], lr, wd,
                             self.gamma1, self.gamma2, self.epsilon, self.rescale_grad,
                             self.clip_bound, clip_weights)
        else:
            n = state[0] if isinstance(state, tuple) else state  # bare array: older saves
            rmsprop_step(xp, weight, grad, n, lr, wd, self.gamma1, self.epsilon,
                         self.rescale_grad, self.clip_bound, clip_weights)
