"""Between NDArrays and the layers below them: ``invoke`` runs an op of the table on
NDArrays and records it on the tape, and ``compute_gradients`` runs the tape backward
from NDArray heads.

An NDArray takes part in a graph through three fields: ``_node`` and ``_out_idx`` when
a recorded op produced it, ``_grad_req`` when it is a variable (``attach_grad``). This
module reads them; NDArray itself writes them. Outputs are wrapped in the class of the
first NDArray input, so this module needs no NDArray import.
"""
import numbers

import numpy as np

from ..backend import NO_DEVICE
from ..base import MXNetError, MXNetIndexError, MXNetTypeError, MXNetValueError, shape_str
from . import tape

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


def attach_node(backward, inputs, outputs, name):
    """Record ``backward`` on the tape for ``outputs`` computed from ``inputs``."""
    node = tape.Node(backward, tuple(_entry(a) for a in inputs),
                     tuple((o._data.shape, o._data.dtype) for o in outputs),
                     outputs[0]._ctx.xp, name)
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


def _describe(args):
    parts = []
    for a in args:
        data = getattr(a, '_data', None)
        if data is not None:
            parts.append('%s %s @%s' % (shape_str(data.shape) or 'scalar', data.dtype, a._ctx))
        else:
            parts.append(repr(a) if isinstance(a, numbers.Number) else type(a).__name__)
    return ', '.join(parts)


def invoke(op, inputs, params, ctx=None):
    """Run ``op`` on ``inputs`` (NDArrays or Python scalars) with keyword ``params``.

    Checks that the NDArrays share one context, runs the forward on their raw arrays,
    records a tape node when recording and an input needs a gradient, and wraps the
    outputs. Returns an NDArray, or a list of NDArrays for a multi-output op.
    """
    raw, ref = [], None
    for a in inputs:
        data = getattr(a, '_data', None)
        if data is None:
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
        elif a._ctx is not ctx:
            raise MXNetError('op %r: inputs are on different contexts, %s and %s; move one '
                             'with .as_in_context(ctx) or .copyto(ctx)' % (op.name, ctx, a._ctx))
        raw.append(data)
    if ref is None:
        raise MXNetError('op %r needs at least one NDArray input' % op.name)
    needs_grad = None
    if op.differentiable and tape._state.recording:
        needs_grad = tuple(getattr(a, '_data', None) is not None and requires_grad(a)
                           for a in inputs)
    kwargs = params
    if op.takes_needs_grad:
        kwargs = dict(params, needs_grad=needs_grad or (False,) * len(inputs))
    scope = ctx.device()
    try:
        if scope is NO_DEVICE:  # a with-block costs a fifth of a small op's dispatch
            result = op.forward(ctx.xp, *raw, **kwargs)
        else:
            with scope:
                result = op.forward(ctx.xp, *raw, **kwargs)
    except MXNetError:
        raise
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise error_like(exc)(
            'op %r failed on inputs (%s) with %s: %s'
            % (op.name, _describe(inputs), params or '{}', exc)) from exc
    if op.differentiable:
        result, backward = result
    out_ctx = op.output_context(params) if op.output_context else ctx
    wrap = type(ref)
    single = not isinstance(result, (tuple, list))
    if single:  # MXNet has no 0-d arrays
        outs = [wrap(result.reshape(1) if result.ndim == 0 else result, out_ctx)]
    else:
        outs = [wrap(r.reshape(1) if r.ndim == 0 else r, out_ctx) for r in result]
    if needs_grad is not None and any(needs_grad):
        attach_node(backward, inputs, outs, op.name)
    return outs[0] if single else outs


def compute_gradients(heads, head_grads, retain_graph, variables=None):
    """Run the tape backward from the NDArray ``heads`` (``head_grads``: NDArrays, Nones
    for ones, or None for all ones).

    Without ``variables`` the gradients go into the variables' gradient buffers per their
    ``grad_req``. With ``variables`` (NDArrays), nothing is written and their gradients
    are returned in order, as NDArrays (zeros where none reached).
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
            hg = hg._data
        entries.append((head._node, head._out_idx, hg))
    wanted = [] if variables is None else [(v._node, v._out_idx) for v in variables
                                           if v._node is not None]
    reached, wanted_grads = tape.run_backward(entries, retain_graph, wanted)
    if variables is None:
        for var, grad in reached.values():
            var._receive_grad(grad)
        return None
    by_entry = dict(zip([(id(node), idx) for node, idx in wanted], wanted_grads))
    out = []
    for var in variables:
        if var._node is not None:
            grad = by_entry[(id(var._node), var._out_idx)]
        else:
            grad = reached.get(id(var), (None, None))[1]
        if grad is None:
            grad = var._ctx.xp.zeros(var._data.shape, var._data.dtype)
        elif grad.dtype != var._data.dtype:
            grad = grad.astype(var._data.dtype)
        out.append(type(var)(grad, var._ctx))
    return out
