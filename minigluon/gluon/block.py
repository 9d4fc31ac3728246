"""Blocks: the units models are built from.

Assigning a Block or a Parameter to an attribute of a Block registers it, and the
attribute path from the root Block names every parameter (``features.0.weight``).
``HybridBlock.forward`` passes the block's parameters to ``hybrid_forward(F, x, ...)``
with ``F`` the ``minigluon.ndarray`` module, and first completes deferred shapes
through ``infer_shape``.
"""
import weakref
from collections import OrderedDict

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..base import MXNetError
from ..context import current_context
from ..ndarray import NDArray
from .parameter import Parameter, ParameterDict, _shape_known

__all__ = ['Block', 'HybridBlock', 'HookHandle']


class _NameScope:
    """``with block.name_scope():`` is accepted for MXNet 1.x code; names come from paths."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NAME_SCOPE = _NameScope()


class HookHandle:
    """Returned by ``register_forward_hook``; ``detach()`` removes the hook."""

    def __init__(self, hooks, hook):
        self._hooks = weakref.ref(hooks)
        self._key = object()
        hooks[self._key] = hook

    def detach(self):
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def _indent(text, spaces):
    lines = text.split('\n')
    return '\n'.join(lines[:1] + [' ' * spaces + line for line in lines[1:]])


def _shapes(value):
    """Shapes of an NDArray or (nested) list of NDArrays, for ``summary``."""
    if isinstance(value, NDArray):
        return value.shape
    if isinstance(value, (list, tuple)):
        return [_shapes(v) for v in value]
    return type(value).__name__


class Block:
    """Base class of all layers and models.

    Subclasses assign children and Parameters as attributes in ``__init__`` (after
    calling ``super().__init__()``) and define ``forward``.

    Parameters
    ----------
    prefix : str, optional
        Accepted for MXNet 1.x code; names come from attribute paths instead.
    params : dict of Parameter, optional
        Parameters to share: one assigned under an attribute name present here is
        replaced by the shared one (e.g. ``Dense(10, params=other_dense.params)``).
        Whole models share with ``share_parameters``.
    """

    def __init__(self, prefix=None, params=None):
        self._prefix = prefix or ''
        self._shared_params = params
        self._parent = None  # weakref to the first Block this one was registered in
        self._attr_name = None
        self._reg_params = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()
        self._children = OrderedDict()  # last: its presence switches on registration

    # ---- registration ----------------------------------------------------------------
    def __setattr__(self, name, value):
        if '_children' not in self.__dict__:
            if isinstance(value, (Block, Parameter)):
                raise MXNetError('%s: call super().__init__() in __init__ before assigning '
                                 'the %s %r' % (type(self).__name__, type(value).__name__, name))
        elif isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            value = self._register_param(name, value)
        else:
            self._children.pop(name, None)
            self._reg_params.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._children.pop(name, None)
        self._reg_params.pop(name, None)
        object.__delattr__(self, name)

    def register_child(self, block, name=None):
        """Register ``block`` as a child under ``name`` (default: its index, as in Sequential)."""
        if not isinstance(block, Block):
            raise MXNetError('register_child: expected a Block, got %s' % type(block).__name__)
        name = str(len(self._children)) if name is None else str(name)
        ancestor = self
        while ancestor is not None:
            if ancestor is block:
                raise MXNetError('cannot register %s as child %r of %s: it contains that '
                                 'block, which would make a cycle'
                                 % (type(block).__name__, name, type(self).__name__))
            ancestor = ancestor._parent_block()
        self._reg_params.pop(name, None)
        self._children[name] = block
        if block._parent_block() is None:
            block._parent = weakref.ref(self)
            block._attr_name = name
        return block

    def _register_param(self, name, param):
        shared = self._shared_params
        if shared is not None and name in shared:
            param = shared[name]
        self._children.pop(name, None)
        for key in [k for k, v in self._reg_params.items() if v is param and k != name]:
            del self._reg_params[key]  # re-registered under a new name (params.get, then setattr)
        self._reg_params[name] = param
        owner = param._owner() if param._owner is not None else None
        if owner is None or owner is self:
            param._owner = weakref.ref(self)
            param._attr = name
        return param

    def _parent_block(self):
        return self._parent() if self._parent is not None else None

    def _path(self):
        """Attribute path from the root Block ('' for the root)."""
        parts, block = [], self
        parent = block._parent_block()
        while parent is not None:
            parts.append(block._attr_name)
            block, parent = parent, parent._parent_block()
        return '.'.join(reversed(parts))

    @property
    def name(self):
        """The attribute path from the root, or the prefix/class name for a root Block."""
        return self._path() or self._prefix.rstrip('_') or type(self).__name__.lower()

    @property
    def prefix(self):
        return self._prefix

    def name_scope(self):
        """A no-op context manager, accepted for MXNet 1.x code."""
        return _NAME_SCOPE

    @property
    def params(self):
        """This Block's own parameters (not its children's); ``params.get`` creates them."""
        own = ParameterDict(_block=self)
        dict.update(own, self._reg_params)
        return own

    def collect_params(self, select=None):
        """All parameters of this Block and its descendants, keyed by attribute path.

        Parameters
        ----------
        select : str, optional
            A regular expression; only names it matches (``re.match``) are kept, e.g.
            ``'.*weight'`` or ``'features\\.0\\..*|output\\..*'``.
        """
        out = ParameterDict()
        self._collect(out, '', set())
        return out.select(select) if select else out

    def _collect(self, out, prefix, seen):
        for name, param in self._reg_params.items():
            if id(param) not in seen:  # a shared parameter is listed once, first path wins
                seen.add(id(param))
                dict.__setitem__(out, prefix + name, param)
        for name, child in self._children.items():
            child._collect(out, prefix + name + '.', seen)

    def share_parameters(self, shared):
        """Use the Parameters of ``shared`` (e.g. ``other.collect_params()``) for equal paths."""
        for path in list(self.collect_params().keys()):
            if path in shared:
                *parents, attr = path.split('.')
                block = self
                for part in parents:
                    block = block._children[part]
                block._shared_params = None  # this sharing replaces the constructor's
                setattr(block, attr, shared[path])
        return self

    # ---- bulk operations -------------------------------------------------------------
    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize all parameters on ``ctx`` (see ``ParameterDict.initialize``).

        ``init`` (an Initializer or a registered name; default ``Uniform(0.07)``) fills
        every parameter that has no initializer of its own.
        """
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        self.collect_params().reset_ctx(ctx)

    def cast(self, dtype):
        """Cast all parameters (and so the computation) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self._reg_params.values():
            param.cast(dtype)

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant, then on this Block; returns self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlocks inside (see ``HybridBlock.hybridize``)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def save_parameters(self, filename, deduplicate=False):
        """Save parameter values by attribute path (``nd.save``: MXNet's NDArray file format).

        Parameters
        ----------
        filename : str
        deduplicate : bool
            Accepted for MXNet 1.x compatibility and without effect: a shared Parameter
            is always saved once, under the first path that reaches it (MXNet's
            ``deduplicate=True``), because ``collect_params`` lists it once and
            ``load_parameters`` expects exactly those names.
        """
        self.collect_params().save(filename)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source='current'):
        """Load what ``save_parameters`` wrote, checking names and shapes first.

        Parameters
        ----------
        ctx : Context or list of Context, optional
            Where to put parameters not initialized yet (default: current context);
            initialized ones keep their contexts.
        allow_missing : bool
            Keep parameters that the file lacks instead of raising.
        ignore_extra : bool
            Skip file entries this Block has no parameter for instead of raising.
        """
        self.collect_params().load(filename, ctx, allow_missing, ignore_extra,
                                   cast_dtype=cast_dtype, dtype_source=dtype_source)

    # ---- calling ---------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """``hook(block, inputs)`` runs before each forward; returns a HookHandle."""
        return HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """``hook(block, inputs, outputs)`` runs after each forward; returns a HookHandle."""
        return HookHandle(self._forward_hooks, hook)

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        try:
            out = self.forward(*args, **kwargs)
        except MXNetError as exc:
            # Say where in the model it failed; only the innermost block adds the note.
            if not getattr(exc, '_block_noted', False) and exc.args:
                exc.args = ('%s [in %s %r]' % (exc.args[0], type(self).__name__, self.name),) \
                    + exc.args[1:]
                exc._block_noted = True
            raise
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, *args):
        raise NotImplementedError('%s must define forward()' % type(self).__name__)

    def summary(self, *inputs):
        """Print each layer's output shape and parameter count for one forward of ``inputs``."""
        rows, seen, handles = [('Input', _shapes(inputs[0] if len(inputs) == 1 else inputs),
                                0)], set(), []
        totals = {'all': 0, 'trainable': 0, 'shared': 0}

        def hook(block, _, outputs):
            count = 0
            for param in block._reg_params.values():
                size = int(np.prod(param.shape))
                count += size
                totals['all'] += size
                if param.grad_req != 'null':
                    totals['trainable'] += size
                if id(param) in seen:
                    totals['shared'] += size
                seen.add(id(param))
            rows.append(('%s-%d' % (type(block).__name__, len(rows)), _shapes(outputs), count))

        self.apply(lambda block: handles.append(block.register_forward_hook(hook)))
        try:
            with autograd.pause():
                self(*inputs)
        finally:
            for handle in handles:
                handle.detach()
        line = '-' * 80
        print(line)
        print('%20s  %42s %15s' % ('Layer (type)', 'Output Shape', 'Param #'))
        print('=' * 80)
        for name, shape, count in rows:
            print('%20s  %42s %15d' % (name, shape, count))
        print('=' * 80)
        print('Parameters in forward computation graph, duplicate included')
        print('   Total params: %d' % totals['all'])
        print('   Trainable params: %d' % totals['trainable'])
        print('   Non-trainable params: %d' % (totals['all'] - totals['trainable']))
        print('Shared params in forward computation graph: %d' % totals['shared'])
        print('Unique parameters in model: %d' % (totals['all'] - totals['shared']))
        print(line)

    def __repr__(self):
        lines = ['  (%s): %s' % (key, _indent(repr(block), 2))
                 for key, block in self._children.items()]
        if not lines:
            return '%s()' % type(self).__name__
        return '%s(\n%s\n)' % (type(self).__name__, '\n'.join(lines))


def _context_of(x, args):
    for a in (x,) + tuple(args):
        if isinstance(a, NDArray):
            return a.context
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, NDArray):
                    return b.context
    return current_context()


