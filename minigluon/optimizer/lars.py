"""LARS: SGD with momentum whose learning rate is scaled per layer (MXNet 1.x's ``LARS``,
from You, Gitman and Ginsburg, "Large Batch Training of Convolutional Networks", 2017).

For each parameter not named ``*gamma``, ``*beta`` or ``*bias``, with ``w = |weight|``
and ``g = |grad| * rescale_grad`` (L2 norms, float32)::

    lr_layer = lr * eta * w / (g + wd * w + eps)    if w > 0 and g > 0, else lr

then the SGD momentum step of ``sgd_update``. With ``momentum_correction`` the
momentum is multiplied by ``lr / previous lr`` (Goyal et al., 2017): the learning rate
of this call over the one of the call before.
"""
import numpy as np

from ..ndarray.ops.updates import sgd_step
from .optimizer import Optimizer, _raw, register

_NOT_SCALED = ('gamma', 'beta', 'bias')


@register
class LARS(Optimizer):
    """Layer-wise adaptive rate scaling on SGD with momentum.

    Parameters
    ----------
    momentum : float, default 0.0
    lazy_update : bool, default True
        Accepted for MXNet's signature; it matters only for sparse gradients.
    eta : float, default 0.001
        The LARS coefficient.
    eps : float, default 0
        Added to the denominator of the layer's ratio.
    momentum_correction : bool, default True
        Scale the momentum by the change of the learning rate between calls.

    Parameters named ``*gamma``, ``*beta`` or ``*bias`` (``param_idx2name``) keep the
    plain learning rate, and, by MXNet's rule for this optimizer, every named
    parameter but ``*_weight`` gets no weight decay. One ``update`` call with a list of
    indices looks the learning rate up once, as MXNet's aggregated update does.
    """
    hyperparameters = ('momentum', 'lazy_update', 'eta', 'eps', 'momentum_correction')
    master_copy_first = False

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.eta = eta
        self.eps = eps
        self.momentum_correction = momentum_correction
        self.last_lr = None
        self.cur_lr = None

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers; named parameters other than
        ``*_weight`` get 0 unless ``args_wd_mult`` says otherwise."""
        self.wd_mult = {name: 0.0 for name in self.idx2name.values()
                        if not name.endswith('_weight')}
        self.wd_mult.update(args_wd_mult)

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0.0 else None

    def _get_lrs(self, indices):
        """The learning rates of ``indices``, remembering this call's base rate and the
        previous call's for the momentum correction."""
        lrs = super()._get_lrs(indices)
        base = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None \
            else self.lr
        self.last_lr = base if self.cur_lr is None else self.cur_lr
        self.cur_lr = base
        return lrs

    def _layer_lr(self, index, weight, grad, lr, wd):
        """``lr`` scaled by the layer's LARS ratio, in float32 as MXNet's kernel."""
        name = self.idx2name.get(index, str(index))
        if name.endswith(_NOT_SCALED):
            return lr
        f32 = np.float32
        w_norm = f32(np.sqrt(f32(float((weight.astype('float32') ** 2).sum()))))
        g_norm = f32(np.sqrt(f32(float((grad.astype('float32') ** 2).sum()))))
        if not (w_norm > 0 and g_norm > 0):
            return lr
        return float(f32(lr) * f32(self.eta) * w_norm
                     / (g_norm * f32(self.rescale_grad) + f32(wd) * w_norm + f32(self.eps)))

    def update(self, index, weight, grad, state):
        single = not isinstance(index, (list, tuple))
        indices, weights, grads, states = ([index], [weight], [grad], [state]) if single \
            else (list(index), list(weight), list(grad), list(state))
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        momentum = self.momentum
        if self.momentum_correction and self.last_lr != 0:
            momentum = self.momentum * (self.cur_lr / self.last_lr)
        for idx, w, g, s, lr, wd in zip(indices, weights, grads, states, lrs, wds):
            ctx = w.context
            with ctx.device():
                lr = self._layer_lr(idx, w._data, g._data, lr, wd)
                sgd_step(ctx.xp, w._data, g._data, _raw(s), lr, wd, momentum,
                         self.rescale_grad, self.clip_bound)

    def update_multi_precision(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)) and \
                not any(self._uses_master_copy(w) for w in weight):
            self.update(index, weight, grad, state)  # one learning-rate look-up for all
            return
        super().update_multi_precision(index, weight, grad, state)
