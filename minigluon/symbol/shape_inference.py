"""Shape and dtype inference on a graph, as ``Symbol.infer_shape``/``infer_type`` give it.

Shapes use MXNet 1.x's convention: 0 is an unknown dimension and ``()`` an unknown
shape (-1 and None inside ``mx.util.np_shape()``, where 0 is a size). Inference passes
over the graph, forwards and backwards, until nothing changes; each node adds what it
knows:

* the op table's shape rule fills in inputs from the other inputs and from the
  outputs (FullyConnected's weight from its data, its data's batch size from its output);
* ops whose inputs and output have one shape (elementwise ops, activations) share
  what any of them knows;
* outputs come from inputs: a rule for broadcasting ops, else the op's kernel run on
  zeros (on one sample where the batch size does not matter). With unknown dimensions
  the kernel runs twice, with them set to two sizes, and the output dimensions that
  come out alike both times are known.

Shapes that contradict each other raise ``MXNetError`` naming the node.
"""
import warnings

import numpy as np

from ..base import MXNetError
from ..util import is_np_shape
from .attrs import DTYPE_NAMES, from_string
from .op_specs import ELEMENTWISE_NODES, SCALAR_FORMS, spec_of

# The sizes unknown dimensions take when a kernel is run to see an output's shape: they
# are small, and divisible by the small numbers splits and strides use.
_PROBES = (12, 24)

# Nodes whose inputs and first output all have one shape (besides ``keeps_shape`` ops,
# where the first input and the output do), under every name MXNet writes for them.
_ALL_ALIKE = frozenset(list(ELEMENTWISE_NODES) + [
    'add_n', 'ElementWiseSum', '_ElementWiseSum', '_identity_with_attr_like_rhs'])

# Inputs that must be fully known before an op says anything of its output (MXNet's
# ``where`` needs its condition).
_NEEDS_KNOWN = {'where': (0,)}

# Ops whose output dimension is unknown wherever their input's is, as MXNet infers them:
# a probe sees ``x[:5]`` give 5 at every large size, but a smaller one would give less.
_UNKNOWN_STAYS = frozenset(['slice', 'slice_axis'])

_KERNEL_ERRORS = (MXNetError, ValueError, TypeError, IndexError, ZeroDivisionError, KeyError,
                  AttributeError)


def _known(shape):
    return shape is not None and all(d >= 0 for d in shape)


# ---- the user's spelling <-> ours (None: unknown shape; -1: unknown dimension) ----

def _from_user(shape, np_semantics):
    if shape is None:
        return None
    if isinstance(shape, str):
        shape = from_string(shape)
    shape = tuple(int(d) for d in shape)
    if np_semantics:
        return shape
    return tuple(d if d > 0 else -1 for d in shape) if shape else None


def _to_user(shape, np_semantics):
    if np_semantics:
        return shape
    return () if shape is None else tuple(max(d, 0) for d in shape)


def _for_rule(shape):
    """A shape as the op table's rules take it: 0 for unknown dimensions."""
    return () if shape is None else tuple(max(d, 0) for d in shape)


def _from_rule(shape):
    if not shape:  # the rules' spelling of an unknown shape
        return None
    return tuple(int(d) if d > 0 else -1 for d in shape)


class _Shapes:
    """What is known of each ``(id(node), output index)``; ``set`` merges and raises on
    a contradiction."""

    def __init__(self, np_semantics):
        self.known = {}
        self.changed = False
        self.np_semantics = np_semantics

    def get(self, key):
        return self.known.get(key)

    def set(self, key, new, node, what):
        if new is None:
            return
        old = self.known.get(key)
        merged = new if old is None else _merge(old, new)
        if merged is None:
            raise MXNetError(
                'infer_shape: inconsistent shapes at node %s (op %s): %s is %s but the '
                'graph also makes it %s' % (node.name, node.op, what,
                                            _to_user(old, self.np_semantics),
                                            _to_user(new, self.np_semantics)))
        if merged != old:
            self.known[key] = merged
            self.changed = True


def _merge(old, new):
    """``old`` with its unknown dimensions taken from ``new``; None on a contradiction."""
    if len(old) != len(new):
        return None
    out = []
    for o, n in zip(old, new):
        if o >= 0 and n >= 0 and o != n:
            return None
        out.append(o if o >= 0 else n)
    return tuple(out)


# ---- shapes ----

