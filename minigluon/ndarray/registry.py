"""The op table: every NDArray operation is registered here once.

An op is a function ``forward(xp, *inputs, **params)`` written against the array
module ``xp`` (numpy or cupy), so the same code runs on every device. A
differentiable op returns ``(output, backward)`` where ``backward(dy)`` is a closure
over only what it needs and returns one gradient (or None) per input; an op with
several outputs returns a tuple of outputs and its backward receives a tuple of
output gradients. A non-differentiable op returns just its output(s).

``invoke`` is the single dispatcher: it checks contexts, unwraps NDArrays, runs the
forward, records a tape node when autograd is recording and an input needs a
gradient, and wraps the outputs. ``nd.<op>`` functions and NDArray methods are
generated from this table.

An op registered with ``takes_needs_grad=True`` also receives the keyword-only
``needs_grad``: one bool per input, true when autograd will want that input's
gradient. Its backward returns None for the others, so a costly gradient nobody
reads (a convolution's data gradient at the network's input) is never computed.
"""
import numbers

import numpy as np

from .. import autograd
from ..base import MXNetError, shape_str
from .accumulate import sum_over

_OPS = {}


class OpDef:
    """One registered op: its forward, how many array inputs it takes, and flags."""
    __slots__ = ('name', 'forward', 'num_inputs', 'differentiable', 'output_context',
                 'takes_needs_grad', 'input_names', 'param_names', 'num_required_inputs')

    def __init__(self, name, forward, num_inputs, differentiable, output_context,
                 takes_needs_grad=False):
        self.name = name
        self.forward = forward
        self.num_inputs = num_inputs  # an int, or None for variadic (concat, stack, ...)
        self.differentiable = differentiable
        self.output_context = output_context
        self.takes_needs_grad = takes_needs_grad
        code = forward.__code__
        first = 1 + (num_inputs or 0)
        self.input_names = code.co_varnames[1:first]
        self.param_names = code.co_varnames[first:code.co_argcount]  # positional-capable params
        optional = len(forward.__defaults__ or ()) - len(self.param_names)
        self.num_required_inputs = len(self.input_names) - max(optional, 0)  # e.g. bias=None

    @property
    def doc(self):
        return self.forward.__doc__

    def __repr__(self):
        return '<op %s>' % self.name


def register(name, num_inputs=1, differentiable=True, output_context=None,
             takes_needs_grad=False):
    """Decorator adding ``forward`` to the op table under ``name``.

    ``num_inputs`` leading positional arguments are arrays (None: all positional
    arguments are). ``output_context(params)`` gives the outputs' context for ops
    that move data; by default outputs live where the inputs are.
    ``takes_needs_grad``: pass the keyword ``needs_grad`` (see the module docstring).
    """
    def deco(forward):
        if name in _OPS:
            raise MXNetError('op %r is registered twice' % name)
        _OPS[name] = OpDef(name, forward, num_inputs, differentiable, output_context,
                           takes_needs_grad)
        return forward
    return deco


def get_op(name):
    try:
        return _OPS[name]
    except KeyError:
        raise MXNetError('no op named %r is registered' % name) from None


def all_ops():
    """Every registered op, keyed by name."""
    return dict(_OPS)


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

    Returns an NDArray, or a list of NDArrays for a multi-output op.
    """
    raw = []
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
        c = a._ctx
        if ctx is None:
            ctx = c
        elif c is not ctx:
            raise MXNetError('op %r: inputs are on different contexts, %s and %s; move one '
                             'with .as_in_context(ctx) or .copyto(ctx)' % (op.name, ctx, c))
        raw.append(data)
    if ctx is None:
        raise MXNetError('op %r needs at least one NDArray input' % op.name)
    needs_grad = None
    if op.differentiable and autograd._state.recording:
        needs_grad = tuple(getattr(a, '_data', None) is not None and autograd._requires_grad(a)
                           for a in inputs)
    kwargs = params
    if op.takes_needs_grad:
        kwargs = dict(params, needs_grad=needs_grad or (False,) * len(inputs))
    try:
        if ctx.device_type == 'gpu':
            with ctx.device():
                result = op.forward(ctx.xp, *raw, **kwargs)
        else:
            result = op.forward(ctx.xp, *raw, **kwargs)
    except MXNetError:
        raise
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise MXNetError('op %r failed on inputs (%s) with %s: %s'
                         % (op.name, _describe(inputs), params or '{}', exc)) from exc
    if op.differentiable:
        result, backward = result
    out_ctx = op.output_context(params) if op.output_context else ctx
    single = not isinstance(result, (tuple, list))
    wrap = _NDArray
    if single:
        if result.ndim == 0:
            result = result.reshape(1)  # MXNet has no 0-d arrays
        outs = [wrap(result, out_ctx)]
    else:
        outs = [wrap(r.reshape(1) if r.ndim == 0 else r, out_ctx) for r in result]
    if needs_grad is not None and any(needs_grad):
        autograd._record(backward, inputs, outs, ctx, op.name)
    return outs[0] if single else outs


_NDArray = None  # set by ndarray.py once the class exists (avoids an import cycle)


def _set_ndarray_class(cls):
    global _NDArray
    _NDArray = cls


def unbroadcast(xp, grad, shape):
    """Sum ``grad`` down to ``shape`` (undoing numpy broadcasting); None for scalars."""
    if shape is None:
        return None
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:
        grad, extra = grad.reshape((1,) * -extra + grad.shape), 0
    axes = tuple(range(extra)) + tuple(extra + i for i, n in enumerate(shape)
                                       if n == 1 and grad.shape[extra + i] != 1)
    if axes:
        grad = sum_over(xp, grad, axes) if grad.dtype.kind == 'f' else grad.sum(axis=axes)
    return grad.reshape(shape)


def shape_of(x):
    """Shape of a raw array, or None for a Python scalar."""
    return getattr(x, 'shape', None)
