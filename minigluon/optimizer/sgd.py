"""SGD with optional momentum: MXNet's sgd_update / sgd_mom_update."""
from ..ndarray.ops.updates import sgd_step
from .optimizer import Optimizer, register


@register
class SGD(Optimizer):
    """Stochastic gradient descent, with momentum when ``momentum > 0``.

    With ``multi_precision`` a float16 weight's state is ``(momentum, float32 master)``,
    MXNet's order for this optimizer. ``lazy_update`` matters only for sparse gradients,
    which minigluon does not have.
    """
    hyperparameters = ('momentum', 'lazy_update')
    master_copy_first = False

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def step(self, xp, weight, grad, state, lr, wd, t):
        sgd_step(xp, weight, grad, state, lr, wd, self.momentum, self.rescale_grad,
                 self.clip_bound)


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """Deprecated in MXNet: the same as :class:`SGD`."""
