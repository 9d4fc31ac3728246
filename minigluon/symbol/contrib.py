"""``mx.sym.contrib``: control flow in graphs (``foreach``, ``while_loop``, ``cond``), as
MXNet 1.x builds it.

The Python functions given (a loop body, a condition, the branches) are called once on
new variables inside ``AttrScope(__subgraph_name__=...)``, which marks every node they
make. What they read from outside the scope (a free variable, a parameter, the output
of an earlier node) is cut out: the subgraph gets a variable named after that output
(``fc_output``, ``w``) and the control-flow node gets the outside entry as an input.
The node then holds its subgraphs; ``control_flow`` runs it. Names, attributes and the
order of inputs are MXNet's, so graphs move both ways with MXNet 1.9.1.
"""
import copy

from .. import name as _name
from ..attribute import AttrScope, current as _current_attrs
from ..base import MXNetTypeError, MXNetUsageError, MXNetValueError
from ..nesting import flatten, regroup
from . import control_flow  # noqa: F401  (registers _foreach, _while_loop and _cond)
from .graph import Node, topological_order
from .op_specs import names as _op_names, spec_of
from .symbol import Group, Symbol, _FUNCTIONS, _user_attrs, make_function, output_name, var

__all__ = ['foreach', 'while_loop', 'cond']

# The graph ops named ``_contrib_<name>`` (``box_nms``), as MXNet's ``mx.sym.contrib`` has them.
for _mx_name in _op_names():
    if _mx_name.startswith('_contrib_'):
        _fname = _mx_name[len('_contrib_'):]
        globals()[_fname] = _FUNCTIONS.get(_fname) or make_function(_fname, spec_of(_mx_name))
        __all__.append(_fname)

_SUBGRAPH = '__subgraph_name__'


def _symbol_format(arg):
    if not isinstance(arg, Symbol):
        return None
    length = len(arg)
    return length if length > 1 else 0


def _flatten(args, what):
    """``(flat list, format)`` of a Symbol or a (nested) list of them."""
    return flatten(args, _symbol_format,
                   lambda arg: MXNetTypeError('%s must be a Symbol or a (nested) list of '
                                              'Symbols, got %s' % (what, type(arg).__name__)))


def _entry(sym):
    return sym._outputs[0]  # pylint: disable=protected-access


def _input_name(sym):
    """The name of the variable standing for ``sym`` in a subgraph (``data-0``: MXNet's
    node name and output index)."""
    node, index = _entry(sym)
    return '%s-%d' % (node.name, index)


def _unique_subgraph_name(name):
    """``name`` numbered by ``AttrScope._subgraph_names`` (``foreach0``), under the name of
    the subgraph being built, if any (``foreach0$foreach1``)."""
    outer = _current_attrs().get(None).get(_SUBGRAPH, '')
    if outer:
        name = outer + '$' + name
    AttrScope._subgraph_names[name] += 1  # pylint: disable=protected-access
    return name + str(AttrScope._subgraph_names[name] - 1)  # pylint: disable=protected-access


def _in_scope(sym, name):
    return _entry(sym)[0].attrs.get(_SUBGRAPH, '') == name


def _identity(sym):
    return _FUNCTIONS['identity'](sym)


def _subgraph_outputs(outputs, states, name):
    """The heads of a subgraph: each output, then each state, through an ``identity``
    node where it is not a node of the subgraph (an input, or made outside) or, for a
    state, where it is also an output, so the heads are nodes of the subgraph, as MXNet
    requires."""
    everything = list(outputs) + list(states)
    inputs = set(Group(everything).list_inputs()) if everything else set()
    out_names = {s.name for s in outputs}
    heads = [_identity(s) if s.name in inputs or not _in_scope(s, name) else s
             for s in outputs]
    heads += [_identity(s) if s.name in inputs or s.name in out_names
              or not _in_scope(s, name) else s for s in states]
    return heads


