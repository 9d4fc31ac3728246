"""``Symbol``: a handle on outputs of a graph, and the functions that build graphs.

A Symbol is a list of ``(node, output index)`` entries over ``graph.Node`` objects.
Calling an op function (``mx.sym.FullyConnected(data, num_hidden=10)``) adds an
operator node whose missing inputs become new variables named after it
(``fullyconnected0_weight``), as in MXNet 1.x. Nothing is computed until the graph is
bound to arrays (``bind``, ``simple_bind``, ``eval``) or run by a hybridized block;
then every node runs the op table's kernel through ``dispatch.invoke``.
"""
import numbers
import os

import numpy as np

from .. import attribute as _attribute, name as _name
from ..base import MXNetError, MXNetTypeError, NotImplementedForSymbol
from ..context import current_context
from ..ndarray.ndarray import METHOD_OPS
from ..util import is_np_shape
from . import graph as _graph, shape_inference
from .attrs import DTYPE_CODES, from_string, to_string
from .executor import Executor, allocate_arrays
from .graph import Node
from .op_specs import ELEMENTWISE_NODES, SCALAR_FORMS, functions, spec_of

__all__ = ['Symbol', 'var', 'Variable', 'Group', 'load', 'load_json', 'fromjson']



class Symbol:
    """Outputs of a graph: one (a layer's output, a variable) or several (a ``Group``).

    Symbols combine with arithmetic (``a + b``, ``2 * a``), compose with op functions,
    and describe their graph (``list_arguments``, ``infer_shape``, ``tojson``).
    """
    __slots__ = ('_outputs', '__weakref__')

    def __init__(self, outputs):
        self._outputs = list(outputs)

    # ---- structure ----
    @property
    def name(self):
        """The name of the node of a single-output symbol (None for a group)."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].name

    def __repr__(self):
        if len(self._outputs) == 1:
            return '<Symbol %s>' % self.name
        return '<Symbol group [%s]>' % ', '.join(n.name for n, _ in self._outputs)

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([out]) for out in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise MXNetError('symbol has no output named %r; its outputs are %s'
                                 % (index, names))
            if len(matches) > 1:
                raise MXNetError('symbol has several outputs named %r' % index)
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, numbers.Integral):
            raise MXNetTypeError('symbol index must be an int, a slice or an output name, '
                                 'got %s' % type(index).__name__)
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError('symbol has %d outputs, index %d is out of range'
                             % (len(self._outputs), index))
        return Symbol([self._outputs[index]])

    def _order(self):
        return _graph.topological_order(self._outputs)

    def _aux_variables(self, order=None):
        aux = set()
        for node in order if order is not None else self._order():
            if node.is_variable:
                continue
            spec = spec_of(node.op)
            aux_names = spec.aux_input_names(node.attrs)
            if aux_names:
                for (src, _), name in zip(node.inputs,
                                          spec.input_names(node.attrs, len(node.inputs))):
                    if name in aux_names and src.is_variable:
                        aux.add(id(src))
        return aux

    def list_arguments(self):
        """The names of the variables that are not auxiliary states, in graph order."""
        order = self._order()
        aux = self._aux_variables(order)
        return [n.name for n in order if n.is_variable and id(n) not in aux]

    def list_auxiliary_states(self):
        """The names of the variables the graph's ops update themselves (BatchNorm's
        moving statistics), in graph order."""
        order = self._order()
        aux = self._aux_variables(order)
        return [n.name for n in order if n.is_variable and id(n) in aux]

    def list_inputs(self):
        """Every variable's name, arguments and auxiliary states, in graph order."""
        return [n.name for n in self._order() if n.is_variable]

    def list_outputs(self):
        """The names of the outputs (``fullyconnected0_output``, or a variable's name)."""
        return [output_name(node, idx) for node, idx in self._outputs]

    def get_internals(self):
        """A group of every output of every node of the graph, in graph order."""
        outs = []
        for node in self._order():
            count = 1 if node.is_variable else spec_of(node.op).num_outputs(node.attrs)
            outs.extend((node, i) for i in range(count))
        return Symbol(outs)

    def get_children(self):
        """The inputs of this symbol's nodes (of each output's node in turn, for a group)
        as a group, or None when they have none (variables)."""
        children, seen = [], set()
        for node, _ in self._outputs:
            if id(node) not in seen:
                seen.add(id(node))
                children.extend(node.inputs)
        return Symbol(children) if children else None

    # ---- attributes ----
    def attr(self, key):
        """The attribute ``key`` of this symbol's node as a string, or None."""
        if len(self._outputs) != 1:
            return None
        return _listed_attrs(self._outputs[0][0]).get(key)

    def list_attr(self, recursive=False):
        """The attributes of this symbol's node (``recursive=True`` is refused, as MXNet
        1.x refuses it: use ``attr_dict``)."""
        if recursive:
            raise DeprecationWarning('Symbol.list_attr with recursive=True has been '
                                     'deprecated. Please use attr_dict instead.')
        if len(self._outputs) != 1:
            return {}
        return _listed_attrs(self._outputs[0][0])

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node that has attributes."""
        return {n.name: _listed_attrs(n) for n in self._order() if n.attrs}

    def _set_attr(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise MXNetTypeError('attribute %r must be a string, got %s'
                                     % (key, type(value).__name__))
            for node, _ in self._outputs:
                node.attrs[key] = value

    # ---- copying and composing ----
    def __copy__(self):
        return Symbol(_copy_graph(self._outputs, {}))

    def __deepcopy__(self, memo):
        return self.__copy__()

    # Pickling keeps what MXNet keeps, the graph's JSON, so pickles move between MXNet and
    # minigluon.
    def __getstate__(self):
        return {'handle': self.tojson()}

    def __setstate__(self, state):
        handle = state.get('handle') if isinstance(state, dict) else None
        if not isinstance(handle, str):
            raise MXNetError("cannot restore a Symbol from %r: expected the state "
                             "{'handle': JSON text} that pickling a Symbol writes" % (state,))
        self._outputs = fromjson(handle)._outputs

    def copy(self):
        """A deep copy of the graph (new nodes, the same names and attributes)."""
        return self.__copy__()

    def __call__(self, *args, **kwargs):
        """A copy of the graph with variables replaced by other symbols: positionally
        in ``list_arguments`` order, or by name."""
        out = self.__copy__()
        out._compose(*args, **kwargs)
        return out

    def _compose(self, *args, **kwargs):
        name = kwargs.pop('name', None)
        head = self._outputs[0][0]
        if head.is_variable:
            raise MXNetError('compose: a variable cannot be composed (%r); compose the '
                             'symbols that use it' % head.name)
        if name:
            head.name = name  # MXNet names the (first) output node so
        variables = {n.name: n for n in self._order() if n.is_variable}
        replace = {}
        if args:
            for arg_name, value in zip(self.list_arguments(), args):
                replace[arg_name] = value
        replace.update(kwargs)
        mapping = {}
        for arg_name, value in replace.items():
            if arg_name not in variables:
                continue
            if not isinstance(value, Symbol) or len(value) != 1:
                raise MXNetTypeError('compose: %r must be replaced by a single-output Symbol'
                                     % arg_name)
            mapping[id(variables[arg_name])] = value._outputs[0]
        for node in self._order():
            node.inputs = [mapping.get(id(src), (src, idx)) if src.is_variable else (src, idx)
                           for src, idx in node.inputs]
        self._outputs = [mapping.get(id(n), (n, i)) if n.is_variable else (n, i)
                         for n, i in self._outputs]

    # ---- files ----
    def tojson(self):
        """The graph in MXNet 1.x's JSON format (marked ``is_np_shape`` inside
        ``mx.util.np_shape()``, as MXNet marks it)."""
        extra = {'is_np_shape': 1} if is_np_shape() else None
        return _graph.to_json(self._outputs, total_outputs, extra)

    def save(self, fname, remove_amp_cast=True):
        """Write ``tojson()`` to ``fname`` (what ``mx.sym.load`` reads)."""
        tmp = '%s.tmp%d' % (fname, os.getpid())
        with open(tmp, 'w') as f:
            f.write(self.tojson())
        os.replace(tmp, fname)

    def debug_str(self):
        """The graph as text: each node, its inputs and attributes, in graph order."""
        lines = []
        for node in self._order():
            if node.is_variable:
                lines.append('Variable:%s' % node.name)
            else:
                lines.append('Op:%s, Name=%s' % (node.op, node.name))
                lines.extend('\targ[%d]=%s' % (i, output_name(src, idx))
                             for i, (src, idx) in enumerate(node.inputs))
                lines.extend('\tattr:%s=%s' % kv for kv in sorted(node.attrs.items()))
        return '\n'.join(lines)

    # ---- inference ----
    def infer_shape(self, *args, **kwargs):
        """``(arg_shapes, out_shapes, aux_shapes)`` from the shapes of some arguments
        (positionally in ``list_arguments`` order, or by name); ``(None, None, None)``
        when some shape cannot be decided."""
        return shape_inference.infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        """As ``infer_shape``, leaving unknown shapes as ``()`` and unknown dims as 0."""
        return shape_inference.infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        """``(arg_types, out_types, aux_types)`` (numpy types) from some arguments'
        dtypes; ``(None, None, None)`` when some type cannot be decided."""
        return shape_inference.infer_type(self, args, kwargs, partial=False)

    def infer_type_partial(self, *args, **kwargs):
        """As ``infer_type``, leaving the types it cannot decide None."""
        return shape_inference.infer_type(self, args, kwargs, partial=True)

    # ---- running ----
    def bind(self, ctx, args, args_grad=None, grad_req='write', aux_states=None,
             group2ctx=None, shared_exec=None):
        """An Executor running this graph on the given arrays (lists in
        ``list_arguments``/``list_auxiliary_states`` order, or dicts by name).
        ``shared_exec``: an executor whose outputs' memory the new one's may share."""
        return Executor(self, ctx, args, args_grad, grad_req, aux_states,
                        shared_exec=shared_exec)

    def simple_bind(self, ctx, grad_req='write', type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An Executor over new zero arrays, their shapes inferred from ``kwargs``
        (argument name -> shape) and their dtypes from ``type_dict``."""
        # MXNet reads only shapes from the keywords and passes over anything else (its
        # tests give ``force_rebind=True``)
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        args, grads, aux = allocate_arrays(self, ctx, grad_req, type_dict, shapes)
        return Executor(self, ctx, args, grads, grad_req, aux)

    def eval(self, ctx=None, **kwargs):
        """Run the graph once on the arrays ``kwargs`` (argument name -> NDArray) and
        return the list of outputs."""
        ctx = ctx or current_context()
        return self.bind(ctx, kwargs, grad_req='null').forward()

    # ---- operators ----
    def __add__(self, other):
        return _binary('add', self, other, '_plus')

    def __radd__(self, other):
        return _binary('add', other, self, '_plus')

    def __sub__(self, other):
        return _binary('subtract', self, other, '_minus')

    def __rsub__(self, other):
        return _binary('subtract', other, self, '_minus')

    def __mul__(self, other):
        return _binary('multiply', self, other, '_mul')

    def __rmul__(self, other):
        return _binary('multiply', other, self, '_mul')

    def __truediv__(self, other):
        return _binary('divide', self, other, '_div')

    def __rtruediv__(self, other):
        return _binary('divide', other, self, '_div')

    def __mod__(self, other):
        return _binary('mod', self, other, '_mod')

    def __rmod__(self, other):
        return _binary('mod', other, self, '_mod')

    def __pow__(self, other):
        return _binary('power', self, other, '_power')

    def __rpow__(self, other):
        return _binary('power', other, self, '_power')

    def __neg__(self):
        return self * -1.0

    def __abs__(self):
        return _function('abs')(self)

    def __eq__(self, other):
        return _binary('equal', self, other, '_equal')

    def __ne__(self, other):
        return _binary('not_equal', self, other, '_not_equal')

    def __gt__(self, other):
        return _binary('greater', self, other, '_greater')

    def __ge__(self, other):
        return _binary('greater_equal', self, other, '_greater_equal')

    def __lt__(self, other):
        return _binary('lesser', self, other, '_lesser')

    def __le__(self, other):
        return _binary('lesser_equal', self, other, '_lesser_equal')

    __hash__ = object.__hash__

    def __bool__(self):
        # a symbol holds no value until its graph runs
        raise NotImplementedForSymbol(self.__bool__, 'bool')

    # ---- methods as on NDArray ----
    def reshape(self, *shape, **kwargs):
        """``Reshape`` of this symbol (``x.reshape((2, -1))`` or ``x.reshape(2, -1)``)."""
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        if shape:
            kwargs['shape'] = tuple(shape)
        return _function('Reshape')(self, **kwargs)

    def astype(self, dtype, **kwargs):
        """``Cast`` of this symbol to ``dtype``."""
        return _function('Cast')(self, dtype=dtype, **kwargs)

    def transpose(self, *axes, **kwargs):
        """``transpose`` of this symbol (all axes reversed when none are given)."""
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = axes[0]
        if axes:
            kwargs['axes'] = tuple(axes)
        return _function('transpose')(self, **kwargs)

    def flatten(self, **kwargs):
        """``Flatten`` of this symbol: ``(N, a, b) -> (N, a*b)``."""
        return _function('Flatten')(self, **kwargs)

    def expand_dims(self, axis, **kwargs):
        """``expand_dims`` of this symbol: a new axis of size 1 at ``axis``."""
        return _function('expand_dims')(self, axis=axis, **kwargs)

    def squeeze(self, axis=None, **kwargs):
        """``squeeze`` of this symbol: its axes of size 1 (or ``axis``) removed."""
        return _function('squeeze')(self, axis=axis, **kwargs)

    def broadcast_to(self, shape, **kwargs):
        """``broadcast_to`` of this symbol."""
        return _function('broadcast_to')(self, shape=shape, **kwargs)

    def as_nd_ndarray(self):
        """This symbol (MXNet's conversion from its numpy-style symbols)."""
        return self

    @property
    def T(self):  # pylint: disable=invalid-name
        """The transpose (all axes reversed)."""
        return self.transpose()