def _start(sym, args, kwargs, what):
    """The graph's nodes and ``{variable name: given value}`` from ``infer_*``'s
    arguments (positionally in ``list_arguments`` order, or by name)."""
    order = sym._order()  # pylint: disable=protected-access
    names = {n.name for n in order if n.is_variable}
    given = {}
    if args:
        arg_names = sym.list_arguments()
        if len(args) > len(arg_names):
            raise MXNetError('%s: got %d positional values but the symbol has %d arguments %s'
                             % (what, len(args), len(arg_names), arg_names))
        given.update((n, v) for n, v in zip(arg_names, args) if v is not None)
    for key, value in kwargs.items():
        if key not in names:
            raise MXNetError('%s: keyword argument %r is not an input of the symbol; its '
                             'inputs are %s' % (what, key, sorted(names)))
        if value is not None:
            given[key] = value
    return order, given


def infer_shape(sym, args, kwargs, partial):
    """``(arg_shapes, out_shapes, aux_shapes)``; see ``Symbol.infer_shape``."""
    np_semantics = is_np_shape()
    order, given = _start(sym, args, kwargs, 'infer_shape')
    known = entry_shapes(order, given, np_semantics)
    result = _result(sym, order, known, partial, lambda s: not _known(s))
    if result[0] is None:
        return result
    return tuple([_to_user(s, np_semantics) for s in group] for group in result)


def entry_shapes(order, given, np_semantics=False, known_outputs=()):
    """``{(id(node), output index): shape}`` for what can be decided in the graph
    ``order`` from the variables' shapes ``given`` (name -> shape) and ``__shape__``
    (None: an unknown shape; -1: an unknown dimension), and the shapes of some outputs,
    ``known_outputs`` (``(node, index, shape)``)."""
    shapes = _Shapes(np_semantics)
    for node in order:
        if node.is_variable:
            value = given.get(node.name, node.attrs.get('__shape__'))
            shapes.set((id(node), 0), _from_user(value, np_semantics), node, 'its shape')
    for node, idx, shape in known_outputs:
        shapes.set((id(node), idx), shape, node, 'output %d' % idx)
    dtypes = infer_types(order, {})
    ops = [n for n in order if not n.is_variable]
    done = {}  # id(node) -> True once its inputs are known, else the inputs it last probed
    for _ in range(len(ops) + 1):
        shapes.changed = False
        for node in ops + ops[::-1]:
            if done.get(id(node)) is not True:
                _infer_node(node, shapes, dtypes, done)
        if not shapes.changed:
            break
    return shapes.known


def open_source_shape(node, np_semantics=False):
    """The shape of a node that makes an array from its ``shape`` argument alone
    (``_zeros``, ``_ones``, ``_full`` ...) when that shape has unknown dimensions, -1 for
    each; else None. MXNet 1.x's shapes spell an unknown dimension 0 there (a recurrent
    cell's begin state is ``zeros(shape=(0, hidden))``): the graph decides it. So it does
    the length of an ``arange`` with ``infer_range`` and no ``stop``."""
    if node.op == '_arange' and from_string(node.attrs.get('infer_range', 'False')) and \
            from_string(node.attrs.get('stop', 'None')) is None:
        return (-1,)  # its length, and so its stop, comes from where it is used
    if node.is_variable or node.inputs or np_semantics or 'shape' not in node.attrs:
        return None
    shape = from_string(node.attrs['shape'])
    shape = (shape,) if isinstance(shape, int) else shape
    if not isinstance(shape, tuple) or all(d > 0 for d in shape):
        return None
    return tuple(int(d) if d > 0 else -1 for d in shape)