def _cut(heads, name):
    """Cut the subgraph ``name`` out of its surroundings: every input of one of its nodes
    that comes from outside becomes a new variable named after that output (one per
    output). Returns ``{variable name: the outside entry}``."""
    made, cut = {}, {}
    for node in topological_order(heads):
        if node.attrs.get(_SUBGRAPH, '') != name:
            continue
        new_inputs = []
        for src, index in node.inputs:
            if src.attrs.get(_SUBGRAPH, '') == name:
                new_inputs.append((src, index))
                continue
            key = (id(src), index)
            if key not in made:
                made[key] = Node(None, output_name(src, index))
                cut[made[key].name] = (src, index)
            new_inputs.append((made[key], 0))
        node.inputs = new_inputs
    return cut


def _variables(heads):
    """The subgraph's variables in MXNet's order of its inputs, checked unique."""
    variables = [n for n in topological_order(heads) if n.is_variable]
    names = [n.name for n in variables]
    if len(set(names)) != len(names):
        raise MXNetUsageError("The inputs of the subgraph don't have unique names: %s" % names)
    return variables


def _outside(node):
    """A copy of a variable made inside a subgraph, for the graph around it (MXNet's
    deep copy: another node of the same name)."""
    return Node(None, node.name, node.attrs)


def _make_node(op, hint, subgraphs, inputs, attrs):
    """The control-flow node over ``inputs`` (entries), as a Symbol of its outputs."""
    attrs = dict(attrs, num_args=str(len(inputs) + len(subgraphs)))
    attrs = {k: str(v) if not isinstance(v, list) else str([int(x) for x in v])
             for k, v in attrs.items()}
    attrs.update(_user_attrs(None))
    node = Node(op, _name.current().get(None, hint), attrs, inputs, subgraphs)
    return Symbol([(node, i) for i in range(int(attrs['num_outputs']))])


def _check(items, what):
    if not all(isinstance(s, Symbol) for s in items):
        raise MXNetTypeError('%s must be a Symbol or a (nested) list of Symbols' % what)


def foreach(body, data, init_states, name='foreach'):
    """A ``_foreach`` node running ``body`` on each slice of ``data`` along axis 0.

    ``out, states = body(data_slice, states)``: see ``mx.nd.contrib.foreach``. Every
    data array and every state must be read by ``body``.

    Parameters
    ----------
    body : callable
        Called once, on symbols, to make the subgraph.
    data : Symbol or list of Symbol
    init_states : Symbol or (nested) list of Symbol
    name : str, default 'foreach'
        The stem of the subgraph's name (``foreach0``).

    Returns
    -------
    (outputs, states)
        Symbols in the structures ``body`` returns.
    """
    flat_data, data_fmt = _flatten(data, 'foreach data')
    _check(flat_data, 'foreach data')
    flat_states, state_fmt = _flatten(init_states, 'foreach init_states')
    _check(flat_states, 'foreach init_states')
    name = _unique_subgraph_name(name)
    with AttrScope(**{_SUBGRAPH: name}):
        slices = regroup([var(_input_name(s)) for s in flat_data], data_fmt)
        states = regroup([var(_input_name(s)) for s in flat_states],
                         copy.deepcopy(state_fmt))
        sym_out, sym_states = body(slices, states)
        sym_out, out_fmt = _flatten(sym_out, 'the output of a foreach body')
        sym_states, new_state_fmt = _flatten(sym_states, 'the states of a foreach body')
        if new_state_fmt != state_fmt:
            raise MXNetUsageError('The input and output loop_vars have different format: '
                                  '%s and %s' % (state_fmt, new_state_fmt))
        heads = _subgraph_outputs(sym_out, sym_states, name)
    heads = [_entry(s) for s in heads]
    cut = _cut(heads, name)
    variables = _variables(heads)
    names = [v.name for v in variables]
    data_names = [_input_name(s) for s in flat_data]
    state_names = [_input_name(s) for s in flat_states]
    for what, wanted in (('data', data_names), ('state', state_names)):
        missing = [n for n in wanted if n not in names]
        if missing:
            raise MXNetUsageError('the %s arrays have to be used in the loop body: %s is '
                                  'not read by it' % (what, missing))
    inputs = [_entry(s) for s in flat_data + flat_states]
    remain_locs = []
    for loc, node in enumerate(variables):
        if node.name in cut:
            inputs.append(cut[node.name])
        elif node.name in data_names or node.name in state_names:
            continue
        else:  # a variable the body made: an input of the graph around it too
            inputs.append((_outside(node), 0))
        remain_locs.append(loc)
    out = _make_node('_foreach', '_foreach', [heads], inputs, {
        'num_outputs': len(heads), 'num_out_data': len(sym_out),
        'in_data_locs': [names.index(n) for n in data_names],
        'in_state_locs': [names.index(n) for n in state_names],
        'remain_locs': remain_locs})
    outs = regroup([out[i] for i in range(len(sym_out))], out_fmt)
    states = regroup([out[len(sym_out) + i] for i in range(len(sym_states))],
                     new_state_fmt)
    return outs, states


