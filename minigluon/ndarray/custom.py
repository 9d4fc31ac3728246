"""Operators written in Python (MXNet's ``Custom`` op), run on NDArrays and recorded on
the tape.

A custom operator is a pair of user classes (``mx.operator``): a *property* class that
describes the op (its arguments, outputs and auxiliary states by name, their shapes and
dtypes) and makes the *operator*, whose ``forward`` and ``backward`` fill arrays
allocated for them. Property classes are registered here by name. ``Custom(*inputs,
op_type=...)`` builds the registered property from the call's other keyword arguments,
as strings (MXNet passes them so), and ``run`` allocates the outputs from the
property's ``infer_shape``/``infer_type``, calls ``forward`` with recording paused, and
records one tape node whose backward calls the operator's ``backward``. Graph nodes
(``mx.sym.Custom``) go through ``run`` too.
"""
import numbers
import warnings

import numpy as np

from ..base import MXNetError
from ..context import current_context
from ..registry import Registry
from . import tape
from .creation import zeros
from .dispatch import attach_node, requires_grad
from .mxnet_format import TYPE_FLAGS
from .ndarray import NDArray

_PROPS = Registry('custom operator', case_sensitive=True)
_TYPE_FLAG = {np.dtype(name): flag for flag, name in TYPE_FLAGS.items()}


def register(reg_name, prop_cls):
    """Register the property class ``prop_cls`` as ``reg_name``; registering a name again
    replaces the old class with a warning, as MXNet does."""
    old = _PROPS.get(reg_name)
    if old is not None and old is not prop_cls:
        warnings.warn('New registration is overriding existing custom operator %s' % reg_name,
                      stacklevel=3)
        del _PROPS[reg_name]
    _PROPS.add(reg_name, prop_cls)
    return prop_cls


def find(op_type):
    """The property class registered as ``op_type``.

    Raises
    ------
    MXNetError
        If ``op_type`` is missing or not registered.
    """
    if op_type is None:
        raise MXNetError('Custom: Required argument `op_type` is missing: pass op_type=<the '
                         'name given to mx.operator.register>')
    cls = _PROPS.get(op_type)
    if cls is None:
        raise MXNetError('Cannot find custom operator %r: register a CustomOpProp subclass '
                         'with @mx.operator.register(%r) before using it (registered: %s)'
                         % (op_type, op_type, ', '.join(_PROPS.names()) or 'none'))
    return cls


def create_prop(op_type, kwargs):
    """A new property of the operator registered as ``op_type``, made with the string
    keyword arguments ``kwargs``."""
    cls = find(op_type)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise MXNetError('custom operator %r: %s(%s) failed: %s; its __init__ receives the '
                         'keyword arguments of the Custom call (other than op_type), as '
                         'strings' % (op_type, cls.__name__,
                                      ', '.join('%s=%r' % kv for kv in kwargs.items()), exc)
                         ) from exc


