"""gluon.rnn.RNN / LSTM / GRU: against PyTorch twins holding the same weights (float64,
outputs, states and every gradient), against a numpy reference, hybridized against
imperative, and against MXNet 1.9.1 (parameter files and exported graphs both ways)."""
import json
import os

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.test_utils import assert_almost_equal

TORCH_REASON = 'PyTorch is needed for the twin tests (pip install torch)'
LAYERS = {'lstm': gluon.rnn.LSTM, 'gru': gluon.rnn.GRU,
          'rnn_tanh': lambda *a, **k: gluon.rnn.RNN(*a, activation='tanh', **k),
          'rnn_relu': lambda *a, **k: gluon.rnn.RNN(*a, activation='relu', **k)}


def _make(mode, hidden, **kwargs):
    layer = LAYERS[mode](hidden, **kwargs)
    layer.initialize(mx.init.Uniform(0.5))
    return layer


def _sequences(shape, dtype='float64', seed=0):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, shape), dtype=dtype)


# ---- a numpy float64 reference ---------------------------------------------------------

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _step(mode, x, h, c, w):
    """One time step of one direction of one layer; ``w``: that direction's arrays."""
    gates = x @ w['i2h_weight'].T + w['i2h_bias']
    rec = h @ w['h2h_weight'].T + w['h2h_bias']
    if mode == 'lstm':
        i, f, g, o = np.split(gates + rec, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return (h @ w['h2r_weight'].T if 'h2r_weight' in w else h), c
    if mode == 'gru':
        xr, xz, xn = np.split(gates, 3, axis=-1)
        hr, hz, hn = np.split(rec, 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, c
    pre = gates + rec
    return (np.maximum(pre, 0) if mode == 'rnn_relu' else np.tanh(pre)), c


def _reference(mode, layer, x, states):
    """The layer's output and final states computed step by step in numpy (layout TNC)."""
    weights = {k: p.data().asnumpy() for k, p in layer._reg_params.items()}
    dirs = layer._dir
    h0 = states[0]
    c0 = states[1] if mode == 'lstm' else np.zeros_like(h0)
    out, hs, cs = x, [], []
    for i in range(layer._num_layers):
        results = []
        for j, d in enumerate('lr'[:dirs]):
            w = {k[3:]: v for k, v in weights.items() if k.startswith('%s%d_' % (d, i))}
            h, c, ys = h0[i * dirs + j], c0[i * dirs + j], []
            steps = range(len(out)) if d == 'l' else reversed(range(len(out)))
            for t in steps:
                h, c = _step(mode, out[t], h, c, w)
                ys.append(h)
            results.append(np.stack(ys if d == 'l' else ys[::-1]))
            hs.append(h)
            cs.append(c)
        out = np.concatenate(results, axis=-1)
    return out, [np.stack(hs)] + ([np.stack(cs)] if mode == 'lstm' else [])


@pytest.mark.parametrize('mode', sorted(LAYERS))
def test_matches_numpy_reference(mode):
    layer = _make(mode, 3, num_layers=2, bidirectional=True, dtype='float64')
    x = _sequences((4, 2, 5))
    states = [_sequences(s['shape'], seed=1 + i) for i, s in enumerate(layer.state_info(2))]
    out, new_states = layer(x, states)
    ref_out, ref_states = _reference(mode, layer, x.asnumpy(), [s.asnumpy() for s in states])
    assert_almost_equal(out.asnumpy(), ref_out, rtol=1e-12, atol=1e-12)
    for got, want in zip(new_states, ref_states):
        assert_almost_equal(got.asnumpy(), want, rtol=1e-12, atol=1e-12)


# ---- PyTorch twins ---------------------------------------------------------------------

def _torch_twin(torch, mode, layer, input_size, hidden, num_layers, bidirectional, layout,
                projection_size=None):
    kwargs = dict(num_layers=num_layers, bidirectional=bidirectional,
                  batch_first=layout == 'NTC', dtype=torch.float64)
    if mode == 'lstm':
        twin = torch.nn.LSTM(input_size, hidden, proj_size=projection_size or 0, **kwargs)
    elif mode == 'gru':
        twin = torch.nn.GRU(input_size, hidden, **kwargs)
    else:
        twin = torch.nn.RNN(input_size, hidden, nonlinearity=mode[4:], **kwargs)
    names = {'i2h_weight': 'weight_ih', 'h2h_weight': 'weight_hh', 'i2h_bias': 'bias_ih',
             'h2h_bias': 'bias_hh', 'h2r_weight': 'weight_hr'}
    pairs = []
    with torch.no_grad():
        for key, param in layer._reg_params.items():
            d, i, kind = key[0], int(key[1:key.index('_')]), key[key.index('_') + 1:]
            tp = getattr(twin, '%s_l%d%s' % (names[kind], i, '_reverse' if d == 'r' else ''))
            tp.copy_(torch.from_numpy(param.data().asnumpy()))
            pairs.append((param, tp))
    return twin, pairs


CASES = [  # mode, num_layers, bidirectional, layout, projection_size
    ('lstm', 2, True, 'TNC', None),
    ('lstm', 1, False, 'NTC', None),
    ('lstm', 2, True, 'NTC', 2),
    ('gru', 2, True, 'NTC', None),
    ('gru', 1, False, 'TNC', None),
    ('rnn_tanh', 2, True, 'TNC', None),
    ('rnn_relu', 2, False, 'NTC', None),
]


@pytest.mark.parametrize('mode,num_layers,bidirectional,layout,projection_size', CASES)
def test_twin_pytorch(mode, num_layers, bidirectional, layout, projection_size):
    torch = pytest.importorskip('torch', reason=TORCH_REASON)
    input_size, hidden, batch, steps = 3, 4, 2, 5
    extra = {'projection_size': projection_size} if projection_size else {}
    layer = _make(mode, hidden, num_layers=num_layers, bidirectional=bidirectional,
                  layout=layout, dtype='float64', **extra)
    shape = (batch, steps, input_size) if layout == 'NTC' else (steps, batch, input_size)
    x = _sequences(shape)
    states = [_sequences(s['shape'], seed=1 + i)
              for i, s in enumerate(layer.state_info(batch))]
    layer(x, states)  # completes the deferred input size
    twin, pairs = _torch_twin(torch, mode, layer, input_size, hidden, num_layers,
                              bidirectional, layout, projection_size)

    rng = np.random.RandomState(7)
    for a in [x] + states:
        a.attach_grad()
    with autograd.record():
        out, new_states = layer(x, states)
    heads = [rng.normal(size=a.shape) for a in [out] + new_states]
    autograd.backward([out] + new_states, [nd.array(h, dtype='float64') for h in heads])

    tx = torch.from_numpy(x.asnumpy()).requires_grad_()
    tstates = [torch.from_numpy(s.asnumpy()).requires_grad_() for s in states]
    tout, tnew = twin(tx, tuple(tstates) if mode == 'lstm' else tstates[0])
    tnew = list(tnew) if mode == 'lstm' else [tnew]
    loss = sum((t * torch.from_numpy(h)).sum() for t, h in zip([tout] + tnew, heads))
    loss.backward()

    def same(got, want, what):
        np.testing.assert_allclose(got.asnumpy(), want.detach().numpy(), rtol=1e-10,
                                   atol=1e-10, err_msg=what)
    same(out, tout, 'output')
    for i, (got, want) in enumerate(zip(new_states, tnew)):
        same(got, want, 'state %d' % i)
    same(x.grad, tx.grad, 'input gradient')
    for i, (got, want) in enumerate(zip(states, tstates)):
        same(got.grad, want.grad, 'state %d gradient' % i)
    for param, tp in pairs:
        same(param.grad(), tp.grad, param.name + ' gradient')


def test_float32_follows_float64():
    layer64 = _make('lstm', 4, num_layers=2, bidirectional=True, dtype='float64')
    layer32 = _make('lstm', 4, num_layers=2, bidirectional=True)
    x = _sequences((5, 3, 3))
    layer64(x)
    layer32(x.astype('float32'))
    for p64, p32 in zip(layer64.collect_params().values(), layer32.collect_params().values()):
        p32.set_data(p64.data().astype('float32'))
    outs = []
    for layer, dtype in ((layer64, 'float64'), (layer32, 'float32')):
        xd = x.astype(dtype)
        xd.attach_grad()
        with autograd.record():
            out = layer(xd)
        out.backward()
        assert out.dtype == np.dtype(dtype)
        outs.append((out.asnumpy(), xd.grad.asnumpy(),
                     [p.grad().asnumpy() for p in layer.collect_params().values()]))
    (o64, g64, p64), (o32, g32, p32) = outs
    assert_almost_equal(o32, o64, rtol=1e-5, atol=1e-6)
    assert_almost_equal(g32, g64, rtol=1e-4, atol=1e-5)
    for a, b in zip(p32, p64):
        assert_almost_equal(a, b, rtol=1e-4, atol=1e-5)


# ---- the Gluon contract ----------------------------------------------------------------

def test_names_repr_and_states():
    layer = gluon.rnn.LSTM(10, num_layers=2, bidirectional=True, prefix='lstm0_')
    assert repr(layer) == 'LSTM(None -> 10, TNC, num_layers=2, bidirectional)'
    assert list(layer.collect_params())[:5] == [
        'lstm0_l0_i2h_weight', 'lstm0_l0_h2h_weight', 'lstm0_l0_i2h_bias',
        'lstm0_l0_h2h_bias', 'lstm0_r0_i2h_weight']
    assert '_unfused.1.r_cell.h2h_bias' in layer._collect_params_with_prefix()
    assert repr(gluon.rnn.GRU(3, input_size=2, layout='NTC', dropout=0.5)) == \
        'GRU(2 -> 3, NTC, dropout=0.5)'
    proj = gluon.rnn.LSTM(6, projection_size=2, input_size=3, prefix='p_')
    assert proj.l0_h2r_weight.shape == (2, 6)
    assert proj.l0_h2h_weight.shape == (24, 2)
    h, c = proj.begin_state(batch_size=4, func=nd.ones)
    assert (h.shape, c.shape) == ((1, 4, 2), (1, 4, 6))
    assert h.asnumpy().min() == 1
    assert [s['shape'] for s in gluon.rnn.RNN(5, 3).state_info(2)] == [(3, 2, 5)]


def test_bias_initializer():
    layer = gluon.rnn.LSTM(2, input_size=3, i2h_bias_initializer=mx.init.LSTMBias(1.0))
    layer.initialize()
    assert layer.l0_i2h_bias.data().asnumpy().tolist() == [0, 0, 1, 1, 0, 0, 0, 0]
    assert layer.l0_h2h_bias.data().asnumpy().tolist() == [0] * 8


def test_without_states_returns_output_only():
    layer = _make('gru', 3, num_layers=2)
    x = _sequences((4, 2, 5), 'float32')
    out = layer(x)
    assert isinstance(out, nd.NDArray) and out.shape == (4, 2, 3)
    out2, states = layer(x, layer.begin_state(2))
    assert np.array_equal(out.asnumpy(), out2.asnumpy())
    assert isinstance(states, list) and states[0].shape == (2, 2, 3)
    _, states = layer(x, nd.zeros((2, 2, 3)))  # one state may come bare
    assert states[0].shape == (2, 2, 3)


def _run(layer, x, states=None):
    """Output, final states and gradients of the input and the parameters."""
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        res = layer(x) if states is None else layer(x, states)
        out = res if states is None else res[0]
        (out * out).sum().backward()
    grads = [p.grad().asnumpy() for p in layer.collect_params().values()]
    rest = [] if states is None else [s.asnumpy() for s in res[1]]
    return [out.asnumpy(), x.grad.asnumpy()] + rest + grads


@pytest.mark.parametrize('with_states', [False, True])
def test_hybridized_is_imperative_bit_for_bit(tmp_path, with_states):
    layer = _make('lstm', 4, num_layers=2, bidirectional=True, layout='NTC')
    x = _sequences((2, 5, 3), 'float32')
    states = layer.begin_state(2, func=nd.ones) if with_states else None
    want = _run(layer, x, states)
    layer.hybridize()
    got = _run(layer, x, states)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    got = _run(layer, x, states)  # the replay, too
    for a, b in zip(got, want):
        assert np.array_equal(a, b)

    layer.export(str(tmp_path / 'lstm'))
    graph = json.loads((tmp_path / 'lstm-symbol.json').read_text())
    assert [n['op'] for n in graph['nodes']].count('RNN') == 1
    names = ['data0', 'data1', 'data2']  # the begin states are inputs either way
    block = gluon.SymbolBlock.imports(str(tmp_path / 'lstm-symbol.json'), names,
                                      str(tmp_path / 'lstm-0000.params'))
    if states is None:
        states = layer.begin_state(2)
    res = block(x, *states)
    res = res if isinstance(res, nd.NDArray) else res[0]
    assert np.array_equal(res.asnumpy(), want[0])


def test_hybridized_call_with_and_without_states():
    layer = _make('rnn_tanh', 3)
    layer.hybridize()
    x = _sequences((4, 2, 5), 'float32')
    out = layer(x)
    out2, states = layer(x, layer.begin_state(2))  # traced again: it returns the states
    assert np.array_equal(out.asnumpy(), out2.asnumpy()) and states[0].shape == (1, 2, 3)
    assert isinstance(layer(x), nd.NDArray)


@pytest.mark.parametrize('hybridize', [False, True])
def test_deferred_input_size(hybridize):
    layer = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, layout='NTC')
    layer.initialize()
    if hybridize:
        layer.hybridize()
    assert layer(nd.ones((2, 3, 7))).shape == (2, 3, 8)
    assert layer.l0_i2h_weight.shape == (16, 7) and layer.r0_i2h_weight.shape == (16, 7)
    assert layer.l1_i2h_weight.shape == (16, 8)
    assert repr(layer) == 'LSTM(7 -> 4, NTC, num_layers=2, bidirectional)'


@pytest.mark.parametrize('input_size', [3, 0])
def test_inside_a_hybridized_network(tmp_path, input_size):
    # the layer gets no states: its zero begin states take the batch size from the graph
    def make():
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=input_size,
                                   layout='NTC'))
            net.add(gluon.nn.Dense(2, flatten=False))
        net.initialize(mx.init.Xavier())
        return net
    x = _sequences((2, 5, 3), 'float32')
    mx.random.seed(1)
    net = make()
    want = net(x).asnumpy()
    mx.random.seed(1)
    net = make()
    net.hybridize()
    assert np.array_equal(net(x).asnumpy(), want)
    assert net[0].l0_i2h_weight.shape == (16, 3)
    assert net(_sequences((3, 5, 3), 'float32')).shape == (3, 5, 2)  # another batch size
    net.export(str(tmp_path / 'net'))
    block = gluon.SymbolBlock.imports(str(tmp_path / 'net-symbol.json'), ['data'],
                                      str(tmp_path / 'net-0000.params'))
    assert np.array_equal(block(x).asnumpy(), want)


