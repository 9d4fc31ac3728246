"""mx.rnn cells: their unrolled graphs give the numbers of a float64 numpy reference and of
PyTorch's cells with the same weights (outputs, states and gradients), the fused cell equals
its unfused stack, and weights pack and unpack between the fused and per-gate layouts."""
import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError

RNG = np.random.RandomState(7)
BATCH, STEPS, IN, HID = 3, 4, 5, 4


@pytest.fixture(autouse=True)
def fresh_names():
    with mx.name.NameManager():
        yield


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _step(mode, x, states, w):
    """One float64 step of ``mode`` with MXNet's weights ``w`` (i2h/h2h weight/bias)."""
    h = states[0]
    xw = x @ w['i2h_weight'].T + w['i2h_bias']
    hw = h @ w['h2h_weight'].T + w['h2h_bias']
    if mode in ('rnn_tanh', 'rnn_relu'):
        out = np.tanh(xw + hw) if mode == 'rnn_tanh' else np.maximum(xw + hw, 0)
        return out, [out]
    if mode == 'lstm':
        i, f, g, o = np.split(xw + hw, 4, axis=1)
        c = _sigmoid(f) * states[1] + _sigmoid(i) * np.tanh(g)
        out = _sigmoid(o) * np.tanh(c)
        return out, [out, c]
    xr, xz, xn = np.split(xw, 3, axis=1)
    hr, hz, hn = np.split(hw, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    out = (1 - z) * np.tanh(xn + r * hn) + z * h
    return out, [out]


def _unroll_reference(mode, xs, w, hidden=HID):
    """Outputs (a list over steps) and the last states, from zero states."""
    states = [np.zeros((xs[0].shape[0], hidden)) for _ in range(2 if mode == 'lstm' else 1)]
    outputs = []
    for x in xs:
        out, states = _step(mode, x, states, w)
        outputs.append(out)
    return outputs, states


def _cell(mode, prefix, hidden=HID):
    if mode == 'lstm':
        return mx.rnn.LSTMCell(hidden, prefix=prefix)
    if mode == 'gru':
        return mx.rnn.GRUCell(hidden, prefix=prefix)
    return mx.rnn.RNNCell(hidden, activation=mode[4:], prefix=prefix)


def _weights(mode, in_size, hidden=HID):
    gates = {'lstm': 4, 'gru': 3}.get(mode, 1)
    return {'i2h_weight': RNG.randn(gates * hidden, in_size) * 0.5,
            'i2h_bias': RNG.randn(gates * hidden) * 0.5,
            'h2h_weight': RNG.randn(gates * hidden, hidden) * 0.5,
            'h2h_bias': RNG.randn(gates * hidden) * 0.5}


def _run(sym, values, head_grads=None):
    """Forward (and backward with ``head_grads``) in float64; outputs and grads as numpy."""
    args = {name: mx.nd.array(values[name], dtype='float64') for name in sym.list_arguments()}
    grads = {name: mx.nd.zeros(a.shape, dtype='float64') for name, a in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outputs = [o.asnumpy() for o in exe.forward(is_train=head_grads is not None)]
    if head_grads is not None:
        exe.backward([mx.nd.array(g, dtype='float64') for g in head_grads])
    return outputs, {name: g.asnumpy() for name, g in grads.items()}


@pytest.mark.parametrize('mode', ['rnn_tanh', 'rnn_relu', 'lstm', 'gru'])
@pytest.mark.parametrize('layout', ['NTC', 'TNC'])
def test_unrolled_cells_match_a_numpy_reference(mode, layout):
    cell = _cell(mode, 'c_')
    data = mx.sym.Variable('data')
    outputs, states = cell.unroll(STEPS, data, layout=layout, merge_outputs=True)
    xs = [RNG.randn(BATCH, IN) for _ in range(STEPS)]
    w = _weights(mode, IN)
    x = np.stack(xs, axis=layout.find('T'))
    got, _ = _run(mx.sym.Group([outputs] + states),
                  dict({'data': x}, **{'c_' + k: v for k, v in w.items()}))
    want_outputs, want_states = _unroll_reference(mode, xs, w)
    np.testing.assert_allclose(got[0], np.stack(want_outputs, axis=layout.find('T')),
                               rtol=1e-12, atol=1e-12)
    for g, s in zip(got[1:], want_states):
        np.testing.assert_allclose(g, s, rtol=1e-12, atol=1e-12)


def test_cells_match_pytorch_cells_with_gradients():
    torch = pytest.importorskip('torch', reason='PyTorch is the twin these cells are judged by')
    twins = {'lstm': torch.nn.LSTMCell, 'gru': torch.nn.GRUCell,
             'rnn_tanh': lambda i, h: torch.nn.RNNCell(i, h, nonlinearity='tanh')}
    for mode, make_twin in twins.items():
        cell = _cell(mode, 'c_')
        inputs = [mx.sym.Variable('x%d' % t) for t in range(STEPS)]
        outputs, states = cell.unroll(STEPS, inputs, merge_outputs=False)
        group = mx.sym.Group(outputs + states)
        w = _weights(mode, IN)
        xs = [RNG.randn(BATCH, IN) for _ in range(STEPS)]
        values = dict({'x%d' % t: x for t, x in enumerate(xs)},
                      **{'c_' + k: v for k, v in w.items()})
        head_grads = [RNG.randn(BATCH, HID) for _ in group.list_outputs()]
        got, grads = _run(group, values, head_grads)

        twin = make_twin(IN, HID).double()
        with torch.no_grad():
            for name in ('weight_ih', 'bias_ih', 'weight_hh', 'bias_hh'):
                key = name.replace('weight_ih', 'i2h_weight').replace('bias_ih', 'i2h_bias')
                key = key.replace('weight_hh', 'h2h_weight').replace('bias_hh', 'h2h_bias')
                getattr(twin, name).copy_(torch.from_numpy(w[key]))
        txs = [torch.tensor(x, requires_grad=True) for x in xs]
        state = None
        touts = []
        for tx in txs:
            state = twin(tx, state)
            touts.append(state[0] if mode == 'lstm' else state)
        tstates = list(state) if mode == 'lstm' else [state]
        twin_all = touts + tstates
        torch.autograd.backward(twin_all, [torch.from_numpy(g) for g in head_grads])
        for mine, theirs in zip(got, twin_all):
            np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-10, atol=1e-10)
        for t, tx in enumerate(txs):
            np.testing.assert_allclose(grads['x%d' % t], tx.grad.numpy(), rtol=1e-10,
                                       atol=1e-10)
        np.testing.assert_allclose(grads['c_i2h_weight'], twin.weight_ih.grad.numpy(),
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(grads['c_h2h_bias'], twin.bias_hh.grad.numpy(),
                                   rtol=1e-10, atol=1e-10)


def test_bidirectional_residual_stack_matches_the_reference():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(HID, prefix='l_'),
                                       mx.rnn.GRUCell(HID, prefix='r_'), output_prefix='bi_'))
    stack.add(mx.rnn.DropoutCell(0.5))
    stack.add(mx.rnn.ResidualCell(mx.rnn.RNNCell(2 * HID, prefix='top_')))
    data = mx.sym.Variable('data')
    outputs, states = stack.unroll(STEPS, data, layout='NTC', merge_outputs=False)
    assert [o.name for o in outputs] == ['top_t%d_out_plus_residual' % t for t in range(STEPS)]
    # As MXNet: the bidirectional cell's states stay nested, [[lstm h, c], [gru h]].
    assert [len(s) if isinstance(s, list) else None for s in states] == [2, 1, None]
    wl, wr, wt = _weights('lstm', IN), _weights('gru', IN), _weights('rnn_tanh', 2 * HID,
                                                                      2 * HID)
    values = {'data': RNG.randn(BATCH, STEPS, IN)}
    for prefix, w in (('l_', wl), ('r_', wr), ('top_', wt)):
        values.update({prefix + k: v for k, v in w.items()})
    # Dropout is the identity outside training.
    got, _ = _run(mx.sym.Group(outputs), values)
    xs = [values['data'][:, t] for t in range(STEPS)]
    left, _ = _unroll_reference('lstm', xs, wl)
    right, _ = _unroll_reference('gru', xs[::-1], wr)
    bi = [np.concatenate([lo, ro], axis=1) for lo, ro in zip(left, right[::-1])]
    top, _ = _unroll_reference('rnn_tanh', bi, wt, hidden=2 * HID)
    for g, t, b in zip(got, top, bi):
        np.testing.assert_allclose(g, t + b, rtol=1e-12, atol=1e-12)


