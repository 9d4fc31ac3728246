"""``mx.viz``: a symbol's layers as a text table (``print_summary``), and as a Graphviz
digraph (``plot_network``, with the optional ``graphviz`` package).

Both read the graph through its MXNet 1.x JSON (``Symbol.tojson``), so they see
exactly what MXNet's functions see and print the same text for the same graph.
"""
import copy
import json
import re
import warnings

from .base import MXNetError, MXNetTypeError, MXNetValueError
from .symbol import Symbol

__all__ = ['print_summary', 'plot_network']

_HEADER = ('Layer (type)', 'Output Shape', 'Param #', 'Previous Layer')


class GraphvizMissingError(MXNetError, ImportError):
    """``plot_network`` was called where the ``graphviz`` package does not import."""


def _dims(text):
    """``'(3, 3)'`` -> ``['3', '3']``: the numbers of a shape attribute."""
    return re.findall(r'\d+', text)


def _shape_dict(symbol, shape):
    """Every internal output's inferred shape by its ``list_outputs`` name."""
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise MXNetValueError('Input shape is incomplete: infer_shape could not decide every '
                              'shape from %s; give the shapes of all data inputs' % (shape,))
    return dict(zip(internals.list_outputs(), out_shapes))


def _output_key(node):
    """The ``list_outputs`` name of a node's (single) output."""
    return node['name'] if node['op'] == 'null' else node['name'] + '_output'


def _print_row(fields, stops):
    """One line: field i is cut or padded so that the next starts at ``stops[i]``."""
    line = ''
    for field, stop in zip(fields, stops):
        line = (line + str(field))[:stop]
        line += ' ' * (stop - len(line))
    print(line)