def _to_int(value, what):
    if hasattr(value, 'asscalar'):
        value = value.asscalar()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MXNetValueError('Cannot convert %s (%r) to python int' % (what, value)) from None


def _union_inputs(graphs, loop_vars=(), by_name=False):
    """The node's inputs for subgraphs ``graphs`` (``(heads, name)``) and where each
    subgraph's inputs are among them, as MXNet computes them: a loop variable is one
    input however many subgraphs read it, any other entry one input per subgraph that
    reads it, except that with ``by_name`` (``cond``) a subgraph's variable named as an
    input that an earlier subgraph brought (a variable's name, an operator's node name)
    is that input.

    Returns ``(inputs, [(input locations, loop variable locations)])``."""
    var_entries = {_input_name(s): _entry(s) for s in loop_vars}
    var_index = {_input_name(s): i for i, s in enumerate(loop_vars)}
    inputs, var_inputs, locs = [], {}, []
    for heads, name in graphs:
        earlier = {}
        if by_name:
            for i, (node, _) in enumerate(inputs):
                earlier.setdefault(node.name, i)
        cut = _cut(heads, name)
        input_locs, var_locs = [], [-1] * len(loop_vars)
        for node in _variables(heads):
            if node.name in var_entries:
                if node.name not in var_inputs:
                    var_inputs[node.name] = len(inputs)
                    inputs.append(var_entries[node.name])
                input_locs.append(var_inputs[node.name])
                var_locs[var_index[node.name]] = len(input_locs) - 1
            elif node.name in earlier:
                input_locs.append(earlier[node.name])
            else:
                input_locs.append(len(inputs))
                inputs.append(cut[node.name] if node.name in cut else (_outside(node), 0))
        locs.append((input_locs, var_locs))
    return inputs, locs


def _subgraph(flat_vars, var_fmt, graph_func, stem):
    """``(heads, name, number of data outputs, output format)`` of the subgraph
    ``graph_func`` makes on new variables standing for ``flat_vars`` (in the structure
    ``var_fmt``)."""
    name = _unique_subgraph_name(stem)
    with AttrScope(**{_SUBGRAPH: name}):
        new_vars = regroup([var(_input_name(s)) for s in flat_vars], var_fmt) \
            if flat_vars else []
        outputs, states, out_fmt = graph_func(new_vars)
        heads = _subgraph_outputs(list(outputs) + list(states), [], name)
    return [_entry(s) for s in heads], name, len(outputs), out_fmt


