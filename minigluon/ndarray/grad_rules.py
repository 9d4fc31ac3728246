"""Gradient rules written with recorded ops: what lets a backward be recorded, so that
``autograd.grad(..., create_graph=True)`` returns gradients that can be differentiated
again (MXNet's FGradient of the backward ops).

A rule is ``rule(inputs, outputs, out_grads, **params)``: the op's inputs (NDArrays on
the tape, or the scalars and Nones the op was called with), its outputs and the
gradients reaching them (NDArrays), and its parameters; it returns one gradient per
input (an NDArray, or None for none). It runs while recording, so what it computes
joins the graph. Rules registered with ``node_rule`` also get the tape node first: they
build on the op's own first-order closure.

Three families cover most ops:

* explicit rules from recorded ops (elementwise maths, arithmetic, dot, softmax, ...);
* linear ops (reshape, slicing, sums, concat, Dropout, ...): the gradient is the op's
  own closure applied to the output gradient, recorded as a linear map whose adjoint
  is the op itself (``_linear``); a linear map's derivative is linear again, so this
  goes to any order;
* bilinear ops (Convolution, Deconvolution): each input's gradient is linear in the
  output gradient and the other input, and its derivatives are the op and its closure
  evaluated at other points.

``node_grads`` is the function ``tape.run_backward`` calls per node when recording a
backward.
"""
import itertools
import math

from ..base import MXNetError
from . import tape
from .dispatch import attach_node, invoke, requires_grad
from .registry import get_op

_RULES = {}  # op name -> (rule, whether it takes the node first)


def grad_rule(*names):
    """Decorator registering ``rule(inputs, outputs, out_grads, **params)`` for ops."""
    def deco(rule):
        for name in names:
            _RULES[name] = (rule, False)
        return rule
    return deco


def node_rule(*names):
    """Like ``grad_rule`` for ``rule(node, inputs, outputs, out_grads, **params)``."""
    def deco(rule):
        for name in names:
            _RULES[name] = (rule, True)
        return rule
    return deco


def has_rule(name):
    """True when the op ``name`` can be differentiated with ``create_graph=True``."""
    return name in _RULES


def _no_rule(name):
    return MXNetError(
        'op %r has no higher-order gradient; autograd.grad(create_graph=True) can only '
        'differentiate through ops with a gradient rule (minigluon.ndarray.grad_rules). '
        'Express that part with other ops, or compute first-order gradients '
        '(create_graph=False)' % name)


def node_grads(node, out_grads):
    """The input gradients of ``node`` from the NDArray ``out_grads`` (None: none reached),
    computed by recorded ops (``tape.run_backward``'s ``node_grads``)."""
    if any(g is None for g in out_grads):
        ref = next(g for g in out_grads if g is not None)
        out_grads = [g if g is not None else
                     type(ref)(node.xp.zeros(shape, dtype), ref._ctx)
                     for g, (shape, dtype) in zip(out_grads, node.outputs)]
    if node.rule is not None:
        return node.rule(out_grads)
    entry = _RULES.get(node.name) if node.saved is not None else None
    if entry is None:
        raise _no_rule(node.name)
    rule, takes_node = entry
    raw, params, out_raw, wrap, in_ctx, out_ctx = node.saved
    inputs = []
    for data, parent in zip(raw, node.parents):
        if data is None or not hasattr(data, 'shape'):
            inputs.append(data)
        elif parent is None or type(parent) is tuple:
            arr = wrap(data, in_ctx)
            if parent is not None:
                arr._node, arr._out_idx = parent
            inputs.append(arr)
        else:
            inputs.append(parent)  # a variable: the tape knows it by identity
    outputs = []
    for i, data in enumerate(out_raw):
        arr = wrap(data, out_ctx)
        arr._node, arr._out_idx = node, i
        outputs.append(arr)
    if takes_node:
        return rule(node, inputs, outputs, list(out_grads), **params)
    return rule(inputs, outputs, list(out_grads), **params)


# ---- helpers ---------------------------------------------------------------------------
_OPS = {}


