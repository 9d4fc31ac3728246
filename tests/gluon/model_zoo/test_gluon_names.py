"""The zoo's Gluon 1.x names: every model builds inside its ``name_scope`` with MXNet's
prefixes, so ``collect_params()`` keys are MXNet's (``resnetv10_conv0_weight``), and a
second model of a family counts on (``resnetv11_``). The structural names that
``save_parameters`` writes are checked in ``test_vision_models.py``.

``MXNET_GLUON_NAMES`` comes from real MXNet 1.9.1 (``make_mxnet_reference.py --gluon-names``
prints it).
"""
import pytest

import minigluon as mx
from minigluon.gluon.model_zoo import vision
from make_mxnet_reference import gluon_names_row

# MXNet 1.9.1, each model made in a fresh mx.name.NameManager(): name -> (its prefix, the
# number of collect_params() keys, the first 16 hex digits of the SHA-1 of those keys in
# their order, joined by newlines)
MXNET_GLUON_NAMES = {
    'alexnet': ('alexnet0_', 16, 'e8df50855f71ffa8'),
    'densenet121': ('densenet0_', 606, '44112ce2e67697e1'),
    'densenet161': ('densenet0_', 806, '5e02f2d502c828c7'),
    'densenet169': ('densenet0_', 846, '36f17381b4b121aa'),
    'densenet201': ('densenet0_', 1006, '6b49cb1474e48ddc'),
    'inceptionv3': ('inception30_', 472, '504587f4b562ed78'),
    'mobilenet0.25': ('mobilenet0_', 137, 'dba934b7ef371534'),
    'mobilenet0.5': ('mobilenet0_', 137, 'dba934b7ef371534'),
    'mobilenet0.75': ('mobilenet0_', 137, 'dba934b7ef371534'),
    'mobilenet1.0': ('mobilenet0_', 137, 'dba934b7ef371534'),
    'mobilenetv2_0.25': ('mobilenetv20_', 266, 'b10f1c0796c97ff8'),
    'mobilenetv2_0.5': ('mobilenetv20_', 266, 'b10f1c0796c97ff8'),
    'mobilenetv2_0.75': ('mobilenetv20_', 266, 'b10f1c0796c97ff8'),
    'mobilenetv2_1.0': ('mobilenetv20_', 266, 'b10f1c0796c97ff8'),
    'resnet101_v1': ('resnetv10_', 588, '637bc39b5bec4c71'),
    'resnet101_v2': ('resnetv20_', 514, '5933ff82ef414792'),
    'resnet152_v1': ('resnetv10_', 877, '17bc21744320ae65'),
    'resnet152_v2': ('resnetv20_', 769, '68787e3a94edcef3'),
    'resnet18_v1': ('resnetv10_', 102, '46930043d102d1f0'),
    'resnet18_v2': ('resnetv20_', 98, '7dc421e7cea438dc'),
    'resnet34_v1': ('resnetv10_', 182, '72a4ac0e994d7792'),
    'resnet34_v2': ('resnetv20_', 178, '4c131940149ba4dc'),
    'resnet50_v1': ('resnetv10_', 299, '6acc969fb39a9fb2'),
    'resnet50_v2': ('resnetv20_', 259, 'e18b9b1d5f10ae7d'),
    'squeezenet1.0': ('squeezenet0_', 52, '755618611c98de30'),
    'squeezenet1.1': ('squeezenet0_', 52, '755618611c98de30'),
    'vgg11': ('vgg0_', 22, '85c7fa30a41fbca4'),
    'vgg11_bn': ('vgg0_', 54, 'fd5ae2d5b2698236'),
    'vgg13': ('vgg0_', 26, '6c9226ac548f9f2d'),
    'vgg13_bn': ('vgg0_', 66, '5bbc0a0072c81975'),
    'vgg16': ('vgg0_', 32, '748589bb1848d9f1'),
    'vgg16_bn': ('vgg0_', 84, '54487284c632555e'),
    'vgg19': ('vgg0_', 38, '68b14d514b4c73a2'),
    'vgg19_bn': ('vgg0_', 102, 'f029af0eac88327d'),
}

# one or two of each family and block type; all of them take about two seconds
CHECKED = ['alexnet', 'densenet121', 'inceptionv3', 'mobilenet0.25', 'mobilenetv2_0.25',
           'resnet18_v1', 'resnet18_v2', 'resnet50_v1', 'resnet50_v2', 'squeezenet1.0',
           'squeezenet1.1', 'vgg11', 'vgg11_bn']


def test_every_mxnet_model_has_a_row():
    cifar = {'cifar_resnet20_v1', 'cifar_resnet56_v1', 'cifar_resnet110_v1'}  # GluonCV's
    assert set(MXNET_GLUON_NAMES) | cifar == set(vision._MODELS.names())


@pytest.mark.parametrize('name', CHECKED)
def test_collect_params_keys_equal_mxnets(name):
    with mx.name.NameManager():
        net = vision.get_model(name)
        again = vision.get_model(name)
    assert gluon_names_row(net) == MXNET_GLUON_NAMES[name]
    prefix = MXNET_GLUON_NAMES[name][0]
    assert again.prefix == prefix[:-2] + '1_'
    assert all(key.startswith(again.prefix) for key in again.collect_params())


def test_resnet_keys_read_as_in_mxnet():
    with mx.name.NameManager():
        keys = list(vision.resnet18_v1().collect_params())
        second = list(vision.resnet18_v1().collect_params())
    assert keys[:2] == ['resnetv10_conv0_weight', 'resnetv10_batchnorm0_gamma']
    assert 'resnetv10_stage1_conv0_weight' in keys and keys[-1] == 'resnetv10_dense0_bias'
    assert second[0] == 'resnetv11_conv0_weight'
