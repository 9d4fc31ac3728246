"""Whole networks in float32 against float64: every model-zoo family, and training
through ``Trainer.step`` on two devices, hybridized or not.

Families whose nets need large inputs run at the smallest input they accept (AlexNet 63,
VGG 32, SqueezeNet 223) or as a narrow member built by the family's own code (DenseNet,
Inception V3's blocks); Dropout draws the same masks in both passes.

Each network is trained on a batch of 8 or more in training mode (BatchNorm on batch
statistics); the float64 pass starts from the float32 pass's weights and inputs and
takes its decisions at the kinks of ReLU, clip and max pooling (see ``KinkDecisions``).
Every parameter's gradient must then agree to ``BOUND`` of its largest entry (measured:
1e-6 to 1.3e-4 for most families, 2.6e-4 for MobileNetV2; SqueezeNet 1.6e-6, against
6e-4 to 1.6e-3, by the BLAS's thread count, before its max-pooling ties were replayed).
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

def _zoo(name, **kwargs):
    """A builder of the zoo model ``name`` with 10 classes and ``kwargs``."""
    return lambda: vision.get_model(name, classes=10, **kwargs)


class _InceptionBlocks(gluon.HybridBlock):
    """Inception V3's blocks A1 to E2 (its ``features[7:18]``, MXNet's channel counts) on
    the 192-channel map its stem makes, then a global pool and 10 classes: the whole net
    needs 299x299 inputs (its 8x8 pool) and 5.7 GFLOPs an image; the blocks run on 7x7."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.features = vision.inception_v3().features[7:18]
        self.pool = gluon.nn.GlobalAvgPool2D()
        self.output = gluon.nn.Dense(10)

    def hybrid_forward(self, F, x):
        return self.output(self.pool(self.features(x)))


# one network per family: (builder, input shape without the batch axis)
FAMILIES = {
    ('v1', 'basic_block'): (_zoo('resnet18_v1', thumbnail=True), (3, 32, 32)),
    ('v1', 'basic_block', 'imagenet stem'): (_zoo('resnet18_v1'), (3, 64, 64)),
    ('v1', 'bottle_neck'): (_zoo('resnet50_v1', thumbnail=True), (3, 16, 16)),
    ('v2', 'basic_block'): (_zoo('resnet18_v2', thumbnail=True), (3, 32, 32)),
    ('v2', 'bottle_neck'): (_zoo('resnet50_v2', thumbnail=True), (3, 16, 16)),
    ('cifar', 'basic_block'): (_zoo('cifar_resnet20_v1'), (3, 32, 32)),
    ('alexnet',): (_zoo('alexnet'), (3, 63, 63)),  # the smallest input it accepts
    ('vgg',): (_zoo('vgg11'), (3, 32, 32)),  # the smallest input it accepts
    ('squeezenet',): (_zoo('squeezenet1.1'), (3, 223, 223)),  # the smallest for its 13x13 pool
    # DenseNet's 7x7 pool needs 224x224: DenseNet-BC's code with narrow, short blocks
    ('densenet',): (lambda: vision.DenseNet(16, 8, [2, 2, 2, 2], classes=10), (3, 224, 224)),
    ('mobilenet',): (_zoo('mobilenet0.25'), (3, 32, 32)),
    ('mobilenetv2',): (_zoo('mobilenetv2_0.25'), (3, 32, 32)),
    ('inception',): (_InceptionBlocks, (192, 7, 7)),
}

_FAMILY_PATTERNS = [(r'alexnet', ('alexnet',)), (r'vgg\d+(_bn)?', ('vgg',)),
                    (r'squeezenet1\.[01]', ('squeezenet',)), (r'densenet\d+', ('densenet',)),
                    (r'mobilenet[\d.]+', ('mobilenet',)), (r'mobilenetv2_[\d.]+', ('mobilenetv2',)),
                    (r'inceptionv3', ('inception',))]


def _family(name):
    for pattern, family in _FAMILY_PATTERNS:
        if re.fullmatch(pattern, name):
            return family
    match = re.fullmatch(r'(cifar_)?resnet(\d+)_v(\d)', name)
    assert match, 'model %r has no float32 family in FAMILIES: add one' % name
    if match.group(1):
        return ('cifar', 'basic_block')
    return ('v' + match.group(3), resnet.resnet_spec[int(match.group(2))][0])


def test_every_model_in_the_zoo_belongs_to_a_tested_family():
    for name in vision._MODELS:
        assert _family(name) in FAMILIES, name


def _batch(shape, n=8):
    rng = np.random.RandomState(1)
    return rng.standard_normal((n,) + shape).astype(np.float32), np.arange(n) % 10


def _away_from_init(net):
    """BatchNorm scales and shifts drawn around their initial 1 and 0.

    At gamma = 1, beta = 0 a BatchNorm followed only by ReLU, pooling, convolutions and
    more BatchNorm (DenseNet's and MobileNet's stems) leaves the loss unchanged when its
    gamma scales: that gradient is zero in exact arithmetic, its float64 value 1e-7 of
    the terms it sums, and float32 rounding noise measured against it means nothing.
    """
    rng = np.random.RandomState(2)
    for name, p in net.collect_params().items():
        if name.endswith('gamma') or name.endswith('beta'):
            low = 0.5 if name.endswith('gamma') else -0.5
            p.set_data(nd.array(rng.uniform(low, low + 1, p.shape)))


def _check_family(family, float32_vs_float64, gradients_of):
    build, shape = FAMILIES[family]
    mx.random.seed(0)
    net = build()
    net.initialize(mx.init.Xavier())
    x, y = _batch(shape)
    net(nd.array(x[:2]))  # deferred initialization draws random numbers: not in a pass
    _away_from_init(net)

    def gradients(dtype):
        mx.random.seed(1)  # the same Dropout masks in both passes
        return gradients_of(net, [x], y, dtype)
    errors, kinks = float32_vs_float64(net, gradients)
    _check(type(net).__name__, errors, kinks)


# ResNet V1 with basic blocks runs in the test below, once with each set of CPU kernels
@pytest.mark.parametrize('family', sorted(set(FAMILIES) - {('v1', 'basic_block')}),
                         ids='-'.join)
def test_model_zoo_float32_gradients_match_float64(family, float32_vs_float64, gradients_of):
    _check_family(family, float32_vs_float64, gradients_of)


def test_resnet_float32_gradients_match_float64_with_either_cpu_kernels(
        cpu_kernels, float32_vs_float64, gradients_of):
    # its 3x3 layers run Winograd's transforms compiled by numba, or numpy's
    _check_family(('v1', 'basic_block'), float32_vs_float64, gradients_of)


def _check(what, errors, kinks):
    worst = max(errors, key=errors.get)
    assert errors[worst] <= BOUND, '%s: float32 %s off by %.2e of its largest entry' % (
        what, worst, errors[worst])
    assert kinks.flipped <= MAX_FLIPPED_FRACTION * kinks.seen, (
        '%s: %d of %d ReLU or clip inputs changed sides of a kink between float32 and '
        'float64: the float32 forward pass lost precision' % (what, kinks.flipped, kinks.seen))


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
    x, y = _batch((3, 32, 32), 16)
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
    errors, kinks = float32_vs_float64(net, step)
    _check('one Trainer.step', errors, kinks)
