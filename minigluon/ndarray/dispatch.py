"""Between NDArrays and the layers below them: ``invoke`` runs an op of the table on
NDArrays and records it on the tape, and ``compute_gradients`` runs the tape backward
from NDArray heads.

An NDArray takes part in a graph through three fields: ``_node`` and ``_out_idx`` when
a recorded op produced it, ``_grad_req`` when it is a variable (``attach_grad``). This
module reads them; NDArray itself writes them. Outputs are wrapped in the class of the
first NDArray input, so this module needs no NDArray import.
"""
import numbers
import threading
import time

import numpy as np

from ..backend import NO_DEVICE
from ..base import MXNetError, MXNetIndexError, MXNetTypeError, MXNetValueError, shape_str
from ..context import cpu as _cpu
from . import tape

# host memory that is not plain cpu(i): an op's result on it lands on cpu(i)
_HOST_KINDS = ('cpu_pinned', 'cpu_shared')

# An op's ValueError stays a ValueError (as MXNet raises it), and becomes an MXNetError.
_ERROR_LIKE = ((ValueError, MXNetValueError), (TypeError, MXNetTypeError),
               (IndexError, MXNetIndexError))


def error_like(exc):
    """The MXNetError class to raise for the Python exception ``exc`` (keeping its kind)."""
    return next((mx for py, mx in _ERROR_LIKE if isinstance(exc, py)), MXNetError)


def requires_grad(arr):
    """True when ``arr`` is a variable or the output of a recorded op."""
    return arr._node is not None or (arr._grad_req is not None and arr._grad_req != 'null')


def _entry(arr):
    """The tape entry of an op input (see ``tape``), or None when no gradient is needed."""
    node = getattr(arr, '_node', None)
    if node is not None:
        return (node, arr._out_idx)
    if getattr(arr, '_grad_req', 'null') not in ('null', None):
        return arr
    return None


def attach_node(backward, inputs, outputs, name, saved=None, rule=None):
    """Record ``backward`` on the tape for ``outputs`` computed from ``inputs``.

    ``saved``: for an op of the table, ``(raw inputs, params, raw outputs, NDArray class,
    input context, output context)``, references a gradient rule needs to differentiate
    the node with recorded ops (``grad_rules``); None elsewhere. ``rule``: the node's
    higher-order rule when it is not the op's own.
    """
    node = tape.Node(backward, tuple(_entry(a) for a in inputs),
                     tuple((o._data.shape, o._data.dtype) for o in outputs),
                     outputs[0]._ctx.xp, name, saved, rule)
    for i, out in enumerate(outputs):
        out._node = node
        out._out_idx = i
    return node


def check_inplace_target(arr):
    """In-place writes into arrays that are part of a graph corrupt their gradients."""
    if tape.is_recording() and requires_grad(arr):
        raise MXNetError(
            'cannot write in place into an NDArray (shape %s, %s) that is part of a '
            'recorded graph (it has attach_grad() or comes from a recorded op): its old '
            'value may be needed by backward. Use an out-of-place op (y = x + 1 instead '
            'of x += 1, nd.where instead of x[idx] = v), or do the write outside '
            'autograd.record().' % (shape_str(arr.shape), arr.context))


class _Keep(threading.local):
    saved = True  # nodes keep their inputs and outputs for higher-order gradients


_keep = _Keep()


class first_order_only:  # pylint: disable=invalid-name
    """A ``with`` block whose recorded ops keep only what their own backward needs, not
    the inputs and outputs a higher-order gradient reads (``saved``): an intermediate
    array nothing else holds (a BatchNorm's output before its ReLU) is freed after the
    forward. Gradients of gradients through those ops raise a clear error instead
    (``tape.first_order_rule``). For blocks hybridized with ``static_alloc=True``."""

    def __enter__(self):
        self.prev, _keep.saved = _keep.saved, False

    def __exit__(self, *exc):
        _keep.saved = self.prev


class _Monitor(threading.local):
    hook = None


_monitor = _Monitor()


def op_monitor():
    """The hook that sees every op this thread runs (see ``set_op_monitor``), or None."""
    return _monitor.hook


