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
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001),
            nn.Activation('relu'))
    return out


def _make_branch(use_pool, *conv_settings):
    """An optional pool ('avg': 3x3/1, 'max': 3x3/2), then one basic convolution per
    ``(channels, kernel_size, strides, padding)`` setting (None: the default)."""
    out = nn.HybridSequential(prefix='')
    if use_pool == 'avg':
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == 'max':
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in conv_settings:
        out.add(_make_basic_conv(**{name: value for name, value in zip(_SETTING_NAMES, setting)
                                    if value is not None}))
    return out


def _concurrent(prefix, *branches):
    """A HybridConcurrent named ``prefix`` (MXNet's ``A1_``, ...; '' takes the parent's
    name) whose branches are made, in order, inside its name scope: each an argument
    tuple of ``_make_branch`` or a function making the branch."""
    out = nn.HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for branch in branches:
            out.add(branch() if callable(branch) else _make_branch(*branch))
    return out


def _make_A(pool_features, prefix):
    return _concurrent(prefix,
                       (None, (64, 1, None, None)),
                       (None, (48, 1, None, None), (64, 5, None, 2)),
                       (None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
                       ('avg', (pool_features, 1, None, None)))


def _make_B(prefix):
    return _concurrent(prefix,
                       (None, (384, 3, 2, None)),
                       (None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
                       ('max',))


def _make_C(channels_7x7, prefix):
    c = channels_7x7
    return _concurrent(prefix,
                       (None, (192, 1, None, None)),
                       (None, (c, 1, None, None), (c, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0))),
                       (None, (c, 1, None, None), (c, (7, 1), None, (3, 0)),
                        (c, (1, 7), None, (0, 3)), (c, (7, 1), None, (3, 0)),
                        (192, (1, 7), None, (0, 3))),
                       ('avg', (192, 1, None, None)))


def _make_D(prefix):
    return _concurrent(prefix,
                       (None, (192, 1, None, None), (320, 3, 2, None)),
                       (None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
                       ('max',))


def _then_split(*conv_settings):
    """A function making: the convolutions of ``conv_settings``, then 1x3 and 3x1 side by
    side (E's two split branches)."""
    def make():
        out = nn.HybridSequential(prefix='')
        out.add(_make_branch(None, *conv_settings))
        out.add(_concurrent('', (None, (384, (1, 3), None, (0, 1))),
                            (None, (384, (3, 1), None, (1, 0)))))
        return out
    return make


def _make_E(prefix):
    return _concurrent(prefix,
                       (None, (320, 1, None, None)),
                       _then_split((384, 1, None, None)),
                       _then_split((448, 1, None, None), (384, 3, None, 1)),
                       ('avg', (192, 1, None, None)))


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
        with self.name_scope():   # MXNet's names: inception30_A1_conv0_weight, ...
            self.features = nn.HybridSequential(prefix='')
            self.features.add(_make_basic_conv(channels=32, kernel_size=3, strides=2),
                              _make_basic_conv(channels=32, kernel_size=3),
                              _make_basic_conv(channels=64, kernel_size=3, padding=1),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _make_basic_conv(channels=80, kernel_size=1),
                              _make_basic_conv(channels=192, kernel_size=3),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _make_A(32, 'A1_'), _make_A(64, 'A2_'), _make_A(64, 'A3_'),
                              _make_B('B_'),
                              _make_C(128, 'C1_'), _make_C(160, 'C2_'), _make_C(160, 'C3_'),
                              _make_C(192, 'C4_'),
                              _make_D('D_'), _make_E('E1_'), _make_E('E2_'),
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
