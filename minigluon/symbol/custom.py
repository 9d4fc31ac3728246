"""``mx.sym.Custom``: graph nodes of operators written in Python (``mx.operator``).

A node is written as MXNet writes it: op ``Custom``, the attribute ``op_type`` and the
call's other keyword arguments as strings. Its inputs, outputs and auxiliary states are
the names the registered property lists, its shapes and dtypes come from the property's
``infer_shape``/``infer_type``, and it runs through ``ndarray.custom.run``, the code
``mx.nd.Custom`` runs, so a hybridized block computes what the imperative one does.
"""
import numpy as np

from .. import name as _name
from ..base import MXNetError, MXNetTypeError
from ..ndarray import custom as _custom
from .attrs import is_hidden
from .graph import Node
from .op_specs import OpSpec, _add  # pylint: disable=protected-access
from .symbol import Symbol, _user_attrs  # pylint: disable=protected-access

__all__ = ['Custom']


def _from_user_shape(shape):
    """A property's shape as inference keeps it: None when unknown, -1 per unknown
    dimension (MXNet 1.x's properties spell them ``[]`` and 0)."""
    return tuple(d if d > 0 else -1 for d in shape) if shape else None


class CustomSpec(OpSpec):
    """The ``Custom`` op: what a node lists depends on the property its attributes
    make (one property per distinct set of attributes, made once)."""
    own_inference = True

    def __init__(self):
        super().__init__('Custom', hint='custom', accepted=())
        self._props = {}

    def prop(self, attrs):
        """``(op_type, property)`` for a node's attributes."""
        params = self.params(attrs)
        op_type = params.pop('op_type', None)
        key = (_custom.find(op_type), op_type, tuple(sorted(params.items())))
        prop = self._props.get(key)
        if prop is None:
            if len(self._props) >= 256:  # many distinct attribute sets: keep the recent
                self._props.clear()
            prop = self._props[key] = _custom.create_prop(op_type, params)
        return op_type, prop

    def _names(self, attrs):
        op_type, prop = self.prop(attrs)
        return _custom.names_of(prop, op_type)

    @property
    def differentiable(self):
        return True

    def params(self, attrs):
        return {k: v for k, v in attrs.items() if not is_hidden(k)}

    def input_names(self, attrs, count=None):
        args, _, aux = self._names(attrs)
        return args + aux

    def aux_input_names(self, attrs):
        return frozenset(self._names(attrs)[2])

    def num_outputs(self, attrs):
        return len(self._names(attrs)[1])

    def total_outputs(self, attrs):
        return self.num_outputs(attrs)

    def output_names(self, attrs):
        return list(self._names(attrs)[1])

    def _input_slots(self, attrs):
        return None

    def runner(self, attrs, subgraphs=()):
        op_type, prop = self.prop(attrs)
        cache = {}  # the node's operators, one per input shapes, as MXNet's executors keep

        def run(inputs, ctx):
            return _custom.run(prop, op_type, inputs, ctx, cache)
        return run

    def output_shapes(self, in_shapes, attrs, dtypes):
        op_type, prop = self.prop(attrs)
        names = _custom.names_of(prop, op_type)
        counts = tuple(len(n) for n in names)
        return _custom.infer_shapes(prop, op_type, in_shapes[:counts[0]], counts)[1]

    def infer_shapes(self, node, ins, outs):
        """``(input shapes, output shapes)`` from the property's ``infer_shape``, given
        what is known (None: unknown; -1: an unknown dimension). It is called on unknown
        shapes too, as MXNet calls it, and what it cannot say yet is left unknown."""
        op_type, prop = self.prop(node.attrs)
        names = _custom.names_of(prop, op_type)
        counts = tuple(len(n) for n in names)
        given = ins[:counts[0]]
        try:
            args, out, aux = _custom.infer_shapes(
                prop, op_type, [[] if s is None else [max(d, 0) for d in s] for s in given],
                counts)
        except MXNetError:
            if all(s is not None and min(s, default=0) >= 0 for s in given):
                raise
            return [None] * len(ins), [None] * len(outs)
        return ([_from_user_shape(s) for s in args + aux], [_from_user_shape(s) for s in out])

    def infer_types(self, node, ins, outs):
        """``(input dtypes, output dtypes)`` from the property's ``infer_type`` (None:
        unknown), once the first argument's dtype is known."""
        op_type, prop = self.prop(node.attrs)
        names = _custom.names_of(prop, op_type)
        counts = tuple(len(n) for n in names)
        given = [None if t is None else np.dtype(t).type for t in ins[:counts[0]]]
        if given and given[0] is None:
            return [None] * len(ins), [None] * len(outs)
        try:
            args, out, aux = _custom.infer_types(prop, op_type, given, counts)
        except MXNetError:
            if all(t is not None for t in given):
                raise
            return [None] * len(ins), [None] * len(outs)
        return args + aux, out


_SPEC = CustomSpec()
_add(_SPEC, '_npi_Custom', public=False)


def Custom(*args, **kwargs):  # pylint: disable=invalid-name
    """A graph node applying a custom operator written in Python.

    Parameters
    ----------
    *args : Symbol
        The operator's inputs (its arguments, then its auxiliary states), in order; or
        give them by name as keywords. Inputs left out become variables named
        ``<node name>_<input name>``.
    op_type : str
        The name the operator's property class was registered under.
    name : str, optional
    attr : dict, optional
    **kwargs
        Passed to the property class's ``__init__``, each as ``str(value)``, and written
        into the graph as the node's attributes.

    Returns
    -------
    Symbol
        The node's outputs (a group when the operator has several).
    """
    name = kwargs.pop('name', None)
    attr = kwargs.pop('attr', None)
    named = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    attrs = {k: str(v) for k, v in kwargs.items() if k not in named}
    op_type, _ = _SPEC.prop(attrs)
    input_names = _SPEC.input_names(attrs)
    if len(args) > len(input_names):
        raise MXNetError('Custom (op_type %r): got %d inputs but the operator takes %d: %s'
                         % (op_type, len(args), len(input_names), input_names))
    unknown = sorted(set(named) - set(input_names))
    if unknown:
        raise MXNetError('Custom (op_type %r) has no input named %s; its inputs are %s'
                         % (op_type, unknown, input_names))
    name = _name.current().get(name, 'custom')
    attrs.update(_user_attrs(attr))
    entries = []
    for i, input_name in enumerate(input_names):
        sym = args[i] if i < len(args) else named.get(input_name)
        if sym is None:
            entries.append((Node(None, '%s_%s' % (name, input_name), dict(attrs)), 0))
            continue
        if not isinstance(sym, Symbol):
            raise MXNetTypeError('Custom (op_type %r): input %r must be a Symbol, got %s'
                                 % (op_type, input_name, type(sym).__name__))
        if len(sym) != 1:
            raise MXNetError('Custom (op_type %r): input %r is a group of %d outputs; pick '
                             'one with sym[i]' % (op_type, input_name, len(sym)))
        entries.append(sym._outputs[0])  # pylint: disable=protected-access
    node = Node('Custom', name, attrs, entries)
    return Symbol([(node, i) for i in range(_SPEC.num_outputs(attrs))])