def set_op_monitor(hook):
    """Call ``hook(op, name, inputs, outputs)`` after every op this thread runs (``name``:
    the ``name=`` the op was called with, or None); None stops. Returns the previous
    hook. Ops the hook itself runs are not reported."""
    prev, _monitor.hook = _monitor.hook, hook
    return prev


# The profiler's recorder while it runs (see ``set_profiler``); None when off, so a
# stopped profiler costs invoke one test.
_profiler = None


def set_profiler(recorder):
    """Have ``recorder.op_done(op, ctx, start)`` called after every op of every thread
    (``start``: ``time.perf_counter()`` before the op ran) and
    ``recorder.backward_done(node, input_grads, start)`` after every tape node's
    backward; None stops."""
    global _profiler  # pylint: disable=global-statement
    _profiler = recorder
    tape._profiler = recorder  # pylint: disable=protected-access


class PendingArray:
    """An op input whose shape is not fully known yet: the data of a Parameter whose
    initialization waits for its shape, handed to ``hybrid_forward``.

    ``invoke`` fills its unknown (0) dimensions with the op's shape rule and calls
    ``resolve(shape)``; the NDArray that returns stands in for it from then on (its
    attributes are read through). Subclasses define ``_resolve(shape)``.
    """

    def __init__(self, shape, dtype, context, label):
        self._shape = shape
        self.dtype = dtype
        self.context = self.ctx = context
        self._label = label
        self._array = None

    @property
    def shape(self):
        """The shape, with 0 for each dimension not known yet."""
        return self._shape if self._array is None else self._array.shape

    def resolve(self, shape):
        """The NDArray for ``shape`` (made once; later calls return the same one)."""
        if self._array is None:
            self._array = self._resolve(tuple(shape))
        return self._array

    def _resolve(self, shape):
        raise NotImplementedError

    def __getattr__(self, name):
        if name.startswith('_'):  # invoke must see no ``_data`` here, resolved or not
            raise AttributeError(name)
        array = self.__dict__.get('_array')
        if array is not None:
            return getattr(array, name)
        raise MXNetError(
            '%s has unknown shape %s: .%s needs the shape, which the first op using it (e.g. '
            'FullyConnected, Convolution, dot, broadcast arithmetic) infers. Pass it to such '
            'an op first, give the parameter its full shape, or implement infer_shape'
            % (self.__dict__.get('_label'), self.__dict__.get('_shape'), name))

    def __repr__(self):
        if self._array is not None:
            return repr(self._array)
        return '<%s, shape %s not known yet>' % (self._label, self.shape)


def _input_shape(arr):
    return arr.shape if isinstance(arr, PendingArray) else getattr(arr, 'shape', None)


def _resolve_pending(op, inputs, params):
    """``inputs`` with every PendingArray replaced by its NDArray, shapes from the op's rule."""
    waiting = {id(a) for a in inputs if isinstance(a, PendingArray) and a._array is None}
    if waiting:
        shapes = None
        if op.infer_shape is not None:
            shapes = op.infer_shape(*[_input_shape(a) for a in inputs], **params)
        for arr, shape in zip(inputs, shapes or [None] * len(inputs)):
            if id(arr) in waiting and (shape is None or not all(d > 0 for d in shape)):
                raise MXNetError(
                    '%s has unknown shape %s, and op %r cannot infer it from its inputs (%s)%s. '
                    'Give the parameter its full shape, or implement infer_shape(self, x) in '
                    'its Block' % (arr._label, arr.shape, op.name, _describe(
                        [a for a in inputs if not isinstance(a, PendingArray)]),
                        '' if op.infer_shape else ' (it has no shape rule)'))
        for arr, shape in zip(inputs, shapes):
            if isinstance(arr, PendingArray):
                arr.resolve(shape)
    return tuple(a._array if isinstance(a, PendingArray) else a for a in inputs)


def _describe(args):
    parts = []
    for a in args:
        data = getattr(a, '_data', None)
        if data is not None:
            parts.append('%s %s @%s' % (shape_str(data.shape) or 'scalar', data.dtype, a._ctx))
        elif hasattr(a, 'shape') and hasattr(a, 'dtype'):  # a raw array (graph_node)
            parts.append('%s %s' % (shape_str(a.shape) or 'scalar', a.dtype))
        else:
            parts.append(repr(a) if isinstance(a, numbers.Number) else type(a).__name__)
    return ', '.join(parts)


