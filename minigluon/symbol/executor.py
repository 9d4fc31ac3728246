"""Running graphs: ``GraphProgram`` (a graph compiled to a list of kernel calls) and
``Executor`` (MXNet's bound graph: arrays, gradients, forward and backward).

A program runs each operator node through the op table (``dispatch.invoke``), so a
graph computes exactly what the same ops called on NDArrays compute, and autograd
records it op by op when recording is on: the gradients of a hybridized block and
of an executor come from the same backward functions as imperative code. An executor
first merges the graph's common subexpressions, as MXNet's does.
"""
import os

import numpy as np

from ..base import MXNetError, MXNetValueError
from ..ndarray import creation, tape
from ..ndarray.dispatch import compute_gradients
from ..ndarray.ndarray import NDArray
from ..util import is_np_shape
from . import shape_inference
from .graph import eliminate_common_expr, topological_order
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
        self.order = order
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
                runner = spec.runner(node.attrs, node.subgraphs)
            except MXNetError as exc:
                raise MXNetError('node %s: %s' % (node.name, exc)) from None
            release = [position[id(src)] for src, _ in node.inputs
                       if last_use[id(src)] == i and not src.is_variable]
            self.steps.append((i, runner, [(position[id(s)], k) for s, k in node.inputs],
                               sorted(set(release)), node))
        self.num_nodes = len(order)
        self.var_slots = [position[id(n)] for n in self.variables]
        self.heads = [(position[id(n)], k) for n, k in heads]
        # nodes making arrays of partly unknown shapes (a cell's begin state, zeros of
        # shape (0, hidden)): each run's input shapes decide them (see steps_for)
        np_semantics = is_np_shape()
        self._open = [(i, node) for i, node in enumerate(order)
                      if shape_inference.open_source_shape(node, np_semantics) is not None]
        self._resolved = {}

    @property
    def has_open_shapes(self):
        """True when a node's shape depends on each run's input shapes (see
        ``steps_for``)."""
        return bool(self._open)

    def steps_for(self, values):
        """The steps to run on the variables' arrays ``values``: ``steps``, with the
        nodes of partly unknown shapes given the shapes these inputs imply."""
        if not self._open:
            return self.steps
        key = tuple(v.shape for v in values)
        steps = self._resolved.get(key)
        if steps is not None:
            return steps
        shapes = shape_inference.entry_shapes(
            self.order, {n.name: v.shape for n, v in zip(self.variables, values)})
        runners = {}
        for index, node in self._open:
            shape = shapes.get((id(node), 0))
            if shape is None or any(d < 0 for d in shape):
                raise MXNetError('node %s (op %s): the unknown dimensions of its shape %s '
                                 'cannot be inferred from the graph\'s inputs; give the full '
                                 'shape' % (node.name, node.op, node.attrs.get('shape')))
            runners[index] = spec_of(node.op).runner(dict(node.attrs, shape=str(shape)))
        steps = [(index, runners.get(index, runner), inputs, release, node)
                 for index, runner, inputs, release, node in self.steps]
        if len(self._resolved) >= 64:  # many input shapes (buckets): keep the recent ones
            self._resolved.clear()
        self._resolved[key] = steps
        return steps

    def run(self, values, ctx, observe=None):
        """The outputs for the variables' arrays ``values``; ``observe(node, inputs,
        outputs)``, when given, sees each node's arrays as it runs."""
        slots = [None] * self.num_nodes
        for slot, value in zip(self.var_slots, values):
            slots[slot] = [value]
        for index, runner, inputs, release, node in self.steps_for(values):
            args = [slots[s][k] for s, k in inputs]
            try:
                slots[index] = runner(args, ctx)
            except MXNetError as exc:
                raise node_error(exc, node) from exc
            if observe is not None:
                observe(node, args, slots[index])
            for s in release:
                slots[s] = None
        return [slots[s][k] for s, k in self.heads]

    def gradient_path(self, wanted):
        """The positions of the nodes a gradient flows through from the variables
        ``wanted`` (a set of their positions) to the heads: nodes downstream of them and
        upstream of a head over differentiable ops only (``BlockGrad`` cuts the path)."""
        differentiable = {index: spec_of(node.op).differentiable
                          for index, _, _, _, node in self.steps}
        reached = set(wanted)
        for index, _, inputs, _, _ in self.steps:
            if differentiable[index] and any(s in reached for s, _ in inputs):
                reached.add(index)
        feeds = {s for s, _ in self.heads if s in reached}
        for index, _, inputs, _, _ in reversed(self.steps):
            if index in feeds:
                feeds.update(s for s, _ in inputs if s in reached)
        return feeds - set(wanted)

    def planned_bytes(self, entry_bytes, kept=()):
        """The most memory the intermediate arrays hold at once during ``run`` (bytes),
        given each ``(position, output index)``'s size ``entry_bytes`` and the positions
        whose outputs are ``kept`` to the end (the values a backward pass reads)."""
        live, peak = {}, 0
        for index, _, _, release, node in self.steps:
            count = spec_of(node.op).num_outputs(node.attrs)
            live[index] = sum(entry_bytes.get((index, k), 0) for k in range(count))
            peak = max(peak, sum(live.values()))
            for s in release:
                if s not in kept:
                    live.pop(s, None)
        return peak