def test_infer_shape_then_set_data():
    # MXNet's own tests do this: shapes from infer_shape, then data set before first use
    layer = gluon.rnn.GRU(3, num_layers=2, prefix='gru0_')
    layer.initialize()
    x = nd.ones((4, 2, 5))
    layer.infer_shape(x, layer.begin_state(2))
    for p in layer.collect_params().values():
        p.set_data(nd.ones(p.shape) * 0.1)
    assert layer.l0_i2h_weight.shape == (9, 5)
    assert layer(x).shape == (4, 2, 3)


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_sequence_length(mode):
    layer = _make(mode, 3, num_layers=2, bidirectional=True, layout='NTC', dtype='float64',
                  use_sequence_length=True)
    x = _sequences((3, 5, 2))
    lengths = [5, 2, 3]
    states = layer.begin_state(3, func=nd.ones, dtype='float64')
    out, final = layer(x, states, nd.array(lengths, dtype='float64'))
    for n, length in enumerate(lengths):
        alone = LAYERS[mode](3, num_layers=2, bidirectional=True, layout='NTC',
                             dtype='float64', params=layer.collect_params())
        want, want_final = alone(x[n:n + 1, :length], [s[:, n:n + 1] for s in states])
        assert_almost_equal(out[n:n + 1, :length].asnumpy(), want.asnumpy(), rtol=1e-12,
                            atol=1e-12)
        assert not out[n, length:].asnumpy().any()
        for got, expected in zip(final, want_final):
            assert_almost_equal(got[:, n:n + 1].asnumpy(), expected.asnumpy(), rtol=1e-12,
                                atol=1e-12)
    with pytest.raises(MXNetError, match='sequence_length'):
        layer(x)
    layer.hybridize()
    again, _ = layer(x, states, nd.array(lengths, dtype='float64'))
    assert np.array_equal(again.asnumpy(), out.asnumpy())


