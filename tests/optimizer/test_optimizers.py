"""Every optimizer against a plain-numpy transcription of its published update rule.

The references below are written from the papers / MXNet's documented formulas, step
by step in float64, independently of minigluon's update functions. Each run covers
weight decay, gradient rescaling and clipping, and per-parameter lr_mult/wd_mult.
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError
from minigluon.test_utils import assert_almost_equal

RESCALE, CLIP, WD = 0.5, 0.8, 0.01
LR_MULT, WD_MULT = 0.7, 2.0


def _g(grad, w, wd, clip=CLIP):
    """rescale, add wd*w (when given), then clip: MXNet's order."""
    g = grad * RESCALE + wd * w
    return np.clip(g, -clip, clip)


def ref_sgd(w, grads, lr, wd, momentum=0.0):
    """MXNet's sgd kernels clip before adding weight decay."""
    mom = np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, 0.0) + wd * w
        if momentum:
            mom = momentum * mom - lr * g
            w = w + mom
        else:
            w = w - lr * g
    return w


def ref_nag(w, grads, lr, wd, momentum):
    """Sutskever's form: look ahead along the momentum."""
    mom = np.zeros_like(w)
    for grad in grads:
        g = np.clip(grad * RESCALE, -CLIP, CLIP) + wd * w
        mom = momentum * mom + g
        w = w - lr * (g + momentum * mom)
    return w


def ref_adam(w, grads, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8):
    m = v = np.zeros_like(w)
    for t, grad in enumerate(grads, 1):
        g = _g(grad, w, wd)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t) * m / (np.sqrt(v) + eps)
    return w


def ref_adamw(w, grads, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8):
    m = v = np.zeros_like(w)
    for t, grad in enumerate(grads, 1):
        g = _g(grad, w, 0.0)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        step = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        w = w - (step * m / (np.sqrt(v) + eps) + lr * wd * w)
    return w


def ref_rmsprop(w, grads, lr, wd, gamma1=0.9, eps=1e-8):
    n = np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, wd)
        n = (1 - gamma1) * g * g + gamma1 * n
        w = w - lr * g / np.sqrt(n + eps)
    return w


def ref_rmsprop_centered(w, grads, lr, wd, gamma1=0.9, gamma2=0.9, eps=1e-8):
    n, gbar, delta = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, wd)
        n = (1 - gamma1) * g * g + gamma1 * n
        gbar = (1 - gamma1) * g + gamma1 * gbar
        delta = gamma2 * delta - lr * g / np.sqrt(n - gbar * gbar + eps)
        w = w + delta
    return w


def ref_adagrad(w, grads, lr, wd, eps=1e-7):
    h = np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, 0.0)
        h = h + g * g
        w = w - lr * (g / np.sqrt(h + eps) + wd * w)
    return w


def ref_adadelta(w, grads, lr, wd, rho=0.9, eps=1e-5):
    eg, ed = np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, 0.0)
        eg = rho * eg + (1 - rho) * g * g
        d = np.sqrt(ed + eps) / np.sqrt(eg + eps) * g
        ed = rho * ed + (1 - rho) * d * d
        w = w - (d + wd * w)
    return w


def ref_adamax(w, grads, lr, wd, beta1=0.9, beta2=0.999):
    m, u = np.zeros_like(w), np.zeros_like(w)
    for t, grad in enumerate(grads, 1):
        g = _g(grad, w, wd)
        m = beta1 * m + (1 - beta1) * g
        u = np.maximum(beta2 * u, np.abs(g))
        w = w - lr / (1 - beta1 ** t) * m / u
    return w


def ref_nadam(w, grads, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8, decay=0.004):
    m, v, prod = np.zeros_like(w), np.zeros_like(w), 1.0
    for t, grad in enumerate(grads, 1):
        g = _g(grad, w, wd)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * decay))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
        prod *= mu_t
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_bar = (1 - mu_t) * g / (1 - prod) + mu_next * m / (1 - prod * mu_next)
        w = w - lr * m_bar / (np.sqrt(v / (1 - beta2 ** t)) + eps)
    return w


def ref_signum(w, grads, lr, wd, momentum=0.9, wd_lh=0.05):
    mom = np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, 0.0) + wd * w   # clipped before weight decay, as MXNet's kernel
        mom = momentum * mom - (1 - momentum) * g
        w = (1 - lr * wd_lh) * w + lr * np.sign(mom)
    return w


