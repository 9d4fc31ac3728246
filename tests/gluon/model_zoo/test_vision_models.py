"""gluon.model_zoo.vision against MXNet 1.9.1's zoo: every model's structural parameter
names and parameter sizes, and a full-size forward pass of each family.

``MXNET_PARAMETERS`` and ``mxnet_parameter_names.json`` come from real MXNet 1.9.1
(``make_mxnet_reference.py`` regenerates them); the names are the keys MXNet's
``save_parameters`` writes (``_collect_params_with_prefix``), so MXNet's published
weights load by name.

The forward pass at 224x224 (299x299 for Inception V3) runs for the smallest member of
each family only: the larger ones cost seconds each on a CPU and this suite has no
``slow`` marker (setup.cfg configures none); they share their family's code, and their
shapes are settled by a batch of one in the parameter tests.
"""
import json
import os

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.gluon.model_zoo import vision
from make_mxnet_reference import NAME_LIST_MODELS, names_sha1

# MXNet 1.9.1: name -> (number of parameters, their total size, SHA-1 of their sorted names)
MXNET_PARAMETERS = {
    'alexnet': (16, 61100840, '5caa166df9957bfc10be223f0e88f68e860037cf'),
    'densenet121': (606, 8062504, 'dc76d026158236dc7332107e6ee173c027bb4a18'),
    'densenet161': (806, 28900936, '03df3b31684ad7e6aa41ce8b30be45cb957600ec'),
    'densenet169': (846, 14307880, 'ecdbb6863dbfdde8bf3dd7eaf032039c3cd49201'),
    'densenet201': (1006, 20242984, '3f4653774131a9a6878a70a2e4d92010c5a63b52'),
    'inceptionv3': (472, 23869000, '9992618b3ae62b72156197740102e591f4a51a91'),
    'mobilenet0.25': (137, 475544, 'ebd9aa1445c82b89af74e372416ceb67ee7edfc5'),
    'mobilenet0.5': (137, 1342536, 'ebd9aa1445c82b89af74e372416ceb67ee7edfc5'),
    'mobilenet0.75': (137, 2601976, 'ebd9aa1445c82b89af74e372416ceb67ee7edfc5'),
    'mobilenet1.0': (137, 4253864, 'ebd9aa1445c82b89af74e372416ceb67ee7edfc5'),
    'mobilenetv2_0.25': (266, 1526856, '3709eb239b96a5592b9a5385eb02efab9b74c2cc'),
    'mobilenetv2_0.5': (266, 1983104, '3709eb239b96a5592b9a5385eb02efab9b74c2cc'),
    'mobilenetv2_0.75': (266, 2653864, '3709eb239b96a5592b9a5385eb02efab9b74c2cc'),
    'mobilenetv2_1.0': (266, 3539136, '3709eb239b96a5592b9a5385eb02efab9b74c2cc'),
    'resnet101_v1': (588, 44695144, 'ecbb82ccb9a7fb459c9af356ff0e0297a9d44619'),
    'resnet101_v2': (514, 44639412, '629d8fc361f4459cdf2c319ac06b0146c28cfad3'),
    'resnet152_v1': (877, 60404072, 'f988554ec418d12fcade182e737e9f6cffabf3cd'),
    'resnet152_v2': (769, 60329140, 'a7f0b8432bd2fe1e592263828b8612863b3809dd'),
    'resnet18_v1': (102, 11699112, 'b93823220467b4266e2f10fd5261893c7aea3425'),
    'resnet18_v2': (98, 11695796, '52dd178747961eba248b11f28a61bb60f8b58cd8'),
    'resnet34_v1': (182, 21814696, '4807a40fc3a4a4374cbd20ccfb225c79c12576d1'),
    'resnet34_v2': (178, 21811380, '3536e4d0a3a53bd605b47373fc6aecb231cdc5a9'),
    'resnet50_v1': (299, 25629032, 'f1b8b606bb73dcd38cd2b7997f580473c0cd6a2b'),
    'resnet50_v2': (259, 25595060, '9ff98cfbf0df32df393847732ff55f9885d62e25'),
    'squeezenet1.0': (52, 1248424, '05b75e5f0d0660ed1fee260dd1723fe9e2efcca6'),
    'squeezenet1.1': (52, 1235496, '31dac2efc756be01e197d0c9a14d2165cef8d5cb'),
    'vgg11': (22, 132863336, '1966efd6099f9a024f905c715d969001ada635e2'),
    'vgg11_bn': (54, 132874344, 'c232552c9aa9f4d04674748ce5be135717500041'),
    'vgg13': (26, 133047848, 'e2a7041852e08d059180f2a667242a1bfcf1ef49'),
    'vgg13_bn': (66, 133059624, 'e88b3b7eced2f5527fd6dad18fcae7f5b4beecab'),
    'vgg16': (32, 138357544, '7ccd65c37e6652ba3e29f8d72913f1fc7fb2f4ff'),
    'vgg16_bn': (84, 138374440, '31070c721313d0bb05df994d4032f407ecd7339c'),
    'vgg19': (38, 143667240, 'e1c5362edc33b4b035668e0e36425816ec810ee3'),
    'vgg19_bn': (102, 143689256, 'fe3c448af97a490633c60d1143de08cad092e128'),
}

