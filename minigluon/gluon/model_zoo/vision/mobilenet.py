"""MobileNet ("MobileNets: Efficient Convolutional Neural Networks for Mobile Vision
Applications") and MobileNetV2 ("Inverted Residuals and Linear Bottlenecks") with width
multipliers 1.0, 0.75, 0.5 and 0.25, laid out as MXNet's model zoo so parameter paths
and counts match it."""
from ...block import HybridBlock
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['MobileNet', 'MobileNetV2', 'get_mobilenet', 'get_mobilenet_v2']

MODELS = {}  # registry name -> constructor, filled below
MULTIPLIERS = (1.0, 0.75, 0.5, 0.25)


class RELU6(HybridBlock):
    """``min(max(x, 0), 6)``, the activation of MobileNetV2 (as MXNet's model zoo has it).

    Inputs:
        - **data**: input tensor of any shape.

    Outputs:
        - **out**: output tensor of the same shape.
    """

    def hybrid_forward(self, F, x):
        """``F.clip(x, 0, 6)``.

        Parameters
        ----------
        F : module
            ``minigluon.ndarray``, the operator namespace.
        x : NDArray

        Returns
        -------
        NDArray
        """
        return F.clip(x, 0, 6)


def _add_conv(out, channels=1, kernel=1, stride=1, pad=0, num_group=1, active=True,
              relu6=False):
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False),
            nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation('relu'))


def _add_conv_dw(out, dw_channels, channels, stride, relu6=False):
    """A depthwise 3x3 convolution, then a pointwise 1x1 one."""
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1,
              num_group=dw_channels, relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's block: 1x1 expansion by ``t``, depthwise 3x3, linear 1x1 projection;
    the input is added back when the shapes allow (stride 1, same channels).

    Parameters
    ----------
    in_channels : int
        Input channels.
    channels : int
        Output channels.
    t : int
        Expansion ratio: the hidden layers have ``in_channels * t`` channels.
    stride : int
        Stride of the depthwise convolution.

    Inputs:
        - **data**: input tensor with shape `(batch_size, in_channels, height, width)`.

    Outputs:
        - **out**: output tensor with shape `(batch_size, channels, out_height,
          out_width)`, height and width divided by ``stride``.
    """

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, in_channels * t, relu6=True)
            _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                      num_group=in_channels * t, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        """The expansion, depthwise and projection convolutions, plus ``x`` when the
        shapes allow.

        Parameters
        ----------
        F : module
            ``minigluon.ndarray``, the operator namespace.
        x : NDArray
            Input of shape `(batch_size, in_channels, height, width)`.

        Returns
        -------
        NDArray
        """
        out = self.out(x)
        return out + x if self.use_shortcut else out


class MobileNet(Classifier):
    """MobileNet: a 3x3 stem and 13 depthwise-separable convolutions, global average pool
    in ``features``; then the ``output`` Dense.

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier (at least 0.25): every layer has that fraction of the channels.
    classes : int, default 1000
        Number of output classes.

    Inputs: ``(N, 3, 224, 224)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        dw_channels = [int(x * multiplier) for x in
                       [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
        channels = [int(x * multiplier) for x in
                    [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
            for dwc, c, s in zip(dw_channels, channels, strides):
                _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
            self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)


class MobileNetV2(Classifier):
    """MobileNetV2: a 3x3 stem, 17 linear bottlenecks, a 1x1 convolution to 1280
    channels and a global average pool in ``features``; a 1x1 convolution to ``classes``
    channels (no bias) in ``output``.

    Parameters
    ----------
    multiplier : float, default 1.0
        Width multiplier: every layer but the last 1280-channel one has that fraction of
        the channels (the last one grows with multipliers above 1).
    classes : int, default 1000
        Number of output classes.

    Inputs: ``(N, 3, 224, 224)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        in_channels_group = [int(x * multiplier) for x in
                             [32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3]
        channels_group = [int(x * multiplier) for x in
                          [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320]]
        ts = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
        # MXNet's names: mobilenetv20_features_conv0_weight, ..._output_pred_weight
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='features_')
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1,
                          relu6=True)
                for in_c, c, t, s in zip(in_channels_group, channels_group, ts, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t,
                                                       stride=s))
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix='output_')
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix='pred_'),
                                nn.Flatten())


def _suffix(multiplier):
    """1.0 -> '1.0', 0.75 -> '0.75', 0.5 -> '0.5': the published weights' naming."""
    suffix = '%.2f' % multiplier
    return suffix[:-1] if suffix in ('1.00', '0.50') else suffix


def get_mobilenet(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNet with width ``multiplier``; ``kwargs`` go to ``MobileNet`` (``classes``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    net = MobileNet(multiplier, **kwargs)
    return load_pretrained(net, 'mobilenet%s' % _suffix(multiplier), pretrained, ctx, root)


def get_mobilenet_v2(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNetV2 with width ``multiplier``; ``kwargs`` go to ``MobileNetV2``
    (``classes``). ``pretrained``, ``ctx`` and ``root`` as in ``get_mobilenet``."""
    net = MobileNetV2(multiplier, **kwargs)
    return load_pretrained(net, 'mobilenetv2_%s' % _suffix(multiplier), pretrained, ctx, root)


def _factory(get, multiplier, function_name, model_name, title):
    def factory(**kwargs):
        return get(multiplier, **kwargs)
    factory.__name__ = factory.__qualname__ = function_name
    factory.__doc__ = ('%s with width multiplier %s. Keyword arguments: classes (default '
                       '1000), pretrained, ctx, root (see %s).'
                       % (title, multiplier, get.__name__))
    MODELS[model_name] = factory
    return factory


mobilenet1_0, mobilenet0_75, mobilenet0_5, mobilenet0_25 = [
    _factory(get_mobilenet, m, 'mobilenet' + _suffix(m).replace('.', '_'),
             'mobilenet' + _suffix(m), 'MobileNet') for m in MULTIPLIERS]
mobilenet_v2_1_0, mobilenet_v2_0_75, mobilenet_v2_0_5, mobilenet_v2_0_25 = [
    _factory(get_mobilenet_v2, m, 'mobilenet_v2_' + _suffix(m).replace('.', '_'),
             'mobilenetv2_' + _suffix(m), 'MobileNetV2') for m in MULTIPLIERS]
__all__ += [f.__name__ for f in MODELS.values()]