def _op(name, *inputs, **params):
    """Run the op ``name`` (recorded)."""
    op = _OPS.get(name)
    if op is None:
        op = _OPS[name] = get_op(name)
    return invoke(op, inputs, params)


def _is_array(x):
    return hasattr(x, 'shape') and hasattr(x, '_data')


def _sum_to(grad, like):
    """``grad`` summed down to the shape of ``like`` (undoing broadcasting); None when
    ``like`` is a scalar."""
    if not _is_array(like):
        return None
    shape = like.shape
    if grad.shape == shape:
        return grad
    extra = len(grad.shape) - len(shape)
    axes = tuple(range(extra)) + tuple(extra + i for i, n in enumerate(shape)
                                       if n == 1 and grad.shape[extra + i] != 1)
    if axes:
        grad = _op('sum', grad, axis=axes, keepdims=True)
    return _op('reshape', grad, shape=shape)


def _record(name, inputs, out_raw, backward, rule=None):
    """NDArrays for the raw ``out_raw``, recorded as computed from ``inputs`` with the raw
    ``backward`` (one gradient per input) and, for the next order, ``rule(out_grads)``."""
    ref = next(a for a in inputs if _is_array(a))
    outs = [type(ref)(o, ref._ctx) for o in out_raw]
    if tape.is_recording() and any(_is_array(a) and requires_grad(a) for a in inputs):
        node = attach_node(backward, inputs, outs, name)
        node.rule = rule
    return outs


def _linear(name, args, connect, fn, adjoint, out_raw=None):
    """``fn(args)`` for a map linear in the NDArrays ``args``, recorded: its backward is the
    raw ``adjoint`` (tuple in, tuple out) and its own gradient rule the same map with
    ``fn`` and ``adjoint`` swapped. ``connect``: NDArrays the result also hangs from, with
    zero gradient (as MXNet's backward nodes take the forward inputs)."""
    if out_raw is None:
        out_raw = fn(tuple(a._data for a in args))
    nones = (None,) * len(connect)

    def backward(dd):
        return tuple(adjoint(dd if isinstance(dd, tuple) else (dd,))) + nones

    def rule(out_grads):
        return _linear(name + '_backward', out_grads, connect, adjoint, fn) + list(nones)
    return _record(name, list(args) + list(connect), out_raw, backward, rule)


def _forward(op, xp, args, params):
    """The raw output(s) of ``op`` (forward only)."""
    if op.takes_needs_grad:
        params = dict(params, needs_grad=(False,) * len(args))
    out = op.forward(xp, *args, **params)
    return out[0] if op.differentiable else out


# ---- linear ops: the closure forward, the op as adjoint ---------------------------------
def _linear_op(linear=(0,), affine=False):
    """Rule of an op linear in the inputs at positions ``linear`` (None: all of them),
    the others held fixed. ``affine``: the op adds a constant (pad's value), removed
    from the adjoint."""
    def rule(node, inputs, outputs, out_grads, **params):
        op, xp = get_op(node.name), node.xp
        raw = node.saved[0]
        closure = node.backward
        positions = range(len(raw)) if linear is None else linear
        multi = len(outputs) > 1
        dys = tuple(g._data for g in out_grads)
        first = closure(dys if multi else dys[0])
        present = [k for k in positions if first[k] is not None]
        if not present:
            return [None] * len(inputs)

        def fn(dy_raw):
            grads = closure(dy_raw if multi else dy_raw[0])
            return tuple(grads[k] for k in present)

        def adjoint(dd):
            args = list(raw)
            for k in positions:
                if hasattr(raw[k], 'shape'):
                    args[k] = xp.zeros_like(raw[k])
            base = _forward(op, xp, args, params) if affine else None
            for k, d in zip(present, dd):
                args[k] = d
            out = _forward(op, xp, args, params)
            if affine:
                out = out - base
            return tuple(out) if multi else (out,)

        connect = [a for a in inputs if _is_array(a)]
        dxs = _linear('_backward_' + node.name, out_grads, connect, fn, adjoint,
                      tuple(first[k] for k in present))
        grads = [None] * len(inputs)
        for k, dx in zip(present, dxs):
            grads[k] = dx
        return grads
    return rule


