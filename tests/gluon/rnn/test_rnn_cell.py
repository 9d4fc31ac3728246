"""gluon.rnn cells: against PyTorch twins holding the same weights (float64 outputs,
states and gradients to 1e-10), unroll's layouts and merging, valid_length against each
sample run over its own prefix, the stacking cells against composing twins, hybridized
against imperative (export and import included), and against MXNet 1.9.1 (a parameter
file MXNet's cells saved, and exported graphs both ways)."""
import json
import os

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd

TORCH_REASON = 'PyTorch is needed for the twin tests (pip install torch)'
N, T, C, H = 3, 4, 5, 6
VALID = [2, 4, 1]
CELLS = {'rnn_tanh': lambda h, **k: gluon.rnn.RNNCell(h, **k),
         'rnn_relu': lambda h, **k: gluon.rnn.RNNCell(h, activation='relu', **k),
         'lstm': lambda h, **k: gluon.rnn.LSTMCell(h, **k),
         'gru': lambda h, **k: gluon.rnn.GRUCell(h, **k)}


def _cell(mode, hidden=H, input_size=C, **kwargs):
    cell = CELLS[mode](hidden, input_size=input_size, **kwargs)
    cell.initialize(mx.init.Uniform(0.5))
    cell.cast('float64')
    return cell


def _data(*shape, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape)


def _num_states(mode):
    return 2 if mode == 'lstm' else 1


def _run(cell, x, states, valid_length=None, head_seed=1, **unroll_kwargs):
    """``cell.unroll`` over the numpy ``x`` (NTC) from the numpy ``states``, backward of
    a fixed random projection of the outputs and states: (outputs, states, gradients of
    x, of the states and of every parameter by structural name), all numpy."""
    x = nd.array(x, dtype='float64')
    states = [nd.array(s, dtype='float64') for s in states]
    for a in [x] + states:
        a.attach_grad()
    kwargs = dict(layout='NTC', merge_outputs=True)
    kwargs.update(unroll_kwargs)
    if valid_length is not None:
        kwargs['valid_length'] = nd.array(valid_length, dtype='float64')
    with autograd.record():
        out, new_states = cell.unroll(x.shape[1], x, begin_state=states, **kwargs)
        heads = [out] + list(new_states)
        loss = sum((h * nd.array(_data(*h.shape, seed=head_seed + i), dtype='float64')).sum()
                   for i, h in enumerate(heads))
    loss.backward()
    params = {k: p.grad().asnumpy() for k, p in cell._collect_params_with_prefix().items()}
    return (out.asnumpy(), [s.asnumpy() for s in new_states], x.grad.asnumpy(),
            [s.grad.asnumpy() for s in states], params)


# ---- PyTorch twins -----------------------------------------------------------------------

def _torch_cell(torch, mode, cell):
    """The PyTorch cell holding ``cell``'s weights (same gate order: i f g o, r z n)."""
    weights = {k: p.data().asnumpy() for k, p in cell._collect_params_with_prefix().items()}
    hidden, inputs = weights['h2h_weight'].shape[1], weights['i2h_weight'].shape[1]
    if mode == 'lstm':
        twin = torch.nn.LSTMCell(inputs, hidden)
    elif mode == 'gru':
        twin = torch.nn.GRUCell(inputs, hidden)
    else:
        twin = torch.nn.RNNCell(inputs, hidden, nonlinearity=mode[4:])
    twin = twin.double()
    with torch.no_grad():
        for ours, theirs in (('i2h_weight', 'weight_ih'), ('h2h_weight', 'weight_hh'),
                             ('i2h_bias', 'bias_ih'), ('h2h_bias', 'bias_hh')):
            getattr(twin, theirs).copy_(torch.from_numpy(weights[ours]))
    return twin


def _torch_unroll(twin, mode, x, states, valid_length=None):
    """The twin over ``x`` (N, T, C) from ``states``: outputs (zero past each sample's
    valid length) and the states after each sample's last valid step."""
    steps = x.shape[1]
    lengths = [steps] * x.shape[0] if valid_length is None else valid_length
    outs, finals = [], [[None] * x.shape[0] for _ in states]
    for t in range(steps):
        out = twin(x[:, t], tuple(states) if mode == 'lstm' else states[0])
        states = list(out) if mode == 'lstm' else [out]
        outs.append(states[0])
        for n, length in enumerate(lengths):
            if t == length - 1:
                for k, s in enumerate(states):
                    finals[k][n] = s[n]
    import torch
    mask = torch.tensor([[float(t < length) for t in range(steps)] for length in lengths],
                        dtype=torch.float64)[:, :, None]
    return torch.stack(outs, 1) * mask, [torch.stack(f) for f in finals]


