"""Blocks: the units models are built from.

Names follow Gluon 1.x. A Block made inside a parent's ``with self.name_scope():``
gets the parent's prefix plus its class's counter there (``net0_dense0_``); one made
elsewhere takes the thread's counters (``dense0_``, ``dense1_``). Its parameters are
named with that prefix (``net0_dense0_weight``): the keys of ``collect_params()``.

Assigning a Block or a Parameter to an attribute registers it, and the attribute
path from the root Block (``features.0.weight``) is a second, structural name:
``save_parameters`` writes those, exactly as Gluon 1.x does, and the Trainer uses
them as kvstore keys because they depend only on how the model is built, never on
what else a process created before it.

``HybridBlock.forward`` passes the block's parameters to ``hybrid_forward(F, x, ...)``
with ``F`` the ``minigluon.ndarray`` module. Unknown dimensions of parameters are
completed first by the block's ``infer_shape``, or else by the first op each
parameter meets (the op table's shape rules). Called on Symbols, ``F`` is
``minigluon.symbol`` and the block adds its ops to their graph; a hybridized block
traces itself that way once and then replays the graph (``cached_graph``), and
``export`` writes that graph in MXNet's files.
"""
import os
import re
import threading
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from .. import autograd
from .. import name as _name
from .. import ndarray as nd
from .. import symbol
from ..base import MXNetError, MXNetValueError
from ..context import cpu, current_context
from ..ndarray import NDArray, host_memory, load as nd_load, save as nd_save
from ..symbol import Symbol
from ..symbol.graph import to_json
from ..symbol.symbol import total_outputs
from .cached_graph import CachedGraph, flatten, formats_compatible, graph_attrs, regroup
from .parameter import Parameter, ParameterDict, _load_checked, _PendingData
from .utils import HookHandle, shape_is_known

__all__ = ['Block', 'HybridBlock', 'HookHandle']