def node_error(exc, node):
    """The MXNetError ``exc`` again, of its class, naming the graph ``node`` it came
    from."""
    return type(exc)('%s (in graph node %s, op %s)' % (exc, node.name, node.op))


# How MXNet's monitors name a node's arrays: ``<node>_<input name>`` where the op
# registers its input names, else ``<node>_input<i>``. Outputs: the executor names them
# as ``list_outputs`` does (``<node>_output``, ``<node>_output<i>``); the CachedOp of
# Gluon's op hook uses the registered names, else ``<node>_<i>`` (seen in MXNet 1.9.1).
_NAMED_INPUTS = frozenset([
    'FullyConnected', 'Convolution', 'Deconvolution', 'BatchNorm', 'Pooling', 'Dropout',
    'Concat', 'softmax', 'log_softmax', 'softmin', 'LeakyReLU', 'LayerNorm', 'GroupNorm',
    'InstanceNorm', 'Embedding', 'pick', 'where', 'take', 'one_hot', 'tile', 'reverse',
    'reshape_like', 'broadcast_like', 'add_n', 'ElementWiseSum', 'stack', 'dot',
    'batch_dot', 'Pad', 'SwapAxis', 'SliceChannel', 'CTCLoss', 'RNN', 'LRN',
    'SoftmaxOutput', 'UpSampling', 'L2Normalization', 'slice_like', 'gather_nd',
    'scatter_nd', 'batch_take', 'moments', 'LinearRegressionOutput',
    'LogisticRegressionOutput', 'MAERegressionOutput', 'SVMOutput', 'MakeLoss'])
_NAMED_OUTPUTS = frozenset([
    'FullyConnected', 'Convolution', 'Deconvolution', 'BatchNorm', 'Pooling', 'Dropout',
    'Concat', 'softmax', 'Activation', 'LeakyReLU', 'LayerNorm', 'GroupNorm',
    'InstanceNorm', 'Pad', 'SwapAxis', 'SliceChannel', 'elemwise_add', 'UpSampling',
    'L2Normalization', 'SoftmaxActivation', 'SoftmaxOutput', 'RNN', 'LRN', 'CTCLoss'])


def _is_named(op, names):
    return op in names or (op.startswith(('broadcast_', 'elemwise_')) and op != 'broadcast_to')


def monitor_input_names(node, spec):
    """The labels of ``node``'s inputs in MXNet's monitors (``fc1_data``, ``act1_input0``)."""
    count = len(node.inputs)
    if _is_named(node.op, _NAMED_INPUTS):
        names = spec.input_names(node.attrs, count)
    else:
        names = ['input%d' % i for i in range(count)]
    return ['%s_%s' % (node.name, n) for n in names]


def cached_op_monitor_names(node, spec):
    """(input labels, output labels) of ``node`` for Gluon's op hook (MXNet's CachedOp)."""
    if node.op in _NAMED_OUTPUTS:
        outputs = spec.output_names(node.attrs)
    else:
        outputs = [str(i) for i in range(spec.num_outputs(node.attrs))]
    return monitor_input_names(node, spec), ['%s_%s' % (node.name, n) for n in outputs]