def _torch_run(torch, forward, x, states, head_seed=1):
    """``forward(x, states) -> (outputs, states)`` on tensors, backward of the same heads
    as ``_run``: (outputs, states, gradients of x and of the states)."""
    x = torch.tensor(x, requires_grad=True)
    states = [torch.tensor(s, requires_grad=True) for s in states]
    out, new_states = forward(x, states)
    heads = [out] + list(new_states)
    loss = sum((h * torch.tensor(_data(*h.shape, seed=head_seed + i))).sum()
               for i, h in enumerate(heads))
    loss.backward()
    return (out.detach().numpy(), [s.detach().numpy() for s in new_states],
            x.grad.numpy(), [s.grad.numpy() for s in states])


def _close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def _twin_grads(twin):
    return {'i2h_weight': twin.weight_ih.grad.numpy(), 'h2h_weight': twin.weight_hh.grad.numpy(),
            'i2h_bias': twin.bias_ih.grad.numpy(), 'h2h_bias': twin.bias_hh.grad.numpy()}


@pytest.mark.parametrize('hybridize', [False, True])
@pytest.mark.parametrize('mode', sorted(CELLS))
def test_cell_against_torch(mode, hybridize):
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    cell = _cell(mode)
    if hybridize:
        cell.hybridize()
    x = _data(N, T, C)
    states = [_data(N, H, seed=5 + k) for k in range(_num_states(mode))]
    ours = _run(cell, x, states)
    twin = _torch_cell(torch, mode, cell)
    theirs = _torch_run(torch, lambda x, s: _torch_unroll(twin, mode, x, s), x, states)
    for a, b in zip(ours[:4], theirs):
        for u, v in zip(a if isinstance(a, list) else [a], b if isinstance(b, list) else [b]):
            _close(u, v)
    for name, grad in _twin_grads(twin).items():
        _close(ours[4][name], grad)


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_valid_length_against_torch(mode):
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    cell = _cell(mode)
    x = _data(N, T, C)
    states = [_data(N, H, seed=5 + k) for k in range(_num_states(mode))]
    ours = _run(cell, x, states, valid_length=VALID)
    twin = _torch_cell(torch, mode, cell)
    theirs = _torch_run(torch, lambda x, s: _torch_unroll(twin, mode, x, s, VALID), x, states)
    for a, b in zip(ours[:4], theirs):
        for u, v in zip(a if isinstance(a, list) else [a], b if isinstance(b, list) else [b]):
            _close(u, v)
    for name, grad in _twin_grads(twin).items():
        _close(ours[4][name], grad)


def test_stack_and_residual_against_composed_twins():
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    lstm, gru = _cell('lstm', prefix='l0_'), _cell('gru', input_size=H, prefix='l1_')
    stack = gluon.rnn.SequentialRNNCell()
    stack.add(lstm)
    stack.add(gluon.rnn.ResidualCell(gru))
    x = _data(N, T, C)
    states = [_data(N, H, seed=5 + k) for k in range(3)]
    ours = _run(stack, x, states, layout='NTC')
    t_lstm, t_gru = _torch_cell(torch, 'lstm', lstm), _torch_cell(torch, 'gru', gru)

    def forward(x, s):
        h, (h1, c1) = [], (s[0], s[1])
        h2 = s[2]
        for t in range(T):
            h1, c1 = t_lstm(x[:, t], (h1, c1))
            h2 = t_gru(h1, h2)
            h.append(h2 + h1)
        return torch.stack(h, 1), [h1, c1, h2]
    theirs = _torch_run(torch, forward, x, states)
    _close(ours[0], theirs[0])
    for u, v in zip(ours[1] + [ours[2]] + ours[3], theirs[1] + [theirs[2]] + theirs[3]):
        _close(u, v)
    for name, grad in _twin_grads(t_gru).items():
        _close(ours[4]['1.base_cell.' + name], grad)
    for name, grad in _twin_grads(t_lstm).items():
        _close(ours[4]['0.' + name], grad)


