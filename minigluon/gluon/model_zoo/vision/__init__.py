"""``gluon.model_zoo.vision``: image classification models, created by name."""
from ....base import MXNetError
from ....registry import Registry
from .resnet import *  # noqa: F401,F403
from . import resnet as _resnet

_MODELS = Registry('model')
for _name in _resnet.MODEL_NAMES:
    _MODELS.add(_name, getattr(_resnet, _name))


def get_model(name, **kwargs):
    """Create the model registered as ``name`` (e.g. ``'resnet18_v1'``) with ``kwargs``.

    Parameters
    ----------
    name : str
        One of ``resnet18_v1 ... resnet152_v2`` and ``cifar_resnet20_v1``.
    classes : int
        Number of output classes.
    thumbnail : bool
        ResNets only: the CIFAR stem (one 3x3 convolution, no max-pool) for 32x32 inputs.
    pretrained : bool
        Must be False: minigluon ships no weights (load your own with load_parameters).
    """
    fn = _MODELS.get(name)
    if fn is None:
        raise MXNetError('unknown model %r; available models: %s'
                         % (name, ', '.join(_MODELS.names())))
    return fn(**kwargs)