def _method(fname):
    def method(self, *args, **kwargs):
        return _function(fname)(self, *args, **kwargs)
    method.__name__ = fname
    method.__doc__ = '``mx.sym.%s`` of this symbol (the node is named as that makes it).' \
        % fname
    return method


for _fname in METHOD_OPS:
    if not hasattr(Symbol, _fname):
        setattr(Symbol, _fname, _method(_fname))
Symbol.broadcast_axes = _method('broadcast_axes')


def _listed_attrs(node):
    """A node's attributes as MXNet lists them: hidden ones it knows by a plain name
    (``__lr_mult__``) under that name too (``lr_mult``)."""
    attrs = dict(node.attrs)
    for key in _HIDDEN_KEYS:
        if '__%s__' % key in attrs:
            attrs.setdefault(key, attrs['__%s__' % key])
    return attrs


def output_name(node, idx):
    """The name of output ``idx`` of ``node`` (``fc1_output``; a variable's own name)."""
    if node.is_variable:
        return node.name
    return '%s_%s' % (node.name, spec_of(node.op).output_names(node.attrs)[idx])


def total_outputs(node):
    """How many outputs an operator node has, hidden ones included (``node_row_ptr``)."""
    return spec_of(node.op).total_outputs(node.attrs)


def _copy_graph(outputs, memo):
    for node in _graph.topological_order(outputs):
        memo[id(node)] = Node(node.op, node.name, node.attrs,
                              [(memo[id(src)], idx) for src, idx in node.inputs],
                              node.subgraphs)
    return [(memo[id(n)], i) for n, i in outputs]