def test_dropout_only_while_training():
    layer = _make('lstm', 8, num_layers=3, dropout=0.5)
    x = _sequences((6, 4, 3), 'float32')
    plain = layer(x).asnumpy()
    with autograd.predict_mode():
        assert np.array_equal(layer(x).asnumpy(), plain)
    with autograd.record():
        first = layer(x).asnumpy()
        second = layer(x).asnumpy()
    assert not np.array_equal(first, plain) and not np.array_equal(first, second)


def test_training_lowers_the_loss():
    mx.random.seed(0)
    net = gluon.nn.Sequential()
    net.add(gluon.rnn.LSTM(8, layout='NTC'), gluon.nn.Dense(1, flatten=False))
    net.initialize(mx.init.Xavier())
    x = _sequences((4, 6, 2), 'float32')
    y = nd.array(np.cumsum(x.asnumpy()[:, :, :1], axis=1))
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.05})
    loss_fn = gluon.loss.L2Loss()
    losses = []
    for _ in range(15):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(4)
        losses.append(float(loss.mean().asscalar()))
    assert losses[-1] < 0.5 * losses[0], losses


def test_clear_errors():
    with pytest.raises(MXNetError, match='layout'):
        gluon.rnn.LSTM(3, layout='TCN')
    with pytest.raises(MXNetError, match="'relu' or 'tanh'"):
        gluon.rnn.RNN(3, activation='sigmoid')
    layer = _make('lstm', 3, input_size=2)
    with pytest.raises(MXNetError, match='3 dimensions'):
        layer(nd.ones((4, 2)))
    with pytest.raises(MXNetError, match='features'):
        layer(nd.ones((4, 2, 5)))
    with pytest.raises(MXNetError, match='Invalid recurrent state shape'):
        layer(nd.ones((4, 2, 2)), [nd.zeros((1, 3, 3)), nd.zeros((1, 3, 3))])
    with pytest.raises(MXNetError, match='2 begin state'):
        layer(nd.ones((4, 2, 2)), [nd.zeros((1, 2, 3))])