def ref_lamb(w, grads, lr, wd, beta1=0.9, beta2=0.999, eps=1e-6):
    m = v = np.zeros_like(w)
    for t, grad in enumerate(grads, 1):
        g = _g(grad, w, 0.0)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        r = (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps) + wd * w
        w = w - lr * (np.linalg.norm(w) / np.linalg.norm(r)) * r
    return w


def ref_ftml(w, grads, lr, wd, beta1=0.6, beta2=0.999, eps=1e-8):
    d_prev, v, z = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t, grad in enumerate(grads, 1):
        g = _g(grad, w, wd)
        v = beta2 * v + (1 - beta2) * g * g
        d = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + eps)
        z = beta1 * z + (1 - beta1) * g - (d - beta1 * d_prev) * w
        w = -z / d
        d_prev = d
    return w


def ref_ftrl(w, grads, lr, wd, lamda1=0.01, beta=1.0):
    z, n = np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = _g(grad, w, 0.0)
        z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
        n = n + g * g
        w = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)
    return w


def ref_dcasgd(w, grads, lr, wd, momentum=0.9, lamda=0.04):
    mom, prev = np.zeros_like(w), w.copy()
    for grad in grads:
        g = _g(grad, w, 0.0)
        mom = momentum * mom - lr * (g + wd * w + lamda * g * g * (w - prev))
        prev = w
        w = w + mom
    return w


def ref_lbsgd(w, grads, lr, wd, momentum=0.9, batch_scale=2, warmup_updates=4):
    """Mean of each ``batch_scale`` gradients, lr warmed up linearly to lr*batch_scale."""
    mom, total = np.zeros_like(w), None
    for count, grad in enumerate(grads, 1):
        total = grad if total is None else total + grad
        if count % batch_scale:
            continue
        mult = batch_scale if count >= warmup_updates else \
            1 + (batch_scale - 1) * count / warmup_updates
        g = _g(total / batch_scale, w, 0.0) + wd * w
        mom = momentum * mom - lr * mult * g
        w = w + mom
        total = None
    return w


def ref_test(w, grads, lr, wd):
    """MXNet's Test optimizer ignores lr, wd and clipping."""
    return w + sum(grads) * RESCALE


CASES = [
    ('sgd', dict(learning_rate=0.1), ref_sgd, {}),
    ('sgd', dict(learning_rate=0.1, momentum=0.9), ref_sgd, dict(momentum=0.9)),
    ('nag', dict(learning_rate=0.1, momentum=0.9), ref_nag, dict(momentum=0.9)),
    ('adam', dict(learning_rate=0.01), ref_adam, {}),
    ('adamw', dict(learning_rate=0.01), ref_adamw, {}),
    ('rmsprop', dict(learning_rate=0.01), ref_rmsprop, {}),
    ('rmsprop', dict(learning_rate=0.01, centered=True), ref_rmsprop_centered, {}),
    ('adagrad', dict(learning_rate=0.1), ref_adagrad, {}),
    ('adadelta', dict(), ref_adadelta, {}),
    ('adamax', dict(learning_rate=0.02), ref_adamax, {}),
    ('nadam', dict(learning_rate=0.01), ref_nadam, {}),
    ('signum', dict(learning_rate=0.01, momentum=0.9, wd_lh=0.05), ref_signum, {}),
    ('lamb', dict(learning_rate=0.01), ref_lamb, {}),
    ('ftml', dict(learning_rate=0.02), ref_ftml, {}),
    ('ftrl', dict(learning_rate=0.1, lamda1=0.02, beta=0.5), ref_ftrl,
     dict(lamda1=0.02, beta=0.5)),
    ('dcasgd', dict(learning_rate=0.1, momentum=0.9), ref_dcasgd, {}),
    ('dcasgd', dict(learning_rate=0.1), ref_dcasgd, dict(momentum=0.0)),
    ('lbsgd', dict(learning_rate=0.1, momentum=0.9, batch_scale=2, warmup_epochs=2,
                   updates_per_epoch=2), ref_lbsgd, {}),
    ('test', dict(), ref_test, {}),
    ('ccsgd', dict(learning_rate=0.1, momentum=0.9), ref_sgd, dict(momentum=0.9)),
]


@pytest.mark.parametrize('name,kwargs,ref,ref_kwargs', CASES,
                         ids=['%s-%d' % (c[0], i) for i, c in enumerate(CASES)])