for _name in ('reshape', 'flatten', 'Flatten', 'transpose', 'swapaxes', 'expand_dims',
              'squeeze', 'broadcast_to', 'broadcast_axis', 'broadcast_like', 'tile', 'repeat',
              'slice', 'slice_axis', 'slice_like', '_getitem', 'reshape_like', 'flip', 'sum',
              'mean', 'copy', 'take', 'pick', 'SequenceReverse', 'SequenceLast',
              'depth_to_space', 'space_to_depth', 'diag', 'cast', '_identity_with_attr_like_rhs',
              'split', 'split_v2', 'degrees', 'radians', 'negative'):
    node_rule(_name)(_linear_op())
node_rule('concat', 'stack')(_linear_op(None))
node_rule('where')(_linear_op((1, 2)))
node_rule('Embedding')(_linear_op((1,)))
node_rule('pad')(_linear_op(affine=True))


@node_rule('Dropout', 'relu', 'abs', 'sign', 'floor', 'ceil', 'round', 'rint', 'fix', 'trunc',
           'clip')
def _masked(node, inputs, outputs, out_grads, **_):
    """Gradients that multiply by a mask (or zero) depending on the input only through a
    comparison: a diagonal, so self-adjoint, map of the output gradient, whose derivative
    by the input is zero."""
    closure = node.backward

    def fn(dy_raw):
        return (closure(dy_raw[0])[0],)
    dx = _linear('_backward_' + node.name, out_grads, inputs[:1], fn, fn)
    return dx + [None] * (len(inputs) - 1)


# ---- elementwise maths -------------------------------------------------------------------
_UNARY = {
    'sqrt': lambda x, y: 0.5 / y,
    'rsqrt': lambda x, y: -0.5 * y * y * y,
    'cbrt': lambda x, y: 1 / (3 * y * y),
    'rcbrt': lambda x, y: (-1 / 3) * y / x,
    'exp': lambda x, y: y,
    'expm1': lambda x, y: y + 1,
    'log': lambda x, y: 1 / x,
    'log1p': lambda x, y: 1 / (1 + x),
    'log2': lambda x, y: 1 / (x * math.log(2)),
    'log10': lambda x, y: 1 / (x * math.log(10)),
    'square': lambda x, y: 2 * x,
    'reciprocal': lambda x, y: -(y * y),
    'sin': lambda x, y: _op('cos', x),
    'cos': lambda x, y: -_op('sin', x),
    'tan': lambda x, y: 1 + y * y,
    'arcsin': lambda x, y: _op('rsqrt', 1 - x * x),
    'arccos': lambda x, y: -_op('rsqrt', 1 - x * x),
    'arctan': lambda x, y: 1 / (1 + x * x),
    'sinh': lambda x, y: _op('cosh', x),
    'cosh': lambda x, y: _op('sinh', x),
    'tanh': lambda x, y: 1 - y * y,
    'arcsinh': lambda x, y: _op('rsqrt', x * x + 1),
    'arccosh': lambda x, y: _op('rsqrt', x * x - 1),
    'arctanh': lambda x, y: 1 / (1 - x * x),
    'sigmoid': lambda x, y: y * (1 - y),
    'softrelu': lambda x, y: _op('sigmoid', x),
    'softsign': lambda x, y: 1 / _op('square', 1 + _op('abs', x)),
}


def _unary_rule(derivative):
    def rule(inputs, outputs, out_grads, **_):
        return [out_grads[0] * derivative(inputs[0], outputs[0])]
    return rule


for _name, _derivative in _UNARY.items():
    grad_rule(_name)(_unary_rule(_derivative))


@node_rule('Activation')
def _activation(node, inputs, outputs, out_grads, act_type='relu'):
    if act_type == 'relu':
        return _masked(node, inputs, outputs, out_grads)
    if act_type not in _UNARY:
        raise _no_rule('Activation(act_type=%r)' % act_type)
    return _unary_rule(_UNARY[act_type])(inputs, outputs, out_grads)


