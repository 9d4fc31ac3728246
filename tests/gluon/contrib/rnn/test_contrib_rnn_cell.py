"""gluon.contrib.rnn: LSTMPCell against PyTorch's projected LSTM (float64, 1e-10),
VariationalDropoutCell's masks (one per sequence), and the convolutional cells against
the same maths written with PyTorch's convolutions."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd

TORCH_REASON = 'PyTorch is needed for the twin tests (pip install torch)'
contrib = gluon.contrib.rnn


def _data(*shape, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _float64(cell):
    cell.initialize(mx.init.Uniform(0.5))
    cell.cast('float64')
    return cell


def _weights(cell):
    return {k: p.data().asnumpy() for k, p in cell._collect_params_with_prefix().items()}


def _grads(cell):
    return {k: p.grad().asnumpy() for k, p in cell._collect_params_with_prefix().items()}


def _run(cell, x, states, layout='NTC'):
    """Unroll over numpy ``x`` from numpy ``states``; backward of ``sum(out * head)``:
    (outputs, states, input gradient) as numpy."""
    x = nd.array(x, dtype='float64')
    x.attach_grad()
    states = [nd.array(s, dtype='float64') for s in states]
    with autograd.record():
        out, new_states = cell.unroll(x.shape[layout.find('T')], x, begin_state=states,
                                      layout=layout, merge_outputs=True)
        loss = (out * nd.array(_data(*out.shape, seed=9), dtype='float64')).sum()
    loss.backward()
    return out.asnumpy(), [s.asnumpy() for s in new_states], x.grad.asnumpy()


@pytest.mark.parametrize('hybridize', [False, True])
def test_lstmp_cell_against_torch(hybridize):
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    cell = _float64(contrib.LSTMPCell(5, 3, input_size=4))
    if hybridize:
        cell.hybridize()
    x, states = _data(2, 3, 4), [_data(2, 3, seed=1), _data(2, 5, seed=2)]
    out, new_states, dx = _run(cell, x, states)

    twin = torch.nn.LSTM(4, 5, proj_size=3, batch_first=True).double()
    w = _weights(cell)
    with torch.no_grad():
        for ours, theirs in (('i2h_weight', 'weight_ih_l0'), ('h2h_weight', 'weight_hh_l0'),
                             ('i2h_bias', 'bias_ih_l0'), ('h2h_bias', 'bias_hh_l0'),
                             ('h2r_weight', 'weight_hr_l0')):
            getattr(twin, theirs).copy_(torch.from_numpy(w[ours]))
    tx = torch.tensor(x, requires_grad=True)
    t_out, (t_r, t_c) = twin(tx, (torch.tensor(states[0])[None], torch.tensor(states[1])[None]))
    (t_out * torch.tensor(_data(*out.shape, seed=9))).sum().backward()
    _close(out, t_out.detach().numpy())
    _close(new_states[0], t_r[0].detach().numpy())
    _close(new_states[1], t_c[0].detach().numpy())
    _close(dx, tx.grad.numpy())
    grads = _grads(cell)
    _close(grads['h2r_weight'], twin.weight_hr_l0.grad.numpy())
    _close(grads['i2h_weight'], twin.weight_ih_l0.grad.numpy())


def test_variational_dropout_keeps_one_mask_per_sequence():
    base = _float64(gluon.rnn.RNNCell(4, input_size=3))
    cell = contrib.VariationalDropoutCell(base, drop_inputs=0.5, drop_outputs=0.5)
    x = nd.array(_data(2, 5, 3), dtype='float64')
    begin = [nd.zeros((2, 4), dtype='float64')]
    plain, _ = cell.unroll(5, x, begin_state=begin, merge_outputs=True)  # inference: none
    base._modified = False
    reference, _ = base.unroll(5, x, begin_state=begin, merge_outputs=True)
    base._modified = True
    _close(plain.asnumpy(), reference.asnumpy(), 0)
    for drop_states in (0.0, 0.5):  # the whole-sequence path, then the stepped one
        cell = contrib.VariationalDropoutCell(gluon.rnn.RNNCell(4, input_size=3, prefix='v_'),
                                              drop_states=drop_states, drop_outputs=0.5)
        cell.initialize()
        with autograd.train_mode():
            out, states = cell.unroll(5, nd.ones((2, 5, 3)), merge_outputs=True)
        dropped = out.asnumpy() == 0
        assert dropped.any() and not dropped.all()
        assert (dropped == dropped[:, :1]).all()  # the same units at every step
        assert states[0].shape == (2, 4)


def _conv_reference(torch, kind, weights, x, states, dims):
    """The convolutional cell's step maths with PyTorch's convolutions (channels first)."""
    conv = getattr(torch.nn.functional, 'conv%dd' % dims)
    w = {k: torch.tensor(v) for k, v in weights.items()}
    kernel = w['h2h_weight'].shape[2:]
    outs = []
    for t in range(x.shape[1]):
        i2h = conv(x[:, t], w['i2h_weight'], w['i2h_bias'], padding=1)
        h2h = conv(states[0], w['h2h_weight'], w['h2h_bias'],
                   padding=tuple(k // 2 for k in kernel))
        if kind == 'RNN':
            states = [torch.tanh(i2h + h2h)]
        elif kind == 'LSTM':
            i, f, g, o = torch.chunk(i2h + h2h, 4, dim=1)
            c = torch.sigmoid(f) * states[1] + torch.sigmoid(i) * torch.tanh(g)
            states = [torch.sigmoid(o) * torch.tanh(c), c]
        else:
            (ir, iz, i_n), (hr, hz, h_n) = torch.chunk(i2h, 3, 1), torch.chunk(h2h, 3, 1)
            r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
            states = [(1 - z) * torch.tanh(i_n + r * h_n) + z * states[0]]
        outs.append(states[0])
    return torch.stack(outs, 1), states


@pytest.mark.parametrize('kind,dims,spatial', [('LSTM', 2, (4, 3)), ('GRU', 1, (5,)),
                                               ('RNN', 3, (3, 2, 3))])
def test_conv_cells_against_torch_convolutions(kind, dims, spatial):
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    cls = getattr(contrib, 'Conv%dD%sCell' % (dims, kind))
    h2h_kernel = (3,) * (dims - 1) + (1,)
    cell = _float64(cls((2,) + spatial, 3, 3, h2h_kernel, i2h_pad=1))
    if kind == 'LSTM':
        cell.hybridize()
    states_shape = (2, 3) + spatial
    count = 2 if kind == 'LSTM' else 1
    x = _data(2, 3, 2, *spatial)
    states = [_data(*states_shape, seed=1 + k) for k in range(count)]
    assert cell.state_info(2) == [{'shape': states_shape,
                                   '__layout__': 'NC' + 'DHW'[3 - dims:]}] * count
    out, new_states, dx = _run(cell, x, states)

    tx = torch.tensor(x, requires_grad=True)
    t_out, t_states = _conv_reference(torch, kind, _weights(cell), tx,
                                      [torch.tensor(s) for s in states], dims)
    (t_out * torch.tensor(_data(*out.shape, seed=9))).sum().backward()
    _close(out, t_out.detach().numpy())
    for ours, theirs in zip(new_states, t_states):
        _close(ours, theirs.detach().numpy())
    _close(dx, tx.grad.numpy())


def test_conv_cell_shapes_and_errors():
    cell = contrib.Conv2DGRUCell((3, 8, 8), 4, (3, 3), (3, 3))  # no padding: 6x6 states
    assert cell.state_info(5)[0]['shape'] == (5, 4, 6, 6)
    assert cell.i2h_weight.shape == (12, 3, 3, 3)
    assert repr(cell) == 'Conv2DGRUCell(3 -> 12, tanh, NCHW)'
    with pytest.raises(AssertionError, match='odd'):
        contrib.Conv1DRNNCell((3, 8), 4, 3, 2)
    with pytest.raises(AssertionError, match='length 2'):
        contrib.Conv2DLSTMCell((3, 8, 8), 4, (3, 3, 3), 3)
