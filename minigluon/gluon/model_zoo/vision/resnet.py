"""ResNet V1 and V2 ("Deep Residual Learning", "Identity Mappings in Deep Residual
Networks"), laid out as MXNet's model zoo so parameter paths and counts match it,
plus the CIFAR ResNet-20/56/110 V1 of GluonCV.

Every net has a ``features`` HybridSequential and an ``output`` Dense.
``thumbnail=True`` replaces the ImageNet stem (7x7/2 convolution, BatchNorm, ReLU,
3x3/2 max-pool) by a single 3x3 convolution, for 32x32 inputs.
"""
from ....base import MXNetError
from ...block import HybridBlock
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['ResNetV1', 'ResNetV2', 'BasicBlockV1', 'BasicBlockV2', 'BottleneckV1',
           'BottleneckV2', 'CIFARResNetV1', 'get_resnet', 'get_cifar_resnet']

MODELS = {}  # registry name -> constructor, filled below


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _downsample_v1(channels, stride, in_channels):
    out = nn.HybridSequential()
    out.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                      in_channels=in_channels))
    out.add(nn.BatchNorm())
    return out


class _ResidualV1(HybridBlock):
    """V1 blocks: ``relu(body(x) + shortcut(x))``, the shortcut downsampling when needed."""

    def hybrid_forward(self, F, x):
        """``relu(body(x) + shortcut(x))``.

        Parameters
        ----------
        F : module
            ``minigluon.ndarray``, the operator namespace.
        x : NDArray
            Input of shape `(batch_size, channels, height, width)`.

        Returns
        -------
        NDArray
        """
        residual = self.downsample(x) if self.downsample is not None else x
        return F.Activation(self.body(x) + residual, act_type='relu')


class BasicBlockV1(_ResidualV1):
    """Two 3x3 convolutions with BatchNorm, ReLU after the residual sum (ResNet-18/34 V1).

    Parameters
    ----------
    channels : int
        Output channels.
    stride : int
        Stride of the first convolution, 2 to halve height and width.
    downsample : bool, default False
        Whether the shortcut is a strided 1x1 convolution (needed when the stride or
        the channel count changes), else the identity.
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.

    Inputs:
        - **data**: input tensor with shape `(batch_size, in_channels, height, width)`.

    Outputs:
        - **out**: output tensor with shape `(batch_size, channels, out_height,
          out_width)`, height and width divided by ``stride``.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential()
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                      nn.Activation('relu'), _conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = _downsample_v1(channels, stride, in_channels) if downsample else None


class BottleneckV1(_ResidualV1):
    """1x1 reduce to ``channels // 4``, 3x3, 1x1 expand, each with BatchNorm (ResNet-50+ V1).

    Parameters
    ----------
    channels : int
        Output channels.
    stride : int
        Stride of the first (1x1) convolution, 2 to halve height and width.
    downsample : bool, default False
        Whether the shortcut is a strided 1x1 convolution (needed when the stride or
        the channel count changes), else the identity.
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.

    Inputs:
        - **data**: input tensor with shape `(batch_size, in_channels, height, width)`.

    Outputs:
        - **out**: output tensor with shape `(batch_size, channels, out_height,
          out_width)`, height and width divided by ``stride``.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential()
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride), nn.BatchNorm(),
                      nn.Activation('relu'), _conv3x3(channels // 4, 1, channels // 4),
                      nn.BatchNorm(), nn.Activation('relu'),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = _downsample_v1(channels, stride, in_channels) if downsample else None


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: BN, ReLU, 3x3 conv, twice (ResNet-18/34 V2).

    The shortcut (identity, or the 1x1 downsampling convolution applied to the first
    BN-ReLU's output) is added after the second convolution, with no activation after
    the sum: the next block's BatchNorm comes first.

    Parameters
    ----------
    channels : int
        Output channels.
    stride : int
        Stride of the first convolution, 2 to halve height and width.
    downsample : bool, default False
        Whether the shortcut is a strided 1x1 convolution (needed when the stride or
        the channel count changes), else the identity.
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.

    Inputs:
        - **data**: input tensor with shape `(batch_size, in_channels, height, width)`.

    Outputs:
        - **out**: output tensor with shape `(batch_size, channels, out_height,
          out_width)`, height and width divided by ``stride``.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                    in_channels=in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        """The residual sum ``conv2(relu(bn2(conv1(relu(bn1(x)))))) + shortcut``.

        Parameters
        ----------
        F : module
            ``minigluon.ndarray``, the operator namespace.
        x : NDArray
            Input of shape `(batch_size, channels, height, width)`.

        Returns
        -------
        NDArray
        """
        residual = x
        x = F.Activation(self.bn1(x), act_type='relu')
        if self.downsample is not None:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type='relu'))
        return x + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck block (ResNet-50+ V2): BN, ReLU, then a 1x1 reduce to
    ``channels // 4``, a 3x3 and a 1x1 expand convolution, each after BN and ReLU; the
    shortcut is added after the last, as in ``BasicBlockV2``.

    Parameters
    ----------
    channels : int
        Output channels.
    stride : int
        Stride of the 3x3 convolution, 2 to halve height and width.
    downsample : bool, default False
        Whether the shortcut is a strided 1x1 convolution (needed when the stride or
        the channel count changes), else the identity.
    in_channels : int, default 0
        Input channels; 0 infers them from the first input.

    Inputs:
        - **data**: input tensor with shape `(batch_size, in_channels, height, width)`.

    Outputs:
        - **out**: output tensor with shape `(batch_size, channels, out_height,
          out_width)`, height and width divided by ``stride``.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                    in_channels=in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        """The three pre-activated convolutions plus the shortcut.

        Parameters
        ----------
        F : module
            ``minigluon.ndarray``, the operator namespace.
        x : NDArray
            Input of shape `(batch_size, channels, height, width)`.

        Returns
        -------
        NDArray
        """
        residual = x
        x = F.Activation(self.bn1(x), act_type='relu')
        if self.downsample is not None:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type='relu'))
        x = self.conv3(F.Activation(self.bn3(x), act_type='relu'))
        return x + residual