@node_rule('LeakyReLU')
def _leaky_relu(node, inputs, outputs, out_grads, act_type='leaky', slope=0.25, **_):
    if act_type == 'leaky':
        return _masked(node, inputs, outputs, out_grads)
    if act_type == 'elu':
        x, y, dy = inputs[0], outputs[0], out_grads[0]
        return [_op('where', x > 0, dy, dy * (y + slope)), None]
    raise _no_rule('LeakyReLU(act_type=%r)' % act_type)


# ---- arithmetic ----------------------------------------------------------------------------
@grad_rule('add')
def _add(inputs, outputs, out_grads):
    dy = out_grads[0]
    return [_sum_to(dy, inputs[0]), _sum_to(dy, inputs[1])]


@grad_rule('subtract')
def _subtract(inputs, outputs, out_grads):
    dy = out_grads[0]
    return [_sum_to(dy, inputs[0]), _sum_to(-dy, inputs[1]) if _is_array(inputs[1]) else None]


@grad_rule('multiply')
def _multiply(inputs, outputs, out_grads):
    (lhs, rhs), dy = inputs, out_grads[0]
    return [_sum_to(dy * rhs, lhs) if _is_array(lhs) else None,
            _sum_to(dy * lhs, rhs) if _is_array(rhs) else None]


@grad_rule('divide')
def _divide(inputs, outputs, out_grads):
    (lhs, rhs), dy = inputs, out_grads[0]
    return [_sum_to(dy / rhs, lhs) if _is_array(lhs) else None,
            _sum_to(-dy * outputs[0] / rhs, rhs) if _is_array(rhs) else None]


@grad_rule('power')
def _power(inputs, outputs, out_grads):
    (base, exp), dy = inputs, out_grads[0]
    dbase = dexp = None
    if _is_array(base):
        dbase = _sum_to(dy * exp * base ** (exp - 1), base)
    if _is_array(exp):
        log_base = _op('log', base) if _is_array(base) else math.log(base)
        dexp = _sum_to(dy * outputs[0] * log_base, exp)
    return [dbase, dexp]


@grad_rule('maximum', 'minimum')
def _extremum(inputs, outputs, out_grads):
    # the input that won keeps the gradient (lhs on ties, as the first-order closure)
    (lhs, rhs), dy, out = inputs, out_grads[0], outputs[0]
    lhs_won = (lhs == out) if _is_array(lhs) else 1 - (rhs == out)
    return [_sum_to(dy * lhs_won, lhs) if _is_array(lhs) else None,
            _sum_to(dy * (1 - lhs_won), rhs) if _is_array(rhs) else None]


@grad_rule('hypot')
def _hypot(inputs, outputs, out_grads):
    (lhs, rhs), dy, out = inputs, out_grads[0], outputs[0]
    return [_sum_to(dy * lhs / out, lhs) if _is_array(lhs) else None,
            _sum_to(dy * rhs / out, rhs) if _is_array(rhs) else None]


# ---- products ------------------------------------------------------------------------------
@grad_rule('dot')
def _dot(inputs, outputs, out_grads, transpose_a=False, transpose_b=False):
    (lhs, rhs), dy = inputs, out_grads[0]
    if transpose_a or transpose_b:
        if lhs.ndim != 2 or rhs.ndim != 2:
            raise _no_rule('dot(transpose_a/transpose_b) of arrays that are not 2-D')
        return _matmul_grads('dot', lhs, rhs, dy, transpose_a, transpose_b)
    # contract the last axis of lhs with the first of rhs: as 2-D matrices
    k = lhs.shape[-1]
    lhs2 = _op('reshape', lhs, shape=(-1, k))
    rhs2 = _op('reshape', rhs, shape=(k, -1))
    dy2 = _op('reshape', dy, shape=(lhs2.shape[0], rhs2.shape[1]))
    dlhs, drhs = _matmul_grads('dot', lhs2, rhs2, dy2, False, False)
    return [_op('reshape', dlhs, shape=lhs.shape), _op('reshape', drhs, shape=rhs.shape)]


