"""The graph under a Symbol, and MXNet 1.x's JSON file format for it.

A graph is made of ``Node`` objects: a variable (``op`` None) or an operator (``op``
the MXNet name of an entry of the symbol op table, ``op_specs``), with its
attributes as MXNet writes them (strings: ``"(3, 3)"``, ``"True"``) and its inputs
as ``(node, output_index)`` entries. The JSON layout is nnvm's, which MXNet 1.x
reads and writes: ``nodes`` in topological order, ``arg_nodes``, ``node_row_ptr``,
``heads`` and the graph attribute ``mxnet_version``.
"""
import json

from ..base import MXNetError
from .op_specs import BATCH_NORMS, spec_of

MXNET_VERSION = 10901  # the version written into files: MXNet 1.9.1 reads them as its own


class Node:
    """One node of a graph: a variable or an operator application. A control-flow
    operator (``_foreach``, ``_while_loop``, ``_cond``) also holds the graphs it runs,
    ``subgraphs``: each a list of ``(node, output index)`` heads, as MXNet stores them."""
    __slots__ = ('op', 'name', 'attrs', 'inputs', 'subgraphs', '__weakref__')

    def __init__(self, op, name, attrs=None, inputs=(), subgraphs=()):
        self.op = op            # MXNet op name, or None for a variable
        self.name = name
        self.attrs = dict(attrs or {})
        self.inputs = list(inputs)  # [(Node, output index)]
        self.subgraphs = list(subgraphs)  # [[(Node, output index)]], never changed

    @property
    def is_variable(self):
        """True for a variable (a graph input), False for an operator."""
        return self.op is None

    def __repr__(self):
        return '<Node %s %s>' % (self.op or 'variable', self.name)


def topological_order(heads):
    """The nodes reachable from the ``(node, index)`` entries ``heads``, each after its
    inputs, in the depth-first post-order MXNet uses (and so lists arguments in)."""
    order, seen = [], set()
    for head, _ in heads:
        if id(head) in seen:
            continue
        stack = [(head, iter(head.inputs))]
        seen.add(id(head))
        while stack:
            node, it = stack[-1]
            for child, _ in it:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


# ---- common subexpressions ----

def _mergeable(node):
    """False for ops that draw random numbers or write their inputs (BatchNorm's moving
    statistics, the optimizer updates): two such nodes never compute one value."""
    op = node.op
    return not (node.subgraphs or op in BATCH_NORMS + ('Dropout', '_sample_multinomial')
                or op.endswith('_update') or op.startswith(('_random', '_sample', 'random_')))


def eliminate_common_expr(heads):
    """The graph of ``heads`` with nodes that compute the same value merged, as MXNet's
    executor does by default (``MXNET_ELIMINATE_COMMON_EXPR``): operator nodes of one op,
    one set of attributes and the same inputs become one, until none are left. Outputs
    that become one entry are told apart by ``_copy`` nodes (``<node>_<k>_copy``).

    Works on a copy; returns its heads."""
    memo = {}
    for node in topological_order(heads):
        memo[id(node)] = Node(node.op, node.name, node.attrs,
                              [(memo[id(src)], idx) for src, idx in node.inputs],
                              node.subgraphs)
    heads = [(memo[id(n)], i) for n, i in heads]
    while True:
        merged = {}
        kept = {}
        for node in topological_order(heads):
            if node.is_variable or not node.inputs or not _mergeable(node):
                continue
            key = (node.op, tuple(sorted(node.attrs.items())),
                   tuple((id(src), idx) for src, idx in node.inputs))
            if key in kept:
                merged[id(node)] = kept[key]
            else:
                kept[key] = node
        if not merged:
            break
        for node in topological_order(heads):
            node.inputs = [(merged.get(id(src), src), idx) for src, idx in node.inputs]
        heads = [(merged.get(id(n), n), i) for n, i in heads]
    out, copies = [], {}
    for node, idx in heads:
        if (id(node), idx) in copies:
            count = copies[(id(node), idx)]
            copies[(id(node), idx)] = count + 1
            node = Node('_copy', '%s_%d_copy' % (node.name, count), {}, [(node, idx)])
            idx = 0
        else:
            copies[(id(node), idx)] = 0
        out.append((node, idx))
    return out


# ---- JSON ----

