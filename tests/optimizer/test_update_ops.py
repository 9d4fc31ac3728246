"""Each optimizer that MXNet gives an update op (``nd.sgd_mom_update``, ``nd.adam_update``,
...) and that op compute the same numbers, bit for bit: over several steps, with weight
decay, gradient rescaling, clipping on and off, per-parameter lr_mult/wd_mult, in float32
and float64, and through the float32 master copy of a float16 weight."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd

RESCALE, CLIP, WD, LR = 0.3, 0.4, 0.02, 0.05
LR_MULT, WD_MULT = 0.7, 3.0


def _adam_lr(opt, lr, t):
    """Adam's bias correction, which MXNet's class folds into the op's ``lr``."""
    return lr * math.sqrt(1 - opt.beta2 ** t) / (1 - opt.beta1 ** t)


# (optimizer, its arguments, op, the op's hyper-parameters given (optimizer, lr, t), and
# the op's learning rate when the optimizer changes it per step)
CASES = [
    ('sgd', {}, 'sgd_update', lambda o, lr, t: {}),
    ('sgd', dict(momentum=0.9), 'sgd_mom_update', lambda o, lr, t: dict(momentum=0.9)),
    ('ccsgd', dict(momentum=0.8), 'sgd_mom_update', lambda o, lr, t: dict(momentum=0.8)),
    ('nag', {}, 'sgd_update', lambda o, lr, t: {}),
    ('nag', dict(momentum=0.9), 'nag_mom_update', lambda o, lr, t: dict(momentum=0.9)),
    ('signum', dict(momentum=0.0), 'signsgd_update', lambda o, lr, t: {}),
    ('signum', dict(momentum=0.9, wd_lh=0.05), 'signum_update',
     lambda o, lr, t: dict(momentum=0.9, wd_lh=0.05)),
    ('adam', dict(learning_rate=LR, beta1=0.8), 'adam_update',
     lambda o, lr, t: dict(lr=_adam_lr(o, lr, t), beta1=0.8, beta2=0.999, epsilon=1e-8)),
    ('rmsprop', dict(learning_rate=LR, gamma1=0.8), 'rmsprop_update',
     lambda o, lr, t: dict(gamma1=0.8, epsilon=1e-8)),
    ('rmsprop', dict(learning_rate=LR, clip_weights=0.9), 'rmsprop_update',
     lambda o, lr, t: dict(gamma1=0.9, epsilon=1e-8, clip_weights=0.9)),
    ('rmsprop', dict(learning_rate=LR, centered=True, gamma2=0.7), 'rmspropalex_update',
     lambda o, lr, t: dict(gamma1=0.9, gamma2=0.7, epsilon=1e-8)),
    ('ftrl', dict(learning_rate=LR, lamda1=0.01, beta=0.5), 'ftrl_update',
     lambda o, lr, t: dict(lamda1=0.01, beta=0.5)),
    ('ftml', dict(learning_rate=LR, beta1=0.7), 'ftml_update',
     lambda o, lr, t: dict(t=t, beta1=0.7, beta2=0.999, epsilon=1e-8)),
]


def _flat(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [s for part in state for s in _flat(part)]
    return [state]


def _run_both(name, kwargs, op_name, hyper, dtype, clip, ctx):
    """Four updates of one weight by the optimizer and by the op; returns both weights
    and both lists of states (with the float32 master copy, for float16 weights)."""
    rng = np.random.RandomState(7)
    w0 = rng.normal(size=(6, 5))
    grads = [rng.normal(size=(6, 5)) * 3 for _ in range(4)]
    mixed = dtype == 'float16'
    opt = mx.optimizer.create(name, wd=WD, rescale_grad=RESCALE, clip_gradient=clip,
                              multi_precision=mixed,
                              param_dict={0: SimpleNamespace(lr_mult=LR_MULT, wd_mult=WD_MULT)},
                              **kwargs)
    base_lr = kwargs.get('learning_rate', 0.01)
    weight = nd.array(w0, ctx=ctx, dtype=dtype)
    state = opt.create_state_multi_precision(0, weight)
    inner = state
    if mixed:
        master, inner = state if opt.master_copy_first else (state[1], state[0])
    # the op's own weight (a float32 master for a float16 weight) and zero states
    target = weight.astype('float32') if mixed else weight.copy()
    op_states = [nd.zeros(s.shape, ctx=ctx, dtype=s.dtype) for s in _flat(inner)]
    op = getattr(nd, op_name)
    clip_key = 'clip_grad' if op_name == 'ftml_update' else 'clip_gradient'
    for t, g in enumerate(grads, 1):
        grad = nd.array(g, ctx=ctx, dtype=dtype)
        opt.update_multi_precision(0, weight, grad, state)
        lr = base_lr * LR_MULT
        params = dict(lr=lr, wd=WD * WD_MULT, rescale_grad=RESCALE)
        if clip is not None:
            params[clip_key] = clip
        params.update(hyper(opt, lr, t))
        op(target, grad.astype('float32') if mixed else grad, *op_states, out=target,
           **params)
    op_weight = target.astype(dtype) if mixed else target
    if mixed:
        return weight, op_weight, _flat(inner) + [master], op_states + [target]
    return weight, op_weight, _flat(inner), op_states


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('clip', [None, CLIP])
@pytest.mark.parametrize('name,kwargs,op_name,hyper', CASES,
                         ids=['%s-%s' % (c[0], c[2]) for c in CASES])
def test_optimizer_and_its_update_op_agree_bit_for_bit(name, kwargs, op_name, hyper, dtype,
                                                       clip, ctx):
    weight, op_weight, class_states, op_states = _run_both(name, kwargs, op_name, hyper, dtype,
                                                           clip, ctx)
    assert weight.dtype == op_weight.dtype
    assert np.array_equal(weight.asnumpy(), op_weight.asnumpy())
    assert len(class_states) == len(op_states)
    for ours, theirs in zip(class_states, op_states):
        assert ours.dtype == theirs.dtype
        assert np.array_equal(ours.asnumpy(), theirs.asnumpy())


def test_clip_gradient_follows_mxnet():
    """The ops clip when ``clip_gradient >= 0`` (0 clips every gradient to 0); the
    optimizers pass it on only when set and non-zero, so None and 0 clip nothing there."""
    w, g = nd.array([1.0, 1.0]), nd.array([2.0, -2.0])
    assert nd.sgd_update(w, g, lr=0.5, clip_gradient=0).asnumpy().tolist() == [1.0, 1.0]
    assert nd.sgd_update(w, g, lr=0.5, clip_gradient=-1).asnumpy().tolist() == [0.0, 2.0]
    assert nd.sgd_update(w, g, lr=0.5, clip_gradient=1).asnumpy().tolist() == [0.5, 1.5]
    for clip in (None, 0, -2.0):
        weight = nd.array([1.0, 1.0])
        mx.optimizer.SGD(learning_rate=0.5, clip_gradient=clip).update(0, weight, g, None)
        assert weight.asnumpy().tolist() == [0.0, 2.0]
