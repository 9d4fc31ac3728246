"""Parameters: named arrays with one copy (and one gradient buffer) per device.

Names follow Gluon 1.x: a ParameterDict puts its prefix in front of the names it
creates (``dense0_`` + ``weight``), and a Block's dict has the Block's prefix. A
Parameter assigned to a Block attribute without a dict (``self.weight =
Parameter('weight', ...)``) is named the same way, as if the Block's
``params.get('weight', ...)`` had made it. Shapes may hold 0 for a dimension not known
yet; such a parameter is initialized on the first forward pass, once its Block has
seen an input (deferred initialization).
"""
import copy
import re
import warnings
import weakref

import numpy as np

from .. import autograd
from .. import initializer
from .. import symbol
from ..base import MXNetError, MXNetValueError
from ..context import Context, cpu, current_context
from ..ndarray import NDArray, array as nd_array, load as nd_load, save as nd_save
from ..ndarray import zeros as nd_zeros
from ..ndarray.dispatch import PendingArray, set_op_monitor
from ..ndarray.dtypes import normalize_dtype
from .utils import shape_is_known

__all__ = ['Parameter', 'Constant', 'ParameterDict', 'DeferredInitializationError']

_GRAD_REQS = ('write', 'add', 'null')
_STYPES = ('default', 'row_sparse', 'csr')
# ParameterDict.get arguments that only shape a new Parameter (as in MXNet, an existing
# one is not checked against them)
_CREATION_ONLY = ('allow_deferred_init', 'differentiable', 'stype', 'grad_stype')


_EVENTS = ('grad_write', 'grad_ready', 'grad_access', 'load')


class _HookHandle:
    """What ``Parameter.register_hook`` returns: ``remove()`` unregisters the hook."""
    __slots__ = ('_hooks', '_hook')

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class DeferredInitializationError(MXNetError):
    """A parameter's shape is not known until the first forward pass."""


def _ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, (list, tuple)):
        if not ctx:
            raise MXNetError('ctx must be a Context or a non-empty list of Contexts')
        return [Context(c) for c in ctx]
    return [Context(ctx)]


