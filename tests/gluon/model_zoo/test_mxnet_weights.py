"""MXNet's weights in minigluon's zoo: for the smallest member of every family, real
MXNet 1.9.1 initialises the model, gives BatchNorm statistics and affine parameters
values away from their defaults, saves the parameters and runs a batch in inference
mode; minigluon loads the file into its own model and must give MXNet's outputs.
Needs MINIGLUON_MXNET_PYTHON (see ``tests/conftest.py``); skips without it."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.gluon.model_zoo import vision

MODELS = ['alexnet', 'vgg11_bn', 'squeezenet1.0', 'squeezenet1.1', 'densenet121',
          'mobilenet0.25', 'mobilenetv2_0.25', 'inceptionv3', 'resnet18_v1', 'resnet50_v2']

MXNET_SIDE = '''
import sys
import numpy as np
import mxnet as mx
folder, name = sys.argv[1].rsplit('|', 1)
side = 299 if 'inception' in name else 224
net = mx.gluon.model_zoo.vision.get_model(name)
net.initialize(mx.init.Xavier(magnitude=2))
x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, side, side)).astype('float32'))
net(x)
for k, p in net.collect_params().items():
    if k.endswith(('running_mean', 'beta')):
        p.set_data(mx.nd.array(np.random.RandomState(1).uniform(-0.2, 0.2, p.shape)))
    if k.endswith(('running_var', 'gamma')):
        p.set_data(mx.nd.array(np.random.RandomState(2).uniform(0.5, 1.5, p.shape)))
net.save_parameters(folder + '/net.params')
np.save(folder + '/x.npy', x.asnumpy())
np.save(folder + '/out.npy', net(x).asnumpy())
'''


@pytest.mark.parametrize('name', MODELS)
def test_mxnet_weights_give_mxnet_outputs(name, tmp_path, run_mxnet):
    run_mxnet('%s|%s' % (tmp_path, name), MXNET_SIDE)
    net = vision.get_model(name)
    net.load_parameters(str(tmp_path / 'net.params'))
    out = net(nd.array(np.load(tmp_path / 'x.npy'))).asnumpy()
    expected = np.load(tmp_path / 'out.npy')
    assert out.shape == expected.shape == (2, 1000)
    assert np.abs(out - expected).max() <= 1e-5 * np.abs(expected).max(), name


def test_every_family_is_compared():
    """Each network class of the zoo (MXNet publishes no CIFAR ResNet) has a model above."""
    compared = {type(vision.get_model(name)) for name in MODELS}
    zoo = {type(vision.get_model(name)) for name in vision._MODELS
           if not name.startswith('cifar')}
    assert zoo - compared == set()
