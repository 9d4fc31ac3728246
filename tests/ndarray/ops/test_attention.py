"""The interleaved attention matmuls against the reshapes and batch_dots that MXNet's
documentation gives for them, in graphs, and against MXNet 1.9.1 (gradients:
op_cases.py)."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

rng = np.random.RandomState(11)
HEADS, DIM, BATCH, LQ, LK = 3, 4, 2, 5, 6


def _heads(x, heads, parts, part):
    """Part ``part`` of each head of (length, batch, units) as (batch*heads, length, dim)."""
    length, batch, units = x.shape
    x = x.reshape(length, batch, heads, parts, units // (heads * parts))[:, :, :, part]
    return x.transpose(1, 2, 0, 3).reshape(batch * heads, length, -1)


def _joined(x, batch):
    bh, length, dim = x.shape
    return x.reshape(batch, bh // batch, length, dim).transpose(2, 0, 1, 3).reshape(
        length, batch, -1)


def test_selfatt_matches_the_composition():
    qkv = rng.rand(LQ, BATCH, 3 * HEADS * DIM)
    att = rng.rand(BATCH * HEADS, LQ, LQ)
    scores = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv, dtype='float64'),
                                                      heads=HEADS)
    q, k, v = (_heads(qkv, HEADS, 3, i) for i in range(3))
    np.testing.assert_allclose(scores.asnumpy(), q @ k.transpose(0, 2, 1) / np.sqrt(DIM),
                               rtol=1e-12)
    out = nd.contrib.interleaved_matmul_selfatt_valatt(nd.array(qkv, dtype='float64'),
                                                       nd.array(att, dtype='float64'),
                                                       heads=HEADS)
    np.testing.assert_allclose(out.asnumpy(), _joined(att @ v, BATCH), rtol=1e-12)


def test_encdec_matches_the_composition():
    q_in = rng.rand(LQ, BATCH, HEADS * DIM)
    kv = rng.rand(LK, BATCH, 2 * HEADS * DIM)
    att = rng.rand(BATCH * HEADS, LQ, LK)
    scores = nd.contrib.interleaved_matmul_encdec_qk(nd.array(q_in, dtype='float64'),
                                                     nd.array(kv, dtype='float64'), heads=HEADS)
    q, k, v = _heads(q_in, HEADS, 1, 0), _heads(kv, HEADS, 2, 0), _heads(kv, HEADS, 2, 1)
    assert scores.shape == (BATCH * HEADS, LQ, LK)
    np.testing.assert_allclose(scores.asnumpy(), q @ k.transpose(0, 2, 1) / np.sqrt(DIM),
                               rtol=1e-12)
    out = nd.contrib.interleaved_matmul_encdec_valatt(nd.array(kv, dtype='float64'),
                                                      nd.array(att, dtype='float64'),
                                                      heads=HEADS)
    assert out.shape == (LQ, BATCH, HEADS * DIM)
    np.testing.assert_allclose(out.asnumpy(), _joined(att @ v, BATCH), rtol=1e-12)


def test_graph_of_self_attention_runs_and_differentiates():
    qkv = mx.sym.var('qkv')
    scores = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=HEADS)
    out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, mx.sym.softmax(scores),
                                                           heads=HEADS)
    assert out.infer_shape(qkv=(LQ, BATCH, 3 * HEADS * DIM))[1] == [(LQ, BATCH, HEADS * DIM)]
    assert scores.tojson().count('_contrib_interleaved_matmul_selfatt_qk') == 1
    data = nd.array(rng.rand(LQ, BATCH, 3 * HEADS * DIM))
    exe = out.simple_bind(mx.cpu(), qkv=data.shape)
    exe.arg_dict['qkv'][:] = data
    exe.forward(is_train=True)
    exe.backward(nd.ones(exe.outputs[0].shape))
    # the same through imperative calls
    x = data.copy()
    x.attach_grad()
    with mx.autograd.record():
        s = nd.contrib.interleaved_matmul_selfatt_qk(x, heads=HEADS)
        y = nd.contrib.interleaved_matmul_selfatt_valatt(x, nd.softmax(s), heads=HEADS)
    y.backward(nd.ones(y.shape))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), y.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict['qkv'].asnumpy(), x.grad.asnumpy(), rtol=1e-5)


def test_shapes_that_do_not_split_say_so():
    with pytest.raises(MXNetError, match='do not split into heads=4'):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.ones((2, 1, 18)), heads=4)
    with pytest.raises(MXNetError, match='3-d'):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.ones((2, 18)), heads=3)
    with pytest.raises(MXNetError, match='attention must have shape'):
        nd.contrib.interleaved_matmul_selfatt_valatt(nd.ones((2, 1, 18)), nd.ones((3, 2, 3)),
                                                     heads=3)
    with pytest.raises(MXNetError, match='half its units'):
        nd.contrib.interleaved_matmul_encdec_qk(nd.ones((2, 1, 6)), nd.ones((3, 1, 6)),
                                                heads=3)


_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
nd, autograd = mx.nd, mx.autograd
c = nd.contrib
rng = np.random.RandomState(0)
H, D, B, LQ, LK = %d, %d, %d, %d, %d
cases = {
    'selfatt_qk': (lambda a: c.interleaved_matmul_selfatt_qk(a, heads=H), [(LQ, B, 3 * H * D)]),
    'selfatt_valatt': (lambda a, t: c.interleaved_matmul_selfatt_valatt(a, t, heads=H),
                       [(LQ, B, 3 * H * D), (B * H, LQ, LQ)]),
    'encdec_qk': (lambda q, kv: c.interleaved_matmul_encdec_qk(q, kv, heads=H),
                  [(LQ, B, H * D), (LK, B, 2 * H * D)]),
    'encdec_valatt': (lambda kv, t: c.interleaved_matmul_encdec_valatt(kv, t, heads=H),
                      [(LK, B, 2 * H * D), (B * H, LQ, LK)]),
}
out = {}
for name, (fn, shapes) in sorted(cases.items()):
    args = [nd.array(rng.rand(*s)) for s in shapes]
    for a in args:
        a.attach_grad()
    with autograd.record():
        y = fn(*args)
    y.backward(nd.array(rng.rand(*y.shape)))
    out[name] = [y.asnumpy().tolist()] + [a.grad.asnumpy().tolist() for a in args]
json.dump(out, open(sys.argv[1] + '/attention.json', 'w'))
''' % (HEADS, DIM, BATCH, LQ, LK)


def test_values_and_gradients_match_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'attention.json')
    assert sorted(theirs) == sorted(ours)
    for name in sorted(theirs):
        for k, (want, got) in enumerate(zip(theirs[name], ours[name])):
            np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6,
                                       err_msg='%s, %s' % (name, 'output' if k == 0 else
                                                           'gradient %d' % (k - 1)))
