"""Helpers for Gluon tests: a float64 gradient check of whole Blocks."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.test_utils import assert_almost_equal


def check_block_gradient(block, inputs, train=True, seed=None, samples=None, params=None,
                         eps=1e-6, rtol=1e-5, atol=1e-7):
    """Compare autograd gradients of ``sum(block(*inputs) * head)`` with central differences.

    ``block`` must already hold float64 parameters on cpu. ``inputs`` are numpy arrays;
    floating ones are differentiated too. ``params`` names the parameters to check (all
    with a gradient by default); ``samples`` checks that many random entries of each
    array instead of all of them. ``seed`` reseeds before every forward pass, so a
    random layer (Dropout) draws the same mask each time. Returns the forward output.
    """
    rng = np.random.RandomState(0)
    xs = [nd.array(a, dtype=a.dtype) for a in inputs]
    for x in xs:
        if x.dtype in (np.float32, np.float64):
            x.attach_grad()
    all_params = block.collect_params()
    if params is None:
        params = [p for p in all_params.values() if p.grad_req != 'null']
    else:
        params = [all_params[name] for name in params]

    def forward():
        if seed is not None:
            mx.random.seed(seed)
        return block(*xs)

    with autograd.record(train_mode=train):
        out = forward()
    head = rng.normal(size=out.shape)
    out.backward(nd.array(head, dtype=out.dtype))

    def objective():
        with autograd.pause(train_mode=train):
            return float((forward().asnumpy().astype(np.float64) * head).sum())

    targets = [(x._data, x.grad.asnumpy(), 'input %d' % i) for i, x in enumerate(xs)
               if x.grad is not None]
    targets += [(p.data()._data, p.grad().asnumpy(), p.name) for p in params]
    for raw, analytic, label in targets:
        flat, analytic = raw.reshape(-1), analytic.reshape(-1)
        assert np.shares_memory(flat, raw)
        picks = range(flat.size) if samples is None else \
            rng.choice(flat.size, min(samples, flat.size), replace=False)
        for i in picks:
            old = flat[i]
            flat[i] = old + eps
            plus = objective()
            flat[i] = old - eps
            minus = objective()
            flat[i] = old
            assert_almost_equal(analytic[i], (plus - minus) / (2 * eps), rtol=rtol, atol=atol,
                                names=('autograd d/d %s[%d]' % (label, i),
                                       'numeric d/d %s[%d]' % (label, i)))
    return out


@pytest.fixture
def block_gradient():
    """``check_block_gradient`` for tests of layers and models."""
    return check_block_gradient