@grad_rule('batch_dot')
def _batch_dot(inputs, outputs, out_grads, transpose_a=False, transpose_b=False):
    return _matmul_grads('batch_dot', inputs[0], inputs[1], out_grads[0], transpose_a,
                         transpose_b)


def _matmul_grads(name, lhs, rhs, dy, ta, tb):
    """Gradients of ``op(lhs) @ op(rhs)`` (op: transpose when the flag is set)."""
    if not ta and not tb:
        return [_op(name, dy, rhs, transpose_b=True), _op(name, lhs, dy, transpose_a=True)]
    if ta and not tb:
        return [_op(name, rhs, dy, transpose_b=True), _op(name, lhs, dy)]
    if tb and not ta:
        return [_op(name, dy, rhs), _op(name, dy, lhs, transpose_a=True)]
    return [_op(name, rhs, dy, transpose_a=True, transpose_b=True),
            _op(name, dy, lhs, transpose_a=True, transpose_b=True)]


@grad_rule('FullyConnected')
def _fully_connected(inputs, outputs, out_grads, num_hidden=None, no_bias=False,
                     flatten=True):
    data, weight = inputs[0], inputs[1]
    dy = out_grads[0]
    in_units = weight.shape[1]
    rows = (data.shape[0], -1) if flatten else (-1, in_units)
    x2 = _op('reshape', data, shape=rows)
    dy2 = _op('reshape', dy, shape=(-1, weight.shape[0]))
    grads = [_op('reshape', _op('dot', dy2, weight), shape=data.shape),
             _op('dot', dy2, x2, transpose_a=True)]
    if len(inputs) > 2:
        grads.append(None if no_bias or not _is_array(inputs[2])
                     else _op('sum', dy2, axis=0))
    return grads


_CHANNELS_LAST = ('NWC', 'NHWC', 'NDHWC')


@node_rule('Convolution', 'Deconvolution')
def _convolution(node, inputs, outputs, out_grads, **params):
    """Bilinear in (data, weight): each gradient is linear in ``dy`` and the other input,
    and is differentiated by running the op and its closure at other points."""
    op, xp = get_op(node.name), node.xp
    data, weight = inputs[0], inputs[1]
    dy = out_grads[0]
    dy_raw = dy._data
    first = node.backward(dy_raw)
    plain = dict(params, no_bias=True)

    def at(d, w, wanted):
        """The op's output and closure at the point (d, w)."""
        return op.forward(xp, d, w, None, needs_grad=wanted, **plain)

    grads = [None] * len(inputs)
    if first[0] is not None:
        w_raw = weight._data

        def data_backward(dd):
            out, closure = at(dd, w_raw, (False, True, False))
            return out, closure(dy_raw)[1], None
        grads[0], = _record('_backward_data_' + node.name, [dy, weight, data], (first[0],),
                            data_backward)
    if first[1] is not None:
        x_raw = data._data

        def weight_backward(dw):
            out, closure = at(x_raw, dw, (True, False, False))
            return out, closure(dy_raw)[0], None
        grads[1], = _record('_backward_weight_' + node.name, [dy, data, weight],
                            (first[1],), weight_backward)
    if len(first) > 2 and first[2] is not None:
        axis = -1 if params.get('layout') in _CHANNELS_LAST else 1
        grads[2] = _op('sum', dy, axis=axis, exclude=True)
    return grads


# ---- pooling -------------------------------------------------------------------------------
@node_rule('Pooling')
def _pooling(node, inputs, outputs, out_grads, **params):
    if params.get('pool_type', 'max') != 'max':
        return _linear_op()(node, inputs, outputs, out_grads, **params)
    closure = node.backward

    def fn(dy_raw):
        return (closure(dy_raw[0])[0],)
    adjoint = _max_pool_adjoint(node.xp, closure, node.outputs[0], params)
    return _linear('_backward_Pooling', out_grads, inputs, fn, adjoint)


