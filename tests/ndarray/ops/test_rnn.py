"""The fused RNN op against PyTorch twins holding the same weights (float64, 1e-10),
a numpy reference for state clipping, one-sample runs for sequence lengths, and
MXNet 1.9.1 (gradient and float32 checks: op_cases.py)."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError
from minigluon.ndarray.ops.rnn import param_layout

rng = np.random.RandomState(5)
GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}
T, N, C, H = 4, 3, 5, 4


def _flat(weights, mode, layers, dirs, input_size, hidden, proj=None):
    """MXNet's flat vector from ``{(layer, direction): {'wx', 'wh', 'wr', 'bx', 'bh'}}``."""
    slots, size = param_layout(mode, layers, input_size, hidden, dirs == 2, proj)
    flat = np.zeros(size)
    for index, slot in enumerate(slots):
        for key, (offset, shape) in slot.items():
            flat[offset:offset + int(np.prod(shape))] = weights[divmod(index, dirs)][key].ravel()
    return flat


def _random_weights(mode, layers, dirs, input_size, hidden, proj=None, scale=0.5):
    rows, out = GATES[mode] * hidden, proj or hidden
    weights = {}
    for layer in range(layers):
        cols = input_size if layer == 0 else dirs * out
        for d in range(dirs):
            w = {'wx': rng.uniform(-scale, scale, (rows, cols)),
                 'wh': rng.uniform(-scale, scale, (rows, out)),
                 'bx': rng.uniform(-scale, scale, rows), 'bh': rng.uniform(-scale, scale, rows)}
            if proj:
                w['wr'] = rng.uniform(-scale, scale, (proj, hidden))
            weights[layer, d] = w
    return weights


def _run_minigluon(mode, flat, x, h0, c0, heads, lengths=None, **kwargs):
    """Outputs and gradients of ``sum(out * heads[0]) + sum(hy * heads[1]) (+ cy)``."""
    args = [nd.array(a, dtype=x.dtype) for a in (x, flat, h0) + ((c0,) if c0 is not None
                                                                  else ())]
    for a in args:
        a.attach_grad()
    extra = [nd.array(lengths, dtype=x.dtype)] if lengths is not None else []
    with autograd.record():
        outs = nd.RNN(*(args + extra), mode=mode, state_outputs=True,
                      use_sequence_length=lengths is not None, **kwargs)
        loss = sum((o * nd.array(hd, dtype=x.dtype)).sum() for o, hd in zip(outs, heads))
    loss.backward()
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in args]


def _torch_twin(torch, mode, weights, layers, dirs, input_size, hidden, proj=None):
    kwargs = dict(num_layers=layers, bidirectional=dirs == 2, dtype=torch.float64)
    if mode == 'lstm':
        net = torch.nn.LSTM(input_size, hidden, proj_size=proj or 0, **kwargs)
    elif mode == 'gru':
        net = torch.nn.GRU(input_size, hidden, **kwargs)
    else:
        net = torch.nn.RNN(input_size, hidden, nonlinearity=mode[4:], **kwargs)
    names = {'wx': 'weight_ih', 'wh': 'weight_hh', 'bx': 'bias_ih', 'bh': 'bias_hh',
             'wr': 'weight_hr'}
    with torch.no_grad():
        for (layer, d), w in weights.items():
            for key, value in w.items():
                suffix = '_l%d%s' % (layer, '_reverse' if d else '')
                getattr(net, names[key] + suffix).copy_(torch.from_numpy(value))
    return net, names


CONFIGS = [('lstm', 2, 2, None), ('lstm', 1, 1, None), ('lstm', 2, 2, 3), ('gru', 2, 2, None),
           ('gru', 1, 1, None), ('rnn_tanh', 2, 2, None), ('rnn_relu', 2, 1, None)]


