"""SGD with optional momentum (MXNet's sgd_update / sgd_mom_update)."""
import functools

from .. import backend
from .optimizer import Optimizer, prepared_grad, register

# The formula above, step for step in the same order and dtype, as one CUDA kernel.
_CLIPPED = ('T g = grad * rescale; '
            'if (bound >= 0) g = g > bound ? bound : (g < -bound ? (T)(-bound) : g);')


@functools.lru_cache(maxsize=None)
def _momentum_kernel():
    return backend.cupy.ElementwiseKernel(
        'T grad, T lr, T lrwd, T momentum, T rescale, T bound', 'T weight, T mom',
        _CLIPPED + 'mom = mom * momentum; mom = mom - lrwd * weight; mom = mom - lr * g; '
        'weight = weight + mom;', 'minigluon_sgd_mom_update')


@functools.lru_cache(maxsize=None)
def _plain_kernel():
    return backend.cupy.ElementwiseKernel(
        'T grad, T lr, T wd, T rescale, T bound', 'T weight',
        _CLIPPED + 'g = g + wd * weight; weight = weight - lr * g;', 'minigluon_sgd_update')


def sgd_update(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """``mom = momentum*mom - lr*wd*w - lr*g; w += mom`` (plain ``w = (1-lr*wd)*w - lr*g``
    without momentum), with ``g = clip(rescale_grad * grad)``: unlike Adam's, MXNet's
    SGD kernels clip the gradient before weight decay is added."""
    if backend.is_device_array(weight):  # one kernel instead of seven
        bound = clip_gradient if clip_gradient is not None and clip_gradient > 0 else -1.0
        if mom is None:
            _plain_kernel()(grad, lr, wd, rescale_grad, bound, weight)
        else:
            _momentum_kernel()(grad, lr, lr * wd, momentum, rescale_grad, bound, weight, mom)
        return
    g = prepared_grad(xp, grad, weight, rescale_grad, clip_gradient)
    if mom is None:
        g += wd * weight
        weight -= lr * g
    else:
        mom *= momentum
        mom -= lr * wd * weight
        mom -= lr * g
        weight += mom


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
        sgd_update(xp, weight, grad, state, lr, wd, self.momentum, self.rescale_grad,
                   self.clip_gradient)


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """Deprecated in MXNet: the same as :class:`SGD`."""