# What a kernel raises for inputs it cannot take (``kernel_error`` explains it).
KERNEL_ERRORS = (ValueError, TypeError, IndexError, AttributeError)


def kernel_error(op, inputs, params, exc):
    """The MXNetError to raise when ``op``'s kernel failed with ``exc`` (one of
    ``KERNEL_ERRORS``) on ``inputs``: it names the op, the inputs and the parameters."""
    return error_like(exc)('op %r failed on inputs (%s) with %s: %s'
                           % (op.name, _describe(inputs), params or '{}', exc))


def output_context(ctx):
    """Where an op's outputs go for inputs on ``ctx``: ``ctx``, except that MXNet puts
    the outputs of pinned or shared host inputs on ``cpu(i)``."""
    return _cpu(ctx.device_id) if ctx.device_type in _HOST_KINDS else ctx


def kernel_outputs(op, result):
    """The outputs (one array, or a tuple or list of them) of ``op``'s kernel as a tuple,
    each 0-d one made (1,): MXNet 1.x's ops but a few (``zero_dim``) give no 0-d arrays."""
    if not isinstance(result, (tuple, list)):  # the common case, without a generator
        return (result.reshape(1) if result.ndim == 0 and not op.zero_dim else result,)
    if op.zero_dim:
        return tuple(result)
    return tuple(r.reshape(1) if r.ndim == 0 else r for r in result)


def profiling():
    """True while a profiler records every op (see ``set_profiler``)."""
    return _profiler is not None


def invoke(op, inputs, params, ctx=None):
    """Run ``op`` on ``inputs`` (NDArrays or Python scalars) with keyword ``params``.

    Checks that the NDArrays share one device (host contexts, ``cpu(i)``,
    ``cpu_pinned(i)``, ``cpu_shared(i)``, all share memory and mix), runs the forward on
    their raw arrays, records a tape node when recording and an input needs a gradient,
    and wraps the outputs. The outputs go to the first input's context, a pinned or
    shared one becoming ``cpu(i)`` as in MXNet, unless ``ctx`` is given (NDArray methods
    that MXNet runs as copies or views keep the array's own). Returns an NDArray, or a
    list of NDArrays for a multi-output op. A ``name`` among the params (MXNet's name
    of the graph node) only labels the op for the monitor (``set_op_monitor``).
    """
    keep_context = ctx is not None
    name = None
    if 'name' in params:
        params = dict(params)
        name = params.pop('name')
    raw, ref = [], None
    for a in inputs:
        data = getattr(a, '_data', None)
        if data is None:
            if isinstance(a, PendingArray):
                resolved = _resolve_pending(op, inputs, params)
                return invoke(op, resolved, params if name is None else dict(params, name=name),
                              ctx)
            if isinstance(a, np.generic):
                a = a.item()  # numpy scalars must not upcast float32 arrays
            elif not isinstance(a, numbers.Number) and a is not None:
                raise MXNetError(
                    'op %r: expected NDArray inputs, got %s; convert it with nd.array(...)'
                    % (op.name, type(a).__name__))
            raw.append(a)
            continue
        if ref is None:
            ref = a
        if ctx is None:
            ctx = a._ctx
        elif a._ctx is not ctx and (ctx.is_gpu or a._ctx.is_gpu):
            # host contexts (cpu(i), cpu_pinned(i), ...) share memory and mix, as in MXNet
            raise MXNetError('op %r: inputs are on different contexts, %s and %s; move one '
                             'with .as_in_context(ctx) or .copyto(ctx)' % (op.name, ctx, a._ctx))
        raw.append(data)
    if ref is None:
        raise MXNetError('op %r needs at least one NDArray input' % op.name)
    if not keep_context:
        ctx = output_context(ctx)
    needs_grad = None
    if op.differentiable and tape._state.recording:
        needs_grad = tuple(getattr(a, '_data', None) is not None and requires_grad(a)
                           for a in inputs)
    kwargs = params
    if op.takes_needs_grad:
        kwargs = dict(params, needs_grad=needs_grad or (False,) * len(inputs))
    scope = ctx.device()
    profiler = _profiler
    if profiler is not None:
        start = time.perf_counter()
    try:
        if scope is NO_DEVICE:  # a with-block costs a fifth of a small op's dispatch
            result = op.forward(ctx.xp, *raw, **kwargs)
        else:
            with scope:
                result = op.forward(ctx.xp, *raw, **kwargs)
    except MXNetError:
        raise
    except KERNEL_ERRORS as exc:
        raise kernel_error(op, inputs, params, exc) from exc
    if profiler is not None:
        profiler.op_done(op, ctx, start)
    if op.differentiable:
        result, backward = result
    out_ctx = op.output_context(params) if op.output_context else ctx
    wrap = type(ref)
    single = not isinstance(result, (tuple, list))
    out_raw = kernel_outputs(op, result)
    outs = [wrap(r, out_ctx) for r in out_raw]
    if needs_grad is not None and any(needs_grad):
        if _keep.saved:
            attach_node(backward, inputs, outs, op.name,
                        (raw, params, out_raw, wrap, ctx, out_ctx))
        else:
            attach_node(backward, inputs, outs, op.name, rule=tape.first_order_rule)
    hook = _monitor.hook
    if hook is not None:
        _monitor.hook = None
        try:
            hook(op, name, inputs, outs)
        finally:
            _monitor.hook = hook
    return outs[0] if single else outs