@pytest.mark.parametrize('mode,layers,dirs,proj', CONFIGS)
def test_against_pytorch(mode, layers, dirs, proj):
    torch = pytest.importorskip('torch', reason='PyTorch is the reference for RNN')
    weights = _random_weights(mode, layers, dirs, C, H, proj)
    flat = _flat(weights, mode, layers, dirs, C, H, proj)
    out_size = proj or H
    x = rng.randn(T, N, C)
    h0 = rng.randn(layers * dirs, N, out_size)
    c0 = rng.randn(layers * dirs, N, H) if mode == 'lstm' else None
    heads = [rng.randn(T, N, dirs * out_size), rng.randn(*h0.shape)]
    if c0 is not None:
        heads.append(rng.randn(*c0.shape))
    outs, grads = _run_minigluon(mode, flat, x, h0, c0, heads, state_size=H,
                                 num_layers=layers, bidirectional=dirs == 2,
                                 projection_size=proj)

    net, names = _torch_twin(torch, mode, weights, layers, dirs, C, H, proj)
    tx, th0 = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    if c0 is not None:
        tc0 = torch.tensor(c0, requires_grad=True)
        tout, (thy, tcy) = net(tx, (th0, tc0))
        touts, tins = [tout, thy, tcy], [tx, th0, tc0]
    else:
        tout, thy = net(tx, th0)
        touts, tins = [tout, thy], [tx, th0]
    sum((o * torch.from_numpy(hd)).sum() for o, hd in zip(touts, heads)).backward()
    for mine, theirs in zip(outs, touts):
        np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-10, atol=1e-10)
    mine_grads = [grads[0]] + grads[2:]
    for mine, theirs in zip(mine_grads, tins):
        np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-10, atol=1e-10)
    grad_weights = {key: {k: getattr(net, names[k] + '_l%d%s' % (key[0], '_reverse' if key[1]
                                                                     else '')).grad.numpy()
                          for k in w} for key, w in weights.items()}
    np.testing.assert_allclose(grads[1], _flat(grad_weights, mode, layers, dirs, C, H, proj),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize('mode,layers,dirs', [('lstm', 2, 2), ('gru', 1, 2), ('rnn_tanh', 2, 1)])
def test_sequence_length_is_each_sample_run_alone(mode, layers, dirs):
    """Outputs past a sample's length are zero, its states are those of its last valid
    step (the reverse direction starts there), and gradients are those of the prefix."""
    lengths = [4, 2, 0]
    weights = _random_weights(mode, layers, dirs, C, H)
    flat = _flat(weights, mode, layers, dirs, C, H)
    x = rng.randn(T, N, C)
    h0 = rng.randn(layers * dirs, N, H)
    c0 = rng.randn(*h0.shape) if mode == 'lstm' else None
    heads = [rng.randn(T, N, dirs * H), rng.randn(*h0.shape)] + \
        ([rng.randn(*h0.shape)] if c0 is not None else [])
    kwargs = dict(state_size=H, num_layers=layers, bidirectional=dirs == 2)
    outs, grads = _run_minigluon(mode, flat, x, h0, c0, heads, lengths, **kwargs)
    flat_grad = np.zeros_like(flat)
    for n, length in enumerate(lengths):
        one = slice(n, n + 1)
        np.testing.assert_array_equal(outs[0][length:, n], 0)
        np.testing.assert_array_equal(grads[0][length:, n], 0)
        if length == 0:  # no step: the states pass through
            for mine, start, head in zip(outs[1:], (h0, c0), heads[1:]):
                np.testing.assert_array_equal(mine[:, n], start[:, n])
            continue
        alone_outs, alone_grads = _run_minigluon(
            mode, flat, x[:length, one], h0[:, one], None if c0 is None else c0[:, one],
            [heads[0][:length, one]] + [hd[:, one] for hd in heads[1:]], **kwargs)
        np.testing.assert_allclose(outs[0][:length, one], alone_outs[0], rtol=1e-12, atol=1e-12)
        for mine, alone in zip(outs[1:], alone_outs[1:]):
            np.testing.assert_allclose(mine[:, one], alone, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grads[0][:length, one], alone_grads[0], rtol=1e-12,
                                   atol=1e-12)
        for mine, alone in zip(grads[2:], alone_grads[2:]):
            np.testing.assert_allclose(mine[:, one], alone, rtol=1e-12, atol=1e-12)
        flat_grad += alone_grads[1]
    # the empty sample's states receive their head gradients unchanged
    np.testing.assert_array_equal(grads[2][:, 2], heads[1][:, 2])
    np.testing.assert_allclose(grads[1], flat_grad, rtol=1e-10, atol=1e-12)


def _numpy_lstm(x, flat, h0, c0, hidden, low, high):
    """One unidirectional LSTM layer with the cell state clipped at every step."""
    (slot,), _ = param_layout('lstm', 1, x.shape[2], hidden)
    w = {k: flat[o:o + int(np.prod(s))].reshape(s) for k, (o, s) in slot.items()}
    h, c, outs = h0[0], c0[0], []
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for xt in x:
        i, f, g, o = np.split(xt @ w['wx'].T + w['bx'] + h @ w['wh'].T + w['bh'], 4, axis=1)
        c = np.clip(sigmoid(f) * c + sigmoid(i) * np.tanh(g), low, high)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h[None], c[None]


def test_state_clipping_against_numpy():
    weights = _random_weights('lstm', 1, 1, C, H, scale=1.5)
    flat = _flat(weights, 'lstm', 1, 1, C, H)
    x, h0, c0 = rng.randn(T, N, C), rng.randn(1, N, H), rng.randn(1, N, H) * 2
    outs = nd.RNN(nd.array(x, dtype='float64'), nd.array(flat, dtype='float64'),
                  nd.array(h0, dtype='float64'), nd.array(c0, dtype='float64'), mode='lstm',
                  state_size=H, num_layers=1, state_outputs=True, lstm_state_clip_min=-0.6,
                  lstm_state_clip_max=0.4)
    expected = _numpy_lstm(x, flat, h0, c0, H, -0.6, 0.4)
    assert (np.abs(expected[2]) >= 0.4).any()  # the clip acts
    for mine, ref in zip(outs, expected):
        np.testing.assert_allclose(mine.asnumpy(), ref, rtol=1e-12, atol=1e-12)


def test_state_clip_nan_keeps_nan_out_of_the_cell():
    flat = np.zeros(param_layout('lstm', 1, 2, 2)[1])
    x = np.zeros((1, 1, 2))
    c0 = np.array([[[np.nan, 0.5]]])
    args = [nd.array(a, dtype='float64') for a in (x, flat, np.zeros((1, 1, 2)), c0)]
    kwargs = dict(mode='lstm', state_size=2, num_layers=1, state_outputs=True,
                  lstm_state_clip_min=-1.0, lstm_state_clip_max=1.0)
    assert np.isnan(nd.RNN(*args, **kwargs)[2].asnumpy()[0, 0, 0])
    cy = nd.RNN(*args, lstm_state_clip_nan=True, **kwargs)[2].asnumpy()
    np.testing.assert_array_equal(cy, [[[-1.0, 0.25]]])  # f = 0.5: 0.5 * 0.5


def test_dropout_between_layers_only_while_training():
    mode, layers = 'rnn_tanh', 2
    flat = _flat(_random_weights(mode, layers, 1, C, H), mode, layers, 1, C, H)
    args = [nd.array(a) for a in (rng.randn(T, N, C), flat, np.zeros((layers, N, H)))]
    kwargs = dict(mode=mode, state_size=H, num_layers=layers, p=0.5)
    plain = nd.RNN(*args, mode=mode, state_size=H, num_layers=layers).asnumpy()
    np.testing.assert_array_equal(nd.RNN(*args, **kwargs).asnumpy(), plain)
    with autograd.train_mode():
        dropped = nd.RNN(*args, **kwargs).asnumpy()
    assert not np.allclose(dropped, plain)
    # one layer: nothing between layers to drop
    one = [args[0], nd.array(_flat(_random_weights(mode, 1, 1, C, H), mode, 1, 1, C, H)),
           nd.zeros((1, N, H))]
    with autograd.train_mode():
        np.testing.assert_array_equal(nd.RNN(*one, mode=mode, state_size=H, num_layers=1,
                                             p=0.5).asnumpy(),
                                      nd.RNN(*one, mode=mode, state_size=H,
                                             num_layers=1).asnumpy())


def test_outputs_and_positional_sequence_length():
    flat = nd.array(_flat(_random_weights('gru', 1, 1, C, H), 'gru', 1, 1, C, H))
    x, h0 = nd.array(rng.randn(T, N, C)), nd.zeros((1, N, H))
    out = nd.RNN(x, flat, h0, mode='gru', state_size=H, num_layers=1)
    assert isinstance(out, nd.NDArray) and out.shape == (T, N, H)
    # MXNet's layers pass sequence_length right after the states
    lengths = nd.array([T, 1, 2])
    out, hy = nd.RNN(x, flat, h0, lengths, mode='gru', state_size=H, num_layers=1,
                     use_sequence_length=True, state_outputs=True)
    np.testing.assert_array_equal(out.asnumpy()[1:, 1], 0)
    np.testing.assert_allclose(hy.asnumpy()[0, 2], out.asnumpy()[1, 2], rtol=1e-6)


@pytest.mark.parametrize('kwargs,message', [
    (dict(mode='lstm', state_size=H, num_layers=2), 'parameters must be a vector of'),
    (dict(mode='peephole', state_size=H, num_layers=1), 'unknown mode'),
    (dict(mode='gru', state_size=H, num_layers=1, projection_size=2), 'only supported for'),
    (dict(mode='lstm', state_size=H, num_layers=1, lstm_state_clip_min=0.0), 'together'),
])
def test_errors_say_what_is_wrong(kwargs, message):
    size = param_layout('lstm', 1, C, H)[1]
    args = [nd.zeros((T, N, C)), nd.zeros(size), nd.zeros((1, N, H)), nd.zeros((1, N, H))]
    with pytest.raises(MXNetError, match=message):
        nd.RNN(*args, **kwargs)


_MXNET_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx

autograd, nd = mx.autograd, mx.nd

rng = np.random.RandomState(0)
T, N, C, H = 5, 3, 4, 6
results = {}
for mode, layers, bidirectional, lengths in [
        ('lstm', 2, True, None), ('gru', 2, True, None), ('rnn_tanh', 1, False, None),
        ('rnn_relu', 2, False, None), ('lstm', 1, False, [5, 2, 3])]:
    dirs = 2 if bidirectional else 1
    kwargs = dict(state_size=H, num_layers=layers, bidirectional=bidirectional, mode=mode)
    size = mx.sym.RNN(mx.sym.var('x'), mx.sym.var('p'), mx.sym.var('h'), mx.sym.var('c'),
                      **kwargs).infer_shape(x=(T, N, C))[0][1][0] if mode == 'lstm' else \\
        mx.sym.RNN(mx.sym.var('x'), mx.sym.var('p'), mx.sym.var('h'),
                   **kwargs).infer_shape(x=(T, N, C))[0][1][0]
    args = [nd.array(rng.randn(T, N, C)), nd.array(rng.uniform(-0.4, 0.4, size)),
            nd.array(rng.randn(layers * dirs, N, H))]
    if mode == 'lstm':
        args.append(nd.array(rng.randn(layers * dirs, N, H)))
    for a in args:
        a.attach_grad()
    heads = [rng.randn(T, N, dirs * H)] + [rng.randn(layers * dirs, N, H)] * (len(args) - 2)
    if lengths:  # MXNet's CPU kernel reads no lengths: only the valid prefix is compared
        extra = [nd.array(lengths)]
        kwargs['use_sequence_length'] = True
    else:
        extra = []
    with autograd.record():
        outs = nd.RNN(*(args + extra), state_outputs=True, **kwargs)
        loss = sum((o * nd.array(hd)).sum() for o, hd in zip(outs, heads))
    loss.backward()
    key = '%s-%d-%d-%s' % (mode, layers, dirs, bool(lengths))
    values = [o.asnumpy() for o in outs]
    if lengths:
        values = [np.concatenate([values[0][:k, n].ravel() for n, k in enumerate(lengths)])]
    else:
        values += [a.grad.asnumpy() for a in args]
    results[key] = [v.ravel().tolist() for v in values]
json.dump(results, open(sys.argv[1] + '/rnn.json', 'w'))
'''


def test_same_answers_as_mxnet(answers_of_both):
    theirs, mine = answers_of_both(_MXNET_SCRIPT, 'rnn.json')
    assert sorted(theirs) == sorted(mine)
    for key in theirs:
        for a, b in zip(theirs[key], mine[key]):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5, err_msg=key)


_GRAPH_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx

folder = sys.argv[1]
rng = np.random.RandomState(1)
data, params, h, c = (mx.sym.var(n) for n in ('data', 'params', 'h', 'c'))
net = mx.sym.RNN(data, params, h, c, state_size=3, num_layers=2, bidirectional=True,
                 mode='lstm', state_outputs=True, name='rnn')
arg_shapes, out_shapes, _ = net.infer_shape(data=(4, 2, 5))
net.save(folder + '/mine-symbol.json')
loaded = mx.sym.load(folder + '/other-symbol.json') if len(sys.argv) > 2 else net
args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s))
        for n, s in zip(net.list_arguments(), arg_shapes)}
outs = loaded.bind(mx.cpu(), args).forward()
json.dump({'outputs': loaded.list_outputs(), 'arguments': loaded.list_arguments(),
           'arg_shapes': arg_shapes, 'out_shapes': out_shapes,
           'values': [o.asnumpy().ravel().tolist() for o in outs]},
          open(folder + '/graph.json', 'w'))
'''


def test_one_node_graph_moves_both_ways_with_mxnet(tmp_path, run_mxnet, run_minigluon):
    """Each side saves a graph with one RNN node; the other loads and runs it."""
    script = _GRAPH_SCRIPT
    for side, run in (('mxnet', run_mxnet), ('minigluon', run_minigluon)):
        (tmp_path / side).mkdir()
        run(tmp_path / side, script)
    results = {}
    for side, other, run in (('mxnet', 'minigluon', run_mxnet),
                             ('minigluon', 'mxnet', run_minigluon)):
        folder = tmp_path / (side + '-loads')
        folder.mkdir()
        (folder / 'other-symbol.json').write_text(
            (tmp_path / other / 'mine-symbol.json').read_text())
        run(folder, script.replace("len(sys.argv) > 2", "True"))
        results[side] = json.loads((folder / 'graph.json').read_text())
    mxnet, mine = results['mxnet'], results['minigluon']
    assert mine['outputs'] == mxnet['outputs'] == ['rnn_output', 'rnn_state_output',
                                                   'rnn_statecell_output']
    assert mine['arguments'] == mxnet['arguments'] == ['data', 'params', 'h', 'c']
    assert mine['arg_shapes'] == mxnet['arg_shapes']
    assert mine['out_shapes'] == mxnet['out_shapes'] == [[4, 2, 6], [4, 2, 3], [4, 2, 3]]
    for a, b in zip(mxnet['values'], mine['values']):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_symbol_infers_parameter_and_state_shapes():
    data, lengths = mx.sym.var('data'), mx.sym.var('lengths')
    net = mx.sym.RNN(data, mx.sym.var('params'), mx.sym.var('h'), lengths, state_size=4,
                     num_layers=1, mode='gru', use_sequence_length=True, state_outputs=True,
                     name='gru')
    assert net.list_arguments() == ['data', 'params', 'h', 'lengths']
    assert net.list_outputs() == ['gru_output', 'gru_state_output']
    args, outs, _ = net.infer_shape(data=(5, 3, 7))
    assert args == [(5, 3, 7), (3 * 4 * (7 + 4 + 2),), (1, 3, 4), (3,)]
    assert outs == [(5, 3, 4), (1, 3, 4)]


def test_compiled_lstm_steps_match_numpys(monkeypatch):
    """float32 with the compiled gate kernels against float64 numpy: as close as numpy's
    own float32 path is."""
    from minigluon.ndarray.ops import compiled, rnn as rnn_op
    if not compiled.enabled():
        pytest.skip('numba is not installed or MINIGLUON_CPU_KERNELS=numpy')
    weights = _random_weights('lstm', 2, 2, C, H)
    flat = _flat(weights, 'lstm', 2, 2, C, H)
    x, h0, c0 = rng.randn(T, N, C), rng.randn(4, N, H), rng.randn(4, N, H)
    heads = [rng.randn(T, N, 2 * H), rng.randn(4, N, H), rng.randn(4, N, H)]
    kwargs = dict(state_size=H, num_layers=2, bidirectional=True)
    exact = _run_minigluon('lstm', flat, x, h0, c0, heads, **kwargs)
    used = []
    real = rnn_op._kernels
    monkeypatch.setattr(rnn_op, '_kernels', lambda *a: used.append(real(*a)) or used[-1])
    fast = _run_minigluon('lstm', flat.astype(np.float32), x.astype(np.float32),
                          h0.astype(np.float32), c0.astype(np.float32), heads, **kwargs)
    assert used and used[0] is not None
    for a, b in zip(fast[0] + fast[1], exact[0] + exact[1]):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5 * np.abs(b).max())


