"""MXNet's ``Test`` optimizer: a trivial, exactly predictable update for testing stores."""
from .optimizer import Optimizer, register


@register
class Test(Optimizer):
    """``w += rescale_grad * grad``; the state holds a copy of the new weight.

    With ``rescale_grad=1`` a weight ends as its start plus the sum of every gradient
    pushed, which makes what a kvstore did to it easy to check.
    """

    def create_state(self, index, weight):
        return self._zeros_like(weight, dtype='float32')

    def step(self, xp, weight, grad, state, lr, wd, t):
        weight += grad * self.rescale_grad
        state[...] = weight