def _make_stage(block, num_blocks, channels, stride, in_channels, index):
    # named as MXNet names it: its layers are resnetv10_stage1_conv0_, ...
    stage = nn.HybridSequential(prefix='stage%d_' % index)
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=''))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=''))
    return stage


def _check_spec(layers, channels):
    if len(layers) != len(channels) - 1:
        raise MXNetError('ResNet: channels needs one entry more than layers, got %d layers and '
                         '%d channels' % (len(layers), len(channels)))


class ResNetV1(Classifier):
    """ResNet V1.

    Parameters
    ----------
    block : class
        BasicBlockV1 or BottleneckV1.
    layers : list of int
        Blocks per stage.
    channels : list of int
        Stem channels, then output channels per stage.
    classes : int, default 1000
    thumbnail : bool, default False
        The CIFAR stem: one 3x3 convolution (no BatchNorm, no max-pool), as in MXNet.
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(),
                                  nn.Activation('relu'), nn.MaxPool2D(3, 2, 1))
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, channels[i], i + 1))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])


class ResNetV2(Classifier):
    """ResNet V2 (pre-activation); parameters as ``ResNetV1`` with V2 blocks."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(),
                                  nn.Activation('relu'), nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, in_channels, i + 1))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation('relu'), nn.GlobalAvgPool2D(),
                              nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)


class CIFARResNetV1(Classifier):
    """GluonCV's CIFAR ResNet V1: 3x3 stem with BatchNorm, three stages of 16/32/64 channels."""

    def __init__(self, block, layers, channels, classes=10, **kwargs):
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(channels[0], 3, 1, 1, use_bias=False), nn.BatchNorm())
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, channels[i], i + 1))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])


resnet_spec = {18: ('basic_block', [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ('basic_block', [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ('bottle_neck', [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ('bottle_neck', [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ('bottle_neck', [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
_NETS = {1: ResNetV1, 2: ResNetV2}
_BLOCKS = {1: {'basic_block': BasicBlockV1, 'bottle_neck': BottleneckV1},
           2: {'basic_block': BasicBlockV2, 'bottle_neck': BottleneckV2}}


def get_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """ResNet ``version`` (1 or 2) with ``num_layers`` (18, 34, 50, 101 or 152);
    ``kwargs`` go to the net (``classes``, ``thumbnail``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    if num_layers not in resnet_spec:
        raise MXNetError('ResNet: invalid number of layers %r; options are %s'
                         % (num_layers, sorted(resnet_spec)))
    if version not in _NETS:
        raise MXNetError('ResNet: invalid version %r; options are 1 and 2' % (version,))
    block_type, layers, channels = resnet_spec[num_layers]
    net = _NETS[version](_BLOCKS[version][block_type], layers, channels, **kwargs)
    return load_pretrained(net, 'resnet%d_v%d' % (num_layers, version), pretrained, ctx, root)


def get_cifar_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """CIFAR ResNet V1 with ``num_layers = 6 * n + 2`` (20, 56, 110, ...).

    MXNet publishes no weights for these: ``pretrained=True`` raises, saying so.
    """
    if version != 1:
        raise MXNetError('CIFAR ResNet: only version 1 is available, got %r' % (version,))
    if (num_layers - 2) % 6 or num_layers < 8:
        raise MXNetError('CIFAR ResNet: num_layers must be 6*n+2 (20, 56, 110, ...), got %r'
                         % (num_layers,))
    n = (num_layers - 2) // 6
    net = CIFARResNetV1(BasicBlockV1, [n] * 3, [16, 16, 32, 64], **kwargs)
    return load_pretrained(net, 'cifar_resnet%d_v1' % num_layers, pretrained, ctx, root)


def _resnet_factory(version, num_layers):
    def factory(**kwargs):
        return get_resnet(version, num_layers, **kwargs)
    factory.__name__ = factory.__qualname__ = 'resnet%d_v%d' % (num_layers, version)
    factory.__doc__ = ('ResNet-%d V%d. Keyword arguments: classes (default 1000), thumbnail '
                       '(CIFAR stem), pretrained, ctx, root (see get_resnet).'
                       % (num_layers, version))
    MODELS[factory.__name__] = factory
    return factory


def _cifar_factory(num_layers):
    def factory(**kwargs):
        return get_cifar_resnet(1, num_layers, **kwargs)
    factory.__name__ = factory.__qualname__ = 'cifar_resnet%d_v1' % num_layers
    factory.__doc__ = 'CIFAR ResNet-%d V1. Keyword arguments: classes (default 10).' % num_layers
    MODELS[factory.__name__] = factory
    return factory


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = \
    [_resnet_factory(1, n) for n in (18, 34, 50, 101, 152)]
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = \
    [_resnet_factory(2, n) for n in (18, 34, 50, 101, 152)]
cifar_resnet20_v1, cifar_resnet56_v1, cifar_resnet110_v1 = \
    [_cifar_factory(n) for n in (20, 56, 110)]
__all__ += list(MODELS)