@pytest.mark.parametrize('valid_length', [None, VALID])
def test_bidirectional_against_twins(valid_length):
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    left, right = _cell('lstm', prefix='l_'), _cell('gru', prefix='r_')
    cell = gluon.rnn.BidirectionalCell(left, right)
    x = _data(N, T, C)
    states = [_data(N, H, seed=5 + k) for k in range(3)]
    ours = _run(cell, x, states, valid_length=valid_length)
    t_left, t_right = _torch_cell(torch, 'lstm', left), _torch_cell(torch, 'gru', right)
    lengths = valid_length or [T] * N

    def forward(x, s):
        l_out, l_states = _torch_unroll(t_left, 'lstm', x, s[:2], valid_length)
        r_outs, r_finals = [], []
        for n, length in enumerate(lengths):  # each sample backwards over its own steps
            rev = torch.flip(x[n:n + 1, :length], [1])
            out, final = _torch_unroll(t_right, 'gru', rev, [s[2][n:n + 1]])
            pad = torch.zeros((1, T - length, H), dtype=torch.float64)
            r_outs.append(torch.cat([torch.flip(out, [1]), pad], 1))
            r_finals.append(final[0])
        return torch.cat([l_out, torch.cat(r_outs, 0)], 2), l_states + [torch.cat(r_finals)]
    theirs = _torch_run(torch, forward, x, states)
    _close(ours[0], theirs[0])
    for u, v in zip(ours[1] + [ours[2]] + ours[3], theirs[1] + [theirs[2]] + theirs[3]):
        _close(u, v)
    for name, grad in _twin_grads(t_right).items():
        _close(ours[4]['r_cell.' + name], grad)


# ---- unroll's forms ----------------------------------------------------------------------

@pytest.mark.parametrize('hybridize', [False, True])
def test_unroll_layouts_and_merging(hybridize):
    cell = _cell('gru')
    if hybridize:
        cell.hybridize()
    x = _data(N, T, C)
    ntc = nd.array(x, dtype='float64')
    reference, ref_states = cell.unroll(T, ntc, layout='NTC', merge_outputs=True)
    reference = reference.asnumpy()
    forms = [(ntc, 'NTC'), (nd.array(x.transpose(1, 0, 2), dtype='float64'), 'TNC'),
             ([nd.array(x[:, t], dtype='float64') for t in range(T)], 'NTC'),
             ([nd.array(x[:, t], dtype='float64') for t in range(T)], 'TNC')]
    for inputs, layout in forms:
        for merge in (True, False, None):
            out, states = cell.unroll(T, inputs, layout=layout, merge_outputs=merge)
            if isinstance(out, list):
                assert merge is not True and len(out) == T
                out = np.stack([o.asnumpy() for o in out], axis=1)
            else:
                assert merge is not False
                out = out.asnumpy()
                if layout == 'TNC':
                    out = out.transpose(1, 0, 2)
            _close(out, reference, 0)
            _close(states[0].asnumpy(), ref_states[0].asnumpy(), 0)


def _composite_cells():
    def stack():
        cell = gluon.rnn.HybridSequentialRNNCell()
        cell.add(gluon.rnn.LSTMCell(H, input_size=C))
        cell.add(gluon.rnn.ResidualCell(gluon.rnn.RNNCell(H, input_size=H)))
        return cell
    return {
        'lstm': lambda: gluon.rnn.LSTMCell(H, input_size=C),
        'bidirectional': lambda: gluon.rnn.BidirectionalCell(
            gluon.rnn.GRUCell(H, input_size=C), gluon.rnn.LSTMCell(H, input_size=C)),
        'stack': stack,
        'residual_bidirectional': lambda: gluon.rnn.ResidualCell(gluon.rnn.BidirectionalCell(
            gluon.rnn.GRUCell(3, input_size=6), gluon.rnn.GRUCell(3, input_size=6))),
    }


