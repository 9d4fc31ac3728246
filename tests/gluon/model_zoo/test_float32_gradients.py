"""Whole networks in float32 against float64: every model-zoo family, and training
through ``Trainer.step`` on two devices, hybridized or not.

Each network is trained on a batch of 8 or more in training mode (BatchNorm on batch
statistics); the float64 pass starts from the float32 pass's weights and inputs and
takes its ReLU decisions (see ``ReluDecisions``). Every parameter's gradient must then
agree to ``BOUND`` of its largest entry (measured: 3e-6 to 6e-5, the largest for the
BatchNorm scales of ResNet-50's 2x2 last stage).
"""
import re

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon.model_zoo import vision
from minigluon.gluon.model_zoo.vision import resnet

BOUND = 1e-3
# ReLU inputs closer to zero than float32's forward error: a handful in millions
MAX_FLIPPED_FRACTION = 1e-5

# one network per family: (name, constructor arguments, input side)
FAMILIES = {
    ('v1', 'basic_block'): ('resnet18_v1', {'thumbnail': True}, 32),
    ('v1', 'basic_block', 'imagenet stem'): ('resnet18_v1', {}, 64),
    ('v1', 'bottle_neck'): ('resnet50_v1', {'thumbnail': True}, 16),
    ('v2', 'basic_block'): ('resnet18_v2', {'thumbnail': True}, 32),
    ('v2', 'bottle_neck'): ('resnet50_v2', {'thumbnail': True}, 16),
    ('cifar', 'basic_block'): ('cifar_resnet20_v1', {}, 32),
}


def _family(name):
    match = re.fullmatch(r'(cifar_)?resnet(\d+)_v(\d)', name)
    assert match, 'model %r has no float32 family in FAMILIES: add one' % name
    if match.group(1):
        return ('cifar', 'basic_block')
    return ('v' + match.group(3), resnet.resnet_spec[int(match.group(2))][0])


def test_every_model_in_the_zoo_belongs_to_a_tested_family():
    for name in vision._MODELS:
        assert _family(name) in FAMILIES, name


def _batch(side, n=8):
    rng = np.random.RandomState(1)
    return rng.standard_normal((n, 3, side, side)).astype(np.float32), np.arange(n) % 10


@pytest.mark.parametrize('family', sorted(FAMILIES), ids='-'.join)
def test_model_zoo_float32_gradients_match_float64(family, float32_vs_float64, gradients_of):
    name, kwargs, side = FAMILIES[family]
    mx.random.seed(0)
    net = vision.get_model(name, classes=10, **kwargs)
    net.initialize(mx.init.Xavier())
    x, y = _batch(side)
    errors, relu = float32_vs_float64(net, lambda dtype: gradients_of(net, [x], y, dtype))
    _check(name, errors, relu)


def _check(what, errors, relu):
    worst = max(errors, key=errors.get)
    assert errors[worst] <= BOUND, '%s: float32 %s off by %.2e of its largest entry' % (
        what, worst, errors[worst])
    assert relu.flipped <= MAX_FLIPPED_FRACTION * relu.seen, (
        '%s: %d of %d ReLU inputs changed sign between float32 and float64: the float32 '
        'forward pass lost precision' % (what, relu.flipped, relu.seen))


@pytest.mark.parametrize('hybridize', [False, True], ids=['imperative', 'hybridized'])
def test_trainer_step_on_two_devices_float32_matches_float64(hybridize, float32_vs_float64):
    """One SGD step of cifar_resnet20_v1 on a batch of 16 split over cpu(0) and cpu(1):
    the weight changes agree between float32 and float64."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    mx.random.seed(0)
    net = vision.cifar_resnet20_v1(classes=10)
    net.initialize(mx.init.Xavier(), ctx=ctxs)
    if hybridize:
        net.hybridize()
    x, y = _batch(32, 16)
    net(nd.array(x[:2], ctx=ctxs[0]))
    params = net.collect_params()
    start = {k: p.data(ctxs[0]).asnumpy() for k, p in params.items()}
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step(dtype):
        for k, p in params.items():
            p.set_data(nd.array(start[k], dtype=dtype))
        trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 1.0})
        xs = gluon.utils.split_and_load(nd.array(x, dtype=dtype), ctxs)
        ys = gluon.utils.split_and_load(nd.array(y, dtype=dtype), ctxs)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        autograd.backward(losses)
        trainer.step(x.shape[0])
        changes = {}
        for k, p in params.items():
            if p.grad_req == 'null':
                continue
            for ctx in ctxs[1:]:  # the copies on both devices took the same step
                np.testing.assert_array_equal(p.data(ctx).asnumpy(), p.data(ctxs[0]).asnumpy())
            changes[k] = p.data(ctxs[0]).asnumpy() - start[k].astype(dtype)
        return changes
    errors, relu = float32_vs_float64(net, step)
    _check('one Trainer.step', errors, relu)
