"""Inception V3 ("Rethinking the Inception Architecture for Computer Vision"), laid out
as MXNet's model zoo so parameter paths and counts match it (no auxiliary classifier,
as in MXNet)."""
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['Inception3', 'inception_v3']

MODELS = {}  # registry name -> constructor, filled below

_SETTING_NAMES = ('channels', 'kernel_size', 'strides', 'padding')


def _make_basic_conv(**kwargs):
    """Convolution (no bias), BatchNorm with epsilon 1e-3, ReLU."""
    out = nn.HybridSequential()
    out.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001),
            nn.Activation('relu'))
    return out


def _make_branch(use_pool, *conv_settings):
    """An optional pool ('avg': 3x3/1, 'max': 3x3/2), then one basic convolution per
    ``(channels, kernel_size, strides, padding)`` setting (None: the default)."""
    out = nn.HybridSequential()
    if use_pool == 'avg':
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == 'max':
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in conv_settings:
        out.add(_make_basic_conv(**{name: value for name, value in zip(_SETTING_NAMES, setting)
                                    if value is not None}))
    return out


def _concurrent(*branches):
    out = nn.HybridConcurrent(axis=1)
    out.add(*branches)
    return out


def _make_A(pool_features):
    return _concurrent(
        _make_branch(None, (64, 1, None, None)),
        _make_branch(None, (48, 1, None, None), (64, 5, None, 2)),
        _make_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        _make_branch('avg', (pool_features, 1, None, None)))


def _make_B():
    return _concurrent(
        _make_branch(None, (384, 3, 2, None)),
        _make_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        _make_branch('max'))


def _make_C(channels_7x7):
    c = channels_7x7
    return _concurrent(
        _make_branch(None, (192, 1, None, None)),
        _make_branch(None, (c, 1, None, None), (c, (1, 7), None, (0, 3)),
                     (192, (7, 1), None, (3, 0))),
        _make_branch(None, (c, 1, None, None), (c, (7, 1), None, (3, 0)),
                     (c, (1, 7), None, (0, 3)), (c, (7, 1), None, (3, 0)),
                     (192, (1, 7), None, (0, 3))),
        _make_branch('avg', (192, 1, None, None)))


def _make_D():
    return _concurrent(
        _make_branch(None, (192, 1, None, None), (320, 3, 2, None)),
        _make_branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                     (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
        _make_branch('max'))


def _split_1x3_3x1():
    return _concurrent(_make_branch(None, (384, (1, 3), None, (0, 1))),
                       _make_branch(None, (384, (3, 1), None, (1, 0))))


def _make_E():
    branch_3x3 = nn.HybridSequential()
    branch_3x3.add(_make_branch(None, (384, 1, None, None)), _split_1x3_3x1())
    branch_3x3dbl = nn.HybridSequential()
    branch_3x3dbl.add(_make_branch(None, (448, 1, None, None), (384, 3, None, 1)),
                      _split_1x3_3x1())
    return _concurrent(_make_branch(None, (320, 1, None, None)), branch_3x3, branch_3x3dbl,
                       _make_branch('avg', (192, 1, None, None)))


class Inception3(Classifier):
    """Inception V3: the convolution stem, Inception blocks A x3, B, C x4, D, E x2, an 8x8
    average pool and Dropout in ``features``; then the ``output`` Dense.

    Parameters
    ----------
    classes : int, default 1000
        Number of output classes.

    Inputs: ``(N, 3, 299, 299)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        self.features = nn.HybridSequential()
        self.features.add(_make_basic_conv(channels=32, kernel_size=3, strides=2),
                          _make_basic_conv(channels=32, kernel_size=3),
                          _make_basic_conv(channels=64, kernel_size=3, padding=1),
                          nn.MaxPool2D(pool_size=3, strides=2),
                          _make_basic_conv(channels=80, kernel_size=1),
                          _make_basic_conv(channels=192, kernel_size=3),
                          nn.MaxPool2D(pool_size=3, strides=2),
                          _make_A(32), _make_A(64), _make_A(64), _make_B(),
                          _make_C(128), _make_C(160), _make_C(160), _make_C(192),
                          _make_D(), _make_E(), _make_E(),
                          nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
        self.output = nn.Dense(classes)


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception V3; ``kwargs`` go to ``Inception3`` (``classes``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    net = Inception3(**kwargs)
    return load_pretrained(net, 'inceptionv3', pretrained, ctx, root)


MODELS['inceptionv3'] = inception_v3
