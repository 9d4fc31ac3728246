"""The Optimizer base class, its registry, and its JSON form for the wire.

Every optimizer keeps its maths in a pure function over raw arrays that updates weight
and state in place: the one behind MXNet's update op where MXNet has one
(``ndarray/ops/updates.py``: ``nd.sgd_mom_update`` and the SGD class run the same
``sgd_step``), else in the optimizer's own module. The class only works out the learning
rate, weight decay and step count for a parameter index and calls it. The parameter
servers of the distributed store run the very same classes, rebuilt from ``to_config()``
(registry name + JSON hyper-parameters), so workers and servers cannot drift apart and
nothing is pickled.
"""
import warnings

import numpy as np

from .. import profiler
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ndarray.ops.updates import NO_CLIP
from ..registry import Registry

_REGISTRY = Registry('optimizer')


def register(klass):
    """Class decorator: make ``klass`` creatable by its lower-case name."""
    return _REGISTRY.register(klass)


def create(name, **kwargs):
    """An optimizer instance from its registered name (case-insensitive).

    Parameters
    ----------
    name : str or Optimizer
        A registered name such as ``'sgd'`` or ``'adam'``; an Optimizer instance is
        returned as it is.
    **kwargs
        Constructor arguments of the optimizer (``learning_rate``, ``wd``, ...).

    Returns
    -------
    Optimizer
    """
    if isinstance(name, Optimizer):
        return name
    return _REGISTRY.find(name)(**kwargs)


def registered():
    """``{name: class}`` of every registered optimizer."""
    return dict(_REGISTRY.items())