class _Watch:
    """The arrays of one forward (and of the backward of its recorded graph) reported to
    a monitor callback under the names MXNet's executor gives them."""

    def __init__(self, ctx, callback, monitor_all):
        self.ctx, self.callback, self.monitor_all = ctx, callback, monitor_all

    def report(self, name, array):
        # the statistic is not part of the model's graph: never recorded
        with tape.Scope(recording=False, training=None):
            self.callback(name, array)

    def __call__(self, node, inputs, outputs):
        spec = spec_of(node.op)
        if self.monitor_all:
            for (src, _), label, arr in zip(node.inputs, monitor_input_names(node, spec),
                                            inputs):
                if src.is_variable:
                    self.report(src.name, arr)
                self.report(label, arr)
        labels = spec.output_names(node.attrs)
        for i, arr in enumerate(outputs):
            self.report('%s_%s' % (node.name, labels[i] if i < len(labels) else
                                   'output%d' % i), arr)
        recorded = outputs[0]._node if outputs else None  # pylint: disable=protected-access
        made_here = all(getattr(a, '_node', None) is not recorded for a in inputs)
        if recorded is not None and recorded.backward is not None and made_here:
            recorded.backward = self.reporting_backward(recorded.backward, node, inputs)

    def reporting_backward(self, backward, node, inputs):
        """``backward`` that also reports the gradient of each of ``node``'s inputs
        (zeros for those that get none) as ``<node>_backward_output<i>``."""
        slots = spec_of(node.op)._input_slots(node.attrs)  # pylint: disable=protected-access
        ctx = self.ctx

        def run(out_grads):
            in_grads = backward(out_grads)
            grads = in_grads if isinstance(in_grads, (tuple, list)) else (in_grads,)
            if slots is not None and len(grads) > len(inputs):
                grads = [grads[s] for s in slots]  # leave out the kernel's absent inputs
            for i, (grad, arr) in enumerate(zip(grads, inputs)):
                grad = ctx.xp.zeros(arr.shape, arr.dtype) if grad is None else grad
                suffix = '' if len(inputs) == 1 else str(i)
                self.report('%s_backward_output%s' % (node.name, suffix), NDArray(grad, ctx))
            return in_grads
        return run