def _infer_node(node, shapes, dtypes, done):
    """Add what ``node`` tells of its inputs' and outputs' shapes; once its inputs are
    known, its outputs are computed (and checked against what is known of them) and
    ``done`` marks the node True; before, it keeps the inputs its kernel was last probed
    with, so a pass over unchanged inputs runs nothing."""
    spec = spec_of(node.op)
    in_keys = [(id(src), idx) for src, idx in node.inputs]
    out_keys = [(id(node), i) for i in range(spec.num_outputs(node.attrs))]
    ins = [shapes.get(k) for k in in_keys]
    outs = [shapes.get(k) for k in out_keys]
    if node.subgraphs or spec.own_inference:  # control flow, custom: run again on news
        if done.get(id(node)) != (ins, outs):
            done[id(node)] = (ins, outs)
            new_ins, new_outs = spec.infer_shapes(node, ins, outs)
            for i, (key, shape) in enumerate(zip(in_keys + out_keys, new_ins + new_outs)):
                shapes.set(key, shape, node, 'input %d' % i if i < len(in_keys)
                           else 'output %d' % (i - len(in_keys)))
        return
    open_shape = open_source_shape(node, shapes.np_semantics)
    if open_shape is not None:  # its consumers decide its unknown dimensions
        shapes.set(out_keys[0], open_shape, node, 'output 0')
        done[id(node)] = True
        return
    params = spec.params(node.attrs)
    # A broadcasting op's operands say nothing certain of each other's sizes (either may
    # be 1): MXNet infers neither from the other, and the op table's rule guesses, as
    # a Parameter whose shape waits for its first use must.
    rule = spec.op.infer_shape if spec.run_is_op and spec.op.name not in SCALAR_FORMS \
        else None
    if rule is not None and ins and ins[0] is not None and not all(_known(s) for s in ins):
        try:
            filled = rule(*[_for_rule(s) for s in ins], **params,
                          out_shapes=[None if s is None else _for_rule(s) for s in outs])
        except _KERNEL_ERRORS:
            filled = None
        for i, (key, new) in enumerate(zip(in_keys, filled or ())):
            shapes.set(key, _from_rule(new), node, 'input %d' % i)
    alike = in_keys if node.op in _ALL_ALIKE else in_keys[:1] if spec.keeps_shape else []
    if alike and out_keys:
        for key in alike + out_keys[:1]:
            for other in alike + out_keys[:1]:
                shapes.set(key, shapes.get(other), node, 'an input or output')
    ins = [shapes.get(k) for k in in_keys]
    in_dtypes = [dtypes.get(k) for k in in_keys]
    if all(_known(s) for s in ins):
        try:
            new = _output_shapes(spec, node, ins, in_dtypes)
        except MXNetError as exc:
            raise MXNetError('infer_shape: node %s (op %s) cannot take inputs of shapes %s: %s'
                             % (node.name, node.op, [_to_user(s, shapes.np_semantics)
                                                     for s in ins], exc)) from None
        done[id(node)] = True
    elif all(_known(shapes.get(k)) for k in out_keys) or done.get(id(node)) == tuple(ins):
        return
    elif all(s is not None for s in ins) and \
            all(_known(ins[i]) for i in _NEEDS_KNOWN.get(spec.mx_name, ()) if i < len(ins)):
        done[id(node)] = tuple(ins)
        new = _probe(spec, node, ins, in_dtypes)
        if new and spec.run_is_op and spec.op.name in _UNKNOWN_STAYS:
            new = [shape and tuple(-1 if i < 0 else o for i, o in zip(ins[0], shape))
                   for shape in new]
    else:
        new = None
    for i, (key, shape) in enumerate(zip(out_keys, new or ())):
        shapes.set(key, shape, node, 'output %d' % i)


def _output_shapes(spec, node, ins, in_dtypes):
    if spec.run_is_op and spec.op.name in SCALAR_FORMS and len(ins) == 2:
        try:
            return [tuple(np.broadcast_shapes(*ins))]
        except ValueError as exc:
            raise MXNetError(str(exc)) from None
    return spec.output_shapes(ins, node.attrs, in_dtypes)


def _probe(spec, node, ins, in_dtypes):
    """The output shapes with the dimensions that depend on unknown ones unknown: the
    kernel runs with every unknown dimension at each of ``_PROBES`` (once, on one sample,
    when only the batch size of an op that does not depend on it is unknown)."""
    if spec.per_sample and ins[0] and ins[0][0] < 0 and _known(ins[0][1:]) and \
            all(_known(s) for s in ins[1:]):
        try:
            one = _output_shapes(spec, node, [(1,) + ins[0][1:]] + ins[1:], in_dtypes)
        except _KERNEL_ERRORS:
            return None
        return [(-1,) + tuple(shape[1:]) for shape in one]
    runs = []
    for size in _PROBES:
        trial = [tuple(size if d < 0 else d for d in s) for s in ins]
        try:
            runs.append(_output_shapes(spec, node, trial, in_dtypes))
        except _KERNEL_ERRORS:
            return None
    return [tuple(a if a == b else -1 for a, b in zip(first, second))
            if len(first) == len(second) else None for first, second in zip(*runs)]


def _result(sym, order, values, partial, unknown):
    def get(node, idx=0):
        return values.get((id(node), idx))
    aux = sym._aux_variables(order)  # pylint: disable=protected-access
    args = [get(n) for n in order if n.is_variable and id(n) not in aux]
    auxs = [get(n) for n in order if n.is_variable and id(n) in aux]
    outs = [get(n, i) for n, i in sym._outputs]  # pylint: disable=protected-access
    if not partial and any(unknown(v) for v in args + auxs + outs):
        missing = [n.name for n in order if n.is_variable and unknown(get(n))]
        warnings.warn('Cannot decide shape or type for the following arguments (0 is an '
                      'unknown dimension); give them to infer_shape/infer_type: %s' % missing,
                      stacklevel=3)
        return None, None, None
    return args, outs, auxs


