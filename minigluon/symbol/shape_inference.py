"""Shape and dtype inference on a graph, as ``Symbol.infer_shape``/``infer_type`` give it.

Shapes use MXNet 1.x's convention: 0 is an unknown dimension, ``()`` an unknown
shape. Known shapes flow forward through the ops (a rule for common ops, else the
op's kernel run on zeros, on one sample where the batch size does not matter), and
the op table's shape rules fill in inputs from the others (FullyConnected's weight
from its data and ``num_hidden``), passing over the graph until nothing changes.
"""
import warnings

import numpy as np

from ..base import MXNetError
from .attrs import DTYPE_NAMES, from_string
from .op_specs import spec_of


def _known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _merge(old, new):
    """``old`` with its unknown dimensions taken from ``new``; raises on a conflict."""
    if new is None:
        return old
    new = tuple(int(d) for d in new)
    if old is None or len(old) != len(new):
        return new if old is None or not any(old) else old
    return tuple(o if o > 0 else n for o, n in zip(old, new))


def _start(sym, args, kwargs, attr_key, convert, what):
    order = sym._order()  # pylint: disable=protected-access
    variables = [n for n in order if n.is_variable]
    by_name = {n.name: n for n in variables}
    given = {}
    if args:
        arg_names = sym.list_arguments()
        if len(args) > len(arg_names):
            raise MXNetError('%s: got %d positional values but the symbol has %d arguments %s'
                             % (what, len(args), len(arg_names), arg_names))
        given.update((n, v) for n, v in zip(arg_names, args) if v is not None)
    for key, value in kwargs.items():
        if key not in by_name:
            raise MXNetError('%s: keyword argument %r is not an input of the symbol; its '
                             'inputs are %s' % (what, key, sorted(by_name)))
        if value is not None:
            given[key] = value
    values = {}
    for node in variables:
        if node.name in given:
            values[(id(node), 0)] = convert(given[node.name])
        elif attr_key in node.attrs:
            values[(id(node), 0)] = convert(node.attrs[attr_key])
    return order, values


def _result(sym, order, values, partial, unknown):
    def get(node, idx=0):
        return values.get((id(node), idx))
    aux = sym._aux_variables(order)  # pylint: disable=protected-access
    args = [get(n) for n in order if n.is_variable and id(n) not in aux]
    auxs = [get(n) for n in order if n.is_variable and id(n) in aux]
    outs = [get(n, i) for n, i in sym._outputs]  # pylint: disable=protected-access
    complete = all(not unknown(v) for v in args + auxs + outs)
    if not complete and not partial:
        missing = [n.name for n in order if n.is_variable and unknown(get(n))]
        warnings.warn('Cannot decide shape or type for the following arguments (0 is an '
                      'unknown dimension): %s' % missing, stacklevel=3)
        return None, None, None
    return args, outs, auxs


def infer_shape(sym, args, kwargs, partial):
    """``(arg_shapes, out_shapes, aux_shapes)``; see ``Symbol.infer_shape``."""
    def convert(value):
        value = from_string(value) if isinstance(value, str) else value
        return tuple(int(d) for d in value)
    order, shapes = _start(sym, args, kwargs, '__shape__', convert, 'infer_shape')
    _, dtypes = _start(sym, (), {}, '__dtype__', _dtype_from_attr, 'infer_type')
    for _ in range(len(order) + 1):
        if not _shape_pass(order, shapes, dtypes):
            break
    result = _result(sym, order, shapes, partial, lambda s: not _known(s))
    if partial and result[0] is not None:
        result = tuple([() if s is None else s for s in group] for group in result)
    return result