def _receive(var, grad):
    var._receive_grad(grad)


def compute_gradients(heads, head_grads, retain_graph, variables=None, node_grads=None):
    """Run the tape backward from the NDArray ``heads`` (``head_grads``: NDArrays, Nones
    for ones, or None for all ones).

    Without ``variables`` the gradients go into the variables' gradient buffers per their
    ``grad_req``. With ``variables`` (NDArrays), nothing is written and their gradients
    are returned in order, as NDArrays (zeros where none reached). With ``node_grads``
    (see ``tape.run_backward``; ``variables`` needed) the gradients are NDArrays computed
    by recorded ops, so they can be differentiated again.
    """
    entries = []
    for i, head in enumerate(heads):
        if head._node is None:
            raise MXNetError(
                'backward: head %d (shape %s, %s) was not produced by a recorded '
                'operation. Call attach_grad() on the inputs and compute the head inside '
                '`with autograd.record():`.' % (i, shape_str(head.shape), head.context))
        hg = head_grads[i] if head_grads is not None else None
        if hg is not None:
            if hg.shape != head.shape:
                raise MXNetError('backward: head_grads[%d] has shape %s but the head has shape '
                                 '%s' % (i, hg.shape, head.shape))
            if hg.context != head.context:
                raise MXNetError('backward: head_grads[%d] is on %s but the head is on %s'
                                 % (i, hg.context, head.context))
            if node_grads is None:
                hg = hg._data
        elif node_grads is not None:
            hg = type(head)(head._ctx.xp.ones(head._data.shape, head._data.dtype), head._ctx)
        entries.append((head._node, head._out_idx, hg))
    wanted = [] if variables is None else [(v._node, v._out_idx) for v in variables
                                           if v._node is not None]
    if variables is None:
        # each gradient is written as soon as it is complete, so a hook on the variable
        # (a Trainer sending it to a kvstore) can act while backward goes on
        tape.run_backward(entries, retain_graph, on_final=_receive)
        return None
    reached, wanted_grads = tape.run_backward(entries, retain_graph, wanted,
                                              node_grads=node_grads)
    by_entry = dict(zip([(id(node), idx) for node, idx in wanted], wanted_grads))
    out = []
    for var in variables:
        if var._node is not None:
            grad = by_entry[(id(var._node), var._out_idx)]
        else:
            grad = reached.get(id(var), (None, None))[1]
        if grad is None:
            grad = type(var)(var._ctx.xp.zeros(var._data.shape, var._data.dtype), var._ctx)
        else:
            if grad.dtype != var._data.dtype:
                grad = grad.astype(var._data.dtype)
            if node_grads is None:  # raw: wrap it
                grad = type(var)(grad, var._ctx)
        out.append(grad)
    return out