class Optimizer:
    """Base class of all optimizers (MXNet's constructor arguments).

    Parameters
    ----------
    rescale_grad : float, default 1.0
        Gradients are multiplied by this first (the Trainer sets ``1 / batch_size``).
    param_idx2name : dict of int -> str, optional
        Names of parameter indices: ``lr_mult``/``wd_mult`` may then be keyed by name,
        and parameters whose name ends neither in ``_weight`` nor ``_gamma`` get no
        weight decay (MXNet's rule).
    wd : float, default 0.0
        L2 weight decay, scaled per parameter by its ``wd_mult``.
    clip_gradient : float, optional
        Clip the rescaled gradient to ``[-clip_gradient, clip_gradient]``; None, 0 or a
        negative value clips nothing.
    learning_rate : float, optional
        The learning rate; with an ``lr_scheduler`` it replaces the scheduler's
        ``base_lr``. 0.01 when neither is given.
    lr_scheduler : LRScheduler, optional
        Gives the learning rate from the update count.
    sym : None
        Accepted for MXNet's signature; minigluon has no symbols.
    begin_num_update : int, default 0
    multi_precision : bool, default False
        Keep a float32 master copy of float16 weights and update that.
    param_dict : dict of index -> Parameter, optional
        Source of per-parameter ``lr_mult``/``wd_mult`` (the Trainer passes it).
    """
    # Constructor arguments that hold hyper-parameters (subclasses extend this).
    hyperparameters = ()
    # Where the float32 master copy of a float16 weight sits in the state MXNet builds:
    # (master, state) for most optimizers, (state, master) for the SGD family.
    master_copy_first = True

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None \
                and lr_scheduler.base_lr != learning_rate:
            warnings.warn('learning rate from ``lr_scheduler`` has been overwritten by '
                          '``learning_rate`` in optimizer.', UserWarning, stacklevel=2)
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count = {}
        self.aggregate_num = 0   # MXNet's fused multi-weight kernels; updates here are per weight
        if param_idx2name is not None and not isinstance(param_idx2name, dict):
            raise MXNetError('param_idx2name must be a dict of parameter indices to names, '
                             'got %s' % type(param_idx2name).__name__)
        self.idx2name = dict(param_idx2name or {})
        self.param_dict = dict(param_dict or {})
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ---- registry ------------------------------------------------------------------
    register = staticmethod(register)
    create_optimizer = staticmethod(create)

    @property
    def clip_bound(self):
        """``clip_gradient`` as the update functions take it: MXNet's optimizers pass it
        on only when set and non-zero, and ``-1`` (any negative value) clips nothing."""
        return self.clip_gradient if self.clip_gradient else NO_CLIP

    # ---- learning rate and multipliers ----------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate: the scheduler's at ``num_update``, else ``lr``."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate; raises UserWarning when an lr_scheduler decides it."""
        if self.lr_scheduler is not None:
            raise UserWarning('LRScheduler of the optimizer has already been defined. Note '
                              'that set_learning_rate can mutate the value of the learning '
                              'rate of the optimizer only when the LRScheduler of the '
                              'optimizer is undefined.')
        self.lr = lr

    def set_lr_mult(self, args_lr_mult):
        """Per-parameter learning-rate multipliers, keyed by index or name."""
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers, keyed by index or name.

        Named parameters (``param_idx2name``) other than ``*_weight``/``*_gamma`` get 0
        unless ``args_wd_mult`` says otherwise: biases and BatchNorm betas are not decayed.
        """
        self.wd_mult = {name: 0.0 for name in self.idx2name.values()
                        if not (name.endswith('_weight') or name.endswith('_gamma'))}
        self.wd_mult.update(args_wd_mult)

    def _mults(self, indices, table, attr):
        out = []
        for index in indices:
            if index in self.param_dict:
                out.append(getattr(self.param_dict[index], attr))
            elif index in table:
                out.append(table[index])
            elif index in self.idx2name:
                out.append(table.get(self.idx2name[index], 1.0))
            else:
                out.append(1.0)
        return out

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * m for m in self._mults(indices, self.lr_mult, 'lr_mult')]

    def _get_wds(self, indices):
        return [self.wd * m for m in self._mults(indices, self.wd_mult, 'wd_mult')]

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def _update_count(self, index):
        """Count one more update of ``index`` (or of each index of a list)."""
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    # ---- states and updates ------------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state of one parameter (momentum, moment estimates, ...).

        The base class keeps none; subclasses allocate arrays like ``weight``.

        Parameters
        ----------
        index : int or str
            The parameter's index (its key in the Trainer).
        weight : NDArray
            The parameter's weight, giving shape, dtype and context.

        Returns
        -------
        None, NDArray or tuple of NDArray
        """
        return None

    def _zeros_like(self, weight, dtype=None):
        xp = weight.context.xp
        return NDArray(xp.zeros(weight.shape, dtype=dtype or weight._data.dtype), weight.context)

    def _uses_master_copy(self, weight):
        return self.multi_precision and weight._data.dtype == np.float16

    def create_state_multi_precision(self, index, weight):
        """``create_state``, plus a float32 master copy of a float16 weight when
        ``multi_precision`` is set."""
        if self._uses_master_copy(weight):
            master = NDArray(weight._data.astype(np.float32), weight.context)
            state = self.create_state(index, master)
            return (master, state) if self.master_copy_first else (state, master)
        if weight._data.dtype == np.float16:
            warnings.warn('Accumulating with float16 in optimizer can lead to poor accuracy or '
                          'slow convergence. Consider using multi_precision=True option of the '
                          '%s optimizer' % type(self).__name__, stacklevel=2)
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Update NDArray ``weight`` in place from ``grad`` and ``state``.

        Counts the update, looks up the parameter's learning rate and weight decay
        (with their multipliers and the scheduler) and runs ``step`` on the raw arrays.

        Parameters
        ----------
        index : int or str, or a list of them
            The parameter's index; with a list, ``weight``, ``grad`` and ``state`` are
            lists too and each parameter is updated in turn.
        weight : NDArray
            The weight, updated in place.
        grad : NDArray
            Its gradient (scaled by ``rescale_grad`` and clipped inside ``step``).
        state : None, NDArray or tuple of NDArray
            What ``create_state`` returned, updated in place.
        """
        if isinstance(index, (list, tuple)):
            for args in zip(index, weight, grad, state):
                self.update(*args)
            return
        self._update_count(index)
        t = self._index_update_count[index]
        lr, wd = self._get_lr(index), self._get_wd(index)
        ctx = weight.context
        start = profiler.now_if_recording()
        with ctx.device():
            self.step(ctx.xp, weight._data, grad._data, _raw(state), lr, wd, t)
        if start is not None:
            profiler.record_range(start, 'optimizer', type(self).__name__.lower() + '_update',
                                  {'index': index, 'lr': lr, 'wd': wd, 'device': str(ctx)})

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, through the float32 master copy for float16 weights when
        ``multi_precision`` is set."""
        if isinstance(index, (list, tuple)):
            for args in zip(index, weight, grad, state):
                self.update_multi_precision(*args)
            return
        if self._uses_master_copy(weight):
            master, inner = state if self.master_copy_first else (state[1], state[0])
            self.update(index, master, NDArray(grad._data.astype(np.float32), grad.context),
                        inner)
            weight._data[...] = master._data
        else:
            self.update(index, weight, grad, state)

    def step(self, xp, weight, grad, state, lr, wd, t):
        """The pure update on raw arrays; every subclass implements it.

        Parameters
        ----------
        xp : module
            ``numpy`` or ``cupy``, the array module of the arrays.
        weight, grad : numpy.ndarray or cupy.ndarray
            The weight, updated in place, and its gradient.
        state : None, array or tuple of arrays
            The raw arrays of ``create_state``'s result, updated in place.
        lr, wd : float
            This parameter's learning rate and weight decay for this update.
        t : int
            The number of updates of this parameter so far, this one included, counted
            from ``begin_num_update``.
        """
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