class Parameter:
    """A weight of a Block: data and gradient on each device of ``list_ctx()``.

    Parameters
    ----------
    name : str, default 'weight'
        The name. Assigned to a Block attribute, a Parameter not made by a
        ParameterDict gets the Block's prefix in front (``dense0_weight``).
    grad_req : {'write', 'add', 'null'}
        How backward stores gradients: overwrite, accumulate, or none at all.
    shape : int or tuple of int, optional
        0 marks a dimension inferred on the first forward pass.
    dtype : str or numpy dtype, default 'float32'
    lr_mult, wd_mult : float
        Multipliers of the optimizer's learning rate and weight decay.
    init : Initializer or str, optional
        This parameter's own initializer; overrides the one given to ``initialize``.
    allow_deferred_init : bool
        Whether ``initialize`` may wait for the shape to become known.
    differentiable : bool
        False forces ``grad_req='null'`` (e.g. BatchNorm running statistics).
    """

    def __init__(self, name='weight', grad_req='write', shape=None, dtype='float32',
                 lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False,
                 differentiable=True, stype='default', grad_stype='default'):
        for what, value in (('stype', stype), ('grad_stype', grad_stype)):
            if value not in _STYPES:  # an assertion in MXNet too
                raise AssertionError("%s for Parameter '%s' must be one of 'default', "
                                     "'row_sparse', or 'csr', but got '%s'" % (what, name, value))
        if stype != 'default' or grad_stype != 'default':
            raise MXNetError("Parameter %r: only stype='default' (dense) storage is supported"
                             % name)
        self.name = name
        self._named = False  # True once a ParameterDict holds it under its full name
        self._owner = None  # weakref to the first Block that has it as an attribute
        self._attr = None  # the attribute name there
        self._shape = None
        self.shape = shape
        self.dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._grad_req = None
        self._data = None  # list of NDArray, one per context of _ctx_list
        # (weak reference to a data array, its gradient-write count) at the last update
        self._grad_used_at = []
        self._grad = None
        self._ctx_list = None
        self._deferred_init = ()  # (init, ctx_list, default_init, data) while deferred
        self._hooks = {}  # event -> [callable(param)]: see register_hook
        self._pending = None  # new data on its way (expect_data), waited for before use
        self._var = None  # ((name, dtype), the graph variable) once ``var()`` made it
        self.grad_req = grad_req

    # ---- identity --------------------------------------------------------------------
    @property
    def _structural_name(self):
        """The attribute path from the root Block (``features.0.weight``), the name
        ``save_parameters`` writes; ``name`` for a parameter no Block holds as an
        attribute. It depends only on how the model is built, not on what else the
        process created, so every process of a job derives the same one."""
        owner = self._owner() if self._owner is not None else None
        if owner is None:
            return self.name
        path = owner._path()
        return path + '.' + self._attr if path else self._attr

    def _label(self):
        owner = self._owner() if self._owner is not None else None
        kind = '' if owner is None else ' of %s' % type(owner).__name__
        return "Parameter '%s'%s" % (self.name, kind)

    def __repr__(self):
        return 'Parameter %s (shape=%s, dtype=%s)' % (self.name, self.shape,
                                                      np.dtype(self.dtype).name)

    # ---- attributes ------------------------------------------------------------------
    @property
    def shape(self):
        """The shape; 0 marks a dimension not known until the first forward."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        if new_shape is None:
            self._shape = None
            return
        if np.isscalar(new_shape):
            new_shape = (new_shape,)
        new_shape = tuple(int(d) for d in new_shape)
        if self._shape is not None:
            compatible = len(self._shape) == len(new_shape) and all(
                old <= 0 or old == new for old, new in zip(self._shape, new_shape))
            if not compatible:
                raise MXNetError('%s has shape %s, which is incompatible with the new shape %s'
                                 % (self._label(), self._shape, new_shape))
        self._shape = new_shape

    @property
    def dtype(self):
        """The numpy scalar type of the data (e.g. ``numpy.float32``)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self._dtype = normalize_dtype(dtype).type

    @property
    def grad_req(self):
        """How backward writes the gradient: 'write' (replace), 'add' (accumulate) or 'null' (none)."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in _GRAD_REQS:
            raise MXNetError("%s: grad_req must be 'write', 'add' or 'null', got %r"
                             % (self._label(), req))
        if not self._differentiable:
            req = 'null'
        if self._grad_req == req:
            return
        self._grad_req = req
        if self._data is None:
            return
        if req == 'null':
            self._grad = None
            for d in self._data:  # no longer graph variables
                d._grad, d._grad_req, d._grad_hook = None, None, None
        elif self._grad is None:
            self._init_grad()
        else:
            for d in self._data:
                d._grad_req = req

    def stale_grad_contexts(self):
        """The contexts whose gradient no backward has written since ``mark_grad_used``
        (every context before the first backward)."""
        return [d.context for d, n in zip(self._data or (), self.grad_writes_since_used())
                if not n]

    def grad_writes_since_used(self):
        """How many times backward wrote each context's gradient since ``mark_grad_used``."""
        used = {id(d): n for d, n in ((ref(), n) for ref, n in self._grad_used_at)
                if d is not None}  # arrays replaced since (cast, re-initialised) start at 0
        return [d._grad_writes - used.get(id(d), 0) for d in self._data or ()]

    def register_hook(self, event, hook):
        """Call ``hook(param)`` on ``event``; returns a handle whose ``remove()`` undoes it.

        Events: ``'grad_write'`` (backward is about to write the gradient on one context),
        ``'grad_ready'`` (it has written it), ``'grad_access'`` (the program takes the
        gradient buffers: ``grad()``, ``list_grad()``, ``zero_grad()``), ``'load'`` (a
        value was loaded from a file). A gradient reducer listens to overlap
        communication with backward.
        """
        if event not in _EVENTS:
            raise MXNetValueError('Parameter.register_hook: unknown event %r; the events are '
                                  '%s' % (event, ', '.join(_EVENTS)))
        hooks = self._hooks.setdefault(event, [])
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def _raise_event(self, event):
        for hook in self._hooks.get(event, ()):
            hook(self)

    def _on_grad(self, arr, written):
        """Backward is about to write (``written`` False) or has written the gradient of
        ``arr``, one of this parameter's arrays."""
        self._raise_event('grad_ready' if written else 'grad_write')

    def expect_data(self, pending):
        """New data is on its way (e.g. weights a kvstore is pulling): ``data()`` and every
        other use of the data first call ``pending.wait()``, which must write it."""
        self.wait_data()
        self._pending = pending

    def wait_data(self):
        """Wait until data announced with ``expect_data`` has arrived."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.wait()

    def mark_grad_used(self):
        """Record that the current gradients were applied; until the next backward
        writes them, ``stale_grad_contexts`` lists every context."""
        self._grad_used_at = [(weakref.ref(d), d._grad_writes) for d in self._data or ()]

    # ---- initialization --------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Allocate and fill the data on ``ctx`` (a Context or a list; current by default).

        ``init`` (else this parameter's own ``init``, else ``default_init``, else
        Uniform) fills the values. With dimensions still 0 and ``allow_deferred_init``,
        the work waits for the first forward pass.
        """
        if self._data is not None and not force_reinit:
            warnings.warn('%s is already initialized, ignoring. Set force_reinit=True to '
                          're-initialize.' % self._label(), stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _ctx_list(ctx)
        if default_init is None:
            default_init = initializer.Uniform()
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self.allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise MXNetError('cannot initialize %s: its shape %s is not fully known. Give '
                             'in_units / in_channels to its Block, or set the shape.'
                             % (self._label(), self.shape))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Run the initialization that waited for the shape (a no-op when none waits)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not shape_is_known(self.shape):
            raise DeferredInitializationError(
                '%s has unknown shape %s: run a forward pass first so its Block can infer '
                'it, or give in_units / in_channels' % (self._label(), self.shape))
        hook = set_op_monitor(None)  # filling a parameter is not the model's computation
        try:
            with autograd.pause():
                if data is None:
                    data = nd_zeros(self.shape, ctx=cpu(), dtype=self.dtype)
                    initializer.create(default_init)(
                        initializer.InitDesc(self.name, {'__init__': init}), data)
                self._init_impl(data, ctx)
        finally:
            set_op_monitor(hook)

    def _init_impl(self, data, ctx_list):
        """Put a copy of ``data`` on every context and attach gradient buffers."""
        self.wait_data()
        self._ctx_list = list(ctx_list)
        self._deferred_init = ()
        self._data = [data.copyto(c).astype(self.dtype, copy=False) for c in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == 'null':
            self._grad = None
            return
        self._grad = [nd_zeros(d.shape, ctx=d.context, dtype=d.dtype) for d in self._data]
        autograd.mark_variables(self._data, self._grad, self.grad_req)
        for d in self._data:
            d._grad_hook = self._on_grad

    def _check_and_get(self, arr_list, ctx):
        """The array for ``ctx`` (``list``: all of them); clear errors when unavailable."""
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            ctx = Context(ctx)
            for c, arr in zip(self._ctx_list, arr_list):
                if c == ctx:
                    return arr
            raise MXNetError('%s was not initialized on context %s; it lives on %s. Pass '
                             'ctx= to initialize, or move it with reset_ctx()'
                             % (self._label(), ctx, self._ctx_list))
        if self._deferred_init:
            raise DeferredInitializationError(
                '%s has not been initialized yet because initialization was deferred until '
                'its shape is known (%s): run a forward pass first, or give in_units / '
                'in_channels' % (self._label(), self.shape))
        raise MXNetError('%s has not been initialized; call net.initialize() (or '
                         'collect_params().initialize()) first' % self._label())

    # ---- access ----------------------------------------------------------------------
    def var(self):
        """This parameter as a graph variable (``mx.sym.var`` of its name, with its
        shape, dtype, multipliers and initializer as attributes), made once, so that
        every block sharing the parameter uses the same variable in a traced graph."""
        key = (self.name, self._dtype)
        if self._var is None or self._var[0] != key:
            self._var = (key, symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                         lr_mult=self.lr_mult, wd_mult=self.wd_mult,
                                         init=self.init, stype='default'))
        return self._var[1]

    def data(self, ctx=None):
        """The data on ``ctx`` (default: the current context, or the only copy), once any
        new weights the kvstore is pulling have arrived."""
        if self._pending is not None:
            self.wait_data()
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """The data on every context, in ``list_ctx()`` order (after any pull under way)."""
        if self._pending is not None:
            self.wait_data()
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise MXNetError("%s has no gradient because grad_req='null'" % self._label())
        self._raise_event('grad_access')
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient on every context, in the order of ``list_ctx()``.

        Returns
        -------
        list of NDArray

        Raises
        ------
        MXNetError
            When the parameter has no gradient (``grad_req='null'``) or is not initialized.
        """
        if self._data is not None and self._grad is None:
            raise MXNetError("%s has no gradient because grad_req='null'" % self._label())
        self._raise_event('grad_access')
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts the data lives on (or will, once deferred initialization ends)."""
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise MXNetError('%s has not been initialized; call net.initialize() first'
                             % self._label())
        return list(self._ctx_list)

    def zero_grad(self):
        """Set every gradient buffer to 0."""
        if self._grad:
            self._raise_event('grad_access')
        for g in self._grad or ():
            g[:] = 0

    def set_data(self, data):
        """Set the value on every context (``data``: NDArray or array-like)."""
        if not isinstance(data, NDArray):
            data = NDArray(np.asarray(data, dtype=self.dtype), cpu())
        self.shape = data.shape
        self.wait_data()  # a pull under way must not overwrite the new value
        if self._data is None:
            if not self._deferred_init:
                raise MXNetError('%s has not been initialized; call net.initialize() before '
                                 'set_data' % self._label())
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        with autograd.pause():
            for arr in self._data:
                arr[:] = data.as_in_context(arr.context).astype(arr.dtype, copy=False)

    def _reduce(self):
        """One copy of the data on cpu (all copies are kept equal by the Trainer)."""
        return self.list_data()[0].copyto(cpu())

    def reset_ctx(self, ctx):
        """Move the data (and gradient buffers) to ``ctx``, keeping the values."""
        ctx = _ctx_list(ctx)
        if self._data is not None:
            with autograd.pause():
                self._init_impl(self._reduce(), ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise MXNetError('cannot reset_ctx of %s: it has not been initialized; call '
                             'net.initialize() first' % self._label())

    def cast(self, dtype):
        """Convert data and gradient buffers to ``dtype``."""
        self.dtype = dtype
        if self._data is None:
            return
        self.wait_data()
        with autograd.pause():
            self._data = [d.astype(self.dtype) for d in self._data]
            if self._grad is not None:
                self._init_grad()

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source='current'):
        """Take the value ``data`` loaded from a file (shape and dtype checked)."""
        self._raise_event('load')  # e.g. a store's copy of the weights is stale now
        if self.shape is not None and (len(self.shape) != len(data.shape) or any(
                d > 0 and d != s for d, s in zip(self.shape, data.shape))):
            raise MXNetError('%s has shape %s in this Block but %s in the file'
                             % (self._label(), self.shape, data.shape))
        if np.dtype(data.dtype) != np.dtype(self.dtype):
            if not cast_dtype:
                raise MXNetError('%s has dtype %s in this Block but %s in the file; pass '
                                 'cast_dtype=True to convert' % (self._label(),
                                                                 np.dtype(self.dtype).name,
                                                                 np.dtype(data.dtype).name))
            if dtype_source == 'saved':
                self.dtype = data.dtype
            else:
                data = data.astype(self.dtype)
        self.shape = data.shape
        if self._data is not None:
            if ctx is not None and _ctx_list(ctx) != self._ctx_list:
                with autograd.pause():
                    self._init_impl(data, _ctx_list(ctx))
            else:
                self.set_data(data)
            return
        if ctx is None:
            ctx = self._deferred_init[1] if self._deferred_init else None
        with autograd.pause():
            self._init_impl(data, _ctx_list(ctx))


class _ConstantInit(initializer.Initializer):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value


class Constant(Parameter):
    """A parameter that never gets a gradient, initialized to ``value``.

    ``Constant(value)`` or, as in MXNet 1.x, ``Constant(name, value)``.
    """

    def __init__(self, name=None, value=None):
        if value is None:
            name, value = 'const', name
        if value is None:
            raise MXNetError('Constant needs a value: Constant(value) or Constant(name, value)')
        if not isinstance(value, NDArray):
            value = nd_array(value, ctx=cpu())  # Python numbers become float32, as in MXNet
        self.value = value
        super().__init__(name, grad_req='null', shape=value.shape, dtype=value.dtype,
                         init=_ConstantInit(value.asnumpy()), differentiable=False)

    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Allocate the value on ``ctx``; ``init`` is ignored: a Constant keeps its value."""
        super().initialize(self.init, ctx, default_init, force_reinit)

    def __repr__(self):
        return 'Constant %s (shape=%s, dtype=%s)' % (self.name, self.shape,
                                                     np.dtype(self.dtype).name)

    @property
    def grad_req(self):
        """Always 'null': a Constant never has a gradient."""
        return 'null'

    @grad_req.setter
    def grad_req(self, req):
        if req != 'null':
            warnings.warn('Constant %s does not support grad_req=%r; it stays "null"'
                          % (self.name, req), stacklevel=2)
        self._grad_req = 'null'


class _PendingData(PendingArray):
    """The data of a Parameter with unknown dimensions, handed to ``hybrid_forward``.

    The first op that consumes it completes the shape (the op table's shape rule, e.g.
    FullyConnected's weight is ``(num_hidden, in_units)``); then the deferred
    initialization finishes and the op runs on the real data. With ``shape_only`` the
    parameter gets its shape but stays uninitialized and the op sees zeros
    (``HybridBlock.infer_shape``).
    """

    def __init__(self, param, ctx, shape_only=False):
        super().__init__(param.shape, param.dtype, ctx, param._label())
        self._param = param
        self._shape_only = shape_only

    def _resolve(self, shape):
        param = self._param
        param.shape = shape
        if self._shape_only:
            return nd_zeros(param.shape, ctx=self.context, dtype=param.dtype)
        param._finish_deferred_init()
        return param.data(self.context)


def _brief(names, limit=5):
    names = list(names)
    shown = ', '.join(repr(n) for n in names[:limit])
    return shown + (', ... (%d in all)' % len(names) if len(names) > limit else '')


def _merge_shape(param, shape):
    """Fill the unknown dimensions of ``param`` from ``shape``; False when they clash."""
    if param.shape is None or shape is None:
        if shape is not None:
            param.shape = shape
        return True
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    if len(shape) != len(param.shape) or any(
            a > 0 and b > 0 and a != b for a, b in zip(param.shape, shape)):
        return False
    param.shape = tuple(a if a > 0 else b for a, b in zip(param.shape, shape))
    return True


class ParameterDict(dict):
    """Parameters keyed by their names, with bulk operations.

    ``collect_params()`` returns one; each Block has one as ``block.params``.

    Parameters
    ----------
    prefix : str, default ''
        Put in front of the names of the parameters ``get`` creates.
    shared : ParameterDict, optional
        ``get`` takes a parameter of that name from here before creating one: how a
        Block made with ``params=other.collect_params()`` shares ``other``'s weights.
    """

    def __init__(self, prefix='', shared=None):
        super().__init__()
        self._prefix = prefix
        self._shared = shared

    @property
    def prefix(self):
        """What ``get`` puts in front of the names of the parameters it creates."""
        return self._prefix

    def __repr__(self):
        body = '\n'.join('  ' + _indent_continuation(repr(v), 2) for v in self.values())
        return '%s(\n%s\n)' % (self._prefix + ' ' if self._prefix else '', body)

    def __getitem__(self, key):
        try:
            return super().__getitem__(key)
        except KeyError:
            raise KeyError('no parameter %r; the names are: %s' % (key, _brief(self.keys()))) \
                from None

    def _get_impl(self, name):
        """The parameter ``name`` (full name) from this dict or the shared one, or None."""
        param = dict.get(self, name)
        if param is None and self._shared is not None:
            param = dict.get(self._shared, name)
            if param is not None:
                dict.__setitem__(self, name, param)
        return param

    def get(self, name, **kwargs):
        """The Parameter ``prefix + name``: from this dict, else from the shared dict,
        else a new one made with ``kwargs`` (``shape``, ``init``, ``dtype`` ...).

        An existing parameter must agree with ``kwargs``; a 0 in either shape is
        filled from the other.
        """
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            param = Parameter(full, **kwargs)
            param._named = True
            dict.__setitem__(self, full, param)
            return param
        for key, value in kwargs.items():
            if key == 'shape':
                if not _merge_shape(param, value):
                    raise MXNetError('%s has shape %s, which does not match the requested '
                                     'shape %s' % (param._label(), param.shape, value))
            elif key == 'dtype':
                if np.dtype(normalize_dtype(value)) != np.dtype(param.dtype):
                    raise MXNetError('%s has dtype %s, not the requested %s'
                                     % (param._label(), np.dtype(param.dtype).name, value))
            elif value is not None and key not in _CREATION_ONLY:
                current = getattr(param, key, None)
                if current is None:
                    setattr(param, key, value)
                elif current != value:
                    raise MXNetError('%s has %s=%r, not the requested %r'
                                     % (param._label(), key, current, value))
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name``: from this dict, else from the shared dict,
        else a new one holding ``value``."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise KeyError("no constant named '%s'; give its value to create it" % full)
            param = Constant(full, value)
            param._named = True
            dict.__setitem__(self, full, param)
        elif value is not None:
            if not isinstance(param, Constant):
                raise MXNetError("'%s' exists and is a Parameter, not a Constant" % full)
            value = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise MXNetError("Constant '%s' exists with another value" % full)
        return param

    def _adopt(self, param):
        """Name ``param`` (made outside any ParameterDict) as ``get`` would and hold it;
        a parameter of that name here or in the shared dict wins (its unknown
        dimensions filled from ``param``'s shape)."""
        full = self._prefix + param.name
        existing = self._get_impl(full)
        if existing is not None and existing is not param:
            if not _merge_shape(existing, param.shape):
                raise MXNetError('%s has shape %s, which does not match the shape %s of the '
                                 'parameter it is shared with' % (existing._label(),
                                                                  existing.shape, param.shape))
            return existing
        param.name = full
        param._named = True
        dict.__setitem__(self, full, param)
        return param

    def update(self, other):
        """Add the parameters of ``other``; a different Parameter under an existing name errors."""
        for k, v in other.items():
            if k in self and super().__getitem__(k) is not v:
                raise MXNetError('cannot update ParameterDict: %r names a different Parameter '
                                 'in each dict. Give the Blocks different prefixes, or share '
                                 'the parameter with params=' % k)
        for k, v in other.items():
            dict.__setitem__(self, k, v)

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize every parameter (``init`` is the default for those without their own)."""
        init = initializer.Uniform() if init is None else initializer.create(init)
        if verbose:
            init = copy.copy(init).set_verbosity(verbose=True)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set the gradient buffers of every parameter to 0."""
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to ``ctx`` (a Context or a list), keeping the values."""
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self):
        """Every context any parameter lives on."""
        out = []
        for param in self.values():
            for c in param.list_ctx():
                if c not in out:
                    out.append(c)
        return out

    def setattr(self, name, value):
        """Set attribute ``name`` (``grad_req``, ``lr_mult``, ...) on every parameter."""
        for param in self.values():
            setattr(param, name, value)

    def select(self, select):
        """The parameters whose names match regex ``select`` (``re.match``)."""
        pattern = re.compile(select)
        out = ParameterDict(self._prefix)
        for k, v in self.items():
            if pattern.match(k):
                dict.__setitem__(out, k, v)
        return out

    def save(self, filename, strip_prefix=''):
        """Save the values by parameter name (``nd.save``: MXNet's NDArray file format).

        Parameters
        ----------
        strip_prefix : str
            Removed from the front of every name; a name without it is an error.
        """
        arrays = {}
        for param in self.values():
            name = param.name
            if not name.startswith(strip_prefix):
                raise MXNetError(
                    "cannot strip prefix '%s' from parameter name '%s': the Block may share "
                    "parameters of other Blocks, or its children were made outside "
                    "'with self.name_scope():'" % (strip_prefix, name))
            arrays[name[len(strip_prefix):]] = param._reduce()
        nd_save(filename, arrays)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix='', cast_dtype=False, dtype_source='current'):
        """Load values saved by ``save`` (names are parameter names).

        Parameters
        ----------
        ctx : Context or list of Context, optional
            Where to put parameters not initialized yet.
        allow_missing : bool
            Keep parameters that the file lacks instead of raising.
        ignore_extra : bool
            Skip file entries this dict has no parameter for instead of raising.
        restore_prefix : str
            Put in front of every name read from the file.
        cast_dtype : bool
            Convert values to the parameter's dtype (``dtype_source='current'``) or the
            parameter to the file's dtype (``'saved'``).
        """
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise MXNetError("restore_prefix is '%s' but parameter name '%s' does not "
                                     "start with it" % (restore_prefix, name))
        loaded = nd_load(filename, ctx=cpu())
        if isinstance(loaded, list) and not loaded:
            loaded = {}  # a file of no parameters has no names, so it loads as a list
        if not isinstance(loaded, dict):
            raise MXNetError('%s holds a list of arrays, not named parameters; write it with '
                             'save_parameters or ParameterDict.save' % (filename,))
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename,
                       cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix='', filename=None, cast_dtype=False, dtype_source='current'):
        """Load values from ``param_dict`` ({name: NDArray}; ``arg:``/``aux:`` in front
        of a name, as in MXNet checkpoints, is dropped). Arguments as in ``load``."""
        where = filename if filename is not None else 'the dict'
        loaded = {restore_prefix + (k[4:] if k.startswith(('arg:', 'aux:')) else k): v
                  for k, v in param_dict.items()}
        _load_checked([(name, param, loaded.get(name)) for name, param in self.items()],
                      loaded, self.keys(), where, ctx, allow_missing, ignore_extra, cast_dtype,
                      dtype_source)


def _indent_continuation(text, spaces):
    lines = text.split('\n')
    return '\n'.join(lines[:1] + [' ' * spaces + line for line in lines[1:]])


def _load_checked(targets, loaded, known, where, ctx, allow_missing, ignore_extra, cast_dtype,
                  dtype_source):
    """Put ``loaded`` values into parameters, every name checked before anything changes.

    ``targets``: (name, Parameter, loaded array or None) for each name a parameter
    goes by (a shared parameter may have several; one value is enough). ``known``:
    every name the receiving side has, for the extra-entry check and the messages.
    """
    if not allow_missing:
        found = {id(param) for _, param, arr in targets if arr is not None}
        for name, param, arr in targets:
            if arr is None and id(param) not in found:
                raise MXNetError("parameter '%s' is missing from %s, which holds: %s. Set "
                                 "allow_missing=True to keep its current value"
                                 % (name, where, _brief(loaded.keys())))
    if not ignore_extra:
        known = set(known)
        for name in loaded:
            if name not in known:
                raise MXNetError("%s holds parameter '%s', which this Block does not have (its "
                                 "parameters: %s). Set ignore_extra=True to skip it"
                                 % (where, name, _brief(sorted(known))))
    for name, param, arr in targets:
        if arr is None:
            continue
        if param.shape is not None and (len(param.shape) != arr.ndim or any(
                d > 0 and d != s for d, s in zip(param.shape, arr.shape))):
            raise MXNetError("parameter '%s' has shape %s in this Block but %s in %s"
                             % (name, param.shape, arr.shape, where))
        if not cast_dtype and np.dtype(param.dtype) != np.dtype(arr.dtype):
            raise MXNetError("parameter '%s' has dtype %s in this Block but %s in %s; pass "
                             "cast_dtype=True to convert" % (name, np.dtype(param.dtype).name,
                                                             np.dtype(arr.dtype).name, where))
    for name, param, arr in targets:
        if arr is not None:
            param._load_init(arr, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