def test_save_and_load_parameters(tmp_path):
    layer = _make('gru', 3, num_layers=2, bidirectional=True)
    x = _sequences((4, 2, 5), 'float32')
    want = layer(x).asnumpy()
    layer.save_parameters(str(tmp_path / 'gru.params'))
    assert '_unfused.1.r_cell.i2h_weight' in nd.load(str(tmp_path / 'gru.params'))
    other = gluon.rnn.GRU(3, num_layers=2, bidirectional=True)
    other.load_parameters(str(tmp_path / 'gru.params'))
    assert np.array_equal(other(x).asnumpy(), want)


def test_state_clip():
    x = _sequences((6, 2, 3), 'float32')
    layer = _make('lstm', 4, state_clip_min=-0.2, state_clip_max=0.2)
    free = gluon.rnn.LSTM(4, params=layer.collect_params())
    _, (_, c) = layer(x, layer.begin_state(2))
    _, (_, c_free) = free(x, free.begin_state(2))
    assert np.abs(c.asnumpy()).max() <= 0.2 + 1e-7 < np.abs(c_free.asnumpy()).max()
    with pytest.raises(MXNetError, match='together'):
        gluon.rnn.LSTM(4, state_clip_min=-1)


def test_cast():
    layer = _make('lstm', 3, input_size=2)
    layer.cast('float64')
    out, states = layer(_sequences((4, 2, 2)), layer.begin_state(2))
    assert out.dtype == np.float64 and states[0].dtype == np.float64