SMALLEST_OF_EACH_FAMILY = ['alexnet', 'vgg11', 'resnet18_v1', 'resnet18_v2', 'squeezenet1.1',
                           'densenet121', 'mobilenet0.25', 'mobilenetv2_0.25', 'inceptionv3']


def _input_side(name):
    return 299 if name == 'inceptionv3' else 224


# The first Dense of AlexNet and VGG sees the flattened feature map, whose size follows
# the input's; every other shape is the same at any input size the net accepts. ResNets
# and MobileNets end in a global pool; DenseNet, SqueezeNet and Inception V3 end in a
# fixed-size average pool that needs the full-size input.
SMALLEST_SIDE = {'alexnet': 63, 'vgg': 32, 'resnet': 32, 'mobilenet': 32}
FLATTENED_FEATURES_AT_224 = {'alexnet': 256 * 6 * 6, 'vgg': 512 * 7 * 7}


def _family_prefix(name):
    return next((family for family in SMALLEST_SIDE if name.startswith(family)), name)


def _with_shapes(name, side=None):
    """``name`` with every parameter shape settled by a forward pass of one image of
    ``side`` pixels (the full size by default).

    The weights are zeros (each parameter's own initializer is replaced): drawing the
    140 million random numbers of a VGG takes seconds and shapes do not need them.
    """
    net = vision.get_model(name)
    for param in net.collect_params().values():
        param.init = 'zeros'
    net.initialize()
    side = side or _input_side(name)
    net(nd.zeros((1, 3, side, side)))
    return net


def _with_shapes_at_smallest_input(name):
    return _with_shapes(name, SMALLEST_SIDE.get(_family_prefix(name)))


def _size_at_full_input(name, net):
    """The total size of ``net``'s parameters at 224x224 (299x299) when ``net`` was
    built at its ``SMALLEST_SIDE``: AlexNet's and VGG's first Dense resized to 224's
    feature map (VGGs at 224 take seconds to build)."""
    family = _family_prefix(name)
    size = sum(int(np.prod(p.shape)) for p in net.collect_params().values())
    if family in FLATTENED_FEATURES_AT_224:
        first_dense = next(b for b in net.features if type(b).__name__ == 'Dense')
        units, in_units = first_dense.weight.shape
        size += units * (FLATTENED_FEATURES_AT_224[family] - in_units)
    return size


def test_the_zoo_has_mxnets_models_under_mxnets_names():
    cifar = {'cifar_resnet20_v1', 'cifar_resnet56_v1', 'cifar_resnet110_v1'}  # GluonCV's
    assert set(vision._MODELS.names()) == set(MXNET_PARAMETERS) | cifar
    assert vision.get_model('MobileNetV2_0.25').__class__ is vision.MobileNetV2  # any case