def _shape_pass(order, shapes, dtypes):
    changed = False
    for node in order:
        if node.is_variable:
            continue
        spec = spec_of(node.op)
        in_keys = [(id(src), idx) for src, idx in node.inputs]
        in_shapes = [shapes.get(k) for k in in_keys]
        rule = spec.op.infer_shape if spec.op is not None and spec.run_is_op else None
        if rule is not None and not all(_known(s) for s in in_shapes):
            try:
                filled = rule(*[() if s is None else s for s in in_shapes],
                              **spec.params(node.attrs))
            except (TypeError, ValueError, IndexError, ZeroDivisionError):
                filled = None
            for key, old, new in zip(in_keys, in_shapes, filled or ()):
                merged = _merge(old, new)
                if merged != old and merged is not None:
                    shapes[key] = merged
                    changed = True
            in_shapes = [shapes.get(k) for k in in_keys]
        out_keys = [(id(node), i) for i in range(spec.num_outputs(node.attrs))]
        if all(_known(shapes.get(k)) for k in out_keys):
            continue
        outs = _output_shapes(spec, node, in_shapes, [dtypes.get(k) for k in in_keys])
        for key, shape in zip(out_keys, outs or ()):
            merged = _merge(shapes.get(key), shape)
            if merged != shapes.get(key):
                shapes[key] = merged
                changed = True
    return changed


def _output_shapes(spec, node, in_shapes, in_dtypes):
    if all(_known(s) for s in in_shapes):
        try:
            return spec.output_shapes(in_shapes, node.attrs, in_dtypes)
        except MXNetError as exc:
            raise MXNetError('infer_shape: node %s (%s) cannot take inputs of shapes %s: %s'
                             % (node.name, node.op, in_shapes, exc)) from None
    if in_shapes and in_shapes[0] is not None and spec.keeps_shape:
        return [in_shapes[0]]
    if in_shapes and in_shapes[0] and in_shapes[0][0] == 0 and spec.per_sample \
            and all(_known(s) for s in in_shapes[1:]) and _known(in_shapes[0][1:]):
        one = [(1,) + tuple(in_shapes[0][1:])] + list(in_shapes[1:])
        return [(0,) + tuple(s[1:]) for s in spec.output_shapes(one, node.attrs, in_dtypes)]
    return None


# ---- dtypes ----

def _dtype_from_attr(value):
    if isinstance(value, str) and value.lstrip('-').isdigit():
        return np.dtype(DTYPE_NAMES[int(value)])
    return np.dtype(value)


# Inputs that hold indices: their dtype does not follow the data's.
_INDEX_INPUTS = {'Embedding': (0,), 'take': (1,), 'pick': (1,), 'one_hot': (0,),
                 'CTCLoss': (1, 2, 3), 'where': (0,)}


def _output_dtype(spec, node, in_types):
    name = spec.op.name if spec.op is not None else spec.mx_name
    params = spec.params(node.attrs)
    if name in ('cast', 'one_hot', 'argsort', 'topk') or spec.mx_name in (
            '_zeros', '_ones', '_full', '_arange', '_eye'):
        return np.dtype(params.get('dtype') or 'float32')
    if name in ('shape_array', 'size_array'):
        return np.dtype('int64')
    if name == 'Embedding':
        return in_types[1] if len(in_types) > 1 else None
    first = [t for i, t in enumerate(in_types)
             if t is not None and i not in _INDEX_INPUTS.get(name, ())]
    return first[0] if first else None


def infer_type(sym, args, kwargs, partial):
    """``(arg_types, out_types, aux_types)``; see ``Symbol.infer_type``."""
    order, types = _start(sym, args, kwargs, '__dtype__', _dtype_from_attr, 'infer_type')
    for _ in range(len(order) + 1):
        changed = False
        for node in order:
            if node.is_variable:
                continue
            spec = spec_of(node.op)
            name = spec.op.name if spec.op is not None else spec.mx_name
            in_keys = [(id(src), idx) for src, idx in node.inputs]
            in_types = [types.get(k) for k in in_keys]
            data_type = _output_dtype(spec, node, in_types) \
                if name not in ('cast', 'one_hot') else next(
                    (t for t in in_types if t is not None), None)
            for i, (key, t) in enumerate(zip(in_keys, in_types)):
                if t is None and i not in _INDEX_INPUTS.get(name, ()) and data_type is not None:
                    types[key] = data_type
                    changed = True
            out = _output_dtype(spec, node, [types.get(k) for k in in_keys])
            for i in range(spec.num_outputs(node.attrs)):
                if out is not None and types.get((id(node), i)) is None:
                    types[(id(node), i)] = out
                    changed = True
        if not changed:
            break
    result = _result(sym, order, types, partial, lambda t: t is None)
    if result[0] is None:
        return result
    return tuple([None if t is None else t.type for t in group] for group in result)
