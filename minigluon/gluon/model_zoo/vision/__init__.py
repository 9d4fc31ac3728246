"""``gluon.model_zoo.vision``: image classification models, created by name.

AlexNet, VGG, ResNet V1/V2, SqueezeNet, DenseNet, Inception V3, MobileNet and
MobileNetV2 as in MXNet's model zoo (same names, structure and parameter paths, so
MXNet's published weights load with ``pretrained=True``), plus GluonCV's CIFAR ResNets.
"""
from ....base import MXNetError
from ....registry import Registry
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
# by their MODELS tables: ``from . import alexnet`` would give the function alexnet
from .alexnet import MODELS as _ALEXNET
from .densenet import MODELS as _DENSENET
from .inception import MODELS as _INCEPTION
from .mobilenet import MODELS as _MOBILENET
from .resnet import MODELS as _RESNET
from .squeezenet import MODELS as _SQUEEZENET
from .vgg import MODELS as _VGG

_MODELS = Registry('model')
for _table in (_RESNET, _VGG, _ALEXNET, _DENSENET, _SQUEEZENET, _INCEPTION, _MOBILENET):
    for _name, _factory in _table.items():
        _MODELS.add(_name, _factory)


def get_model(name, **kwargs):
    """Create the model registered as ``name`` (e.g. ``'resnet18_v1'``) with ``kwargs``.

    Parameters
    ----------
    name : str
        A name as in MXNet's ``get_model``: ``resnet18_v1 ... resnet152_v2``, ``vgg11 ...
        vgg19_bn``, ``alexnet``, ``densenet121 ... densenet201``, ``squeezenet1.0``,
        ``squeezenet1.1``, ``inceptionv3``, ``mobilenet1.0 ... mobilenet0.25``,
        ``mobilenetv2_1.0 ... mobilenetv2_0.25``; and ``cifar_resnet20_v1`` (56, 110).
    classes : int
        Number of output classes.
    thumbnail : bool
        ResNets only: the CIFAR stem (one 3x3 convolution, no max-pool) for 32x32 inputs.
    pretrained : bool, default False
        Load MXNet's published ImageNet weights, from ``root`` or downloaded there
        (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    fn = _MODELS.get(name)
    if fn is None:
        raise MXNetError('unknown model %r; available models: %s'
                         % (name, ', '.join(_MODELS.names())))
    return fn(**kwargs)