@pytest.mark.parametrize('name', sorted(MXNET_PARAMETERS))
def test_parameter_names_equal_mxnets(name):
    params = vision.get_model(name)._collect_params_with_prefix()  # names need no shapes
    count, _, sha1 = MXNET_PARAMETERS[name]
    assert len(params) == count
    assert names_sha1(params.keys()) == sha1, 'names differ from MXNet\'s: see the lists test'


@pytest.mark.parametrize('name', sorted(MXNET_PARAMETERS))
def test_parameter_sizes_equal_mxnets(name):
    assert _size_at_full_input(name, _with_shapes_at_smallest_input(name)) == \
        MXNET_PARAMETERS[name][1]


@pytest.fixture(scope='module')
def mxnet_names():
    path = os.path.join(os.path.dirname(__file__), 'mxnet_parameter_names.json')
    with open(path) as f:
        return json.load(f)['sorted_names']


@pytest.mark.parametrize('name', NAME_LIST_MODELS)
def test_full_parameter_name_lists_equal_mxnets(name, mxnet_names):
    assert sorted(vision.get_model(name)._collect_params_with_prefix()) == mxnet_names[name]


def test_save_parameters_writes_mxnets_names(tmp_path, mxnet_names):
    path = str(tmp_path / 'mobilenetv2.params')
    _with_shapes('mobilenetv2_0.25', 32).save_parameters(path)
    assert sorted(nd.load(path).keys()) == mxnet_names['mobilenetv2_0.25']


@pytest.mark.parametrize('name', SMALLEST_OF_EACH_FAMILY)
def test_forward_of_a_batch_at_full_size(name):
    side = _input_side(name)
    x = nd.array(np.random.RandomState(0).uniform(size=(2, 3, side, side)))
    net = _with_shapes(name)
    out = net(x)
    assert out.shape == (2, 1000)
    assert np.isfinite(out.asnumpy()).all()
    family = _family_prefix(name)
    if family in FLATTENED_FEATURES_AT_224:  # what _size_at_full_input assumes
        first_dense = next(b for b in net.features if type(b).__name__ == 'Dense')
        assert first_dense.weight.shape == (4096, FLATTENED_FEATURES_AT_224[family])


def test_family_specific_structure():
    squeezenet = vision.get_model('squeezenet1.1')
    fire = squeezenet.features[3]
    assert [type(b).__name__ for b in fire] == ['HybridSequential', 'HybridConcurrent']
    assert fire[1].axis == 1
    mobilenet_v2 = vision.get_model('mobilenetv2_0.25')
    assert [type(b).__name__ for b in mobilenet_v2.features[:4]] == [
        'Conv2D', 'BatchNorm', 'RELU6', 'LinearBottleneck']
    assert mobilenet_v2.output[0].bias is None
    assert [b.use_shortcut for b in mobilenet_v2.features[3:7]] == [False, False, True, False]
    relu6 = mobilenet_v2.features[2](nd.array([-1.0, 3.0, 7.0]))
    assert relu6.asnumpy().tolist() == [0.0, 3.0, 6.0]
    dense_layer = vision.get_model('densenet121').features[4][0]
    assert [type(b).__name__ for b in dense_layer] == ['Identity', 'HybridSequential']
    assert vision.get_model('inceptionv3').features[16][2][1].axis == 1  # E's split 3x3 branch


def test_bad_requests_are_explained():
    with pytest.raises(mx.MXNetError, match="unknown model 'vgg12'; available models:"):
        vision.get_model('vgg12')
    with pytest.raises(mx.MXNetError, match='VGG: invalid number of layers 12'):
        vision.get_vgg(12)
    with pytest.raises(mx.MXNetError, match='DenseNet: invalid number of layers 100'):
        vision.get_densenet(100)
    with pytest.raises(mx.MXNetError, match="SqueezeNet: unsupported version '1.2'"):
        vision.get_squeezenet('1.2')