def _call(op_type, what, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, a method of a user's class; its errors become MXNetErrors
    that name the operator."""
    try:
        return fn(*args, **kwargs)
    except MXNetError:
        raise
    except Exception as exc:
        raise MXNetError('Error in custom operator %r, %s: %s: %s'
                         % (op_type, what, type(exc).__name__, exc)) from exc


def names_of(prop, op_type):
    """``(arguments, outputs, auxiliary states)``: the property's lists of names."""
    return tuple([str(n) for n in _call(op_type, 'CustomOpProp.' + what, getattr(prop, what))]
                 for what in ('list_arguments', 'list_outputs', 'list_auxiliary_states'))


def _three(ret, counts, op_type, what):
    """The 2 or 3 lists a property's ``infer_shape``/``infer_type`` returns, as 3 lists
    checked against the numbers of arguments, outputs and auxiliary states."""
    if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
        raise MXNetError('custom operator %r: %s must return 2 or 3 lists (arguments, outputs '
                         'and optionally auxiliary states), got %r' % (op_type, what, ret))
    ret = [list(r) for r in ret] + ([[]] if len(ret) == 2 else [])
    for got, want, kind in zip(ret, counts, ('input', 'output', 'aux state')):
        if len(got) != want:
            raise MXNetError('custom operator %r: %s returned %d %s entries, expected %d'
                             % (op_type, what, len(got), kind, want))
    return ret


def infer_shapes(prop, op_type, arg_shapes, counts):
    """The property's ``infer_shape`` on ``arg_shapes`` (lists, [] when unknown):
    ``[argument shapes, output shapes, aux shapes]`` as lists of tuples."""
    ret = _call(op_type, 'CustomOpProp.infer_shape', prop.infer_shape,
                [list(s) for s in arg_shapes])
    ret = _three(ret, counts, op_type, 'infer_shape')
    try:
        return [[tuple(int(d) for d in s) for s in group] for group in ret]
    except TypeError:
        raise MXNetError('custom operator %r: infer_shape must return lists of shapes '
                         '(sequences of ints), got %r' % (op_type, ret)) from None


def infer_types(prop, op_type, arg_types, counts):
    """The property's ``infer_type`` on ``arg_types`` (numpy scalar types, None when
    unknown): ``[argument dtypes, output dtypes, aux dtypes]``, None where unknown."""
    ret = _call(op_type, 'CustomOpProp.infer_type', prop.infer_type, list(arg_types))
    ret = _three(ret, counts, op_type, 'infer_type')
    return [[None if t is None else np.dtype(t) for t in group] for group in ret]


def _check_given(op_type, what, names, arrays, inferred, attr):
    for name, arr, value in zip(names, arrays, inferred):
        if value is not None and value != getattr(arr, attr):
            raise MXNetError('custom operator %r: infer_%s makes %s %r %s but it is %s'
                             % (op_type, attr, what, name, value, getattr(arr, attr)))


def run(prop, op_type, inputs, ctx=None, cache=None):
    """Run the custom operator of ``prop`` on ``inputs`` (its arguments, then its
    auxiliary states) and record it when autograd is recording.

    Parameters
    ----------
    prop : CustomOpProp
    op_type : str
        The name it is registered as (for error messages).
    inputs : list of NDArray
    ctx : Context, optional
        Where the outputs go when there are no inputs (default: the current context).
    cache : dict, optional
        Operators made before, by context, shapes and dtypes: a graph node keeps one
        operator per bound shape as MXNet's executors do; without a cache each call makes
        its own.

    Returns
    -------
    list of NDArray
        The outputs, in ``list_outputs`` order.
    """
    arg_names, out_names, aux_names = names_of(prop, op_type)
    counts = (len(arg_names), len(out_names), len(aux_names))
    if len(inputs) != counts[0] + counts[2]:
        raise MXNetError('custom operator %r expects %d inputs (arguments %s, then auxiliary '
                         'states %s), got %d' % (op_type, counts[0] + counts[2], arg_names,
                                                 aux_names, len(inputs)))
    for name, arr in zip(arg_names + aux_names, inputs):
        if not isinstance(arr, NDArray):
            raise MXNetError('custom operator %r: input %r must be an NDArray, got %s'
                             % (op_type, name, type(arr).__name__))
        if ctx is None:
            ctx = arr.context
        elif arr.context != ctx and (ctx.is_gpu or arr.context.is_gpu):  # hosts mix
            raise MXNetError('custom operator %r: inputs are on different contexts, %s and %s'
                             % (op_type, ctx, arr.context))
    ctx = ctx or current_context()
    args, aux = list(inputs[:counts[0]]), list(inputs[counts[0]:])
    in_shapes, out_shapes, aux_shapes = infer_shapes(prop, op_type, [a.shape for a in args],
                                                     counts)
    _check_given(op_type, 'input', arg_names, args, in_shapes, 'shape')
    _check_given(op_type, 'aux state', aux_names, aux, aux_shapes, 'shape')
    _, out_types, _ = infer_types(prop, op_type, [np.dtype(a.dtype).type for a in args], counts)
    if any(t is None for t in out_types):
        raise MXNetError('custom operator %r: infer_type left output dtypes unknown (%s); '
                         'return one dtype per output' % (op_type, out_types))
    key = (ctx, tuple(a.shape for a in inputs), tuple(a.dtype for a in inputs))
    op = cache.get(key) if cache is not None else None
    if op is None:
        op = _call(op_type, 'CustomOpProp.create_operator', prop.create_operator, ctx,
                   [list(a.shape) for a in inputs],
                   [_TYPE_FLAG.get(np.dtype(a.dtype), -1) for a in inputs])
        if cache is not None:
            cache[key] = op
    outs = [zeros(s, ctx=ctx, dtype=t) for s, t in zip(out_shapes, out_types)]
    in_data, out_data, aux_data = _views(args), _views(outs), _views(aux)
    training = tape.is_training()
    with tape.Scope(recording=False, training=None), ctx:
        _call(op_type, 'CustomOp.forward', op.forward, is_train=int(training),
              req=['write'] * len(outs), in_data=in_data, out_data=list(out_data),
              aux=list(aux_data))
    needs = [requires_grad(a) for a in args] if tape.is_recording() else ()
    if any(needs) and outs:
        attach_node(_backward(op, op_type, ctx, needs, in_data, out_data, aux_data),
                    args + aux, outs, 'Custom')
    return outs


def _views(arrays):
    """Fresh NDArrays over the memory of ``arrays``: what the operator sees, so that
    nothing it does touches the graph entries of the caller's arrays."""
    return [type(a)(a._data, a.context) for a in arrays]  # pylint: disable=protected-access


def _backward(op, op_type, ctx, needs, in_data, out_data, aux_data):
    """The tape's backward of one application of the operator ``op``."""
    def backward(out_grads):
        out_grads = out_grads if isinstance(out_grads, tuple) else (out_grads,)
        in_grad = [zeros(a.shape, ctx=ctx, dtype=a.dtype) for a in in_data]
        with tape.Scope(recording=False, training=None), ctx:
            _call(op_type, 'CustomOp.backward', op.backward,
                  req=['write' if n else 'null' for n in needs],
                  out_grad=[NDArray(g, ctx) for g in out_grads], in_data=list(in_data),
                  out_data=list(out_data), in_grad=list(in_grad), aux=list(aux_data))
        return tuple(g._data if n else None  # pylint: disable=protected-access
                     for g, n in zip(in_grad, needs)) + (None,) * len(aux_data)
    return backward


def Custom(*data, **kwargs):  # pylint: disable=invalid-name
    """Apply a custom operator written in Python.

    Parameters
    ----------
    *data : NDArray
        The operator's arguments, then its auxiliary states, in the orders of its
        ``list_arguments`` and ``list_auxiliary_states`` (or by those names, as keywords).
    op_type : str
        The name the operator's property class was registered under
        (``mx.operator.register``).
    **kwargs
        Passed to the property class's ``__init__``, each as ``str(value)``, as MXNet
        passes them. ``name`` is accepted and ignored; ``out`` receives the output.

    Returns
    -------
    NDArray or list of NDArray
        The output, or a list when the operator has several.
    """
    op_type = kwargs.pop('op_type', None)
    kwargs.pop('name', None)
    out = kwargs.pop('out', None)
    named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    prop = create_prop(op_type, {k: str(v) for k, v in kwargs.items() if k not in named})
    inputs = list(data)
    if named:
        arg_names, _, aux_names = names_of(prop, op_type)
        order = arg_names + aux_names
        unknown = sorted(set(named) - set(order))
        if unknown:
            raise MXNetError('custom operator %r has no input named %s; its inputs are %s'
                             % (op_type, unknown, order))
        inputs += [named[n] for n in order[len(inputs):] if n in named]
    for arr in inputs:
        if isinstance(arr, numbers.Number):
            raise MXNetError('custom operator %r: inputs must be NDArrays, got the number %r'
                             % (op_type, arr))
    outs = run(prop, op_type, inputs)
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for target, value in zip(targets, outs):
            target[:] = value
        return out
    return outs[0] if len(outs) == 1 else outs
