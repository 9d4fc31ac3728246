"""``mx.optimizer.LARS`` against a numpy reference of MXNet 1.x's formula, and against
MXNet 1.9.1."""
import numpy as np

import minigluon as mx
from minigluon import nd


def _reference(weights, grads, names, steps, lr, momentum, wd, eta, eps, rescale):
    """MXNet's LARS, step by step in float64: per layer ``lr * eta * |w| / (|g| * rescale
    + wd * |w| + eps)`` (biases keep ``lr``, only ``*_weight`` is decayed), then SGD with
    momentum."""
    weights = [w.copy() for w in weights]
    moms = [np.zeros_like(w) for w in weights]
    for step in range(steps):
        for i, name in enumerate(names):
            w, g = weights[i], grads[step][i]
            layer_wd = wd if name.endswith('_weight') else 0.0
            layer_lr = lr
            w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(g)
            if not name.endswith('bias') and w_norm > 0 and g_norm > 0:
                layer_lr = lr * eta * w_norm / (g_norm * rescale + layer_wd * w_norm + eps)
            moms[i] = momentum * moms[i] - layer_lr * layer_wd * w - layer_lr * rescale * g
            weights[i] = w + moms[i]
    return weights


def test_lars_follows_mxnet_s_formula():
    rng = np.random.RandomState(0)
    names = ['dense0_weight', 'dense0_bias']
    weights = [rng.randn(3, 4), rng.randn(3)]
    grads = [[rng.randn(3, 4), rng.randn(3)] for _ in range(3)]
    opt = mx.optimizer.create('lars', learning_rate=0.1, momentum=0.9, wd=0.01, eta=0.02,
                              eps=1e-6, rescale_grad=0.5,
                              param_idx2name=dict(enumerate(names)))
    arrays = [nd.array(w, dtype='float64') for w in weights]
    states = [opt.create_state(i, w) for i, w in enumerate(arrays)]
    for step in range(3):
        for i in range(2):
            opt.update(i, arrays[i], nd.array(grads[step][i], dtype='float64'), states[i])
    want = _reference(weights, grads, names, 3, 0.1, 0.9, 0.01, 0.02, 1e-6, 0.5)
    for got, expected in zip(arrays, want):
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5)
    assert isinstance(opt, mx.optimizer.LARS) and opt.wd_mult == {'dense0_bias': 0.0}


_SCRIPT = """
import json, sys
import numpy as np
import mxnet as mx
rng = np.random.RandomState(0)
names = {0: 'fc_weight', 1: 'fc_bias', 2: 'bn_gamma'}
shapes = [(4, 3), (4,), (3,)]
out = {}
for together in (False, True):
    opt = mx.optimizer.LARS(learning_rate=0.2, momentum=0.9, wd=0.01, eta=0.05, eps=1e-4,
                            rescale_grad=0.25, param_idx2name=names,
                            lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5))
    weights = [mx.nd.array(rng.randn(*s)) for s in shapes]
    states = [opt.create_state_multi_precision(i, w) for i, w in enumerate(weights)]
    for step in range(4):
        grads = [mx.nd.array(rng.randn(*s)) for s in shapes]
        if together:
            opt.update_multi_precision([0, 1, 2], weights, grads, states)
        else:
            for i in range(3):
                opt.update_multi_precision(i, weights[i], grads[i], states[i])
    out[str(together)] = [w.asnumpy().tolist() for w in weights]
json.dump(out, open(sys.argv[1] + '/lars.json', 'w'))
"""


def test_lars_agrees_with_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'lars.json')
    for key in theirs:
        for got, want in zip(ours[key], theirs[key]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=key)