def test_matches_reference(name, kwargs, ref, ref_kwargs, ctx):
    rng = np.random.RandomState(42)
    w0 = rng.normal(size=(3, 4))
    grads = [rng.normal(size=(3, 4)) * 2 for _ in range(6)]
    param = SimpleNamespace(lr_mult=LR_MULT, wd_mult=WD_MULT)
    opt = mx.optimizer.create(name, wd=WD, rescale_grad=RESCALE, clip_gradient=CLIP,
                              param_dict={'w': param}, **kwargs)
    updater = mx.optimizer.get_updater(opt)
    weight = nd.array(w0, ctx=ctx, dtype='float64')
    for g in grads:
        updater('w', nd.array(g, ctx=ctx, dtype='float64'), weight)
    lr = kwargs.get('learning_rate', 0.01) * LR_MULT
    expected = ref(w0.copy(), grads, lr, WD * WD_MULT, **ref_kwargs)
    assert_almost_equal(weight, expected, rtol=1e-10, atol=1e-12)


def test_registry_and_errors():
    assert isinstance(mx.optimizer.create('SGD'), mx.optimizer.SGD)
    with pytest.raises(MXNetError, match='unknown optimizer'):
        mx.optimizer.create('nope')

    @mx.optimizer.register
    class HalfStep(mx.optimizer.Optimizer):
        def step(self, xp, weight, grad, state, lr, wd, t):
            weight -= 0.5 * lr * grad

    opt = mx.optimizer.create('halfstep', learning_rate=1.0)
    w = nd.array([1.0])
    mx.optimizer.get_updater(opt)(0, nd.array([2.0]), w)
    assert_almost_equal(w, [0.0])


def test_lr_scheduler_drives_learning_rate():
    with pytest.warns(UserWarning, match='overwritten'):
        opt = mx.optimizer.SGD(learning_rate=1.0,
                               lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5))
    updater = mx.optimizer.get_updater(opt)
    w = nd.array([0.0])
    lrs = []
    for _ in range(5):
        before = w.asscalar()
        updater(0, nd.array([1.0]), w)
        lrs.append(before - w.asscalar())
    # The optimizer counts updates from 1; a fresh scheduler gives the same rates
    fresh = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert_almost_equal(np.array(lrs), [fresh(n) for n in range(1, 6)])
    assert_almost_equal(np.array(lrs), [1, 1, 0.5, 0.5, 0.25])
    with pytest.raises(UserWarning, match='LRScheduler'):  # MXNet raises a UserWarning
        opt.set_learning_rate(0.1)


def test_multi_precision_keeps_float32_master():
    opt = mx.optimizer.SGD(learning_rate=1e-4, multi_precision=True)
    updater = mx.optimizer.get_updater(opt)
    w = nd.array([1.0], dtype='float16')
    for _ in range(100):
        updater(0, nd.array([1.0], dtype='float16'), w)
    # float16 alone cannot represent 1 - 1e-4 (spacing near 1 is ~5e-4): the master can.
    # SGD keeps MXNet's (momentum, master) order; momentum is None here
    assert updater.states[0][0] is None
    master = updater.states[0][1]
    assert master.dtype == np.float32
    assert_almost_equal(master, [0.99], rtol=1e-5)
    assert_almost_equal(w, [0.99], rtol=1e-3)


@pytest.mark.parametrize('name', sorted(mx.optimizer.registered()))
def test_config_round_trip(name):
    opt = mx.optimizer.create(name, learning_rate=0.05, wd=0.1, rescale_grad=0.25)
    clone = mx.optimizer.Optimizer.from_config(opt.to_config())
    assert type(clone) is type(opt) and clone.to_config() == opt.to_config()


def test_from_config_rejects_unknown_fields():
    cfg = mx.optimizer.SGD(momentum=0.9).to_config()
    cfg['params']['__class__'] = 'os.system'
    with pytest.raises(MXNetError, match='unknown parameters'):
        mx.optimizer.Optimizer.from_config(cfg)
    with pytest.raises(MXNetError, match='number, bool'):
        mx.optimizer.Optimizer.from_config({'name': 'sgd', 'params': {'momentum': [1]}})


def test_updater_states_round_trip_is_exact():
    rng = np.random.RandomState(0)
    grads = [rng.normal(size=(5,)) for _ in range(6)]

    def run(split):
        opt = mx.optimizer.create('adam', learning_rate=0.1)
        up = mx.optimizer.get_updater(opt)
        w = {k: nd.array(np.ones(5) * (i + 1)) for i, k in enumerate([0, 'bias'])}
        for step, g in enumerate(grads):
            if step == split:
                blob = up.get_states(dump_optimizer=True)
                assert b'pickle' not in blob and blob[:2] == b'PK'
                up = mx.optimizer.get_updater(mx.optimizer.create('sgd'))
                up.set_states(blob)
            for k in w:
                up(k, nd.array(g), w[k])
        return [w[k].asnumpy() for k in w]

    for a, b in zip(run(split=None), run(split=3)):
        assert np.array_equal(a, b)