class HybridBlock(Block):
    """A Block whose computation is written once as ``hybrid_forward(F, x, *args, **params)``.

    ``F`` is the ``minigluon.ndarray`` module and ``params`` holds this block's own
    parameters' data on the input's context, keyed by attribute name. Layers with
    shapes that depend on the input (``in_units=0``) implement ``infer_shape``.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._active = False
        self._flags = {}

    def hybridize(self, active=True, **kwargs):
        """Mark the block for graph caching.

        minigluon runs every block imperatively; this records the request (and the
        flags, e.g. ``static_alloc``) so a cached path can be added behind it later.
        """
        self._active = active
        self._flags = kwargs
        self._clear_cached_op()
        super().hybridize(active, **kwargs)

    def _clear_cached_op(self):
        """Drop any cached computation (nothing is cached yet)."""

    def infer_shape(self, *args):
        """Complete the 0 dimensions of this block's parameters from the inputs."""
        unknown = [n for n, p in self._reg_params.items() if not _shape_known(p.shape)]
        raise MXNetError('%s has parameters with unknown shape (%s): give their full shapes, '
                         'or implement infer_shape(self, x, *args) to set them from the input'
                         % (type(self).__name__, ', '.join(unknown)))

    def _finish_deferred(self, x, args):
        pending = [p for p in self._reg_params.values() if p._deferred_init]
        if not pending:
            return
        if any(not _shape_known(p.shape) for p in pending):
            self.infer_shape(x, *args)
            for name, p in self._reg_params.items():
                if p._deferred_init and not _shape_known(p.shape):
                    raise MXNetError('%s.infer_shape left parameter %r with unknown shape %s'
                                     % (type(self).__name__, name, p.shape))
        for p in pending:
            p._finish_deferred_init()

    def forward(self, x, *args, **kwargs):
        if isinstance(x, np.ndarray):
            raise MXNetError('%s got a numpy array; convert inputs with nd.array(x, ctx=...)'
                             % type(self).__name__)
        if self._reg_params:
            ctx = _context_of(x, args)
            self._finish_deferred(x, args)
            for name, param in self._reg_params.items():
                if name in kwargs:
                    raise MXNetError('%s: keyword argument %r clashes with the parameter of '
                                     'that name' % (type(self).__name__, name))
                kwargs[name] = param.data(ctx)
        return self.hybrid_forward(nd, x, *args, **kwargs)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError('%s must define hybrid_forward(self, F, x, ...)'
                                  % type(self).__name__)

    def export(self, path, epoch=0, **kwargs):
        raise MXNetError('export() writes a symbolic graph, which minigluon does not have; '
                         'save the weights with save_parameters() and rebuild the model in '
                         'Python to load them')