# ---- building graphs ----

def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A variable: a named input of a graph.

    Parameters
    ----------
    name : str
    attr : dict of str to str, optional
        Further attributes.
    shape : tuple, optional
        Its shape (0 for an unknown dimension), used by ``infer_shape``.
    lr_mult, wd_mult : float, optional
        Multipliers of the learning rate and weight decay for this variable.
    dtype : str or numpy dtype, optional
    init : Initializer or str, optional
        How ``Module`` and ``SymbolBlock`` initialize it.

    Returns
    -------
    Symbol
    """
    if not isinstance(name, str):
        raise MXNetTypeError('a variable name must be a str, got %s' % type(name).__name__)
    attrs = _user_attrs(attr)
    if shape is not None:
        attrs['__shape__'] = to_string(tuple(shape))
    if lr_mult is not None:
        attrs['__lr_mult__'] = str(lr_mult)
    if wd_mult is not None:
        attrs['__wd_mult__'] = str(wd_mult)
    if dtype is not None:
        attrs['__dtype__'] = str(DTYPE_CODES[np.dtype(dtype).name])
    if init is not None:
        attrs['__init__'] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs['__storage_type__'] = str({'default': 0, 'row_sparse': 1, 'csr': 2}[stype])
    for key, value in kwargs.items():
        if not (key.startswith('__') and key.endswith('__')):
            raise MXNetError('variable %r: attribute %r must be spelled __%s__ (only such '
                             'attributes can be set on a variable)' % (name, key, key.strip('_')))
        attrs[key] = to_string(value)
    return Symbol([(Node(None, name, attrs), 0)])


Variable = var


def Group(symbols):  # pylint: disable=invalid-name
    """One symbol with the outputs of every symbol of ``symbols``, in order."""
    symbols = list(symbols)
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise MXNetTypeError('Group needs a non-empty list of Symbols')
    return Symbol([out for s in symbols for out in s._outputs])


def fromjson(json_str):
    """The symbol stored in ``json_str`` (MXNet 1.x's graph JSON)."""
    heads, attrs = _graph.from_json(json_str)
    saved_np_shape = attrs.get('is_np_shape', ['int', 0])
    if is_np_shape() and not (isinstance(saved_np_shape, list) and saved_np_shape[-1]):
        # a graph saved with 0 as the unknown dimension, read where 0 is a size: MXNet
        # rewrites the variables' shapes with -1
        for node in _graph.topological_order(heads):
            if node.is_variable and '__shape__' in node.attrs:
                shape = from_string(node.attrs['__shape__'])
                if isinstance(shape, tuple):
                    node.attrs['__shape__'] = to_string(tuple(d if d else -1 for d in shape))
    return Symbol(heads)


load_json = fromjson


def load(fname):
    """The symbol saved in the file ``fname`` (``Symbol.save``, or MXNet's
    ``-symbol.json``)."""
    try:
        with open(fname) as f:
            text = f.read()
    except OSError as exc:
        raise MXNetError('cannot read symbol file %r: %s' % (fname, exc)) from None
    return fromjson(text)


def _binary(op_name, lhs, rhs, hint):
    if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
        mx_name = _ELEMWISE.get(op_name, '_' + op_name)
        return create(spec_of(mx_name), [lhs, rhs], {}, None, None, hint=hint, mx_name=mx_name)
    return _scalar(op_name, lhs, rhs, operator=True)


# The names MXNet writes for ``a + b`` and friends between two symbols.
_ELEMWISE = {'add': 'elemwise_add', 'subtract': 'elemwise_sub', 'multiply': 'elemwise_mul',
             'divide': 'elemwise_div'}


def _scalar(op_name, lhs, rhs, name=None, attr=None, operator=False):
    plain, flipped = SCALAR_FORMS[op_name]
    if isinstance(lhs, Symbol):
        sym, scalar, mx_name = lhs, rhs, plain
    else:
        sym, scalar, mx_name = rhs, lhs, flipped
    if not isinstance(scalar, numbers.Number):
        raise MXNetTypeError('%s: expected a Symbol or a number, got %s'
                             % (op_name, type(scalar).__name__))
    spec = spec_of(mx_name)
    snake = operator and mx_name in _SNAKE_SCALAR_HINTS
    hint = mx_name if snake else mx_name.replace('_scalar', 'scalar')
    return create(spec, [sym], {'scalar': scalar}, name, attr, hint=hint)


# MXNet's Python functions and operators call the scalar forms under old CamelCase names
# (``x + 1`` is ``_PlusScalar``: the node is ``_plusscalar0``), except these operators
# (``2 ** x``, ``x > 0``), whose nodes keep the op's name.
_SNAKE_SCALAR_HINTS = frozenset([
    '_rpower_scalar', '_equal_scalar', '_not_equal_scalar', '_greater_scalar',
    '_greater_equal_scalar', '_lesser_scalar', '_lesser_equal_scalar'])


# Attributes MXNet stores hidden (``ctx_group`` -> ``__ctx_group__``) when given plainly.
_HIDDEN_KEYS = frozenset(['ctx_group', 'lr_mult', 'wd_mult', 'force_mirroring',
                          'mirror_stage', 'profiler_scope'])


def _user_attrs(attr):
    """The current AttrScope's attributes with ``attr``'s, as a node stores them."""
    return {'__%s__' % k if k in _HIDDEN_KEYS else k: to_string(v)
            for k, v in _attribute.current().get(attr).items()}


def create(spec, inputs, params, name, attr, hint=None, mx_name=None):
    """A new operator node of ``spec`` over ``inputs`` (Symbols, or None for inputs to
    be created as variables), returned as a Symbol of its outputs."""
    attrs = {k: to_string(v) for k, v in params.items() if v is not None or k == 'axis'}
    attrs = {k: v for k, v in attrs.items() if not (v == 'None' and k not in ('axis',))}
    for key, value in spec.fixed.items():
        attrs.setdefault(key, to_string(value))
    name = _name.current().get(name, hint or spec.hint)
    if spec.variadic:
        attrs[spec.count_attr] = str(len(inputs))
    try:
        spec.params(attrs)  # an argument the op does not take is an error now, as in MXNet
    except MXNetError as exc:
        raise MXNetError('%s (making node %s)' % (exc, name)) from None
    attrs.update(_user_attrs(attr))
    names = spec.input_names(attrs, len(inputs))
    entries = []
    for i, input_name in enumerate(names):
        sym = inputs[i] if i < len(inputs) else None
        if sym is None:
            # a variable made for a missing input takes the node's attributes, as MXNet's
            var_attrs = dict(attrs)
            if input_name == 'moving_mean':
                var_attrs['__init__'] = '["zero", {}]'
            elif input_name == 'moving_var':
                var_attrs['__init__'] = '["one", {}]'
            entries.append((Node(None, '%s_%s' % (name, input_name), var_attrs), 0))
            continue
        if not isinstance(sym, Symbol):
            raise MXNetTypeError('%s: input %r must be a Symbol, got %s'
                                 % (spec.mx_name, input_name, type(sym).__name__))
        if len(sym._outputs) != 1:
            raise MXNetError('%s: input %r is a group of %d outputs; pick one with sym[i]'
                             % (spec.mx_name, input_name, len(sym._outputs)))
        entries.append(sym._outputs[0])
    node = Node(mx_name or spec.mx_name, name, attrs, entries)
    return Symbol([(node, i) for i in range(spec.num_outputs(attrs))])


_FUNCTIONS = {}
# ``mx.sym`` functions that, between two symbols, make MXNet's same-shape elementwise op
# (``mx.sym.maximum(a, b)`` is ``_Maximum``), as MXNet's Python functions do.
_ELEMENTWISE_FUNCTIONS = {'maximum': '_maximum', 'minimum': '_minimum', 'hypot': '_hypot',
                          'power': '_power', 'pow': '_power'}


def _function(fname):
    return _FUNCTIONS[fname]


def make_function(fname, spec):
    """The ``mx.sym.<fname>`` function of ``spec``."""
    op = spec.op

    def function(*args, **kwargs):
        name = kwargs.pop('name', None)
        attr = kwargs.pop('attr', None)
        kwargs.pop('out', None)
        if spec.variadic:
            inputs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) \
                else list(args)
            kwargs.pop('num_args', None)
            return create(spec, inputs, kwargs, name, attr, hint=fname.lower())
        input_names = spec.input_names(dict((k, to_string(v)) for k, v in kwargs.items()
                                            if not isinstance(v, Symbol)))
        all_inputs = list(spec._inputs)  # pylint: disable=protected-access
        inputs = {}
        positional = list(args)
        # positional inputs fill the inputs the node lists first, as in MXNet (a GRU's
        # RNN node takes sequence_length where an LSTM's takes state_cell)
        for input_name in input_names + [n for n in all_inputs if n not in input_names]:
            if not positional:
                break
            inputs[input_name] = positional.pop(0)
        if positional:
            param_names = [p for p in op.param_names if p not in all_inputs] if op else []
            if len(positional) > len(param_names):
                raise MXNetTypeError('%s takes %d inputs and parameters %s, got %d positional '
                                     'arguments' % (fname, len(all_inputs), param_names,
                                                    len(args)))
            kwargs.update(zip(param_names, positional))
        for input_name in all_inputs:
            if input_name in kwargs:
                inputs[input_name] = kwargs.pop(input_name)
        numbers_in = [k for k, v in inputs.items() if isinstance(v, numbers.Number)]
        if numbers_in and op is not None and op.name in SCALAR_FORMS and len(all_inputs) == 2:
            return _scalar(op.name, inputs.get(all_inputs[0]), inputs.get(all_inputs[1]),
                           name, attr)
        ordered = [inputs.get(n) for n in input_names]
        node_name = ELEMENTWISE_NODES.get(_ELEMENTWISE_FUNCTIONS.get(fname, fname))
        return create(spec, ordered, kwargs, name, attr, mx_name=node_name,
                      hint=_ELEMENTWISE_FUNCTIONS.get(fname, fname.lower()))
    function.__name__ = fname
    function.__qualname__ = fname
    function.__doc__ = spec.doc
    _FUNCTIONS[fname] = function
    return function


for _fname, _spec in functions().items():
    make_function(_fname, _spec)



def create_source(mx_name, params):
    """A node of a creation op (``_zeros``, ``_arange`` ...), which has no inputs, named
    and written as MXNet writes it (``_zeros0``, ``dtype`` float32 unless given)."""
    params = dict(params)
    name, attr = params.pop('name', None), params.pop('attr', None)
    if params.get('dtype') is None:
        params['dtype'] = 'float32'
    params = {k: v for k, v in params.items() if v is not None}
    return create(spec_of(mx_name), [], params, name, attr, hint=mx_name)
