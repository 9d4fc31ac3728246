"""``autograd.get_symbol``: the computation autograd recorded, as a Symbol.

Each tape node of an op from the table becomes a graph node of that op under MXNet's
name (``add`` is ``broadcast_add``; with a number as one input, ``_plus_scalar``) with
the call's parameters as attributes, named ``node_0``, ``node_1``... each after the
nodes it reads; each array the recorded ops read without having computed it (a parameter, an input)
becomes a variable ``var0``, ``var1``... in the order first read, as MXNet names them.
The one node of a block hybridized with ``static_alloc=True`` (``graph_node.py``)
becomes the ops of its graph, spliced in between the ops recorded around it.
"""
import itertools
import numbers

from ..base import MXNetError
from ..ndarray.tape import _topo_order
from .graph import Node
from .op_specs import SCALAR_FORMS, spec_of
from .symbol import Symbol, create

__all__ = ['tape_symbol']


def tape_symbol(array):
    """The Symbol whose output is ``array``, from the ops recorded to compute it."""
    head = getattr(array, '_node', None)
    if head is None:
        raise MXNetError('get_symbol: this NDArray is not part of a recorded computation; '
                         'compute it inside autograd.record() from arrays that need '
                         'gradients (attach_grad, or a Parameter\'s data)')
    made, leaves = {}, {}

    def leaf(key):
        if id(key) not in leaves:
            leaves[id(key)] = (key, Symbol([(Node(None, 'var%d' % len(leaves)), 0)]))
        return leaves[id(key)][1]

    names = ('node_%d' % i for i in itertools.count())
    for node in reversed(_topo_order([head])):
        if node.parents is None:
            raise MXNetError('get_symbol: backward already freed the recorded computation; '
                             'call get_symbol before backward, or backward with '
                             'retain_graph=True')
        graph = getattr(node.backward, 'graph', None)  # a hybridized block's one node
        if node.saved is None and graph is None:
            raise MXNetError('get_symbol: the recorded computation holds %r, a custom '
                             'autograd.Function or gradient node with no graph op; '
                             'compute the array with ops only' % node.name)
        raw = graph[1] if graph is not None else node.saved[0]
        inputs = []
        for value, parent in zip(raw, node.parents):
            if type(parent) is tuple:  # pylint: disable=unidiomatic-typecheck
                inputs.append(made[id(parent[0])][parent[1]])
            elif value is None or isinstance(value, numbers.Number):
                inputs.append(value)
            else:
                inputs.append(leaf(parent if parent is not None else value))
        if graph is not None:
            made[id(node)] = _spliced(graph[0], inputs, names)
        else:
            made[id(node)] = _graph_node(node.name, inputs, node.saved[1], next(names))
    return made[id(head)][array._out_idx]


def _spliced(program, inputs, names):
    """The outputs of ``program`` (a ``GraphProgram``) as Symbols over ``inputs``, one
    Symbol per variable: its operator nodes copied, named on from ``names``."""
    entries = {slot: sym._outputs[0]  # pylint: disable=protected-access
               for slot, sym in zip(program.var_slots, inputs)}
    nodes = {}

    def entry(slot, k):
        return entries[slot] if slot in entries else (nodes[slot], k)
    for index, _, node_inputs, _, node in program.steps:
        nodes[index] = Node(node.op, next(names), node.attrs,
                            [entry(s, k) for s, k in node_inputs], node.subgraphs)
    return [Symbol([entry(s, k)]) for s, k in program.heads]


def _graph_node(op_name, inputs, params, name):
    numbers_in = [i for i, value in enumerate(inputs) if isinstance(value, numbers.Number)]
    if numbers_in:
        if op_name not in SCALAR_FORMS or len(inputs) != 2 or len(numbers_in) != 1:
            raise MXNetError('get_symbol: op %r was recorded with a number among its inputs, '
                             'which no graph op takes' % op_name)
        plain, flipped = SCALAR_FORMS[op_name]
        mx_name = flipped if numbers_in[0] == 0 else plain
        symbol = inputs[1 - numbers_in[0]]
        scalar = inputs[numbers_in[0]]  # a float, as MXNet's NDArray operators pass it
        return create(spec_of(mx_name), [symbol], {'scalar': float(scalar)}, name, None)
    try:
        spec = spec_of(op_name)  # the table's name finds the op MXNet names otherwise
    except MXNetError:
        raise MXNetError('get_symbol: op %r was recorded, which no graph op stands for (an '
                         'NDArray method such as indexing); compute the array with graph ops '
                         '(slice_axis, take, ...) to get its symbol' % op_name) from None
    return create(spec, [s for s in inputs if s is not None], dict(params), name, None)
