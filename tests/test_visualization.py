"""mx.viz: print_summary prints MXNet 1.9.1's table for the same graph; its parameter
counts are the graph's own; plot_network says how to get graphviz when it is missing."""
import contextlib
import importlib.util
import io
import os

import numpy as np
import pytest

import minigluon as mx

# Graphs built the same way under MXNet and minigluon (``mx`` is either).
GRAPHS = '''
def mlp(mx):
    data = mx.sym.var('data')
    h = mx.sym.FullyConnected(data, num_hidden=64, name='fc1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.FullyConnected(h, num_hidden=32, no_bias=True, name='fc2')
    h = mx.sym.Activation(h, act_type='tanh', name='tanh1')
    return mx.sym.FullyConnected(h, num_hidden=10, name='fc3'), {'data': (4, 100)}


def conv(mx):
    data = mx.sym.var('data')
    h = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name='conv1')
    h = mx.sym.BatchNorm(h, name='bn1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool1')
    h = mx.sym.Convolution(h, kernel=(3, 3), num_filter=16, num_group=2, no_bias=True,
                           name='conv2')
    h = mx.sym.Flatten(h, name='flatten1')
    return mx.sym.FullyConnected(h, num_hidden=10, name='fc1'), {'data': (2, 3, 16, 16)}


def branches(mx):
    data = mx.sym.var('data')
    left = mx.sym.FullyConnected(data, num_hidden=16, name='left')
    right = mx.sym.FullyConnected(data, num_hidden=16, name='right')
    both = mx.sym.Activation(left + right, act_type='relu', name='relu')
    return mx.sym.FullyConnected(both, num_hidden=4, name='out'), {'data': (3, 8)}


def embedding_group(mx):
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=50, output_dim=8, name='emb')
    parts = mx.sym.split(emb, num_outputs=2, axis=1, name='split')
    fc = mx.sym.FullyConnected(parts[0], num_hidden=3, name='fc')
    return mx.sym.Group([parts[1], fc]), {'data': (2, 4)}


GRAPHS = [mlp, conv, branches, embedding_group]
'''

# Prints each graph's summary three ways into summaries.txt in the folder argv[1].
SCRIPT = '''
import contextlib, os, sys
import mxnet as mx
%s
with open(os.path.join(sys.argv[1], 'summaries.txt'), 'w') as f, \\
        contextlib.redirect_stdout(f):
    for make in GRAPHS:
        sym, shape = make(mx)
        print('##', make.__name__)
        mx.viz.print_summary(sym, shape=shape)
        mx.viz.print_summary(sym)
        mx.viz.print_summary(sym, shape=shape, line_length=60, positions=[20, 35, 45, 60])
''' % GRAPHS


def _graphs():
    scope = {}
    exec(GRAPHS, scope)  # pylint: disable=exec-used
    return {make.__name__: make(mx) for make in scope['GRAPHS']}


def _summary(sym, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        mx.viz.print_summary(sym, **kwargs)
    return out.getvalue()


def test_print_summary_prints_mxnets_text(run_mxnet, run_minigluon, tmp_path):
    (tmp_path / 'mxnet').mkdir()
    (tmp_path / 'minigluon').mkdir()
    run_mxnet(tmp_path / 'mxnet', SCRIPT)
    run_minigluon(tmp_path / 'minigluon', SCRIPT)
    expected = (tmp_path / 'mxnet' / 'summaries.txt').read_text()
    got = (tmp_path / 'minigluon' / 'summaries.txt').read_text()
    assert got.splitlines() == expected.splitlines()
    assert '_plus0(elemwise_add)' in got


def test_print_summary_counts_every_learned_parameter():
    """With shapes, the total is the size of every argument but the data (BatchNorm's
    gamma and beta included, its moving statistics not: they are auxiliary states)."""
    graphs = _graphs()
    for name in ('mlp', 'conv', 'branches'):
        sym, shape = graphs[name]
        arg_shapes, _, _ = sym.infer_shape(**shape)
        learned = sum(int(np.prod(s)) for n, s in zip(sym.list_arguments(), arg_shapes)
                      if n != 'data')
        text = _summary(sym, shape=shape)
        assert 'Total params: %d\n' % learned in text, (name, text)
    text = _summary(graphs['conv'][0], shape=graphs['conv'][1])
    rows = {line.split('(')[0]: line.split() for line in text.splitlines() if '(' in line}
    assert rows['conv1'][1:3] == ['8x16x16', str(3 * 8 * 9 + 8)]
    assert rows['bn1'][1:3] == ['8x16x16', '16']
    assert rows['conv2'][1:3] == ['16x6x6', str(8 * 16 // 2 * 9)]  # grouped, no bias
    assert rows['fc1'][1:4] == ['10', str(577 * 10), 'flatten1']


def test_print_summary_without_shapes_and_with_columns_in_characters():
    sym, _ = _graphs()['mlp']
    text = _summary(sym)
    # no input channels known: a layer counts only its bias (none for fc2)
    assert 'Total params: %d\n' % (64 + 0 + 10) in text
    lines = _summary(sym, line_length=40, positions=[10, 20, 30, 40]).splitlines()
    assert lines[1] == 'Layer (typOutput ShaParam #   Previous L'
    assert all(len(line) == 40 for line in lines if not line.startswith('Total'))


def test_print_summary_rejects_what_is_not_a_symbol():
    with pytest.raises(TypeError, match='must be Symbol'):
        mx.viz.print_summary(mx.nd.ones((2, 2)))


def test_plot_network_names_the_package_it_needs():
    sym, shape = _graphs()['conv']
    if importlib.util.find_spec('graphviz') is None:
        with pytest.raises(ImportError, match='pip install graphviz') as info:
            mx.viz.plot_network(sym)
        assert isinstance(info.value, mx.base.MXNetError)
        return
    dot = mx.viz.plot_network(sym, shape=shape)
    assert 'conv1 -> data [label="3x16x16"' in dot.source
    assert 'conv1_weight' not in dot.source


def test_viz_is_the_visualization_module():
    assert mx.viz is mx.visualization
    assert os.path.basename(mx.viz.__file__) == 'visualization.py'