def while_loop(cond, func, loop_vars, max_iterations=None, name='while_loop'):
    """A ``_while_loop`` node: ``func`` runs while ``cond`` holds, at most
    ``max_iterations`` times; see ``mx.nd.contrib.while_loop``.

    As in MXNet's graphs, the step outputs always have ``max_iterations`` rows (those
    after the last step are zeros here, undefined in MXNet), even when no step runs.

    Returns
    -------
    (outputs, states)
        The stacked step outputs and the final loop variables, as Symbols.
    """
    def cond_body(loop_vars):
        result = cond(*loop_vars)
        if not isinstance(result, Symbol):
            raise MXNetValueError('Return of cond must be a Symbol, got %s'
                                  % type(result).__name__)
        return [], [result], None

    def func_body(loop_vars):
        step_output, new_vars = func(*loop_vars)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        step_output, out_fmt = _flatten(list(step_output) if isinstance(step_output, tuple)
                                        else step_output, 'the step output of while_loop')
        new_vars, _ = _flatten(list(new_vars) if isinstance(new_vars, tuple) else new_vars,
                               'the loop_vars of while_loop')
        if len(loop_vars) != len(new_vars):
            raise MXNetValueError('The number of loop_vars should be consistent during the '
                                  'loop: func returned %d for %d'
                                  % (len(new_vars), len(loop_vars)))
        return step_output, new_vars, out_fmt

    flat_vars, var_fmt = _flatten(loop_vars, 'loop_vars')
    _check(flat_vars, 'loop_vars')
    if max_iterations is None:
        raise MXNetValueError('max_iterations should be specified')
    max_iterations = _to_int(max_iterations, 'max_iterations')
    if len(loop_vars) == 0:
        raise MXNetValueError('loop_vars should contain at least one element')
    cond_heads, cond_name, _, _ = _subgraph(flat_vars, var_fmt, cond_body, name + '_cond')
    func_heads, func_name, num_out_data, out_fmt = _subgraph(flat_vars, var_fmt, func_body,
                                                             name + '_func')
    inputs, ((cond_locs, _), (func_locs, var_locs)) = _union_inputs(
        [(cond_heads, cond_name), (func_heads, func_name)], flat_vars)
    for i, loc in enumerate(var_locs, 1):
        if loc == -1:
            raise MXNetValueError("The %d-th loop_var doesn't involve into the computation"
                                  % i)
    out = _make_node('_while_loop', '_while_loop', [cond_heads, func_heads], inputs, {
        'max_iterations': max_iterations, 'cond_input_locs': cond_locs,
        'func_input_locs': func_locs, 'func_var_locs': var_locs,
        'num_out_data': num_out_data, 'num_outputs': len(func_heads)})
    outputs = regroup([out[i] for i in range(num_out_data)], out_fmt)
    final = regroup([out[i] for i in range(num_out_data, len(func_heads))], var_fmt)
    return outputs, final


def cond(pred, then_func, else_func, name='cond'):
    """A ``_cond`` node: ``then_func()`` where ``pred`` (a Symbol of one element) is
    non-zero, else ``else_func()``; both return Symbols of one structure, shapes and
    dtypes. Returns the outputs in ``then_func``'s structure."""
    def branch(func):
        def make(_):
            outputs, fmt = _flatten(func(), 'the outputs of a cond branch')
            return outputs, [], fmt
        return make
    pred_heads, pred_name, pred_count, _ = _subgraph([], [], branch(lambda: pred),
                                                     name + '_pred')
    if pred_count != 1:
        raise MXNetValueError('pred should always be a single output')
    then_heads, then_name, then_count, then_fmt = _subgraph([], [], branch(then_func),
                                                            name + '_then')
    else_heads, else_name, else_count, _ = _subgraph([], [], branch(else_func),
                                                         name + '_else')
    if then_count != else_count:
        raise MXNetValueError('Number of outputs differs between then-branch and else-branch')
    inputs, locs = _union_inputs([(pred_heads, pred_name), (then_heads, then_name),
                                  (else_heads, else_name)], by_name=True)
    out = _make_node('_cond', '_cond', [pred_heads, then_heads, else_heads], inputs, {
        'cond_input_locs': locs[0][0], 'then_input_locs': locs[1][0],
        'else_input_locs': locs[2][0], 'num_outputs': then_count})
    return regroup([out[i] for i in range(then_count)], then_fmt)
