"""lr_scheduler: values against the closed-form formulas, warmup, errors, JSON configs."""
import json
import math

import pytest

import minigluon as mx
from minigluon import lr_scheduler as lrs


def _factor_ref(n, base, factor, step, stop=1e-8):
    """MXNet's FactorScheduler: the first decay happens at update step + 1."""
    return max(base * factor ** max(0, (n - 1) // step), stop) if n > 0 else base


def _warmup_ref(n, begin, final, steps):
    return begin + (final - begin) * n / steps


def test_factor_matches_closed_form():
    sched = lrs.FactorScheduler(step=10, factor=0.5, base_lr=1.0)
    for n in range(0, 60):
        assert sched(n) == pytest.approx(_factor_ref(n, 1.0, 0.5, 10)), n
    # the boundaries, spelled out: update 10 still has the base rate, 11 the first decay
    fresh = lrs.FactorScheduler(step=10, factor=0.5, base_lr=1.0)
    assert [fresh(n) for n in (1, 10, 11, 20, 21)] == [1.0, 1.0, 0.5, 0.5, 0.25]


def test_factor_catches_up_when_updates_jump():
    sched = lrs.FactorScheduler(step=3, factor=0.1, base_lr=1.0)
    assert sched(10) == pytest.approx(1e-3)  # resumed run: three decays at once
    assert sched.count == 9


def test_factor_stops_at_stop_factor_lr():
    sched = lrs.FactorScheduler(step=1, factor=0.1, stop_factor_lr=2e-3, base_lr=1.0)
    values = [sched(n) for n in range(1, 10)]
    assert values[:3] == pytest.approx([1.0, 0.1, 0.01])
    assert values[3:] == [2e-3] * 6  # 1e-3 would undershoot: clamped, and stays there


def test_factor_warmup_counts_updates_from_zero():
    sched = lrs.FactorScheduler(step=5, factor=0.5, base_lr=1.0, warmup_steps=4,
                                warmup_begin_lr=0.2)
    for n in range(4):
        assert sched(n) == pytest.approx(_warmup_ref(n, 0.2, 1.0, 4))
    assert sched(4) == 1.0 and sched(5) == 1.0
    assert sched(6) == 0.5  # decays on MXNet's count, not shifted by the warmup


def test_constant_warmup():
    sched = lrs.FactorScheduler(step=100, base_lr=0.1, warmup_steps=3, warmup_begin_lr=0.01,
                                warmup_mode='constant')
    assert [sched(n) for n in range(5)] == [0.01, 0.01, 0.01, 0.1, 0.1]


def test_multifactor():
    sched = lrs.MultiFactorScheduler(step=[5, 10, 15], factor=0.1, base_lr=1.0)
    for n in range(0, 25):
        k = sum(n > s for s in (5, 10, 15))
        assert sched(n) == pytest.approx(0.1 ** k), n


def test_multifactor_with_warmup_and_jump():
    sched = lrs.MultiFactorScheduler(step=[4, 8], factor=0.5, base_lr=2.0, warmup_steps=2,
                                     warmup_begin_lr=1.0)
    assert sched(0) == 1.0 and sched(1) == 1.5
    assert sched(2) == 2.0
    assert sched(20) == 0.5
    assert sched.cur_step_ind == 2


@pytest.mark.parametrize('warmup', [0, 5])
def test_poly_matches_closed_form(warmup):
    base, final, pwr, max_update = 0.5, 0.05, 3, 25
    sched = lrs.PolyScheduler(max_update, base_lr=base, pwr=pwr, final_lr=final,
                              warmup_steps=warmup, warmup_begin_lr=0.1)
    max_steps = max_update - warmup
    for n in (0, 1, 4, 5, 6, 12, 24, 25, 26, 100):
        if n < warmup:
            expected = _warmup_ref(n, 0.1, base, warmup)
        else:
            frac = (min(n, max_update) - warmup) / max_steps
            expected = final + (base - final) * (1 - frac) ** pwr
        assert sched(n) == pytest.approx(expected, rel=1e-12), n
    assert sched(max_update) == final


@pytest.mark.parametrize('warmup', [0, 4])
def test_cosine_matches_closed_form(warmup):
    base, final, max_update = 0.4, 0.0, 20
    sched = lrs.CosineScheduler(max_update, base_lr=base, final_lr=final, warmup_steps=warmup)
    max_steps = max_update - warmup
    for n in range(0, 30):
        if n < warmup:
            expected = _warmup_ref(n, 0, base, warmup)
        else:
            frac = (min(n, max_update) - warmup) / max_steps
            expected = final + (base - final) * (1 + math.cos(math.pi * frac)) / 2
        assert sched(n) == pytest.approx(expected, rel=1e-12, abs=1e-15), n
    assert sched(warmup + max_steps // 2) == pytest.approx((base + final) / 2)


def test_poly_after_max_update_is_final_lr_even_without_passing_through():
    sched = lrs.PolyScheduler(10, base_lr=1.0, final_lr=0.1)
    assert sched(50) == 0.1


def test_base_lr_is_a_plain_attribute_like_mxnet():
    # an optimizer overwrites base_lr with its learning_rate before the first update
    factor = lrs.FactorScheduler(step=2, factor=0.5, base_lr=0.01)
    factor.base_lr = 0.8
    assert [factor(n) for n in (1, 2, 3, 5)] == [0.8, 0.8, 0.4, 0.2]
    # Poly and Cosine decay from the base_lr they were built with, as in MXNet
    poly = lrs.PolyScheduler(10, base_lr=1.0, pwr=1)
    poly.base_lr = 5.0
    assert poly(5) == pytest.approx(0.5)
    assert poly.base_lr == pytest.approx(0.5)


@pytest.mark.parametrize('make, match', [
    (lambda: lrs.FactorScheduler(step=0), 'step must be >= 1'),
    (lambda: lrs.FactorScheduler(step=5, factor=1.5), 'factor must be no more than 1'),
    (lambda: lrs.MultiFactorScheduler(step=[5, 3]), 'strictly increasing'),
    (lambda: lrs.MultiFactorScheduler(step=[5, 5]), 'strictly increasing'),
    (lambda: lrs.MultiFactorScheduler(step=[0, 3]), 'every step must be >= 1'),
    (lambda: lrs.MultiFactorScheduler(step=[]), 'non-empty list'),
    (lambda: lrs.MultiFactorScheduler(step=5), 'non-empty list'),
    (lambda: lrs.MultiFactorScheduler(step=[2], factor=2), 'factor'),
    (lambda: lrs.FactorScheduler(step=5, warmup_mode='cubic'), "'cubic'"),
    (lambda: lrs.FactorScheduler(step=5, warmup_steps=-1), 'warmup_steps'),
    (lambda: lrs.FactorScheduler(step=5, warmup_steps=2.5), 'warmup_steps'),
    (lambda: lrs.FactorScheduler(step=5, base_lr=0.1, warmup_steps=2, warmup_begin_lr=0.5),
     'warmup_begin_lr'),
    (lambda: lrs.PolyScheduler(0), 'max_update'),
    (lambda: lrs.PolyScheduler(10.0), 'max_update'),
    (lambda: lrs.CosineScheduler(10, warmup_steps=10), 'smaller than max_update'),
])
def test_bad_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_base_class_must_be_overridden():
    with pytest.raises(NotImplementedError):
        lrs.LRScheduler()(1)


def _round_trip(sched):
    cfg = json.loads(json.dumps(sched.to_config()))
    return lrs.from_config(cfg)


@pytest.mark.parametrize('make', [
    lambda: lrs.FactorScheduler(step=3, factor=0.5, stop_factor_lr=1e-4, base_lr=0.2,
                                warmup_steps=2, warmup_begin_lr=0.1),
    lambda: lrs.MultiFactorScheduler(step=(4, 9, 13), factor=0.3, base_lr=0.5,
                                     warmup_steps=3, warmup_mode='constant'),
    lambda: lrs.PolyScheduler(30, base_lr=0.3, pwr=1.5, final_lr=0.01, warmup_steps=5),
    lambda: lrs.CosineScheduler(30, base_lr=0.3, final_lr=0.02, warmup_steps=5,
                                warmup_begin_lr=0.05),
])
def test_config_round_trip_fresh_and_mid_run(make):
    original, fresh_copy = make(), _round_trip(make())
    assert type(fresh_copy) is type(original)
    for n in range(0, 12):
        assert fresh_copy(n) == original(n)
    resumed = _round_trip(original)  # catches up with the decays on its first call
    for n in range(12, 40):
        assert resumed(n) == original(n), n


@pytest.mark.parametrize('cls', [lrs.FactorScheduler, lrs.MultiFactorScheduler])
def test_config_keeps_base_lr_set_by_an_optimizer(cls):
    original = cls(step=3 if cls is lrs.FactorScheduler else [3, 6], factor=0.5, base_lr=0.01)
    original.base_lr = 0.8  # what Optimizer(learning_rate=0.8, lr_scheduler=...) does
    values = [original(n) for n in range(1, 9)]
    assert values[0] == 0.8 and values[-1] == pytest.approx(0.2)
    cfg = original.to_config()
    assert cfg['params']['base_lr'] == 0.8  # the start of the schedule, not its current value
    resumed = lrs.from_config(cfg)
    for n in range(9, 20):
        assert resumed(n) == original(n), n


def test_config_is_json_with_name_and_params():
    cfg = lrs.MultiFactorScheduler(step=[2, 4], factor=0.5).to_config()
    assert set(cfg) == {'name', 'params'} and cfg['name'] == 'multifactor'
    assert cfg['params']['step'] == [2, 4] and cfg['params']['factor'] == 0.5
    assert json.loads(json.dumps(cfg)) == cfg
    assert lrs.from_config({'name': 'cosine', 'params': {'max_update': 8}})(4) == \
        pytest.approx(0.005)


def test_config_errors():
    with pytest.raises(ValueError, match="unknown lr scheduler 'step'"):
        lrs.from_config({'name': 'step', 'params': {}})
    with pytest.raises(ValueError, match="bad params for lr scheduler 'factor'"):
        lrs.from_config({'name': 'factor', 'params': {'steps': 3}})
    with pytest.raises(ValueError, match='must be a dict'):
        lrs.from_config('factor')

    class Unregistered(lrs.FactorScheduler):
        pass
    with pytest.raises(ValueError, match='not registered'):
        Unregistered(step=2).to_config()


def test_register_custom_scheduler():
    @lrs.register('test-constant')
    class Constant(lrs.LRScheduler):
        def __call__(self, num_update):
            return self.base_lr

    try:
        sched = _round_trip(Constant(base_lr=0.3))
        assert isinstance(sched, Constant) and sched(100) == 0.3
    finally:
        del lrs._REGISTRY['test-constant']


def test_exposed_on_package():
    assert mx.lr_scheduler is lrs


@pytest.mark.parametrize('make', [lambda: lrs.FactorScheduler(step=3, factor=0.1, base_lr=1.0),
                                  lambda: lrs.MultiFactorScheduler(step=[2, 4, 6], factor=0.1,
                                                                   base_lr=1.0)])
def test_a_jump_over_several_decays_is_logged_once(make, caplog):
    sched = make()
    with caplog.at_level('INFO', logger='minigluon.lr_scheduler'):
        assert sched(10) == pytest.approx(1e-3)
        assert sched(10) == pytest.approx(1e-3)
    assert [r.getMessage() for r in caplog.records] == [
        'Update[10]: learning rate changed to 1.00000e-03']


def test_trainer_load_states_logs_the_resumed_rate_once(tmp_path, caplog):
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()

    def trainer():
        return mx.gluon.Trainer(net.collect_params(), 'sgd', {
            'learning_rate': 0.1,
            'lr_scheduler': lrs.FactorScheduler(step=1, factor=0.5, base_lr=0.1)})

    def step(t):
        with mx.autograd.record():
            y = net(mx.nd.ones((1, 3)))
        y.backward()
        t.step(1)

    first = trainer()
    for _ in range(3):
        step(first)
    first.save_states(str(tmp_path / 'run.states'))
    resumed = trainer()
    resumed.load_states(str(tmp_path / 'run.states'))
    with caplog.at_level('INFO', logger='minigluon.lr_scheduler'):
        step(resumed)
    assert [r.getMessage() for r in caplog.records] == [
        'Update[4]: learning rate changed to 1.25000e-02']
