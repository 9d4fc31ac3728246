"""SqueezeNet 1.0 ("SqueezeNet: AlexNet-level accuracy with 50x fewer parameters") and
1.1 (the official repository's cheaper variant), laid out as MXNet's model zoo so
parameter paths and counts match it."""
from ....base import MXNetError
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['SqueezeNet', 'get_squeezenet', 'squeezenet1_0', 'squeezenet1_1']

MODELS = {}  # registry name -> constructor, filled below


def _make_fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential()
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation('relu'))
    return out


def _make_fire(squeeze_channels, expand1x1_channels, expand3x3_channels):
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions side by side."""
    out = nn.HybridSequential(prefix='')
    out.add(_make_fire_conv(squeeze_channels, 1))   # made first: MXNet's layer numbering
    paths = nn.HybridConcurrent(axis=1, prefix='')
    paths.add(_make_fire_conv(expand1x1_channels, 1),
              _make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(Classifier):
    """SqueezeNet: a convolution stem and fire modules in ``features``; a 1x1 convolution
    to ``classes`` channels, ReLU and a 13x13 average pool in ``output``.

    Parameters
    ----------
    version : str
        '1.0' or '1.1'.
    classes : int, default 1000
        Number of output classes.

    Inputs: ``(N, 3, 224, 224)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ('1.0', '1.1'):
            raise MXNetError("SqueezeNet: unsupported version %r; '1.0' or '1.1' expected"
                             % (version,))
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            if version == '1.0':
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation('relu'),
                                  _pool(), _make_fire(16, 64, 64), _make_fire(16, 64, 64),
                                  _make_fire(32, 128, 128), _pool(), _make_fire(32, 128, 128),
                                  _make_fire(48, 192, 192), _make_fire(48, 192, 192),
                                  _make_fire(64, 256, 256), _pool(), _make_fire(64, 256, 256))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation('relu'),
                                  _pool(), _make_fire(16, 64, 64), _make_fire(16, 64, 64),
                                  _pool(), _make_fire(32, 128, 128), _make_fire(32, 128, 128),
                                  _pool(), _make_fire(48, 192, 192), _make_fire(48, 192, 192),
                                  _make_fire(64, 256, 256), _make_fire(64, 256, 256))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix='')
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation('relu'),
                            nn.AvgPool2D(13), nn.Flatten())


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet ``version`` ('1.0' or '1.1'); ``kwargs`` go to ``SqueezeNet``
    (``classes``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    net = SqueezeNet(version, **kwargs)
    return load_pretrained(net, 'squeezenet%s' % version, pretrained, ctx, root)


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0. Keyword arguments: see ``get_squeezenet``."""
    return get_squeezenet('1.0', **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1: 2.4x less computation than 1.0. Keyword arguments: see
    ``get_squeezenet``."""
    return get_squeezenet('1.1', **kwargs)


MODELS.update({'squeezenet1.0': squeezenet1_0, 'squeezenet1.1': squeezenet1_1})