# ---- MXNet 1.9.1 -----------------------------------------------------------------------

MXNET_SIDE = '''
import json, os, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
x = mx.nd.array(np.sin(np.arange(4 * 2 * 3)).reshape(4, 2, 3))
answers = {}
for mode, cls in (('lstm', mx.gluon.rnn.LSTM), ('gru', mx.gluon.rnn.GRU)):
    # minigluon's files, read here
    layer = cls(4, num_layers=2, bidirectional=True)
    layer.load_parameters(os.path.join(folder, 'mg_%s.params' % mode))
    answers['mg_params_' + mode] = layer(x).asnumpy().tolist()
    # MXNet's files, read by minigluon
    mx.random.seed(3)
    layer = cls(4, num_layers=2, bidirectional=True)
    layer.initialize(mx.init.Uniform(0.5))
    layer.hybridize()
    answers['mx_' + mode] = layer(x).asnumpy().tolist()
    layer.save_parameters(os.path.join(folder, 'mx_%s.params' % mode))
    layer.export(os.path.join(folder, 'mx_%s' % mode))
block = mx.gluon.SymbolBlock.imports(os.path.join(folder, 'mg_lstm-symbol.json'),
                                     ['data0', 'data1', 'data2'],
                                     os.path.join(folder, 'mg_lstm-0000.params'))
h = mx.nd.ones((4, 2, 4)) * 0.1
out = block(x, h, h * 2)
answers['mg_export'] = [o.asnumpy().tolist() for o in out]
with open(os.path.join(folder, 'answers.json'), 'w') as f:
    json.dump(answers, f)
'''