def test_zoneout_is_the_base_cell_outside_training():
    cell = mx.rnn.ZoneoutCell(mx.rnn.GRUCell(HID, prefix='g_'), zoneout_outputs=0.5,
                              zoneout_states=0.5)
    outputs, _ = cell.unroll(2, mx.sym.Variable('data'), merge_outputs=True)
    w = _weights('gru', IN)
    values = dict({'data': RNG.randn(BATCH, 2, IN)}, **{'g_' + k: v for k, v in w.items()})
    got, _ = _run(outputs, values)
    want, _ = _unroll_reference('gru', [values['data'][:, 0], values['data'][:, 1]], w)
    np.testing.assert_allclose(got[0], np.stack(want, axis=1), rtol=1e-12)
    with pytest.raises(MXNetError, match='modifier'):
        cell.base_cell.begin_state()


@pytest.mark.parametrize('kind', ['ConvRNNCell', 'ConvLSTMCell', 'ConvGRUCell'])
def test_conv_cells_match_pytorch_convolutions(kind):
    torch = pytest.importorskip('torch', reason='PyTorch convolutions are the reference')
    func = torch.nn.functional
    shape, hidden = (2, 3, 5, 4), 2
    cell = getattr(mx.rnn, kind)(input_shape=shape, num_hidden=hidden, prefix='k_')
    outputs, states = cell.unroll(2, mx.sym.Variable('data'), merge_outputs=False)
    gates = {'ConvRNNCell': 1, 'ConvLSTMCell': 4, 'ConvGRUCell': 3}[kind]
    w = {'k_i2h_weight': RNG.randn(gates * hidden, 3, 3, 3) * 0.3,
         'k_h2h_weight': RNG.randn(gates * hidden, hidden, 3, 3) * 0.3,
         'k_i2h_bias': RNG.randn(gates * hidden) * 0.3,
         'k_h2h_bias': RNG.randn(gates * hidden) * 0.3}
    data = RNG.randn(shape[0], 2, *shape[1:])
    got, _ = _run(mx.sym.Group(outputs + states), dict(w, data=data))

    t = {k: torch.from_numpy(v) for k, v in w.items()}
    act = lambda v: func.leaky_relu(v, 0.2)  # noqa: E731 (the cells' default activation)
    h = torch.zeros(shape[0], hidden, *shape[2:], dtype=torch.float64)
    c = torch.zeros_like(h)
    want = []
    for step in range(2):
        x = torch.from_numpy(data[:, step])
        i2h = func.conv2d(x, t['k_i2h_weight'], t['k_i2h_bias'], padding=1)
        h2h = func.conv2d(h, t['k_h2h_weight'], t['k_h2h_bias'], padding=1)
        if kind == 'ConvRNNCell':
            h = act(i2h + h2h)
        elif kind == 'ConvLSTMCell':
            i, f, g, o = torch.chunk(i2h + h2h, 4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * act(g)
            h = torch.sigmoid(o) * act(c)
        else:
            xr, xz, xn = torch.chunk(i2h, 3, dim=1)
            hr, hz, hn = torch.chunk(h2h, 3, dim=1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            h = (1 - z) * act(xn + r * hn) + z * h
        want.append(h)
    want += [h, c] if kind == 'ConvLSTMCell' else [h]
    for mine, theirs in zip(got, want):
        np.testing.assert_allclose(mine, theirs.numpy(), rtol=1e-10, atol=1e-12)


def _flat_size(num_input, hidden, layers, gates, directions):
    first = gates * hidden * (num_input + hidden + 2)
    later = gates * hidden * (directions * hidden + hidden + 2)
    return directions * (first + (layers - 1) * later)


def test_unpack_pack_round_trip_of_gate_cells():
    cell = _cell('lstm', 'p_')
    w = {'p_' + k: mx.nd.array(v) for k, v in _weights('lstm', IN).items()}
    unpacked = cell.unpack_weights(w)
    assert sorted(unpacked) == sorted('p_%s_%s_%s' % (g, gate, kind) for g in ('i2h', 'h2h')
                                      for gate in 'ifco' for kind in ('weight', 'bias'))
    np.testing.assert_array_equal(unpacked['p_i2h_f_weight'].asnumpy(),
                                  w['p_i2h_weight'].asnumpy()[HID:2 * HID])
    packed = cell.pack_weights(unpacked)
    assert sorted(packed) == sorted(w)
    for name in w:
        np.testing.assert_array_equal(packed[name].asnumpy(), w[name].asnumpy())


@pytest.mark.parametrize('mode,layers,bidirectional', [('lstm', 2, True), ('gru', 1, False),
                                                       ('rnn_relu', 3, False)])
def test_fused_weights_unpack_into_the_unfused_cells(mode, layers, bidirectional):
    fused = mx.rnn.FusedRNNCell(HID, num_layers=layers, mode=mode,
                                bidirectional=bidirectional, prefix='f_')
    gates = {'lstm': 4, 'gru': 3}.get(mode, 1)
    size = _flat_size(IN, HID, layers, gates, 2 if bidirectional else 1)
    flat = mx.nd.array(RNG.randn(size), dtype='float64')
    unpacked = fused.unpack_weights({'f_parameters': flat, 'other': flat})
    assert 'f_parameters' not in unpacked and unpacked['other'] is flat
    # MXNet's layout: all weights (layer, direction, i2h then h2h, gate), then all biases.
    first = unpacked['f_l0_i2h%s_weight' % fused._gate_names[0]].asnumpy()
    np.testing.assert_array_equal(first.ravel(), flat.asnumpy()[:HID * IN])
    # The unfused stack's own packing gives exactly its graph's arguments.
    stack = fused.unfuse()
    per_cell = stack.pack_weights(unpacked)
    outputs, _ = stack.unroll(STEPS, mx.sym.Variable('data'), merge_outputs=True)
    arg_shapes, _, _ = outputs.infer_shape(data=(BATCH, STEPS, IN))
    shapes = dict(zip(outputs.list_arguments(), arg_shapes))
    del shapes['data']
    assert sorted(shapes) == sorted(k for k in per_cell if k != 'other')
    for name, shape in shapes.items():
        assert per_cell[name].shape == shape, name
    # And back.
    repacked = fused.pack_weights(stack.unpack_weights(per_cell))
    np.testing.assert_array_equal(repacked['f_parameters'].asnumpy(), flat.asnumpy())


def test_fused_cell_rejects_a_vector_of_the_wrong_size():
    fused = mx.rnn.FusedRNNCell(HID, mode='lstm', prefix='f_')
    with pytest.raises(MXNetError, match='fits no input size'):
        fused.unpack_weights({'f_parameters': mx.nd.zeros((7,))})


def test_fused_initializer_fills_pieces_and_forget_biases():
    fused = mx.rnn.FusedRNNCell(HID, num_layers=2, mode='lstm', forget_bias=3.0, prefix='f_')
    # What Module does: the variable's __init__ attribute under a global initializer.
    attrs = fused.params.get('parameters').attr_dict()['f_parameters']
    flat = mx.nd.zeros((_flat_size(IN, HID, 2, 4, 1),))
    mx.init.Constant(0.25)(mx.init.InitDesc('f_parameters', attrs), flat)
    for name, value in fused.unpack_weights({'f_parameters': flat}).items():
        # Each piece by its own name: weights 0.25, biases 0, forget biases 3.
        expected = 3.0 if name.endswith('_f_bias') else 0.0 if name.endswith('bias') else 0.25
        np.testing.assert_array_equal(value.asnumpy(), np.full(value.shape, expected), name)
    # An initializer of its own for the pieces, through the JSON MXNet writes.
    own = mx.init.FusedRNN(mx.init.One(), HID, 2, 'lstm', forget_bias=3.0)
    mx.init.Zero()(mx.init.InitDesc('f_parameters', {'__init__': own.dumps()}), flat)
    assert set(np.unique(flat.asnumpy())) == {0.0, 1.0, 3.0}  # biases, weights, forget


@pytest.mark.parametrize('mode,layers,bidirectional', [('lstm', 2, True), ('gru', 2, False),
                                                       ('rnn_tanh', 1, True)])
def test_fused_cell_equals_its_unfused_cells(mode, layers, bidirectional):
    fused = mx.rnn.FusedRNNCell(HID, num_layers=layers, mode=mode,
                                bidirectional=bidirectional, get_next_state=True,
                                prefix='f_')
    data = mx.sym.Variable('data')
    f_out, f_states = fused.unroll(STEPS, data, layout='TNC', merge_outputs=True)
    stack = fused.unfuse()
    u_out, u_states = stack.unroll(STEPS, data, layout='TNC', merge_outputs=True)
    gates = {'lstm': 4, 'gru': 3}.get(mode, 1)
    flat = RNG.randn(_flat_size(IN, HID, layers, gates, 2 if bidirectional else 1)) * 0.5
    x = RNG.randn(STEPS, BATCH, IN)
    per_cell = stack.pack_weights(fused.unpack_weights(
        {'f_parameters': mx.nd.array(flat, dtype='float64')}))
    head = RNG.randn(STEPS, BATCH, HID * (2 if bidirectional else 1))
    fused_got, fused_grads = _run(f_out, {'data': x, 'f_parameters': flat}, [head])
    unfused_got, unfused_grads = _run(
        u_out, dict({k: v.asnumpy() for k, v in per_cell.items()}, data=x), [head])
    np.testing.assert_allclose(fused_got[0], unfused_got[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fused_grads['data'], unfused_grads['data'], rtol=1e-10,
                               atol=1e-12)
    # The gradient of the flat vector is the unfused cells' gradients, packed.
    grads = fused.pack_weights(stack.unpack_weights(
        {k: mx.nd.array(v, dtype='float64') for k, v in unfused_grads.items() if k != 'data'}))
    np.testing.assert_allclose(fused_grads['f_parameters'],
                               grads['f_parameters'].asnumpy(), rtol=1e-9, atol=1e-12)
    # The last states: the fused (layers * directions, N, C) against the cells' own.
    states_got, _ = _run(mx.sym.Group(f_states), {'data': x, 'f_parameters': flat})
    flat_u_states = []
    for s in u_states:
        flat_u_states.extend(s if isinstance(s, list) else [s])
    u_states_got, _ = _run(mx.sym.Group(flat_u_states),
                           dict({k: v.asnumpy() for k, v in per_cell.items()}, data=x))
    per_kind = 2 if mode == 'lstm' else 1
    for kind in range(per_kind):
        layers_of_kind = np.stack(u_states_got[kind::per_kind])
        np.testing.assert_allclose(states_got[kind], layers_of_kind, rtol=1e-10, atol=1e-12)