def to_json(heads, num_outputs, extra_attrs=None):
    """MXNet 1.x's JSON text for the graph with outputs ``heads``.

    ``num_outputs(node)`` is how many outputs an operator node has in all (hidden
    ones included), which ``node_row_ptr`` counts as MXNet does. ``extra_attrs``
    (name -> str or int) are further graph attributes.
    """
    graph = _graph_dict(heads, num_outputs)
    graph['attrs'] = {'mxnet_version': ['int', MXNET_VERSION]}
    for key, value in (extra_attrs or {}).items():
        graph['attrs'][key] = ['int' if isinstance(value, int) else 'str', value]
    return json.dumps(graph, indent=2)


def _graph_dict(heads, num_outputs):
    """The JSON object of a graph, a control-flow node's subgraphs nested in it as
    MXNet nests them (each a graph without ``attrs``)."""
    order = topological_order(heads)
    index = {id(n): i for i, n in enumerate(order)}
    nodes, arg_nodes, row_ptr = [], [], [0]
    mutable = _mutable_inputs(order)
    for i, node in enumerate(order):
        entry = {'op': 'null' if node.is_variable else node.op, 'name': node.name}
        if node.attrs:
            entry['attrs'] = dict(sorted(node.attrs.items()))
        entry['inputs'] = [[index[id(src)], idx, 1 if id(src) in mutable else 0]
                           for src, idx in node.inputs]
        if node.subgraphs:
            entry['subgraphs'] = [_graph_dict(sub, num_outputs) for sub in node.subgraphs]
        nodes.append(entry)
        if node.is_variable:
            arg_nodes.append(i)
        row_ptr.append(row_ptr[-1] + (1 if node.is_variable else num_outputs(node)))
    return {'nodes': nodes, 'arg_nodes': arg_nodes, 'node_row_ptr': row_ptr,
            'heads': [[index[id(n)], idx, 0] for n, idx in heads]}


def _mutable_inputs(order):
    """Variables an operator writes (auxiliary states): their version is 1 in MXNet's
    files."""
    out = set()
    for node in order:
        if not node.is_variable:
            spec = spec_of(node.op)
            names = spec.input_names(node.attrs, len(node.inputs))
            aux_names = spec.aux_input_names(node.attrs)
            for (src, _), name in zip(node.inputs, names):
                if name in aux_names and src.is_variable:
                    out.add(id(src))
    return out


def from_json(text):
    """``(heads, graph_attrs)`` of a graph in MXNet's JSON format (``to_json``'s, and
    every 1.x version's: older files keep attributes under ``param`` or ``attr``)."""
    try:
        graph = json.loads(text)
    except ValueError as exc:
        raise MXNetError('symbol JSON is not valid JSON: %s' % exc) from None
    heads = _read_graph(graph, 'symbol JSON')
    attrs = graph.get('attrs', {})
    return heads, attrs if isinstance(attrs, dict) else {}


def _read_graph(graph, where):
    """The heads of the graph object ``graph`` (a file's, or a node's subgraph)."""
    if not isinstance(graph, dict) or not isinstance(graph.get('nodes'), list) \
            or not isinstance(graph.get('heads'), list):
        raise MXNetError('%s must be an object with "nodes" and "heads" lists '
                         '(the -symbol.json file MXNet writes)' % where)
    nodes = []
    for i, entry in enumerate(graph['nodes']):
        try:
            op, name = entry['op'], entry['name']
            attrs = entry.get('attrs', entry.get('attr', entry.get('param', {}))) or {}
            inputs = [(nodes[src], int(idx)) for src, idx, *_ in entry.get('inputs', [])]
            subgraphs = entry.get('subgraphs', [])
            if not isinstance(subgraphs, list):
                raise TypeError('"subgraphs" must be a list')
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise MXNetError('%s: node %d is malformed (%s: %s); nodes need "op", '
                             '"name" and "inputs" referring to earlier nodes'
                             % (where, i, type(exc).__name__, exc)) from None
        if op == 'null':
            op = None
        else:
            spec_of(op)  # an unknown op is reported now, naming it
        subgraphs = [_read_graph(sub, '%s: subgraph %d of node %s' % (where, k, name))
                     for k, sub in enumerate(subgraphs)]
        nodes.append(Node(op, name, {str(k): str(v) for k, v in attrs.items()}, inputs,
                          subgraphs))
    try:
        return [(nodes[h[0]], int(h[1])) for h in graph['heads']]
    except (IndexError, TypeError, ValueError):
        raise MXNetError('%s: "heads" must list [node, output, version] entries '
                         'of existing nodes' % where) from None