def _as_list(values, names, what, allow_missing=False):
    """``values`` (a list in ``names`` order or a dict by name) as a list; ``allow_missing``
    lets names go without an array (gradients). A dict may hold names the symbol does not
    have: they are left out, as MXNet leaves them (one dict of arrays serves several
    graphs, a bias for the graph with one, say)."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, dict):
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


def _grad_reqs(grad_req, names):
    """One of 'write', 'add', 'null' per name, from a str, a list or a dict (names a
    dict leaves out get 'null')."""
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, 'null') for n in names]
    else:
        reqs = list(grad_req)
        if len(reqs) != len(names):
            raise MXNetError('grad_req: got %d entries for %d arguments %s'
                             % (len(reqs), len(names), names))
    for req in reqs:
        if req not in _GRAD_REQS:
            raise MXNetError("grad_req must be 'write', 'add' or 'null', got %r" % (req,))
    return reqs


def _view(arr, shape):
    """The first elements of ``arr`` as an array of ``shape`` sharing its memory."""
    size = int(np.prod(shape))
    data = arr._data  # pylint: disable=protected-access
    return NDArray(data.reshape(-1)[:size].reshape(shape), arr.context)


class Executor:
    """A graph bound to arrays: ``forward`` computes ``outputs`` from ``arg_dict`` and
    ``aux_dict``; ``backward`` writes the gradients into ``grad_dict`` per ``grad_req``.

    Made by ``Symbol.bind`` or ``Symbol.simple_bind``. As in MXNet, ``outputs`` are
    arrays of the executor that each ``forward`` overwrites, and ``backward`` may follow
    a ``forward`` in either mode (``is_train`` only chooses how layers such as Dropout
    and BatchNorm behave).
    """

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req='write', aux_states=None,
                 shared_exec=None):
        self._symbol = symbol
        self._ctx = ctx
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = _as_list(args, arg_names, 'bind: args')
        self.aux_arrays = _as_list(aux_states, aux_names, 'bind: aux_states')
        self.grad_arrays = _as_list(args_grad, arg_names, 'bind: args_grad', allow_missing=True)
        reqs = _grad_reqs(grad_req, arg_names)
        self._grad_req = ['null' if g is None else r for g, r in zip(self.grad_arrays, reqs)]
        for name, arr in zip(arg_names + aux_names, self.arg_arrays + self.aux_arrays):
            if not isinstance(arr, NDArray):
                raise MXNetError('bind: %r must be an NDArray, got %s' % (name, type(arr).__name__))
            if arr.context != ctx:
                raise MXNetError('bind: %r is on %s but the executor runs on %s; move it with '
                                 '.as_in_context()' % (name, arr.context, ctx))
        for name, arr, grad in zip(arg_names, self.arg_arrays, self.grad_arrays):
            if grad is not None and grad.shape != arr.shape:
                raise MXNetError('bind: the gradient of %r has shape %s but the argument has '
                                 'shape %s' % (name, grad.shape, arr.shape))
        self.arg_dict = dict(zip(arg_names, self.arg_arrays))
        self.aux_dict = dict(zip(aux_names, self.aux_arrays))
        self.grad_dict = dict(zip(arg_names, self.grad_arrays))  # None: no gradient
        heads = symbol._outputs  # pylint: disable=protected-access
        if os.environ.get('MXNET_ELIMINATE_COMMON_EXPR', '1').lower() not in ('0', 'false'):
            heads = eliminate_common_expr(heads)
        self._heads_run = heads
        self._program = GraphProgram(heads)
        by_name = dict(self.arg_dict, **self.aux_dict)
        self._inputs = [by_name[n.name] for n in self._program.variables]
        grads = dict(zip(arg_names, zip(self.grad_arrays, self._grad_req)))
        self._grads = [grads.get(n.name, (None, 'null')) for n in self._program.variables]
        wanted = {slot for slot, (_, req) in zip(self._program.var_slots, self._grads)
                  if req != 'null'}
        self._gradient_path = self._program.gradient_path(wanted)
        self._shapes, self._dtypes = self._infer(arg_names, aux_names)
        self.outputs = self._allocate_outputs(shared_exec)
        self._heads = None       # the recorded outputs of the last forward
        self._variables = None   # the arrays standing for the arguments in that forward
        self._monitor = None

    def _infer(self, arg_names, aux_names):
        """Every node output's shape and dtype for the bound arrays (raising on shapes
        the graph cannot take, as MXNet's bind does)."""
        order = self._program.order
        arrays = dict(zip(arg_names + aux_names, self.arg_arrays + self.aux_arrays))
        shapes = shape_inference.entry_shapes(order, {n: a.shape for n, a in arrays.items()})
        dtypes = shape_inference.infer_types(order, {n: a.dtype for n, a in arrays.items()})
        return shapes, dtypes

    def _allocate_outputs(self, shared_exec):
        outputs = []
        for i, (node, idx) in enumerate(self._heads_run):
            shape = self._shapes.get((id(node), idx))
            dtype = self._dtypes.get((id(node), idx), np.dtype(np.float32))
            if shape is None or any(d < 0 for d in shape):
                outputs.append(None)  # allocated by the first forward
                continue
            shared = shared_exec.outputs[i] if shared_exec is not None and \
                i < len(shared_exec.outputs) else None
            if shared is not None and shared.dtype == dtype and \
                    shared.size >= int(np.prod(shape)):
                outputs.append(_view(shared, shape))  # memory shared, as MXNet's reshape
            else:
                outputs.append(creation.zeros(shape, ctx=self._ctx, dtype=dtype))
        return outputs

    @property
    def output_dict(self):
        """``{output name: array}`` of ``outputs``."""
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def forward(self, is_train=False, **kwargs):
        """Compute the outputs; ``kwargs`` (name -> array) are copied into ``arg_dict``
        first. ``is_train`` runs ops in training mode (BatchNorm's batch statistics,
        Dropout)."""
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise MXNetError('forward: %r is not an argument of the symbol; its arguments '
                                 'are %s' % (name, list(self.arg_dict)))
            self.arg_dict[name][:] = value
        outs = self._run(is_train)
        for i, out in enumerate(outs):
            target = self.outputs[i]
            if target is None or target.shape != out.shape or target.dtype != out.dtype:
                self.outputs[i] = target = creation.zeros(out.shape, ctx=self._ctx,
                                                          dtype=out.dtype)
            target._data[...] = out._data  # pylint: disable=protected-access
        return self.outputs

    def _run(self, is_train):
        """The outputs of the graph on the bound arrays, recorded for ``backward`` when
        gradients are wanted."""
        record = bool(self._gradient_path)
        values, variables = [], []
        for arr, (grad, req) in zip(self._inputs, self._grads):
            # a fresh array over the same memory stands for the argument on the tape
            view = NDArray(arr._data, arr._ctx)  # pylint: disable=protected-access
            if req != 'null':
                if record:
                    view._mark(grad, req)  # pylint: disable=protected-access
                variables.append((view, arr, grad, req))
            values.append(view)
        watch = None if self._monitor is None else _Watch(self._ctx, *self._monitor)
        with tape.Scope(recording=record, training=bool(is_train)):
            outs = self._program.run(values, self._ctx, watch)
        self._heads = outs if record else []
        self._variables = variables
        return outs

    def backward(self, out_grads=None, is_train=True):
        """Write the gradients of the last forward into ``grad_dict`` per ``grad_req``
        ('write' replaces, 'add' accumulates); ``out_grads`` are the gradients of the
        outputs (ones when omitted; loss layers such as SoftmaxOutput ignore theirs).
        Before any forward, the gradients are taken at the bound arrays' values."""
        if self._variables is None:
            # MXNet differentiates at the bound arrays as they are now; the outputs are
            # only written by forward
            self._run(is_train)
        if not self._variables:
            return
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        # more are ignored, as MXNet ignores them
        if out_grads is not None and len(out_grads) < len(self.outputs):
            raise MXNetError('backward: got %d out_grads for %d outputs'
                             % (len(out_grads), len(self.outputs)))
        if self._heads is None:
            raise MXNetError('backward: the graph of the last forward was already '
                             'differentiated; run forward again')
        # no recorded head: no gradient reaches the arguments (BlockGrad), they get zeros
        chosen = [i for i, o in enumerate(self._heads)
                  if o._node is not None]  # pylint: disable=protected-access
        views = [view for view, _, _, _ in self._variables]
        if chosen:
            heads = [self._heads[i] for i in chosen]
            # copied into arrays of the outputs' dtypes, as MXNet's executor does (an
            # int32 output takes 0.7 as 0)
            head_grads = None if out_grads is None else [
                None if out_grads[i] is None else
                out_grads[i].as_in_context(self._ctx).astype(heads[k].dtype, copy=False)
                for k, i in enumerate(chosen)]
            with tape.Scope(recording=False, training=bool(is_train)):
                grads = compute_gradients(heads, head_grads, False, views)
        else:
            grads = [creation.zeros(v.shape, ctx=self._ctx, dtype=v.dtype) for v in views]
        self._heads = None
        for (_, arr, grad, req), value in zip(self._variables, grads):
            if arr._grad is grad and arr._grad_req == req:  # pylint: disable=protected-access
                # bound with its own gradient (a Gluon Parameter's): received as autograd's
                # backward delivers it, so the Parameter counts the write
                arr._receive_grad(value._data)  # pylint: disable=protected-access
            elif req == 'add':
                grad += value
            else:
                grad[:] = value

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, array)`` with every node's outputs as forward runs them
        (``fc1_output``) and the gradients of every node's backward (``fc1_backward_output0``,
        ...), as MXNet's executor does; ``monitor_all`` also reports each node's inputs
        before its outputs (``fc1_data``, and a variable under its own name). None stops.
        """
        self._monitor = None if callback is None else (callback, bool(monitor_all))

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy arrays into ``arg_dict``/``aux_dict`` by name."""
        for params, target in ((arg_params, self.arg_dict), (aux_params or {}, self.aux_dict)):
            for name, value in params.items():
                if name in target:
                    target[name][:] = value.as_in_context(self._ctx) \
                        if isinstance(value, NDArray) else value
                elif not allow_extra_params:
                    raise MXNetValueError('copy_params_from: %r is not a parameter of the symbol; '
                                          'pass allow_extra_params=True to skip such names' % name)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for the argument shapes ``kwargs`` (name -> shape), as MXNet's:
        arrays that shrink or keep their size share memory with this executor's (a view
        of their first elements), larger ones are new (only with ``allow_up_sizing``), and
        an argument not named that changes shape is an error unless ``partial_shaping``.
        """
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise MXNetError('reshape: shapes %s do not determine every argument' % kwargs)

        def fit(name, arr, shape, grad=None):
            shape = tuple(shape)
            if arr is None or arr.shape == shape:
                return arr
            if not (partial_shaping or name in kwargs):
                raise MXNetError('reshape: the shape of %r, which was not given, changes from '
                                 '%s to %s; pass partial_shaping=True if that is intended'
                                 % (name, arr.shape, shape))
            if int(np.prod(shape)) > arr.size:
                if not allow_up_sizing:
                    raise MXNetError('reshape: %r grows from %s to %s; pass allow_up_sizing=True '
                                     'to allocate new arrays (making a big executor and '
                                     'shrinking it is cheaper)' % (name, arr.shape, shape))
                return creation.zeros(shape, ctx=arr.context, dtype=arr.dtype)
            return _view(arr, shape)
        names = self._symbol.list_arguments()
        args = [fit(n, a, s) for n, a, s in zip(names, self.arg_arrays, arg_shapes)]
        grads = [fit(n, g, s) for n, g, s in zip(names, self.grad_arrays, arg_shapes)]
        aux = [fit(n, a, s) for n, a, s in zip(self._symbol.list_auxiliary_states(),
                                                 self.aux_arrays, aux_shapes)]
        reshaped = Executor(self._symbol, self._ctx, args, grads, self._grad_req, aux,
                            shared_exec=self)
        reshaped._monitor = self._monitor  # MXNet moves the monitor callback over too
        return reshaped

    def get_optimized_symbol(self):
        """The graph this executor runs: the bound one with its common subexpressions
        merged (unless ``MXNET_ELIMINATE_COMMON_EXPR=0``)."""
        return type(self._symbol)(self._heads_run)

    def debug_str(self):
        """The graph, and the memory this executor's plan holds for intermediate arrays
        and outputs (``Total N MB allocated``, as MXNet prints it; the values a backward
        pass reads stay allocated when gradients are wanted)."""
        position = {id(n): i for i, n in enumerate(self._program.order)}
        sizes = {}
        for (node_id, idx), shape in self._shapes.items():
            dtype = self._dtypes.get((node_id, idx), np.dtype(np.float32))
            if shape is not None and node_id in position:
                sizes[(position[node_id], idx)] = int(np.prod(shape)) * dtype.itemsize
        total = self._program.planned_bytes(sizes, self._gradient_path)
        total += sum(o.size * np.dtype(o.dtype).itemsize for o in self.outputs if o is not None)
        return '%s\nTotal %d MB allocated\n' % (self._symbol.debug_str(), total >> 20)


def allocate_arrays(symbol, ctx, grad_req, type_dict, shapes):
    """Zero arrays for ``simple_bind``: arguments, their gradients, auxiliary states."""
    arg_shapes, _, aux_shapes = symbol.infer_shape_partial(**shapes)
    unknown = [n for n, s in zip(symbol.list_arguments() + symbol.list_auxiliary_states(),
                                 arg_shapes + aux_shapes) if not s or not all(d > 0 for d in s)]
    if unknown:
        raise MXNetError('simple_bind: the shapes %s do not determine every argument of the '
                         'symbol: %s are unknown; give more of them' % (shapes, unknown))
    arg_types, _, aux_types = symbol.infer_type_partial(**(type_dict or {}))
    arg_types = [t or np.float32 for t in arg_types]
    aux_types = [t or np.float32 for t in aux_types]
    reqs = _grad_reqs(grad_req, symbol.list_arguments())
    args = [creation.zeros(s, ctx=ctx, dtype=t) for s, t in zip(arg_shapes, arg_types)]
    grads = [None if r == 'null' else creation.zeros(s, ctx=ctx, dtype=t)
             for s, t, r in zip(arg_shapes, arg_types, reqs)]
    aux = [creation.zeros(s, ctx=ctx, dtype=t) for s, t in zip(aux_shapes, aux_types)]
    return args, grads, aux
