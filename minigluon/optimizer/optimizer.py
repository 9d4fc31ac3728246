"""The Optimizer base class, its registry, and its JSON form for the wire.

Every optimizer keeps its maths in a pure function over raw arrays (in its own
module) that updates weight and state in place; the class only works out the
learning rate, weight decay and step count for a parameter index and calls it. The
parameter servers of the distributed store run the very same classes, rebuilt from
``to_config()`` (registry name + JSON hyper-parameters), so workers and servers
cannot drift apart and nothing is pickled.
"""
import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..registry import Registry

_REGISTRY = Registry('optimizer')


def register(klass):
    """Class decorator: make ``klass`` creatable by its lower-case name."""
    return _REGISTRY.register(klass)


def create(name, **kwargs):
    """An optimizer instance from its registered name (case-insensitive)."""
    if isinstance(name, Optimizer):
        return name
    return _REGISTRY.find(name)(**kwargs)


def registered():
    """``{name: class}`` of every registered optimizer."""
    return dict(_REGISTRY.items())


def clip(xp, grad, bound):
    """Clip ``grad`` to ``[-bound, bound]`` in place when ``bound`` is set."""
    if bound is not None and bound > 0:
        xp.clip(grad, -bound, bound, out=grad)
    return grad


def prepared_grad(xp, grad, weight, rescale_grad, clip_gradient, wd=0.0):
    """``clip(rescale_grad * grad + wd * weight)`` as a new array (MXNet's order)."""
    g = grad * rescale_grad
    if wd:
        g += wd * weight
    return clip(xp, g, clip_gradient)


class Optimizer:
    """Base class of all optimizers (MXNet's constructor arguments).

    Parameters
    ----------
    learning_rate : float, default 0.01
    wd : float, default 0.0
        L2 weight decay, scaled per parameter by its ``wd_mult``.
    rescale_grad : float, default 1.0
        Gradients are multiplied by this first (the Trainer sets ``1 / batch_size``).
    clip_gradient : float, optional
        Clip the rescaled gradient to ``[-clip_gradient, clip_gradient]``.
    lr_scheduler : LRScheduler, optional
        Gives the learning rate from the update count; its ``base_lr`` is set here.
    multi_precision : bool, default False
        Keep a float32 master copy of float16 weights and update that.
    begin_num_update : int, default 0
    param_dict : dict of index -> Parameter, optional
        Source of per-parameter ``lr_mult``/``wd_mult`` (the Trainer passes it).
    """
    # Constructor arguments that hold hyper-parameters (subclasses extend this).
    hyperparameters = ()

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr = 0.01 if learning_rate is None else learning_rate
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is not None:
            lr_scheduler.base_lr = self.lr
        self.wd = wd
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count = {}
        self.idx2name = dict(param_idx2name or {})
        self.param_dict = dict(param_dict or {})
        self.lr_mult = {}
        self.wd_mult = {}

    # ---- registry ------------------------------------------------------------------
    register = staticmethod(register)
    create_optimizer = staticmethod(create)

    # ---- learning rate ---------------------------------------------------------------
    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise MXNetError('set_learning_rate: this optimizer has an lr_scheduler, which '
                             'decides the rate; change the scheduler instead')
        self.lr = lr

    def set_lr_mult(self, args_lr_mult):
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        self.wd_mult = dict(args_wd_mult)

    def _mult(self, index, table, attr):
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        name = self.idx2name.get(index)
        return table.get(name, 1.0) if name is not None else 1.0

    def _get_lr(self, index):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return lr * self._mult(index, self.lr_mult, 'lr_mult')

    def _get_wd(self, index):
        return self.wd * self._mult(index, self.wd_mult, 'wd_mult')

    def _update_count(self, index):
        count = self._index_update_count.get(index, self.begin_num_update) + 1
        self._index_update_count[index] = count
        self.num_update = max(count, self.num_update)
        return count

    # ---- states and updates ------------------------------------------------------------
    def create_state(self, index, weight):
        """Per-parameter state: None, an NDArray, or a tuple of NDArrays."""
        return None

    def _zeros_like(self, weight, dtype=None):
        xp = weight.context.xp
        return NDArray(xp.zeros(weight.shape, dtype=dtype or weight._data.dtype), weight.context)

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight._data.dtype == np.float16:
            master = NDArray(weight._data.astype(np.float32), weight.context)
            return (master, self.create_state(index, master))
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update NDArray ``weight`` in place from ``grad`` and ``state``."""
        t = self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        ctx = weight.context
        raw_state = _raw(state)
        with ctx.device():
            self.step(ctx.xp, weight._data, grad._data, raw_state, lr, wd, t)

    def update_multi_precision(self, index, weight, grad, state):
        if self.multi_precision and weight._data.dtype == np.float16:
            master, inner = state
            self.update(index, master, NDArray(grad._data.astype(np.float32), grad.context), inner)
            weight._data[...] = master._data
        else:
            self.update(index, weight, grad, state)

    def step(self, xp, weight, grad, state, lr, wd, t):
        """The pure update on raw arrays; subclasses call their update function."""
        raise NotImplementedError('%s does not implement step()' % type(self).__name__)

    # ---- JSON form -------------------------------------------------------------------
    def to_config(self):
        """``{'name', 'params', 'lr_scheduler'}``: everything needed to rebuild it."""
        params = {'learning_rate': self.lr, 'wd': self.wd, 'rescale_grad': self.rescale_grad,
                  'clip_gradient': self.clip_gradient, 'multi_precision': self.multi_precision,
                  'begin_num_update': self.begin_num_update}
        for name in self.hyperparameters:
            params[name] = getattr(self, name)
        sched = self.lr_scheduler.to_config() if self.lr_scheduler is not None else None
        return {'name': type(self).__name__.lower(), 'params': params, 'lr_scheduler': sched}

    @staticmethod
    def from_config(config):
        """Rebuild an optimizer from ``to_config()`` output (validated, never eval'ed)."""
        if not isinstance(config, dict) or not isinstance(config.get('params'), dict):
            raise MXNetError('optimizer config must be a dict with name and params')
        klass = _REGISTRY.get(config.get('name'))
        if klass is None:
            raise MXNetError('unknown optimizer %r in config' % (config.get('name'),))
        allowed = {'learning_rate', 'wd', 'rescale_grad', 'clip_gradient', 'multi_precision',
                   'begin_num_update'} | set(klass.hyperparameters)
        params = config['params']
        unknown = set(params) - allowed
        if unknown:
            raise MXNetError('optimizer config for %r has unknown parameters %s'
                             % (config['name'], sorted(unknown)))
        for key, value in params.items():
            if not isinstance(value, (int, float, bool, str, type(None))):
                raise MXNetError('optimizer parameter %r must be a number, bool, string or null'
                                 % key)
        sched = None
        if config.get('lr_scheduler') is not None:
            from ..lr_scheduler import from_config
            sched = from_config(config['lr_scheduler'])
        return klass(lr_scheduler=sched, **params)

    def __repr__(self):
        cfg = self.to_config()
        return '%s(%s)' % (type(self).__name__, ', '.join('%s=%r' % kv
                                                          for kv in cfg['params'].items()))


def _raw(state):
    """NDArray states -> raw arrays, keeping the tuple structure."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        return state._data
    if isinstance(state, (tuple, list)):
        return tuple(_raw(s) for s in state)
    return state