@pytest.mark.parametrize('layout', ['NTC', 'TNC'])
@pytest.mark.parametrize('kind', sorted(_composite_cells()))
def test_valid_length_is_each_sample_over_its_prefix(kind, layout):
    cell = _composite_cells()[kind]()
    cell.initialize(mx.init.Uniform(0.5))
    cell.cast('float64')
    channels = 6 if kind == 'residual_bidirectional' else C
    x = _data(N, T, channels)
    if layout == 'TNC':
        x = x.transpose(1, 0, 2)
    batch_axis = layout.find('N')
    out, states = cell.unroll(T, nd.array(x, dtype='float64'), layout=layout,
                              merge_outputs=True,
                              valid_length=nd.array(VALID, dtype='float64'))
    out = out.asnumpy()
    for n, length in enumerate(VALID):
        sample = np.take(x, [n], axis=batch_axis)
        sample = sample[:, :length] if layout == 'NTC' else sample[:length]
        ref_out, ref_states = cell.unroll(length, nd.array(sample, dtype='float64'),
                                          layout=layout, merge_outputs=True)
        mine = np.take(out, [n], axis=batch_axis)
        valid, padding = (mine[:, :length], mine[:, length:]) if layout == 'NTC' else \
            (mine[:length], mine[length:])
        _close(valid, ref_out.asnumpy(), 1e-12)
        assert not padding.any()
        for s, r in zip(states, ref_states):
            _close(s.asnumpy()[n:n + 1], r.asnumpy(), 1e-12)


# ---- hybridized, exported, imported ------------------------------------------------------

