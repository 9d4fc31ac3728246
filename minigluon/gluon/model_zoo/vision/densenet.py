"""DenseNet-BC 121, 161, 169 and 201 ("Densely Connected Convolutional Networks"), laid
out as MXNet's model zoo so parameter paths and counts match it."""
from ....base import MXNetError
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['DenseNet', 'get_densenet']

MODELS = {}  # registry name -> constructor, filled below


def _make_dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-1x1 conv-BN-ReLU-3x3 conv, its ``growth_rate`` new channels appended to
    the input's."""
    new_features = nn.HybridSequential(prefix='')
    new_features.add(nn.BatchNorm(), nn.Activation('relu'),
                     nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
                     nn.BatchNorm(), nn.Activation('relu'),
                     nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = nn.HybridConcurrent(axis=1, prefix='')
    out.add(nn.Identity(), new_features)
    return out


def _make_dense_block(num_layers, bn_size, growth_rate, dropout, index):
    # named as MXNet names it: its layers are densenet0_stage1_conv0_, ...
    out = nn.HybridSequential(prefix='stage%d_' % index)
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_make_dense_layer(growth_rate, bn_size, dropout))
    return out


def _make_transition(num_output_features):
    out = nn.HybridSequential(prefix='')
    out.add(nn.BatchNorm(), nn.Activation('relu'),
            nn.Conv2D(num_output_features, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(Classifier):
    """DenseNet-BC: a 7x7 stem, dense blocks joined by halving transitions, BN, ReLU and
    a 7x7 average pool in ``features``; then the ``output`` Dense.

    Parameters
    ----------
    num_init_features : int
        Channels of the stem convolution.
    growth_rate : int
        Channels each dense layer adds (``k`` in the paper).
    block_config : list of int
        Dense layers per block.
    bn_size : int, default 4
        The bottleneck 1x1 convolution has ``bn_size * growth_rate`` channels.
    dropout : float, default 0
        Dropout after each dense layer.
    classes : int, default 1000
        Number of output classes.

    Inputs: ``(N, 3, 224, 224)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                        use_bias=False),
                              nn.BatchNorm(), nn.Activation('relu'),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_make_dense_block(num_layers, bn_size, growth_rate, dropout,
                                                    i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_make_transition(num_features))
            self.features.add(nn.BatchNorm(), nn.Activation('relu'), nn.AvgPool2D(pool_size=7),
                              nn.Flatten())
            self.output = nn.Dense(classes)


densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """DenseNet-BC with ``num_layers`` (121, 161, 169 or 201); ``kwargs`` go to
    ``DenseNet`` (``classes``, ``bn_size``, ``dropout``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    if num_layers not in densenet_spec:
        raise MXNetError('DenseNet: invalid number of layers %r; options are %s'
                         % (num_layers, sorted(densenet_spec)))
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    return load_pretrained(net, 'densenet%d' % num_layers, pretrained, ctx, root)


def _densenet_factory(num_layers):
    def factory(**kwargs):
        return get_densenet(num_layers, **kwargs)
    factory.__name__ = factory.__qualname__ = 'densenet%d' % num_layers
    factory.__doc__ = ('DenseNet-BC-%d. Keyword arguments: classes (default 1000), pretrained, '
                       'ctx, root (see get_densenet).' % num_layers)
    MODELS[factory.__name__] = factory
    return factory


densenet121, densenet161, densenet169, densenet201 = \
    [_densenet_factory(n) for n in (121, 161, 169, 201)]
__all__ += list(MODELS)