# ---- dtypes ----

def _dtype_from_attr(value):
    if isinstance(value, str) and value.lstrip('-').isdigit():
        return np.dtype(DTYPE_NAMES[int(value)])
    return np.dtype(value)


# Inputs that hold indices: their dtype does not follow the data's (and the dtype they
# get when nothing says otherwise).
_INDEX_INPUTS = {'Embedding': {0: None}, 'take': {1: None}, 'pick': {1: None},
                 'one_hot': {0: None}, 'CTCLoss': {1: None, 2: None, 3: None},
                 'where': {0: None}, 'batch_take': {1: np.dtype('int32')}}
# Ops whose output dtype is their ``dtype`` argument (float32 by default).
_OWN_DTYPE = frozenset(['cast', 'one_hot', '_zeros', '_ones', '_full', '_arange', '_eye'])
# Ops whose output dtype is fixed, whatever their inputs'.
_FIXED_DTYPE = {'shape_array': 'int64', 'size_array': 'int64', 'all_finite': 'float32',
                'multi_all_finite': 'float32', '_contrib_allclose': 'uint8'}


def infer_types(order, given):
    """``{(id(node), output index): numpy dtype}`` for what can be decided in the graph
    ``order`` from the variables' dtypes ``given`` (name -> dtype) and ``__dtype__``."""
    types = {}
    for node in order:
        if node.is_variable:
            value = given.get(node.name, node.attrs.get('__dtype__'))
            if value is not None:
                types[(id(node), 0)] = _dtype_from_attr(value)
    ops = [n for n in order if not n.is_variable]
    for _ in range(len(ops) + 1):
        changed = False
        for node in ops + ops[::-1]:
            changed |= _type_node(node, types)
        if not changed:
            break
    return types


def _type_node(node, types):
    spec = spec_of(node.op)
    if node.subgraphs or spec.own_inference:  # a control-flow op, a custom op
        keys = [(id(src), idx) for src, idx in node.inputs] + \
            [(id(node), i) for i in range(spec.num_outputs(node.attrs))]
        new_ins, new_outs = spec.infer_types(node, [types.get(k) for k in keys[:len(
            node.inputs)]], [types.get(k) for k in keys[len(node.inputs):]])
        changed = False
        for key, dtype in zip(keys, new_ins + new_outs):
            if dtype is not None and types.get(key) is None:
                types[key] = np.dtype(dtype)
                changed = True
        return changed
    in_keys = [(id(src), idx) for src, idx in node.inputs]
    out_keys = [(id(node), i) for i in range(spec.num_outputs(node.attrs))]
    if all(types.get(k) is not None for k in in_keys + out_keys):
        return False  # all decided: the passes after the first cost little
    name = spec.op.name if spec.op is not None else spec.mx_name
    params = spec.params(node.attrs)
    index = _INDEX_INPUTS.get(name, {})
    changed = False

    def put(key, dtype):
        if dtype is not None and types.get(key) is None:
            types[key] = np.dtype(dtype)
            return True
        return False
    for i, key in enumerate(in_keys):
        if i in index:
            changed |= put(key, index[i])
    if spec.run_is_op and spec.op.infer_dtype is not None:
        outs = spec.op.infer_dtype([types.get(k) for k in in_keys], **params)
        for key, dtype in zip(out_keys, outs):
            changed |= put(key, dtype)
        return changed
    if name in _OWN_DTYPE:
        out = params.get('dtype') or 'float32'
    elif name in _FIXED_DTYPE:
        out = _FIXED_DTYPE[name]
    else:
        data = [types.get(k) for i, k in enumerate(in_keys) if i not in index]
        common = next((t for t in data if t is not None), None)
        if common is None and out_keys:
            common = types.get(out_keys[0])  # the inputs have the output's dtype
        if common is None and name == 'Embedding':
            common = params.get('dtype') or 'float32'  # the weight's, as MXNet's
        for i, key in enumerate(in_keys):
            if i not in index:
                changed |= put(key, common)
        out = common
    for key in out_keys:
        changed |= put(key, out)
    return changed


def infer_type(sym, args, kwargs, partial):
    """``(arg_types, out_types, aux_types)``; see ``Symbol.infer_type``."""
    order, given = _start(sym, args, kwargs, 'infer_type')
    types = infer_types(order, given)
    result = _result(sym, order, types, partial, lambda t: t is None)
    if result[0] is None:
        return result
    return tuple([None if t is None else t.type for t in group] for group in result)