def test_files_move_both_ways_with_mxnet(tmp_path, run_mxnet):
    x = nd.array(np.sin(np.arange(4 * 2 * 3)).reshape(4, 2, 3))
    want = {}
    for mode, cls in (('lstm', gluon.rnn.LSTM), ('gru', gluon.rnn.GRU)):
        layer = cls(4, num_layers=2, bidirectional=True)
        layer.initialize(mx.init.Uniform(0.5))
        want[mode] = layer(x).asnumpy()
        layer.save_parameters(str(tmp_path / ('mg_%s.params' % mode)))
    layer = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True)
    layer.initialize(mx.init.Uniform(0.5))
    layer.hybridize()
    h = nd.ones((4, 2, 4)) * 0.1
    exported = layer(x, [h, h * 2])
    layer.export(str(tmp_path / 'mg_lstm'))

    run_mxnet(tmp_path, MXNET_SIDE)
    answers = json.loads((tmp_path / 'answers.json').read_text())
    for mode in ('lstm', 'gru'):
        assert_almost_equal(np.array(answers['mg_params_' + mode]), want[mode],
                            rtol=1e-5, atol=1e-5)
    flat = [exported[0]] + exported[1]
    for got, mine in zip(answers['mg_export'], flat):
        assert_almost_equal(np.array(got), mine.asnumpy(), rtol=1e-5, atol=1e-5)

    for mode, cls in (('lstm', gluon.rnn.LSTM), ('gru', gluon.rnn.GRU)):
        layer = cls(4, num_layers=2, bidirectional=True)
        layer.load_parameters(str(tmp_path / ('mx_%s.params' % mode)))
        assert_almost_equal(layer(x).asnumpy(), np.array(answers['mx_' + mode]),
                            rtol=1e-5, atol=1e-5)
        block = gluon.SymbolBlock.imports(str(tmp_path / ('mx_%s-symbol.json' % mode)),
                                          ['data0', 'data1'] + (['data2'] if mode == 'lstm'
                                                                else []),
                                          str(tmp_path / ('mx_%s-0000.params' % mode)))
        states = layer.begin_state(2)
        assert_almost_equal(block(x, *states).asnumpy(), np.array(answers['mx_' + mode]),
                            rtol=1e-5, atol=1e-5)
    assert os.path.exists(str(tmp_path / 'mx_gru-symbol.json'))