class _Unrolled(gluon.HybridBlock):
    """Cells unrolled inside a hybrid_forward, with valid lengths."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.bi = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(4, prefix='l_'),
                                                  gluon.rnn.GRUCell(4, prefix='r_'))
            self.top = gluon.rnn.ZoneoutCell(gluon.rnn.RNNCell(3), 0.3, 0.3)

    def hybrid_forward(self, F, x, valid_length):
        out, states = self.bi.unroll(T, x, valid_length=valid_length, merge_outputs=True)
        out, top_states = self.top.unroll(T, out, valid_length=valid_length,
                                          merge_outputs=True)
        return out, states + top_states


def test_unroll_in_a_hybridized_block_exports_and_imports(tmp_path):
    net = _Unrolled()
    net.initialize(mx.init.Uniform(0.5))
    x, valid = nd.array(_data(N, T, C)), nd.array(VALID)
    expected = net(x, valid)
    net.hybridize()
    got = net(x, valid)
    assert len(got[1]) == 4
    for a, b in zip([expected[0]] + expected[1], [got[0]] + got[1]):
        _close(b.asnumpy(), a.asnumpy(), 1e-6)
    # another batch size through the same graph: the begin states follow it
    assert net(x[:2], valid[:2])[0].shape == (2, T, 3)
    net.export(str(tmp_path / 'cells'))
    graph = json.loads((tmp_path / 'cells-symbol.json').read_text())
    assert {'SequenceMask', 'SequenceLast', 'SequenceReverse', '_zeros'} <= \
        {node['op'] for node in graph['nodes']}
    imported = gluon.SymbolBlock.imports(str(tmp_path / 'cells-symbol.json'),
                                         ['data0', 'data1'],
                                         str(tmp_path / 'cells-0000.params'))
    again = imported(x, valid)
    _close(again[0].asnumpy(), expected[0].asnumpy(), 1e-6)


def test_symbolic_unroll_names_and_shapes():
    cell = gluon.rnn.SequentialRNNCell()
    cell.add(gluon.rnn.LSTMCell(H, prefix='rnn_l0_'))
    cell.add(gluon.rnn.GRUCell(H, prefix='rnn_l1_'))
    outputs, states = cell.unroll(T, mx.sym.var('data'), layout='NTC', merge_outputs=False)
    group = mx.sym.Group(outputs)
    assert group.list_outputs() == ['rnn_l1_t%d_out_output' % t for t in range(T)]
    assert 'rnn_l0_begin_state_0' in mx.sym.Group(states).tojson()
    _, out_shapes, _ = group.infer_shape(data=(N, T, C))
    assert out_shapes == [(N, H)] * T
    assert len(states) == 3


# ---- the cells' own contracts -----------------------------------------------------------

def test_state_info_begin_state_and_reset():
    cell = gluon.rnn.LSTMCell(H, prefix='lstm_')
    assert cell.state_info(2) == [{'shape': (2, H), '__layout__': 'NC'}] * 2
    states = cell.begin_state(2, func=nd.ones, dtype='float64')
    assert [s.shape for s in states] == [(2, H)] * 2 and states[0].dtype == np.float64
    symbols = cell.begin_state(func=mx.sym.var)
    assert [s.name for s in symbols] == ['lstm_begin_state_2', 'lstm_begin_state_3']
    cell.reset()
    assert cell.begin_state(func=mx.sym.var)[0].name == 'lstm_begin_state_0'
    stack = gluon.rnn.SequentialRNNCell()
    stack.add(cell)
    stack.add(gluon.rnn.DropoutCell(0.5))
    stack.add(gluon.rnn.GRUCell(3))
    assert len(stack) == 3 and stack[2].state_info() == [{'shape': (0, 3), '__layout__': 'NC'}]
    assert [s.shape for s in stack.begin_state(batch_size=4)] == [(4, H), (4, H), (4, 3)]


def test_modified_and_bidirectional_cells_refuse_misuse():
    base = gluon.rnn.GRUCell(3)
    zoneout = gluon.rnn.ZoneoutCell(base, 0.5)
    with pytest.raises(AssertionError, match='modifier'):
        base.begin_state(2)
    assert len(zoneout.begin_state(batch_size=2, func=nd.zeros)) == 1
    with pytest.raises(AssertionError, match='already modified'):
        gluon.rnn.ResidualCell(base)
    bi = gluon.rnn.BidirectionalCell(gluon.rnn.GRUCell(3), gluon.rnn.GRUCell(3))
    with pytest.raises(NotImplementedError, match='unroll'):
        bi(nd.ones((2, 3)), bi.begin_state(2))
    with pytest.raises(AssertionError, match='zoneout'):
        gluon.rnn.ZoneoutCell(bi)
    with pytest.raises(ValueError, match='layout'):
        gluon.rnn.GRUCell(3).unroll(2, nd.ones((2, 2, 3)), layout='NC')


def test_dropout_and_zoneout_in_training_and_inference():
    drop = gluon.rnn.DropoutCell(0.5)
    x = nd.ones((N, T, C))
    out, states = drop.unroll(T, x, merge_outputs=True)
    assert states == [] and (out.asnumpy() == 1).all()  # inference: the identity
    with autograd.train_mode():
        out, _ = drop.unroll(T, x, merge_outputs=True)
    assert set(np.unique(out.asnumpy())) <= {0.0, 2.0}

    base = _cell('rnn_tanh')
    zoneout = gluon.rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    x = nd.array(_data(N, T, C), dtype='float64')
    begin = [nd.zeros((N, H), dtype='float64')]
    base._modified = False
    plain, _ = base.unroll(T, x, begin_state=begin, merge_outputs=True)
    base._modified = True
    out, _ = zoneout.unroll(T, x, begin_state=begin, merge_outputs=True)
    _close(out.asnumpy(), plain.asnumpy(), 0)
    mx.random.seed(3)
    with autograd.train_mode():
        out, _ = zoneout.unroll(T, x, begin_state=begin, merge_outputs=False)
    # each unit is the new output or the previous step's (zero before the first)
    previous = np.zeros((N, H))
    for o in out:
        o = o.asnumpy()
        assert np.all((o == previous) | (np.abs(o) > 0))
        previous = o


def test_cell_repr():
    assert repr(gluon.rnn.LSTMCell(4, input_size=3)) == 'LSTMCell(3 -> 16)'
    assert repr(gluon.rnn.RNNCell(4)) == 'RNNCell(None -> 4, tanh)'
    text = repr(gluon.rnn.ResidualCell(gluon.rnn.GRUCell(2)))
    assert text == 'ResidualCell(GRUCell(None -> 6))'


# ---- against MXNet 1.9.1 -----------------------------------------------------------------

SCRIPT = '''
import json, os, sys
import numpy as np
import mxnet as mx
gluon = mx.gluon
folder = sys.argv[1]
mine = os.path.basename(folder)
other = os.path.join(os.path.dirname(folder), 'minigluon' if mine == 'mxnet' else 'mxnet')


class Net(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(Net, self).__init__(**kwargs)
        with self.name_scope():
            self.stack = gluon.rnn.HybridSequentialRNNCell()
            self.stack.add(gluon.rnn.LSTMCell(5))
            self.stack.add(gluon.rnn.ResidualCell(gluon.rnn.GRUCell(5)))
            self.bi = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(4),
                                                  gluon.rnn.RNNCell(4, activation='relu'))
            self.proj = gluon.contrib.rnn.LSTMPCell(6, 3)
            self.conv = gluon.contrib.rnn.Conv1DLSTMCell((2, 5), 3, 3, 3, i2h_pad=1)

    def hybrid_forward(self, F, x, valid_length, image):
        out, states = self.stack.unroll(4, x, valid_length=valid_length, merge_outputs=True)
        out, bi_states = self.bi.unroll(4, out, valid_length=valid_length,
                                        merge_outputs=True)
        out, proj_states = self.proj.unroll(4, out, layout='NTC', merge_outputs=True,
                                            valid_length=valid_length)
        conv, _ = self.conv.unroll(2, image, layout='TNC', merge_outputs=True)
        return [out, conv] + states + bi_states + proj_states


rng = np.random.RandomState(0)
x = mx.nd.array(rng.uniform(-1, 1, (3, 4, 5)))
image = mx.nd.array(rng.uniform(-1, 1, (2, 3, 2, 5)))
valid = mx.nd.array([2, 4, 1])
net = Net(prefix='net_')
if mine == 'mxnet':
    net.initialize(mx.init.Uniform(0.5))
    net(x, valid, image)
    net.save_parameters(os.path.join(folder, 'cells.params'))
else:
    net.load_parameters(os.path.join(other, 'cells.params'))
answers = {'imperative': [o.asnumpy().tolist() for o in net(x, valid, image)]}
net.hybridize()
answers['hybridized'] = [o.asnumpy().tolist() for o in net(x, valid, image)]
net.export(os.path.join(folder, 'net'))
if mine == 'minigluon':  # the graph MXNet exported, run here
    block = gluon.SymbolBlock.imports(os.path.join(other, 'net-symbol.json'),
                                      ['data0', 'data1', 'data2'],
                                      os.path.join(other, 'net-0000.params'))
    answers['imported'] = [o.asnumpy().tolist() for o in block(x, valid, image)]
json.dump(answers, open(os.path.join(folder, 'answers.json'), 'w'))
'''

IMPORT_SCRIPT = '''
import json, os, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
rng = np.random.RandomState(0)
x = mx.nd.array(rng.uniform(-1, 1, (3, 4, 5)))
image = mx.nd.array(rng.uniform(-1, 1, (2, 3, 2, 5)))
valid = mx.nd.array([2, 4, 1])
block = mx.gluon.SymbolBlock.imports(os.path.join(folder, 'net-symbol.json'),
                                     ['data0', 'data1', 'data2'],
                                     os.path.join(folder, 'net-0000.params'))
out = [o.asnumpy().tolist() for o in block(x, valid, image)]
json.dump(out, open(os.path.join(folder, 'imported.json'), 'w'))
'''


def test_against_mxnet(tmp_path, run_mxnet, run_minigluon):
    """MXNet's cells save a parameter file and export their graph; minigluon's cells
    load the file and give MXNet's numbers, imperatively and hybridized, and run
    MXNet's graph; MXNet runs the graph minigluon exports."""
    theirs_dir, ours_dir = tmp_path / 'mxnet', tmp_path / 'minigluon'
    theirs_dir.mkdir()
    ours_dir.mkdir()
    run_mxnet(theirs_dir, SCRIPT)
    run_minigluon(ours_dir, SCRIPT)
    run_mxnet(ours_dir, IMPORT_SCRIPT)
    theirs = json.loads((theirs_dir / 'answers.json').read_text())
    ours = json.loads((ours_dir / 'answers.json').read_text())
    expected = theirs['imperative']
    assert len(expected) == 2 + 3 + 3 + 2
    for key in ('imperative', 'hybridized', 'imported'):
        for a, b in zip(ours[key], expected):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=key)
    for a, b in zip(json.loads((ours_dir / 'imported.json').read_text()), expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg='exported here')
    assert os.path.getsize(ours_dir / 'net-0000.params') > 0