class _BlockScope:
    """What ``block.name_scope()`` returns: inside it, new Blocks are named after
    ``block`` (its prefix, then their class's counter in this scope)."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._entered = []  # (outer scope, name manager) per entry, innermost last

    @staticmethod
    def create(prefix, params, hint):
        """The prefix and ParameterDict of a new Block (``hint``: its class's alias)."""
        current = getattr(_BlockScope._current, 'value', None)
        if current is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + '_'
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(getattr(params, 'prefix', ''), params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = '%s%d_' % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(getattr(params, 'prefix', ''), params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:  # prefix='': children are named as if made outside
            return self
        # graph nodes made inside (a traced hybrid_forward) are named after the block too
        names = _name.Prefix(self._block.prefix)
        self._entered.append((getattr(_BlockScope._current, 'value', None), names))
        _BlockScope._current.value = self
        names.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if not self._block._empty_prefix:
            outer, names = self._entered.pop()
            names.__exit__(ptype, value, trace)
            _BlockScope._current.value = outer
        return False


def _indent(text, spaces):
    lines = text.split('\n')
    return '\n'.join(lines[:1] + [' ' * spaces + line for line in lines[1:]])


def _shape_str(value):
    """MXNet's summary text for the shapes of an NDArray or (nested) list of them."""
    def shapes(v):
        if isinstance(v, NDArray):
            return v.shape
        if isinstance(v, (list, tuple)):
            return [shapes(x) for x in v]
        return v
    out = shapes(value)
    return str(out)[1:-1] if isinstance(out, list) else str(out)


def _holds_unregistered_block(data, children):
    if isinstance(data, (list, tuple)):
        return any(_holds_unregistered_block(x, children) for x in data)
    if isinstance(data, dict):
        return any(_holds_unregistered_block(x, children) for x in data.values())
    return isinstance(data, Block) and id(data) not in children


class Block:
    """Base class of all layers and models.

    Subclasses make their children and Parameters in ``__init__`` (after calling
    ``super().__init__(**kwargs)``), preferably inside ``with self.name_scope():``,
    assign them as attributes, and define ``forward``.

    Parameters
    ----------
    prefix : str, optional
        The prefix of this Block's name and of its parameters' names. By default the
        class's name and a counter (``dense0_``), after the parent's prefix inside
        its ``name_scope()``. ``''`` makes the Block take its parent's prefix.
    params : ParameterDict, optional
        Parameters to share: this Block takes those of equal name from it instead of
        creating its own, e.g. ``Dense(20, params=dense0.collect_params())`` uses
        ``dense0``'s weight and bias.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ''
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith('_') else self._prefix
        self._scope = _BlockScope(self)
        self._parent = None  # weakref to the first Block this one was registered in
        self._attr_name = None
        self._reg_params = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()
        self._children = OrderedDict()  # last: its presence switches on registration

    def _alias(self):
        """The name counted for Blocks of this class (``dense`` -> ``dense0_``)."""
        return type(self).__name__.lower()

    # ---- registration ----------------------------------------------------------------
    def __setattr__(self, name, value):
        if '_children' not in self.__dict__:
            if isinstance(value, (Block, Parameter)):
                raise MXNetError('%s: call super().__init__() in __init__ before assigning '
                                 'the %s %r' % (type(self).__name__, type(value).__name__, name))
        else:
            existing = self.__dict__.get(name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError('Changing attribute type for %s from %s to %s is not allowed.'
                                % (name, type(existing), type(value)))
            if isinstance(value, Block):
                self.register_child(value, name)
            elif isinstance(value, Parameter):
                value = self._register_param(name, value)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._children.pop(name, None)
        param = self._reg_params.pop(name, None)
        if param is not None and param._owner is not None and param._owner() is self:
            dict.pop(self._params, param.name, None)
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
        self._children[name] = block
        if block._parent_block() is None:
            block._parent = weakref.ref(self)
            block._attr_name = name
        return block

    def _register_param(self, name, param):
        """Hold ``param`` as attribute ``name``; one made outside any ParameterDict is
        named by this Block's dict (which may hand back a shared one instead)."""
        if not param._named:
            adopted = self._params._adopt(param)
            clash = [k for k, p in self._reg_params.items() if p is adopted and k != name]
            if adopted is not param and clash:
                raise MXNetError('%s: cannot assign %r: the Block has a parameter named %r '
                                 'already (attribute %r); give the new Parameter another name'
                                 % (type(self).__name__, name, adopted.name, clash[0]))
            param = adopted
        old = self._reg_params.get(name)
        if old is not None and old is not param and old._owner is not None \
                and old._owner() is self:
            dict.pop(self._params, old.name, None)
        self._reg_params[name] = param
        if param._owner is None or param._owner() is None:
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
        """This Block's name: its prefix without the trailing ``_`` (``dense0``)."""
        return self._name

    @property
    def prefix(self):
        """The prefix of this Block's name and its parameters' names (``dense0_``)."""
        return self._prefix

    def name_scope(self):
        """``with block.name_scope():`` names the Blocks made inside after this one."""
        return self._scope

    @property
    def params(self):
        """This Block's own ParameterDict (not its children's); ``params.get`` creates."""
        return self._params

    def _own_params(self):
        """(name, Parameter) of this Block's dict, then of attributes from elsewhere."""
        own = list(self._params.items())
        held = {id(p) for _, p in own}
        own += [(p.name, p) for p in self._reg_params.values() if id(p) not in held]
        return own

    def collect_params(self, select=None):
        """A ParameterDict of the parameters of this Block and its descendants, keyed
        by name (``dense0_weight``).

        Parameters
        ----------
        select : str, optional
            A regular expression; only names it matches (``re.match``) are kept, e.g.
            ``'.*weight'`` or ``'conv0_weight|dense0_bias'``.
        """
        self._check_container_with_block()
        out = ParameterDict(self._params.prefix)
        self._collect(out, re.compile(select).match if select else None)
        return out

    def _collect(self, out, match):
        out.update({k: v for k, v in self._own_params() if match is None or match(k)})
        for child in self._children.values():
            child._collect(out, match)

    def _check_container_with_block(self):
        """Warn about Blocks kept in a list, tuple or dict attribute: nothing registers
        them, so their parameters are not collected."""
        children = {id(c) for c in self._children.values()}
        for key, value in self.__dict__.items():
            if isinstance(value, (list, tuple, dict)) and key != '_children' \
                    and not key.startswith('__') and _holds_unregistered_block(value, children):
                warnings.warn('"%s.%s" is an unregistered container with Blocks. Blocks '
                              'inside a list, tuple or dict are not registered automatically; '
                              'register them with register_child() or use '
                              'nn.Sequential/nn.HybridSequential instead.'
                              % (type(self).__name__, key), stacklevel=4)
        for child in self._children.values():
            child._check_container_with_block()

    def _collect_params_with_prefix(self, prefix=''):
        """{structural name: Parameter} (``features.0.weight``); a shared parameter is
        listed under every path that reaches it, as in MXNet."""
        if prefix:
            prefix += '.'
        out = {prefix + key: param for key, param in self._reg_params.items()}
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def share_parameters(self, shared):
        """Use the Parameters of ``shared`` in place of this model's own.

        ``shared`` may be keyed by structural names (``features.0.weight``) or by
        parameter names (``other.collect_params()``): there a name matches when it
        equals this model's once each dict's prefix is taken off the front, or else
        when the shared Parameter sits at the same path in its own model (layers made
        outside a ``name_scope`` have counter names that differ between two copies).
        """
        shared_prefix = getattr(shared, 'prefix', '')
        relative = {k[len(shared_prefix):]: v for k, v in shared.items()
                    if k.startswith(shared_prefix)}
        by_path = {v._structural_name: v for v in shared.values()}
        own_prefix = self._params.prefix
        # where each Parameter is registered: a structural path need not be the blocks'
        # (a fused RNN layer saves its parameters under the cell stack's names)
        holders = {}
        self.apply(lambda b: holders.update((id(p), (b, a)) for a, p in b._reg_params.items()))
        for path, param in self._collect_params_with_prefix().items():
            other = shared.get(path) if not isinstance(shared, ParameterDict) \
                else dict.get(shared, path)
            if other is None and param.name.startswith(own_prefix):
                other = relative.get(param.name[len(own_prefix):])
            if other is None:
                other = by_path.get(param._structural_name)
            if other is None or other is param:
                continue
            block, attr = holders[id(param)]
            if dict.get(block._params, param.name) is param:
                dict.pop(block._params, param.name)
            block._reg_params.pop(attr, None)
            object.__setattr__(block, attr, block._register_param(attr, other))
        # traced graphs hold the replaced parameters' variables
        self.apply(lambda b: b._clear_cached_op() if isinstance(b, HybridBlock) else None)
        return self

    # ---- bulk operations -------------------------------------------------------------
    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize all parameters on ``ctx`` (see ``ParameterDict.initialize``).

        ``init`` (an Initializer or a registered name; default ``Uniform(0.07)``) fills
        every parameter that has no initializer of its own.
        """
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        """Set the gradients of every parameter of this Block and its children to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter (data and gradient) to ``ctx``.

        Parameters
        ----------
        ctx : Context or list of Context
            The new context(s); values are copied, nothing is re-initialized.
        """
        self.collect_params().reset_ctx(ctx)

    def cast(self, dtype):
        """Cast all parameters (and so the computation) to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self._own_params():
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
        """Save parameter values by structural name (``features.0.weight``) in MXNet's
        NDArray file format, as Gluon 1.x does.

        Parameters
        ----------
        filename : str
        deduplicate : bool, default False
            Save a parameter shared by several Blocks once (under its last path)
            instead of once per path.
        """
        params = self._collect_params_with_prefix()
        if deduplicate:
            last_path = {id(p): k for k, p in params.items()}
            params = {k: p for k, p in params.items() if last_path[id(p)] == k}
        nd_save(filename, {k: p._reduce() for k, p in params.items()})

    def save_params(self, filename):
        """[Deprecated] Save by parameter name without this Block's prefix (Gluon 1.x's
        old format); use ``save_parameters``."""
        warnings.warn('save_params is deprecated. Please use save_parameters.',
                      DeprecationWarning, stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source='current'):
        """Load what ``save_parameters`` wrote, checking names and shapes first.

        A file whose names have no ``.`` is in the older format of ``save_params``
        (parameter names without this Block's prefix) and loads as that.

        Parameters
        ----------
        ctx : Context or list of Context, optional
            Where to put parameters not initialized yet (default: current context);
            initialized ones keep their contexts.
        allow_missing : bool
            Keep parameters that the file lacks instead of raising.
        ignore_extra : bool
            Skip file entries this Block has no parameter for instead of raising.
        cast_dtype : bool
            Convert values to the parameters' dtypes (``dtype_source='current'``) or the
            parameters to the file's dtypes (``'saved'``).
        """
        loaded = nd_load(filename, ctx=cpu())
        if isinstance(loaded, list) and not loaded:
            loaded = {}  # a file of no parameters has no names, so it loads as a list
        if not isinstance(loaded, dict):
            raise MXNetError('%s holds a list of arrays, not named parameters; write it with '
                             'save_parameters or ParameterDict.save' % (filename,))
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any('.' in k for k in loaded):
            self.collect_params().load_dict(loaded, ctx, allow_missing, ignore_extra,
                                            self.prefix, filename, cast_dtype, dtype_source)
            return
        _load_checked([(k, p, loaded.get(k)) for k, p in params.items()], loaded, params,
                      filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """[Deprecated] Use ``load_parameters`` (which reads both formats)."""
        warnings.warn('load_params is deprecated. Please use load_parameters.',
                      DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # ---- calling ---------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """``hook(block, inputs)`` runs before each forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """``hook(block, inputs, outputs)`` runs after each forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def register_op_hook(self, callback, monitor_all=False):
        """Install ``callback(name, op_name, array)`` on the HybridBlocks inside (see
        ``HybridBlock.register_op_hook``)."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

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
        """Compute the Block's output; subclasses override this.

        Parameters
        ----------
        *args : NDArray
            The inputs.

        Returns
        -------
        NDArray or nested list of NDArray
        """
        raise NotImplementedError('%s must define forward()' % type(self).__name__)

    def summary(self, *inputs):
        """Print each layer's output shape and parameter count for one forward of
        ``inputs``; the model must be initialized and not hybridized."""
        rows, seen, handles = [('Input', _shape_str(inputs), 0, 0, 0)], set(), []

        def hook(block, _, outputs):
            count = trainable = shared = 0
            for _, param in block._own_params():
                size = int(np.prod(param.shape))
                count += size
                trainable += size if param.grad_req != 'null' else 0
                shared += size if id(param) in seen else 0
                seen.add(id(param))
            rows.append(('%s-%d' % (type(block).__name__, len(rows)), _shape_str(outputs),
                         count, trainable, shared))

        def add_hook(block):
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError('"%s" must not be hybridized to print summary.'
                                     % block.name)
            if not block._summary_hides:
                handles.append(block.register_forward_hook(hook))

        try:
            self.apply(add_hook)
            with autograd.pause():
                self(*inputs)
        finally:
            for handle in handles:
                handle.detach()
        line = '%20s  %42s %15s'
        total, trainable, shared = (sum(row[i] for row in rows) for i in (2, 3, 4))
        print('-' * 80)
        print(line % ('Layer (type)', 'Output Shape', 'Param #'))
        print('=' * 80)
        for name, shape, count, _, _ in rows:
            print(line % (name, shape, count))
        print('=' * 80)
        print('Parameters in forward computation graph, duplicate included')
        print('   Total params: %d' % total)
        print('   Trainable params: %d' % trainable)
        print('   Non-trainable params: %d' % (total - trainable))
        print('Shared params in forward computation graph: %d' % shared)
        print('Unique parameters in model: %d' % (total - shared))
        print('-' * 80)

    _summary_hides = False  # containers (Sequential) are left out of summary's rows

    def __repr__(self):
        lines = ['  (%s): %s' % (key, _indent(repr(block), 2))
                 for key, block in self._children.items()]
        if not lines:
            return '%s()' % type(self).__name__
        return '%s(\n%s\n)' % (type(self).__name__, '\n'.join(lines))


def _first_context(values):
    """The context of the first NDArray in (nested lists of) ``values``, or None."""
    for v in values:
        if isinstance(v, NDArray):
            return v.context
        if isinstance(v, (list, tuple)):
            ctx = _first_context(v)
            if ctx is not None:
                return ctx
    return None


def _gather_inputs(values, found):
    """Fill ``found`` = [has a Symbol, has an NDArray, the NDArrays' contexts] from
    (nested lists of) ``values``."""
    for v in values:
        if isinstance(v, NDArray):
            found[1] = True
            if v.context not in found[2]:
                found[2].append(v.context)
        elif isinstance(v, Symbol):
            found[0] = True
        elif isinstance(v, (list, tuple)):
            _gather_inputs(v, found)


class HybridBlock(Block):
    """A Block whose computation is written once as ``hybrid_forward(F, x, *args, **params)``.

    Called on NDArrays, ``F`` is the ``minigluon.ndarray`` module and ``params`` holds
    this block's own parameters' data on the input's context, keyed by attribute name.
    Parameters with unknown dimensions get them from the block's ``infer_shape`` when
    it has one, else from the first op that uses them (FullyConnected, Convolution,
    dot, broadcast arithmetic, the norms ...).

    Called on Symbols, ``F`` is ``minigluon.symbol`` and ``params`` holds the
    parameters' graph variables: the block adds its ops to a graph, named after its
    prefix (``dense0_fwd``). After ``hybridize()`` a block runs that way once, traced
    into a graph that later calls replay (see ``hybridize``).
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._cached_graph = ()  # (data variables, outputs) of the traced graph
        self._cached_op = None  # the CachedGraph that replays it
        self._in_format = None
        self._out_format = None
        self._active = False
        self._flags = []
        self._callback = None
        self._monitor_all = False

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, Parameter) and '_cached_op' in self.__dict__:
            self._invalidate_traces()  # the graphs' variables are the old parameter's

    def register_child(self, block, name=None):
        super().register_child(block, name)
        self._invalidate_traces()  # the traced graphs do not call the new child
        return block

    def _invalidate_traces(self):
        """Clear the traced graph of this block and of the blocks above it, which
        traced this one's computation into theirs."""
        block = self
        while block is not None:
            if isinstance(block, HybridBlock):
                block._clear_cached_op()
            block = block._parent_block()

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Run this block, and the HybridBlocks inside, as a cached graph
        (``active=False``: imperatively again).

        The first call on NDArrays traces ``hybrid_forward`` with ``F`` = ``mx.sym``:
        the inputs become variables ``data`` (or ``data0``, ``data1`` ... for several,
        flattened out of nested lists), each parameter its variable (``dense0_weight``),
        and the children add their ops to the same graph. Parameters still waiting
        for their shapes get them from the graph's ``infer_shape``. Every later call
        replays the graph's ops on the new inputs and the parameters' current data,
        inside the caller's autograd state, so outputs and gradients are those of the
        imperative code. The inputs must keep the structure (nesting, None entries) of
        the first call; ``export`` writes the graph. Changing the children, assigning
        parameters, ``cast`` or ``hybridize`` again starts a new trace.

        Parameters
        ----------
        active : bool, default True
        backend : None
            MXNet's graph partitioning backends; none exist here.
        clear : bool, default True
            Drop the traced graph, so the next call traces again.
        static_alloc : bool, default False
            Memory for speed, as MXNet's flag: the graph runs on raw arrays and is
            recorded as one autograd node (MXNet's ``_CachedOp``;
            ``symbol/graph_node.py``) holding only what first-order gradients need, so
            intermediates nothing else needs (a BatchNorm's output before its ReLU)
            are freed after the forward instead of being kept for gradients of
            gradients (which then raise an error through this block); on a CPU the
            process keeps the memory it frees for the next call's arrays instead of
            mapping fresh pages (``ndarray/host_memory.py``). Op hooks and the
            profiler still see each op. Without it, a call outside ``record()`` runs
            the same way, and a recorded call records op by op.
        static_shape : bool, default False
            Accepted: a graph is planned once whatever the input shapes, and each
            intermediate array is released at its last use.
        inline_limit, forward_bulk_size, backward_bulk_size, **kwargs
            Accepted for MXNet's signature; they change nothing here.
        """
        if backend is not None:
            raise MXNetError('hybridize: backend=%r: graph partitioning backends are not '
                             'available in minigluon; leave backend=None' % (backend,))
        self._active = bool(active)
        self._flags = [('static_alloc', static_alloc), ('static_shape', static_shape),
                       ('inline_limit', inline_limit)]
        if forward_bulk_size is not None:
            self._flags.append(('forward_bulk_size', forward_bulk_size))
        if backward_bulk_size is not None:
            self._flags.append(('backward_bulk_size', backward_bulk_size))
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn('"%s" is being hybridized while still having forward hook/pre-hook. '
                          'If "%s" is a child of HybridBlock, the hooks will not take effect.'
                          % (self, self), stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                          inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                          backward_bulk_size=backward_bulk_size)

    def _clear_cached_op(self):
        """Forget the traced graph: the next hybridized call traces again."""
        self._cached_graph = ()
        self._cached_op = None

    def cast(self, dtype):
        """Cast the parameters to ``dtype``; a hybridized block traces again."""
        self._clear_cached_op()
        super().cast(dtype)

    def register_op_hook(self, callback, monitor_all=False):
        """Call ``callback(name, op_name, array)`` with the output of every graph node
        while this block runs hybridized (and with the node's inputs too, with
        ``monitor_all``), naming arrays as MXNet's monitor does: the node's name, then
        ``_output`` (``_0`` for ops that name no outputs) or ``_<input name>``
        (``_input0`` for ops that name no inputs): ``net_dense0_fwd_output``,
        ``net_dense0_fwd_weight``, ``net_relu0_input0``.
        """
        self._callback = callback
        self._monitor_all = monitor_all
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    # ---- the graph -------------------------------------------------------------------
    def _get_graph(self, *args):
        """``(data variables, outputs)``: ``hybrid_forward`` traced on symbols for
        inputs structured as ``args`` (made once, until the cache is cleared)."""
        if self._cached_graph:
            return self._cached_graph
        flat, in_format = flatten(args, 'input')
        real = sum(a is not None for a in flat)
        if real == 0:
            raise ValueError('All args are None and we do not support such a case. Received '
                             'args=%s' % (args,))
        inputs, placed = [], []
        for arg in flat:
            if arg is None:
                placed.append(None)
                continue
            inputs.append(symbol.var('data%d' % len(inputs) if real > 1 else 'data'))
            placed.append(inputs[-1])
        params = {name: param.var() for name, param in self._reg_params.items()}
        with self.name_scope():
            out = self.hybrid_forward(symbol, *regroup(placed, in_format), **params)
        flat_out, out_format = flatten(out, 'output')
        if any(o is None for o in flat_out):
            raise MXNetError('%s.hybrid_forward returned None among its outputs (format %s); '
                             'a hybridized block must return Symbols or (nested) lists of '
                             'them' % (type(self).__name__, out_format))
        self._in_format, self._out_format = in_format, out_format
        self._cached_graph = inputs, symbol.Group(flat_out)
        return self._cached_graph

    def _graph_params(self):
        """Every Parameter of this block and the blocks inside, each once."""
        seen, out = set(), []
        for param in list(self.collect_params().values()) + \
                list(self._collect_params_with_prefix().values()):
            if id(param) not in seen:
                seen.add(id(param))
                out.append(param)
        return out

    def _build_cache(self, *args):
        inputs, out = self._get_graph(*args)
        candidates = self._graph_params()
        cached = self._cached_graph_for(inputs, out, candidates, flatten(args, 'input')[0])
        if cached.unused_inputs:
            warnings.warn('The %s input to HybridBlock is not used by any computation. Is '
                          'this intended?' % ', '.join('%d-th' % i for i in cached.unused_inputs),
                          stacklevel=4)
        used = {id(p) for p in cached.params}
        unused = [p.name for p in candidates if id(p) not in used]
        if unused:
            warnings.warn('Parameter %s is not used by any computation. Is this intended?'
                          % ', '.join(unused), stacklevel=4)
        pending = [p for p in cached.params if p._data is None and p._deferred_init]
        if pending:
            data = [a for a in flatten(args, 'input')[0] if a is not None]
            self._deferred_infer_shape(cached, data, pending)
        self._cached_op = cached

    def _cached_graph_for(self, inputs, out, params, data):
        """A ``CachedGraph`` of ``out`` run with this block's flags: ``static_alloc``
        records its ops with only what first-order gradients need and, when ``data``
        (the call's arrays) lie on the host, has the process keep the memory it frees."""
        static_alloc = bool(dict(self._flags).get('static_alloc'))
        if static_alloc and any(not a.context.is_gpu for a in data if a is not None):
            host_memory.keep_freed()
        return CachedGraph(inputs, out, params, lean=static_alloc)

    def _deferred_infer_shape(self, cached, data, pending):
        """Give the ``pending`` parameters their shapes from the graph's shape
        inference on the inputs ``data``, and initialize them (MXNet's deferred
        initialization of a hybridized block)."""
        out = cached.outputs
        given = {var.name: arr.shape for var, arr in zip(cached.inputs, data)}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                arg_shapes, _, aux_shapes = out.infer_shape_partial(**given)
        except MXNetError as exc:
            raise MXNetValueError('Deferred initialization failed because shape cannot be '
                                  'inferred. %s' % exc) from None
        shapes = dict(zip(out.list_arguments(), arg_shapes or ()))
        shapes.update(zip(out.list_auxiliary_states(), aux_shapes or ()))
        for param in pending:
            shape = shapes.get(param.name)
            if shape and all(d > 0 for d in shape):
                param.shape = shape
            if not shape_is_known(param.shape):
                raise MXNetValueError(
                    'Deferred initialization failed because shape cannot be inferred: %s '
                    'still has shape %s after shape inference on the graph with inputs of '
                    'shapes %s. Give its full shape (in_units / in_channels)'
                    % (param._label(), param.shape, sorted(given.items())))
            param._finish_deferred_init()

    def _call_cached_op(self, *args):
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = flatten(args, 'input')
        if fmt != self._in_format and not formats_compatible(self._in_format, fmt):
            raise ValueError('The argument structure of HybridBlock does not match the cached '
                             'version. Stored format = %s, input format = %s'
                             % (self._in_format, fmt))
        data = [a for a in flat if a is not None]
        out = self._cached_op.run(data, data[0].context, self._callback, self._monitor_all)
        return regroup(out, self._out_format)

    # ---- calling ---------------------------------------------------------------------
    def infer_shape(self, *args):
        """Complete the unknown dimensions of this block's parameters from the inputs,
        without initializing them: ``hybrid_forward`` runs once (gradients off), each
        such parameter taking its shape from the op table's rule for the first op that
        uses it. Layers whose shapes follow from their arguments override this.
        """
        ctx = _first_context(args) or current_context()
        kwargs = {}
        for name, param in self._reg_params.items():
            if not shape_is_known(param.shape):
                kwargs[name] = _PendingData(param, ctx, shape_only=True)
            else:
                kwargs[name] = nd.zeros(param.shape, ctx=ctx, dtype=param.dtype)
        with autograd.pause():
            self.hybrid_forward(nd, *args, **kwargs)
        self._check_shapes_known()

    def _check_shapes_known(self):
        for name, param in self._reg_params.items():
            if not shape_is_known(param.shape):
                raise MXNetError(
                    '%s: parameter %r still has unknown shape %s after shape inference: '
                    'hybrid_forward did not use it in an op that implies its shape. Give its '
                    'full shape, or implement infer_shape(self, x, *args) to set it'
                    % (type(self).__name__, name, param.shape))

    def _finish_deferred(self, x, args):
        """Finish the deferred initialization of the parameters whose shapes are known,
        after the layer's own ``infer_shape`` (if it has one) has completed them."""
        pending = [p for p in self._reg_params.values() if p._deferred_init]
        if not pending:
            return
        if type(self).infer_shape is not HybridBlock.infer_shape and any(
                not shape_is_known(p.shape) for p in pending):
            self.infer_shape(x, *args)
            self._check_shapes_known()
        for p in pending:
            if shape_is_known(p.shape):
                p._finish_deferred_init()

    def forward(self, x, *args, **kwargs):
        """Run ``hybrid_forward``: on NDArrays imperatively (``F`` = ``mx.nd``) or, once
        hybridized, through the cached graph; on Symbols it adds the block's ops to
        their graph (``F`` = ``mx.sym``).

        Parameters
        ----------
        x : NDArray or Symbol
            The first input; its context picks the parameters' copies.
        *args : NDArray or Symbol
            Further inputs (None, or nested lists of arrays, as ``hybrid_forward``
            takes them).

        Returns
        -------
        NDArray or Symbol, or nested list of them
        """
        if isinstance(x, np.ndarray):
            raise MXNetError('%s got a numpy array; convert inputs with nd.array(x, ctx=...)'
                             % type(self).__name__)
        found = [False, False, []]
        _gather_inputs((x,) + args, found)
        has_symbol, has_ndarray, contexts = found
        if has_symbol and has_ndarray:
            raise ValueError('In HybridBlock, we do not support mixed NDArrays and Symbols '
                             'types for the input. Please check the type of the args.')
        if has_symbol:
            return self._symbol_forward(x, args, kwargs)
        if not has_ndarray:
            raise ValueError('In HybridBlock, there must be one NDArray or one Symbol in the '
                             'input (got %s)' % ', '.join(type(v).__name__ for v in (x,) + args))
        if self._active:
            if kwargs:
                raise MXNetError('%s is hybridized: it takes positional inputs only, as in '
                                 'MXNet; got keyword arguments %s'
                                 % (type(self).__name__, sorted(kwargs)))
            if len(contexts) > 1:
                raise ValueError('Find multiple contexts in the input, After hybridized, the '
                                 'HybridBlock only supports one input context. You can print '
                                 'the ele.ctx in the input arguments to inspect their '
                                 'contexts. Find all contexts = %s' % contexts)
            return self._call_cached_op(x, *args)
        return self._imperative_forward(x, args, kwargs, contexts[0])

    def _imperative_forward(self, x, args, kwargs, ctx):
        if not self._reg_params:
            return self.hybrid_forward(nd, x, *args, **kwargs)
        self._finish_deferred(x, args)
        params = {}
        for name, param in self._reg_params.items():
            if name in kwargs:
                raise MXNetError('%s: keyword argument %r clashes with the parameter of that '
                                 'name' % (type(self).__name__, name))
            # A parameter still waiting for its shape gets it from the first op using it.
            params[name] = _PendingData(param, ctx) if param._deferred_init \
                else param.data(ctx)
        out = self.hybrid_forward(nd, x, *args, **kwargs, **params)
        for name, value in params.items():
            if isinstance(value, _PendingData) and value._array is None:
                raise MXNetError('%s: parameter %r has unknown shape %s and hybrid_forward did '
                                 'not use it in an op that implies its shape. Give its full '
                                 'shape, or implement infer_shape(self, x, *args) to set it'
                                 % (type(self).__name__, name, value.shape))
        return out

    def _symbol_forward(self, x, args, kwargs):
        params = {}
        for name, param in self._reg_params.items():
            if name in kwargs:
                raise MXNetError('%s: keyword argument %r clashes with the parameter of that '
                                 'name' % (type(self).__name__, name))
            params[name] = param.var()
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **kwargs, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written once with ``F`` ops; subclasses override it.

        Parameters
        ----------
        F : module
            ``mx.nd`` when called on NDArrays, ``mx.sym`` when traced.
        x : NDArray or Symbol
            The first input.
        *args : NDArray or Symbol
            Further inputs.
        **kwargs : NDArray or Symbol
            The Block's parameters, by attribute name: their data on ``x``'s context,
            or their graph variables.

        Returns
        -------
        NDArray or Symbol, or nested list of them
        """
        raise NotImplementedError('%s must define hybrid_forward(self, F, x, ...)'
                                  % type(self).__name__)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write the traced graph to ``path-symbol.json`` and the parameters it uses to
        ``path-%04d.params``, MXNet 1.x's files, which ``SymbolBlock.imports``,
        ``mx.mod.Module.load`` and MXNet itself read.

        The inputs are the variables ``data`` (one input) or ``data0``, ``data1`` ...;
        the parameters are saved as ``arg:<name>`` and ``aux:<name>`` (BatchNorm's
        running statistics). Two graph attributes, which MXNet ignores, keep what
        MXNet's files lose: the nesting of inputs and outputs and each parameter's
        structural name (``features.0.weight``), which ``SymbolBlock.imports`` uses.

        Parameters
        ----------
        path : str
            The files' path without the suffixes.
        epoch : int, default 0
            The number in the parameter file's name.
        remove_amp_cast : bool, default True
            Accepted for MXNet's signature (graphs here hold no amp_cast nodes).

        Returns
        -------
        (str, str)
            The names of the graph file and the parameter file (MXNet 1.9.1 returns
            None).

        Raises
        ------
        RuntimeError
            Before the block has been hybridized and run once.
        """
        if not self._cached_graph:
            raise RuntimeError('Please first call block.hybridize() and then run forward with '
                               'this block at least once before calling export.')
        inputs, out = self._cached_graph
        params = CachedGraph(inputs, out, self._graph_params()).params
        paths = {id(p): path_ for path_, p in self._collect_params_with_prefix().items()}
        structure = {p.name: paths[id(p)] for p in params if id(p) in paths}
        symbol_file = '%s-symbol.json' % path
        params_file = '%s-%04d.params' % (path, epoch)
        text = to_json(out._outputs, total_outputs,  # pylint: disable=protected-access
                       graph_attrs(self._in_format, self._out_format, structure))
        tmp = '%s.tmp%d' % (symbol_file, os.getpid())
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, symbol_file)
        aux = set(out.list_auxiliary_states())
        nd_save(params_file, {('aux:' if p.name in aux else 'arg:') + p.name: p._reduce()
                              for p in params})
        return symbol_file, params_file
