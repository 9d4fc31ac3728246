"""Running graphs: ``GraphProgram`` (a graph compiled to a list of kernel calls) and
``Executor`` (MXNet's bound graph: arrays, gradients, forward and backward).

A program runs each operator node through the op table (``dispatch.invoke``), so a
graph computes exactly what the same ops called on NDArrays compute, and autograd
records it op by op when recording is on: the gradients of a hybridized block and
of an executor come from the same backward functions as imperative code.
"""
import numpy as np

from .. import autograd
from ..base import MXNetError
from ..ndarray import creation, tape
from ..ndarray.ndarray import NDArray
from .graph import topological_order
from .op_specs import spec_of

_GRAD_REQS = ('write', 'add', 'null')


class GraphProgram:
    """The graph with outputs ``heads`` as a list of steps, planned once.

    ``run(values, ctx)`` takes one NDArray per variable (in ``variables`` order) and
    returns the outputs. Each step's inputs are released as soon as no later step
    reads them, so intermediate arrays live no longer than imperative code keeps them.
    """

    def __init__(self, heads):
        order = topological_order(heads)
        self.variables = [n for n in order if n.is_variable]
        position = {id(n): i for i, n in enumerate(order)}
        self.steps = []
        last_use = {}
        for i, node in enumerate(order):
            for src, _ in node.inputs:
                last_use[id(src)] = i
        for src, _ in heads:
            last_use[id(src)] = len(order)
        for i, node in enumerate(order):
            if node.is_variable:
                continue
            spec = spec_of(node.op)
            try:
                runner = spec.runner(node.attrs)
            except MXNetError as exc:
                raise MXNetError('node %s: %s' % (node.name, exc)) from None
            release = [position[id(src)] for src, _ in node.inputs
                       if last_use[id(src)] == i and not src.is_variable]
            self.steps.append((i, runner, [(position[id(s)], k) for s, k in node.inputs],
                               sorted(set(release)), node))
        self.num_nodes = len(order)
        self.var_slots = [position[id(n)] for n in self.variables]
        self.heads = [(position[id(n)], k) for n, k in heads]

    def run(self, values, ctx):
        """The outputs for the variables' arrays ``values``."""
        slots = [None] * self.num_nodes
        for slot, value in zip(self.var_slots, values):
            slots[slot] = [value]
        for index, runner, inputs, release, node in self.steps:
            try:
                slots[index] = runner([slots[s][k] for s, k in inputs], ctx)
            except MXNetError as exc:
                raise type(exc)('%s (in graph node %s, op %s)' % (exc, node.name, node.op)) \
                    from exc
            for s in release:
                slots[s] = None
        return [slots[s][k] for s, k in self.heads]