def _max_pool_adjoint(xp, closure, out_meta, params):
    """The adjoint of max pooling's gradient (the derivative of the pooled values in a
    direction ``v``: ``v`` at each window's chosen element).

    The gradient is a raw closure, so its adjoint is read off it: windows that share no
    element are probed together with a 0/1 output gradient (which marks their chosen
    elements) and ``v`` at the marks is summed per window by sum pooling.
    """
    out_shape, dtype = out_meta
    channels_last = params.get('layout') in _CHANNELS_LAST
    spatial = list(range(1, len(out_shape) - 1)) if channels_last else \
        list(range(2, len(out_shape)))
    if params.get('global_pool'):
        steps = [1] * len(spatial)
    else:
        kernel = _as_tuple(params.get('kernel'), len(spatial), 1)
        stride = _as_tuple(params.get('stride'), len(spatial), 1)
        steps = [-(-k // s) for k, s in zip(kernel, stride)]  # windows closer than this overlap
    summing = dict(params, pool_type='sum')
    op = get_op('Pooling')

    def adjoint(dd):
        v = dd[0]
        total = None
        for colour in itertools.product(*(range(s) for s in steps)):
            probe = xp.zeros(out_shape, dtype)
            index = [slice(None)] * len(out_shape)
            for axis, start, step in zip(spatial, colour, steps):
                index[axis] = slice(start, None, step)
            probe[tuple(index)] = 1
            marks = closure(probe)[0]
            picked = _forward(op, xp, [v * marks], summing) * probe
            total = picked if total is None else total + picked
        return (total,)
    return adjoint


def _as_tuple(value, n, default):
    if value is None or value == ():
        return (default,) * n
    if isinstance(value, int):
        return (value,) * n
    return tuple(value)


# ---- softmax family ------------------------------------------------------------------------
def _scale(temperature):
    return 1.0 if temperature is None else 1.0 / temperature


@grad_rule('softmax')
def _softmax(inputs, outputs, out_grads, axis=-1, temperature=None, **_):
    y, dy = outputs[0], out_grads[0]
    inner = _op('sum', dy * y, axis=axis, keepdims=True)
    return [y * (dy - inner) * _scale(temperature)] + [None] * (len(inputs) - 1)  # length


@grad_rule('softmin')
def _softmin(inputs, outputs, out_grads, **params):
    return [-_softmax(inputs, outputs, out_grads, **params)[0]]  # softmin(x) = softmax(-x)


@grad_rule('log_softmax')
def _log_softmax(inputs, outputs, out_grads, axis=-1, temperature=None, **_):
    y, dy = outputs[0], out_grads[0]
    total = _op('sum', dy, axis=axis, keepdims=True)
    return [(dy - _op('exp', y) * total) * _scale(temperature)]


# ---- BatchNorm -------------------------------------------------------------------------------
@grad_rule('BatchNorm')
def _batch_norm(inputs, outputs, out_grads, eps=1e-3, momentum=0.9, fix_gamma=True,
                use_global_stats=False, axis=1, training=None, **_):
    data, gamma = inputs[0], inputs[1]
    dy = out_grads[0]
    if training is None:
        training = tape.is_training()
    if not training or use_global_stats:
        raise _no_rule('BatchNorm (with the moving statistics)')
    ndim = len(data.shape)
    axis %= ndim
    per_channel = tuple(data.shape[axis] if i == axis else 1 for i in range(ndim))

    def mean(x):
        return _op('mean', x, axis=axis, exclude=True, keepdims=True)
    centred = data - mean(data)
    inv_std = _op('rsqrt', mean(centred * centred) + eps)
    normed = centred * inv_std
    g = 1.0 if fix_gamma else _op('reshape', gamma, shape=per_channel)
    dx = g * inv_std * (dy - mean(dy) - normed * mean(dy * normed))

    def total(x):
        return _op('sum', x, axis=axis, exclude=True)
    dgamma = None if fix_gamma or not _is_array(gamma) else total(dy * normed)
    dbeta = total(dy) if _is_array(inputs[2]) else None
    return [dx, dgamma, dbeta] + [None] * (len(inputs) - 3)
