"""VGG ("Very Deep Convolutional Networks for Large-Scale Image Recognition") with 11, 13,
16 or 19 layers, with or without BatchNorm, laid out as MXNet's model zoo so parameter
paths and counts match it."""
from ....base import MXNetError
from ....initializer import Xavier
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['VGG', 'get_vgg']

MODELS = {}  # registry name -> constructor, filled below


class VGG(Classifier):
    """VGG: stages of 3x3 convolutions (each followed by BatchNorm when asked, and ReLU)
    and a 2x2 max-pool, then two 4096-unit Dense layers with Dropout, all in
    ``features``; then the ``output`` Dense.

    Parameters
    ----------
    layers : list of int
        Convolutions per stage.
    filters : list of int
        Channels per stage, one per entry of ``layers``.
    classes : int, default 1000
        Number of output classes.
    batch_norm : bool, default False
        BatchNorm after every convolution.

    Inputs: ``(N, 3, 224, 224)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise MXNetError('VGG: layers and filters need one entry per stage, got %d and %d'
                             % (len(layers), len(filters)))
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            self.features.add(nn.Dense(4096, activation='relu', weight_initializer='normal',
                                       bias_initializer='zeros'),
                              nn.Dropout(rate=0.5),
                              nn.Dense(4096, activation='relu', weight_initializer='normal',
                                       bias_initializer='zeros'),
                              nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer='normal', bias_initializer='zeros')

    @staticmethod
    def _make_features(layers, filters, batch_norm):
        featurizer = nn.HybridSequential()
        for num, channels in zip(layers, filters):
            for _ in range(num):
                featurizer.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type='gaussian',
                                                                   factor_type='out',
                                                                   magnitude=2),
                                         bias_initializer='zeros'))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation('relu'))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG with ``num_layers`` (11, 13, 16 or 19); ``kwargs`` go to ``VGG``
    (``classes``, ``batch_norm``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    if num_layers not in vgg_spec:
        raise MXNetError('VGG: invalid number of layers %r; options are %s'
                         % (num_layers, sorted(vgg_spec)))
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    name = 'vgg%d%s' % (num_layers, '_bn' if kwargs.get('batch_norm') else '')
    return load_pretrained(net, name, pretrained, ctx, root)


def _vgg_factory(num_layers, batch_norm):
    def factory(**kwargs):
        if batch_norm:
            kwargs['batch_norm'] = True
        return get_vgg(num_layers, **kwargs)
    factory.__name__ = 'vgg%d%s' % (num_layers, '_bn' if batch_norm else '')
    factory.__qualname__ = factory.__name__
    factory.__doc__ = ('VGG-%d%s. Keyword arguments: classes (default 1000), pretrained, ctx, '
                       'root (see get_vgg).' % (num_layers, ' with BatchNorm' if batch_norm
                                                else ''))
    MODELS[factory.__name__] = factory
    return factory


vgg11, vgg13, vgg16, vgg19 = [_vgg_factory(n, False) for n in (11, 13, 16, 19)]
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = [_vgg_factory(n, True) for n in (11, 13, 16, 19)]
__all__ += list(MODELS)