def test_set_states_rejects_garbage():
    up = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(MXNetError, match='invalid optimizer states'):
        up.set_states(b'not a zip at all')


def test_replace_optimizer_keeps_states_and_step_counts():
    updater = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.1))
    w = nd.array([1.0, 2.0])
    for _ in range(3):
        updater(0, nd.array([0.5, -0.5]), w)
    state = updater.states[0]
    new = mx.optimizer.Adam(learning_rate=0.1, rescale_grad=0.5)
    updater.replace_optimizer(new)
    assert updater.optimizer is new and updater.states[0] is state
    assert new._index_update_count == {0: 3} and new.num_update == 3
    updater(0, nd.array([0.5, -0.5]), w)
    assert new._index_update_count == {0: 4}
    with pytest.raises(MXNetError, match='needs an Optimizer'):
        updater.replace_optimizer('adam')


def test_sgld_adds_gaussian_noise_of_variance_lr():
    lr, wd = 0.04, 0.1
    opt = mx.optimizer.SGLD(learning_rate=lr, wd=wd, rescale_grad=RESCALE, clip_gradient=CLIP)
    rng = np.random.RandomState(3)
    w0, grad = rng.normal(size=(20000,)), rng.normal(size=(20000,)) * 2
    weight = nd.array(w0, dtype='float64')
    mx.random.seed(7)
    opt.update(0, weight, nd.array(grad, dtype='float64'), opt.create_state(0, weight))
    mx.random.seed(7)   # the same draw: the noise comes from mx.random
    noise = mx.random.normal(0, math.sqrt(lr), shape=(20000,), dtype='float64').asnumpy()
    drift = -lr / 2 * (_g(grad, w0, 0.0) + wd * w0)
    assert_almost_equal(weight, w0 + drift + noise, rtol=1e-12, atol=1e-12)
    assert abs(noise.std() - math.sqrt(lr)) < 0.01 and abs(noise.mean()) < 0.01


def test_learning_rate_with_and_without_scheduler():
    assert mx.optimizer.Optimizer().learning_rate == 0.01
    sched = mx.lr_scheduler.FactorScheduler(step=1, base_lr=1024)
    opt = mx.optimizer.Optimizer(lr_scheduler=sched)   # no learning_rate: the scheduler's
    assert opt.lr is None and opt.learning_rate == 1024
    sched.base_lr = 8
    assert opt.learning_rate == 8
    sched = mx.lr_scheduler.FactorScheduler(step=1, base_lr=0.3)
    mx.optimizer.Optimizer(lr_scheduler=sched, learning_rate=0.3)   # same value: no warning
    with pytest.warns(UserWarning, match='overwritten'):
        mx.optimizer.Optimizer(lr_scheduler=sched, learning_rate=0.5)
    assert sched.base_lr == 0.5


def test_wd_mult_defaults_to_zero_for_named_biases():
    names = {0: 'fc_weight', 1: 'fc_bias', 2: 'bn_gamma', 3: 'bn_beta'}
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.5, param_idx2name=names)
    assert opt.wd_mult == {'fc_bias': 0.0, 'bn_beta': 0.0}
    assert [opt._get_wd(i) for i in range(4)] == [0.5, 0.0, 0.5, 0.0]
    opt.set_wd_mult({'fc_bias': 2.0, 0: 3.0})
    opt.set_lr_mult({'bn_gamma': 0.0})
    assert [opt._get_wd(i) for i in range(4)] == [1.5, 1.0, 0.5, 0.0]
    assert opt._get_lrs([0, 2]) == [0.1, 0.0]
    with pytest.raises(MXNetError, match='param_idx2name'):
        mx.optimizer.SGD(param_idx2name=['fc_weight'])


@pytest.mark.parametrize('name', ['sgd', 'adam', 'lamb', 'nag'])
def test_update_of_an_index_list_equals_one_update_each(name):
    rng = np.random.RandomState(1)
    shapes = [(3, 2), (4,), (2, 2, 2)]
    ws = [rng.normal(size=s) for s in shapes]
    gs = [rng.normal(size=s) for s in shapes]
    kwargs = dict(learning_rate=0.1, wd=0.01, **({'momentum': 0.9} if name in ('sgd', 'nag')
                                                  else {}))
    one, many = mx.optimizer.create(name, **kwargs), mx.optimizer.create(name, **kwargs)
    w_one = [nd.array(w, dtype='float64') for w in ws]
    w_many = [nd.array(w, dtype='float64') for w in ws]
    s_one = [one.create_state_multi_precision(i, w) for i, w in enumerate(w_one)]
    s_many = [many.create_state_multi_precision(i, w) for i, w in enumerate(w_many)]
    for _ in range(2):
        for i in range(3):
            one.update_multi_precision(i, w_one[i], nd.array(gs[i], dtype='float64'), s_one[i])
        many.update_multi_precision([0, 1, 2], w_many,
                                    [nd.array(g, dtype='float64') for g in gs], s_many)
    for a, b in zip(w_one, w_many):
        assert_almost_equal(a, b, rtol=0, atol=0)
    assert many._index_update_count == {0: 2, 1: 2, 2: 2}