def _param_count(node, in_channels, shapes):
    """The learnable parameters of one layer, counted as MXNet 1.x's ``print_summary``
    counts them (from the attributes and the channels of the inputs it lists)."""
    op, attrs = node['op'], node.get('attrs', {})
    has_bias = attrs.get('no_bias') != 'True'
    if op == 'Convolution':
        count = in_channels * int(attrs['num_filter']) // int(attrs.get('num_group', '1'))
        for k in _dims(attrs['kernel']):
            count *= int(k)
        return count + (int(attrs['num_filter']) if has_bias else 0)
    if op == 'FullyConnected':
        return (in_channels + has_bias) * int(attrs['num_hidden'])
    if op == 'BatchNorm':
        # gamma and beta; the moving statistics are not learned
        return int(shapes[_output_key(node)][1]) * 2 if shapes is not None else 0
    if op == 'Embedding':
        return int(attrs['input_dim']) * int(attrs['output_dim'])
    return 0


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):
    # pylint: disable=dangerous-default-value
    """Print a table of the layers of ``symbol``: name and type, output shape (without
    the batch axis), parameter count and the layers it reads; then the total.

    Parameters
    ----------
    symbol : Symbol
        The graph to describe.
    shape : dict of str to tuple, optional
        Input shapes by name. Without them the shapes columns stay empty and the
        parameter counts leave out what depends on input channels.
    line_length : int
        Width of the table in characters.
    positions : list of float or int
        Where each of the four columns ends: fractions of ``line_length`` when the last
        is at most 1, otherwise character positions.
    """
    if not isinstance(symbol, Symbol):
        raise MXNetTypeError('symbol must be Symbol, got %s' % type(symbol).__name__)
    shapes = _shape_dict(symbol, shape) if shape is not None else None
    conf = json.loads(symbol.tojson())
    nodes = conf['nodes']
    # MXNet takes the set of the first head's entry [node, output, version]; keep its
    # reading, which also treats node 0 (and the head's output index) as heads.
    heads = set(conf['heads'][0])
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def shape_of(node):
        return shapes.get(_output_key(node)) if shapes is not None else None

    print('_' * line_length)
    _print_row(_HEADER, positions)
    print('=' * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node['op'] == 'null' and i > 0:
            continue
        previous, in_channels = [], 0
        if node['op'] != 'null':
            for entry in node['inputs']:
                source = nodes[entry[0]]
                if source['op'] == 'null' and entry[0] not in heads:
                    continue  # weights and other variables are not layers
                previous.append(source['name'])
                known = shape_of(source)
                if known is not None:
                    in_channels += int(known[1:][0])
        out_shape = shape_of(node) if node['op'] != 'null' or i in heads else None
        params = _param_count(node, in_channels, shapes)
        total += params
        _print_row(['%s(%s)' % (node['name'], node['op']),
                    'x'.join(str(d) for d in (out_shape or ())[1:]), params,
                    previous[0] if previous else ''], positions)
        for name in previous[1:]:
            _print_row(['', '', '', name], positions)
        print(('=' if i == len(nodes) - 1 else '_') * line_length)
    print('Total params: %d' % total)
    print('_' * line_length)


# Graphviz fill colours by kind of layer, as MXNet draws them.
_COLOURS = ('#8dd3c7', '#fb8072', '#ffffb3', '#bebada', '#80b1d3', '#fdb462', '#b3de69',
            '#fccde5')
_WEIGHT_SUFFIXES = ('_weight', '_bias', '_beta', '_gamma', '_moving_var', '_moving_mean',
                    '_running_var', '_running_mean')


def _node_look(node):
    """``(label, fill colour)`` of a layer's box."""
    op, attrs = node['op'], node.get('attrs', {})
    if op == 'Convolution':
        stride = 'x'.join(_dims(attrs['stride'])) if 'stride' in attrs else '1'
        return ('Convolution\n%s/%s, %s' % ('x'.join(_dims(attrs['kernel'])), stride,
                                            attrs['num_filter']), _COLOURS[1])
    if op == 'FullyConnected':
        return 'FullyConnected\n%s' % attrs['num_hidden'], _COLOURS[1]
    if op == 'BatchNorm':
        return node['name'], _COLOURS[3]
    if op == 'Activation':
        return 'Activation\n%s' % attrs['act_type'], _COLOURS[2]
    if op == 'LeakyReLU':
        return 'LeakyReLU\n%s' % attrs.get('act_type', 'Leaky'), _COLOURS[2]
    if op == 'Pooling':
        kernel = 'x'.join(_dims(attrs['kernel'])) if 'kernel' in attrs else '[]'
        stride = 'x'.join(_dims(attrs['stride'])) if 'stride' in attrs else '1'
        return 'Pooling\n%s, %s/%s' % (attrs['pool_type'], kernel, stride), _COLOURS[4]
    if op in ('Concat', 'Flatten', 'Reshape'):
        return node['name'], _COLOURS[5]
    if op == 'Softmax':
        return node['name'], _COLOURS[6]
    return (attrs['op_type'] if op == 'Custom' else node['name']), _COLOURS[7]


def _edge_key(node):
    """The ``list_outputs`` name an edge from ``node`` is labelled with (a multi-output
    node's last output, as MXNet labels it)."""
    key = _output_key(node)
    if node['op'] != 'null' and 'num_outputs' in node.get('attrs', {}):
        key += str(int(node['attrs']['num_outputs']) - 1)
    return key


def plot_network(symbol, title='plot', save_format='pdf', shape=None, dtype=None,
                 node_attrs={}, hide_weights=True):
    # pylint: disable=dangerous-default-value,too-many-arguments,too-many-locals
    """A ``graphviz.Digraph`` of the graph computing ``symbol`` (needs ``pip install
    graphviz``, which minigluon does not depend on).

    Parameters
    ----------
    symbol : Symbol
        The graph to draw.
    title : str
        Name of the digraph.
    save_format : str
        Format ``Digraph.render`` writes (``'pdf'``, ``'png'``, ...).
    shape : dict of str to tuple, optional
        Input shapes by name; edges are labelled with the shapes they carry.
    dtype : dict of str to type, optional
        Input types by name; edges are labelled with the types they carry.
    node_attrs : dict
        Graphviz attributes for every node, over the defaults.
    hide_weights : bool
        Leave out variables named like weights (``*_weight``, ``*_bias``, ...).

    Returns
    -------
    graphviz.Digraph
    """
    try:
        from graphviz import Digraph
    except ImportError as exc:
        raise GraphvizMissingError('mx.viz.plot_network draws with the graphviz package, which '
                                   'is not installed here (%s): pip install graphviz' % exc) \
            from None
    if not isinstance(symbol, Symbol):
        raise MXNetTypeError('symbol must be a Symbol, got %s' % type(symbol).__name__)
    shapes = _shape_dict(symbol, shape) if shape is not None else None
    types = None
    if dtype is not None:
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise MXNetValueError('Input type is incomplete: infer_type could not decide every '
                                  'type from %s' % (dtype,))
        types = dict(zip(internals.list_outputs(), out_types))
    nodes = json.loads(symbol.tojson())['nodes']
    names = [node['name'] for node in nodes]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        warnings.warn('There are multiple variables with the same name in your graph, this '
                      'may result in cyclic graph. Repeated names: ' + ','.join(repeated),
                      RuntimeWarning)
    default_attrs = {'shape': 'box', 'fixedsize': 'true', 'width': '1.3',
                     'height': '0.8034', 'style': 'filled'}
    default_attrs.update(node_attrs)
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        attrs = copy.deepcopy(default_attrs)
        if node['op'] == 'null':
            if node['name'].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node['name'])
                continue  # shown (unhidden) as graphviz's plain node for an edge's end
            label, attrs['shape'], attrs['fillcolor'] = node['name'], 'oval', _COLOURS[0]
        else:
            label, attrs['fillcolor'] = _node_look(node)
        dot.node(name=node['name'], label=label, **attrs)
    for node in nodes:
        if node['op'] == 'null':
            continue
        inputs = node['inputs']
        if node['op'] == '_contrib_BilinearResize2D':
            inputs = inputs[:1]
        for entry in inputs:
            source = nodes[entry[0]]
            if source['name'] in hidden:
                continue
            attrs = {'dir': 'back', 'arrowtail': 'open', 'label': ''}
            if shapes is not None:
                attrs['label'] = 'x'.join(str(d) for d in shapes[_edge_key(source)][1:])
            if types is not None:
                attrs['label'] += '(%s)' % types[_edge_key(source)].__name__
            dot.edge(tail_name=node['name'], head_name=source['name'], **attrs)
    return dot