def _as_list(values, names, what, allow_missing=False):
    """``values`` (a list in ``names`` order or a dict by name) as a list."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, dict):
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise MXNetError('%s: %s are not among the symbol\'s names %s'
                             % (what, unknown, names))
        out = [values.get(n) for n in names]
    else:
        out = list(values)
        if len(out) != len(names):
            raise MXNetError('%s: got %d arrays for %d names %s'
                             % (what, len(out), len(names), names))
    if not allow_missing:
        missing = [n for n, v in zip(names, out) if v is None]
        if missing:
            raise MXNetError('%s: no array given for %s' % (what, missing))
    return out


class Executor:
    """A graph bound to arrays: ``forward`` computes ``outputs`` from ``arg_dict`` and
    ``aux_dict``; ``backward`` writes the gradients into ``grad_dict`` per ``grad_req``.

    Made by ``Symbol.bind`` or ``Symbol.simple_bind``.
    """

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req='write', aux_states=None):
        self._symbol = symbol
        self._ctx = ctx
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = _as_list(args, arg_names, 'bind: args')
        self.aux_arrays = _as_list(aux_states, aux_names, 'bind: aux_states')
        self.grad_arrays = _as_list(args_grad, arg_names, 'bind: args_grad', allow_missing=True)
        if isinstance(grad_req, str):
            reqs = [grad_req] * len(arg_names)
        elif isinstance(grad_req, dict):
            reqs = [grad_req.get(n, 'null') for n in arg_names]
        else:
            reqs = list(grad_req)
        for req in reqs:
            if req not in _GRAD_REQS:
                raise MXNetError("bind: grad_req must be 'write', 'add' or 'null', got %r" % req)
        self._grad_req = ['null' if g is None else r for g, r in zip(self.grad_arrays, reqs)]
        for name, arr in zip(arg_names + aux_names, self.arg_arrays + self.aux_arrays):
            if not isinstance(arr, NDArray):
                raise MXNetError('bind: %r must be an NDArray, got %s' % (name, type(arr).__name__))
            if arr.context != ctx:
                raise MXNetError('bind: %r is on %s but the executor runs on %s; move it with '
                                 '.as_in_context()' % (name, arr.context, ctx))
        self.arg_dict = dict(zip(arg_names, self.arg_arrays))
        self.aux_dict = dict(zip(aux_names, self.aux_arrays))
        self.grad_dict = {n: g for n, g in zip(arg_names, self.grad_arrays) if g is not None}
        self._program = GraphProgram(symbol._outputs)  # pylint: disable=protected-access
        by_name = dict(self.arg_dict, **self.aux_dict)
        self._inputs = [by_name[n.name] for n in self._program.variables]
        grads = dict(zip(arg_names, zip(self.grad_arrays, self._grad_req)))
        self._grads = [grads.get(n.name, (None, 'null')) for n in self._program.variables]
        self.outputs = []
        self._recorded = False
        self._monitor = None

    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def forward(self, is_train=False, **kwargs):
        """Compute the outputs; ``kwargs`` (name -> array) are copied into ``arg_dict``
        first. ``is_train`` runs ops in training mode (BatchNorm's batch statistics,
        Dropout) and records for ``backward``."""
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise MXNetError('forward: %r is not an argument of the symbol; its arguments '
                                 'are %s' % (name, list(self.arg_dict)))
            self.arg_dict[name][:] = value
        record = bool(is_train) and any(r != 'null' for _, r in self._grads)
        values = []
        for arr, (grad, req) in zip(self._inputs, self._grads):
            view = NDArray(arr._data, arr._ctx)  # pylint: disable=protected-access
            if record and req != 'null':
                autograd.mark_variables([view], [grad], req)
            values.append(view)
        with tape.Scope(recording=record, training=bool(is_train)):
            outs = self._program.run(values, self._ctx)
        self._recorded = record
        self.outputs = outs
        if self._monitor is not None:
            for name, arr in zip(self._symbol.list_outputs(), outs):
                self._monitor(name, arr)
        return outs

    def backward(self, out_grads=None, is_train=True):
        """Write the gradients of the last ``forward(is_train=True)`` into
        ``grad_dict``; ``out_grads`` are the gradients of the outputs (ones when
        omitted)."""
        if not self._recorded:
            if all(r == 'null' for _, r in self._grads):
                return
            raise MXNetError('backward needs forward(is_train=True) first')
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        heads = [o for o in self.outputs if o._node is not None]  # pylint: disable=protected-access
        if out_grads is not None:
            out_grads = [g for o, g in zip(self.outputs, out_grads)
                         if o._node is not None]  # pylint: disable=protected-access
        if heads:
            with tape.Scope(recording=False, training=bool(is_train)):
                autograd.backward(heads, out_grads)
        self._recorded = False

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, array)`` with each output after every forward."""
        self._monitor = callback

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy arrays into ``arg_dict``/``aux_dict`` by name."""
        for params, target in ((arg_params, self.arg_dict), (aux_params or {}, self.aux_dict)):
            for name, value in params.items():
                if name in target:
                    target[name][:] = value.as_in_context(self._ctx) \
                        if isinstance(value, NDArray) else value
                elif not allow_extra_params:
                    raise MXNetError('copy_params_from: %r is not a parameter of the symbol'
                                     % name)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for other argument shapes, sharing the arrays whose shapes
        stay."""
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise MXNetError('reshape: shapes %s do not determine every argument' % kwargs)

        def fit(arr, shape):
            if arr is None or arr.shape == tuple(shape):
                return arr
            return creation.zeros(shape, ctx=self._ctx, dtype=arr.dtype)
        args = [fit(a, s) for a, s in zip(self.arg_arrays, arg_shapes)]
        grads = [fit(g, s) for g, s in zip(self.grad_arrays, arg_shapes)]
        aux = [fit(a, s) for a, s in zip(self.aux_arrays, aux_shapes)]
        return Executor(self._symbol, self._ctx, args, grads, self._grad_req, aux)

    def debug_str(self):
        return self._symbol.debug_str()


def allocate_arrays(symbol, ctx, grad_req, type_dict, shapes):
    """Zero arrays for ``simple_bind``: arguments, their gradients, auxiliary states."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        raise MXNetError('simple_bind: the shapes %s do not determine every argument of the '
                         'symbol (%s); give more of them' % (shapes, symbol.list_arguments()))
    arg_types, _, aux_types = symbol.infer_type(**(type_dict or {}))
    if arg_types is None:
        arg_types = [np.float32] * len(arg_shapes)
        aux_types = [np.float32] * len(aux_shapes)
    arg_names = symbol.list_arguments()
    args = [creation.zeros(s, ctx=ctx, dtype=t) for s, t in zip(arg_shapes, arg_types)]
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(arg_names)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, 'null') for n in arg_names]
    else:
        reqs = list(grad_req)
    grads = [None if r == 'null' else creation.zeros(s, ctx=ctx, dtype=t)
             for s, t, r in zip(arg_shapes, arg_types, reqs)]
    aux = [creation.zeros(s, ctx=ctx, dtype=t) for s, t in zip(aux_shapes, aux_types)]
    return args, grads, aux