SPLIT_CONFIGS = [('lstm', 2, 2, None, {}), ('lstm', 1, 1, None, {}), ('lstm', 2, 1, 3, {}),
                 ('gru', 2, 2, None, {}), ('gru', 1, 1, None, {}), ('rnn_relu', 2, 1, None, {}),
                 ('lstm', 2, 2, None, {'lengths': [4, 2, 0]}),
                 ('gru', 1, 2, None, {'lengths': [1, 4, 3]}),
                 ('lstm', 1, 1, None, {'lstm_state_clip_min': -0.3, 'lstm_state_clip_max': 0.3}),
                 ('lstm', 3, 1, None, {'p': 0.5})]


def _rnn_everything(mode, layers, dirs, proj, options, dtype):
    """Outputs, states and every gradient of one RNN call on fixed random inputs (drawn
    afresh from seed 3, so two calls see the same, dropout masks included)."""
    local = np.random.RandomState(3)
    options = dict(options)
    lengths = options.pop('lengths', None)
    out_size = proj or H
    weights = {}
    for layer in range(layers):
        for d in range(dirs):
            cols = C if layer == 0 else dirs * out_size
            weights[layer, d] = {
                'wx': local.uniform(-.5, .5, (GATES[mode] * H, cols)),
                'wh': local.uniform(-.5, .5, (GATES[mode] * H, out_size)),
                'bx': local.uniform(-.5, .5, GATES[mode] * H),
                'bh': local.uniform(-.5, .5, GATES[mode] * H)}
            if proj:
                weights[layer, d]['wr'] = local.uniform(-.5, .5, (proj, H))
    flat = _flat(weights, mode, layers, dirs, C, H, proj).astype(dtype)
    x = local.randn(T, N, C).astype(dtype)
    h0 = local.randn(layers * dirs, N, out_size).astype(dtype)
    c0 = local.randn(layers * dirs, N, H).astype(dtype) if mode == 'lstm' else None
    heads = [local.randn(T, N, dirs * out_size), local.randn(*h0.shape)] + \
        ([local.randn(*c0.shape)] if c0 is not None else [])
    mx.random.seed(11)
    with autograd.train_mode():
        outs, grads = _run_minigluon(mode, flat, x, h0, c0, heads, lengths, state_size=H,
                                     num_layers=layers, bidirectional=dirs == 2,
                                     projection_size=proj, **options)
    return outs + grads


