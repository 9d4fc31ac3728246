"""gluon.model_zoo.vision ResNets: structure, parameter counts, forward and backward."""

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.gluon.model_zoo import vision

rng = np.random.RandomState(0)


def _trainable_count(net):
    return sum(int(np.prod(p.shape)) for p in net.collect_params().values()
               if p.grad_req != 'null')


@pytest.fixture(scope='module')
def resnet18():
    """resnet18_v1 for CIFAR, initialized, after one forward pass settled its shapes."""
    mx.random.seed(0)
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    net(nd.zeros((1, 3, 32, 32)))
    return net


def test_resnet18_cifar_parameter_count(resnet18):
    # 11,173,834 counts what training updates: convolution and Dense weights, Dense bias,
    # BatchNorm gamma and beta. The thumbnail stem has no BatchNorm (as in MXNet), and the
    # BatchNorm running means and variances (9,472 values) are not counted.
    assert _trainable_count(resnet18) == 11173834
    total = sum(int(np.prod(p.shape)) for p in resnet18.collect_params().values())
    assert total - 11173834 == 2 * 4736


def test_resnet18_forward_and_backward_on_a_cifar_batch(resnet18):
    x = nd.array(rng.uniform(-1, 1, size=(4, 3, 32, 32)))
    with autograd.record():
        out = resnet18(x)
        loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(out, nd.array([0, 3, 9, 1]))
    loss.backward()
    assert out.shape == (4, 10) and np.isfinite(out.asnumpy()).all()
    for name, p in resnet18.collect_params().items():
        if p.grad_req != 'null':
            g = p.grad().asnumpy()
            assert np.isfinite(g).all() and np.abs(g).sum() > 0, name
    with autograd.predict_mode():
        predicted = resnet18(x)  # running statistics now
    assert predicted.shape == (4, 10)


def test_resnet18_gradients_match_finite_differences(block_gradient):
    mx.random.seed(1)
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    net(nd.zeros((1, 3, 32, 32)))
    net.cast('float64')
    x = np.random.RandomState(2).uniform(-1, 1, size=(4, 3, 32, 32))
    # A tiny step (float64 keeps its rounding error ~1e-7): with ~2M ReLU inputs, a step of
    # 1e-6 often moves one across its kink, which spoils the difference quotient.
    block_gradient(net, [x], samples=2, eps=1e-8, rtol=1e-4, atol=1e-6,
                   params=['features.0.weight', 'features.1.0.body.1.gamma',
                           'features.2.0.downsample.0.weight', 'features.4.1.body.3.weight',
                           'features.4.1.body.4.beta', 'output.weight', 'output.bias'])


def test_resnet18_names_and_repr(resnet18):
    names = list(resnet18._collect_params_with_prefix())  # what save_parameters writes
    assert names[:3] == ['features.0.weight', 'features.1.0.body.0.weight',
                         'features.1.0.body.1.gamma']
    assert names[-2:] == ['output.weight', 'output.bias']
    assert 'features.2.0.downsample.0.weight' in names
    text = repr(resnet18)
    assert text.startswith('ResNetV1(\n  (features): HybridSequential(\n'
                           '    (0): Conv2D(3 -> 64, kernel_size=(3, 3), stride=(1, 1), '
                           'padding=(1, 1), bias=False)\n'
                           '    (1): HybridSequential(\n'
                           '      (0): BasicBlockV1(\n'
                           '        (body): HybridSequential(\n')
    assert '        (downsample): HybridSequential(\n' \
           '          (0): Conv2D(64 -> 128, kernel_size=(1, 1), stride=(2, 2), bias=False)\n' \
           in text
    assert text.endswith('  (output): Dense(512 -> 10, linear)\n)')
    assert 'MaxPool2D' not in text  # the thumbnail stem


def test_imagenet_stem_and_counts():
    net = vision.get_model('resnet18_v1')
    net.initialize()
    assert net(nd.zeros((1, 3, 64, 64))).shape == (1, 1000)
    assert _trainable_count(net) == 11689512  # torchvision's resnet18 has the same
    assert 'MaxPool2D(size=(3, 3), stride=(2, 2), padding=(1, 1)' in repr(net)


def test_cifar_resnet20_v1():
    net = vision.get_model('cifar_resnet20_v1', classes=10)
    net.initialize()
    assert net(nd.zeros((2, 3, 32, 32))).shape == (2, 10)
    assert _trainable_count(net) == 272474  # GluonCV's published size: 0.27M
    # conv and BatchNorm (no ReLU, as in GluonCV), three stages, global pool
    assert [type(b).__name__ for b in net.features] == [
        'Conv2D', 'BatchNorm', 'HybridSequential', 'HybridSequential', 'HybridSequential',
        'GlobalAvgPool2D']


@pytest.mark.parametrize('name', ['resnet34_v1', 'resnet50_v1', 'resnet18_v2', 'resnet34_v2',
                                  'resnet50_v2'])
def test_other_resnets_train_on_a_small_batch(name):
    net = vision.get_model(name, classes=7, thumbnail=True)
    net.initialize(mx.init.Xavier())
    x = nd.array(rng.uniform(size=(2, 3, 16, 16)))
    with autograd.record():
        out = net(x)
    out.backward()
    assert out.shape == (2, 7)
    grads = [p.grad().asnumpy() for p in net.collect_params().values() if p.grad_req != 'null']
    assert all(np.isfinite(g).all() for g in grads)
    first_conv = net.features[1 if name.endswith('v2') else 0]
    assert np.abs(first_conv.weight.grad().asnumpy()).sum() > 0


def test_v2_and_bottleneck_structure():
    v2 = vision.resnet50_v2(classes=5)
    assert type(v2.features[0]).__name__ == 'BatchNorm'  # input normalisation, no affine
    assert v2.features[0].gamma.grad_req == 'null'
    block = v2.features[5][0]
    assert type(block).__name__ == 'BottleneckV2'
    assert [k for k in block._children] == ['bn1', 'conv1', 'bn2', 'conv2', 'bn3', 'conv3',
                                            'downsample']


def test_bad_requests_are_explained():
    with pytest.raises(mx.MXNetError, match="pretrained weights for 'cifar_resnet20_v1' are not "
                       "available; models with published weights: alexnet, densenet121"):
        vision.cifar_resnet20_v1(pretrained=True)
    with pytest.raises(mx.MXNetError, match="unknown model 'resnet19_v1'; available models:"):
        vision.get_model('resnet19_v1')
    with pytest.raises(mx.MXNetError, match='invalid number of layers 19'):
        vision.get_resnet(1, 19)
    with pytest.raises(mx.MXNetError, match='invalid version 3'):
        vision.get_resnet(3, 18)
    with pytest.raises(mx.MXNetError, match='6\\*n\\+2'):
        vision.get_cifar_resnet(1, 21)