def test_multi_precision_state_layout_follows_mxnet():
    w = nd.array([1.0, 2.0], dtype='float16')
    mom, master = mx.optimizer.SGD(momentum=0.9, multi_precision=True) \
        .create_state_multi_precision(0, w)
    assert mom.dtype == np.float32 and master.dtype == np.float32
    master, (mean, var) = mx.optimizer.Adam(multi_precision=True) \
        .create_state_multi_precision(0, w)
    assert master.dtype == mean.dtype == np.float32
    assert_almost_equal(master, [1.0, 2.0])
    with pytest.warns(UserWarning, match='multi_precision=True'):
        mx.optimizer.Adam().create_state_multi_precision(0, w)


def test_nag_momentum_holds_learning_rate_scaled_steps():
    """MXNet 1.x: mom = momentum*mom - lr*(g + wd*w), so a changed lr takes effect at once."""
    opt = mx.optimizer.NAG(learning_rate=0.5, momentum=0.9)
    w, mom = nd.array([1.0], dtype='float64'), nd.array([0.0], dtype='float64')
    opt.update(0, w, nd.array([2.0], dtype='float64'), mom)
    assert_almost_equal(mom, [-1.0])                     # -0.5 * 2
    assert_almost_equal(w, [1.0 - 1.9 * 1.0])            # w - (1+momentum)*lr*g
    opt.set_learning_rate(0.1)
    opt.update(0, w, nd.array([2.0], dtype='float64'), mom)
    assert_almost_equal(mom, [0.9 * -1.0 - 0.2])
    assert_almost_equal(w, [-0.9 + 0.81 * -1.0 - 1.9 * 0.2])


def test_lbsgd_rejects_unknown_strategy_and_uses_lars_ratio():
    with pytest.raises(MXNetError, match='warmup_strategy'):
        mx.optimizer.LBSGD(warmup_strategy='cubic')
    opt = mx.optimizer.LBSGD(learning_rate=0.1, warmup_strategy='lars')
    w = nd.array([3.0, 4.0], dtype='float64')
    opt.update(0, w, nd.array([0.0, 0.5], dtype='float64'), None)
    # |w|^2 = 25, |g|^2 = 0.25: ratio sqrt(100) = 10, so the step is 0.1 * 10 * g
    assert_almost_equal(w, [3.0, 3.5])


def test_updater_takes_lists_of_keys():
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5, momentum=0.5))
    ws = [nd.array([1.0]), nd.array([2.0, 3.0])]
    updater([0, 'b'], [nd.array([1.0]), nd.array([2.0, 2.0])], ws)
    assert_almost_equal(ws[0], [0.5])
    assert_almost_equal(ws[1], [1.0, 2.0])
    assert sorted(map(str, updater.states)) == ['0', 'b']


def test_param_dict_of_gluon_parameters_gives_the_multipliers():
    frozen = mx.gluon.Parameter('frozen', shape=(2,), lr_mult=0.0)
    no_decay = mx.gluon.Parameter('no_decay', shape=(2,), wd_mult=0.0)
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=1.0, param_dict={0: frozen, 1: no_decay})
    opt.set_lr_mult({0: 5.0})   # param_dict wins over the tables, as in MXNet
    w0, w1 = nd.array([1.0, 1.0]), nd.array([1.0, 1.0])
    opt.update(0, w0, nd.array([1.0, 1.0]), None)
    opt.update(1, w1, nd.array([1.0, 1.0]), None)
    assert_almost_equal(w0, [1.0, 1.0])        # lr_mult 0: no step at all
    assert_almost_equal(w1, [0.9, 0.9])        # gradient step, no decay
    frozen.lr_mult = 1.0                       # read at every update
    opt.update(0, w0, nd.array([1.0, 1.0]), None)
    assert_almost_equal(w0, [0.8, 0.8])        # 0.1 * (1 + wd * 1)