@pytest.mark.parametrize('mode,layers,dirs,proj,options', SPLIT_CONFIGS, ids=str)
def test_steps_in_chunks_and_batch_parts_on_threads_compute_what_one_thread_does(
        threads, monkeypatch, mode, layers, dirs, proj, options):
    """On several threads the op runs as tasks over chunks of steps and parts of the
    batch (here one step per chunk and one sample per part, as many as fit): the
    numbers are one thread's, to the rounding of GEMMs over fewer rows."""
    from minigluon.ndarray.ops import rnn as rnn_op
    threads(1)
    one = {dtype: _rnn_everything(mode, layers, dirs, proj, options, dtype)
           for dtype in ('float64', 'float32')}
    threads(4)
    monkeypatch.setattr(rnn_op, 'CHUNK_ROWS', 1)
    monkeypatch.setattr(rnn_op, 'PART_ROWS', 1)
    chunks, parts = rnn_op._splits(np, rnn_op._Config(
        (T, N, C), H, layers, dirs == 2, mode, 0, proj, None, None, False))
    assert len(chunks) == T and len(parts) == min(N, -(-4 // (layers * dirs)))
    for dtype, tolerance in (('float64', 1e-12), ('float32', 2e-6)):
        split = _rnn_everything(mode, layers, dirs, proj, options, dtype)
        for a, b in zip(split, one[dtype]):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=0, atol=tolerance * max(1, abs(b).max()))
