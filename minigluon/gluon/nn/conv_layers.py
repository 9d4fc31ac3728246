"""Convolution, pooling and padding layers (1-D, 2-D and 3-D, channels first or last)."""
import numpy as np

from ...base import MXNetError
from ..block import HybridBlock
from ..parameter import Parameter
from .activations import Activation

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose',
           'Conv3DTranspose', 'MaxPool1D', 'MaxPool2D', 'MaxPool3D', 'AvgPool1D', 'AvgPool2D',
           'AvgPool3D', 'GlobalMaxPool1D', 'GlobalMaxPool2D', 'GlobalMaxPool3D',
           'GlobalAvgPool1D', 'GlobalAvgPool2D', 'GlobalAvgPool3D', 'ReflectionPad2D']

# spatial axes -> (channels first, channels last)
_LAYOUTS = {1: ('NCW', 'NWC'), 2: ('NCHW', 'NHWC'), 3: ('NCDHW', 'NDHWC')}


def _tuple(value, dims, what, layer):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * dims
    value = tuple(int(v) for v in value)
    if len(value) != dims:
        raise MXNetError('%s: %s=%s needs %d entries, one per spatial axis'
                         % (layer, what, value, dims))
    return value


def _check_layout(layout, dims, layer):
    if layout not in _LAYOUTS[dims]:
        raise MXNetError('%s: layout %r is not supported; use %s'
                         % (layer, layout, ' or '.join(repr(v) for v in _LAYOUTS[dims])))


class _Conv(HybridBlock):
    """Shared code of convolutions and transposed convolutions.

    Weight shapes follow MXNet: ``(channels, in_channels / groups, *kernel)`` for a
    convolution and ``(in_channels, channels / groups, *kernel)`` for a transposed one;
    with a channels-last layout the kernel axes come second and the channel axis last.
    """

    def _alias(self):
        return 'conv'

    def __init__(self, dims, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels, activation, use_bias, weight_initializer, bias_initializer,
                 op_name='Convolution', adj=None, **kwargs):
        super().__init__(**kwargs)
        layer = type(self).__name__
        _check_layout(layout, dims, layer)
        if not isinstance(channels, (int, np.integer)) or channels <= 0:
            raise MXNetError('%s: channels must be a positive int, got %r' % (layer, channels))
        if channels % groups or in_channels % groups:
            raise MXNetError('%s: channels (%d) and in_channels (%d) must divide by groups=%d'
                             % (layer, channels, in_channels, groups))
        self._channels, self._in_channels, self._op_name = int(channels), in_channels, op_name
        self._kwargs = {
            'kernel': _tuple(kernel_size, dims, 'kernel_size', layer),
            'stride': _tuple(strides, dims, 'strides', layer),
            'dilate': _tuple(dilation, dims, 'dilation', layer),
            'pad': _tuple(padding, dims, 'padding', layer),
            'num_filter': int(channels), 'num_group': int(groups), 'layout': layout}
        if adj is not None:
            self._kwargs['adj'] = _tuple(adj, dims, 'output_padding', layer)
        kernel = self._kwargs['kernel']
        if op_name == 'Convolution':
            outer, inner = channels, in_channels // groups
        else:
            outer, inner = in_channels, channels // groups
        self._last = layout.endswith('C')
        wshape = (outer,) + kernel + (inner,) if self._last else (outer, inner) + kernel
        self.weight = Parameter('weight', shape=wshape, init=weight_initializer,
                                allow_deferred_init=True)
        self.bias = Parameter('bias', shape=(channels,), init=bias_initializer,
                              allow_deferred_init=True) if use_bias else None
        with self.name_scope():  # named <layer>_relu, as in MXNet, using no counter
            self.act = Activation(activation, prefix=activation + '_') \
                if activation is not None else None

    def infer_shape(self, x, *args):
        in_channels = x.shape[-1 if self._last else 1]
        shape = list(self.weight.shape)
        if self._op_name == 'Convolution':
            shape[-1 if self._last else 1] = in_channels // self._kwargs['num_group']
        else:
            shape[0] = in_channels
        self.weight.shape = tuple(shape)

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        out = op(x, weight, bias, no_bias=bias is None, name='fwd', **self._kwargs)
        return self.act(out) if self.act is not None else out

    def __repr__(self):
        kw = self._kwargs
        dims = len(kw['kernel'])
        if self._op_name == 'Convolution':
            in_channels = self.weight.shape[-1 if self._last else 1] * kw['num_group']
        else:
            in_channels = self.weight.shape[0]
        s = '%s(%s -> %d, kernel_size=%s, stride=%s' % (
            type(self).__name__, in_channels or None, self._channels, kw['kernel'], kw['stride'])
        if kw['pad'] != (0,) * dims:
            s += ', padding=%s' % (kw['pad'],)
        if kw['dilate'] != (1,) * dims:
            s += ', dilation=%s' % (kw['dilate'],)
        if kw.get('adj', (0,) * dims) != (0,) * dims:
            s += ', output_padding=%s' % (kw['adj'],)
        if kw['num_group'] != 1:
            s += ', groups=%d' % kw['num_group']
        if self.bias is None:
            s += ', bias=False'
        if self.act is not None:
            s += ', %s' % self.act
        return s + ')'


class Conv1D(_Conv):
    """1-D convolution over ``(N, C, W)`` inputs. See ``Conv2D`` for the parameters."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout='NCW', activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(1, channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over ``(N, C, H, W)`` inputs.

    Parameters
    ----------
    channels : int
        Number of output channels.
    kernel_size, strides, padding, dilation : int or tuple of 2 ints
    groups : int, default 1
        Split input and output channels into this many independent groups.
    layout : str, default 'NCHW'
        'NCHW' or 'NHWC' (then the weight is ``(channels, *kernel, in_channels / groups)``).
    activation : str, optional
        Name of an ``Activation`` applied to the output.
    use_bias : bool, default True
    weight_initializer, bias_initializer : Initializer or str
    in_channels : int, default 0
        Input channels; 0 infers them on the first forward pass.

    Output size per spatial axis: ``(in + 2 * pad - dilation * (k - 1) - 1) // stride + 1``.
    """

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout='NCHW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(2, channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over ``(N, C, D, H, W)`` inputs (``layout='NCDHW'``) or
    ``(N, D, H, W, C)`` (``'NDHWC'``). See ``Conv2D`` for the parameters, here of 3 ints."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout='NCDHW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(3, channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, **kwargs)


class Conv1DTranspose(_Conv):
    """1-D transposed convolution. See ``Conv2DTranspose``."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout='NCW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(1, channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name='Deconvolution', adj=output_padding,
                         **kwargs)


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (the gradient of a convolution with respect to its input).

    Parameters are those of ``Conv2D`` plus ``output_padding`` (int or 2 ints, smaller
    than the stride), added to one side of the output. Output size per axis:
    ``(in - 1) * stride - 2 * pad + dilation * (k - 1) + 1 + output_padding``.
    """

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout='NCHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(2, channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name='Deconvolution', adj=output_padding,
                         **kwargs)


class Conv3DTranspose(_Conv):
    """3-D transposed convolution over ``(N, C, D, H, W)`` (or ``'NDHWC'``) inputs. See
    ``Conv2DTranspose`` for the parameters, here of 3 ints."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout='NCDHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(3, channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer,
                         bias_initializer, op_name='Deconvolution', adj=output_padding,
                         **kwargs)


class _Pooling(HybridBlock):
    """Shared code of the pooling layers."""

    def _alias(self):
        return 'pool'

    def __init__(self, dims, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        layer = type(self).__name__
        _check_layout(layout, dims, layer)
        if strides is None:
            strides = pool_size
        self._kwargs = {
            'kernel': _tuple(pool_size, dims, 'pool_size', layer),
            'stride': _tuple(strides, dims, 'strides', layer),
            'pad': _tuple(padding, dims, 'padding', layer),
            'global_pool': global_pool, 'pool_type': pool_type, 'layout': layout,
            'pooling_convention': 'full' if ceil_mode else 'valid'}
        if count_include_pad is not None:
            self._kwargs['count_include_pad'] = count_include_pad

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name='fwd', **self._kwargs)

    def __repr__(self):
        kw = self._kwargs
        return '%s(size=%s, stride=%s, padding=%s, ceil_mode=%s, global_pool=%s, ' \
            'pool_type=%s, layout=%s)' % (type(self).__name__, kw['kernel'], kw['stride'],
                                         kw['pad'], kw['pooling_convention'] == 'full',
                                         kw['global_pool'], kw['pool_type'], kw['layout'])


class MaxPool1D(_Pooling):
    """Max pooling over ``(N, C, W)`` (or ``'NWC'``); ``strides`` defaults to ``pool_size``."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW', ceil_mode=False,
                 **kwargs):
        super().__init__(1, pool_size, strides, padding, ceil_mode, False, 'max', layout,
                         **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over ``(N, C, H, W)``.

    Parameters
    ----------
    pool_size : int or 2 ints, default (2, 2)
    strides : int or 2 ints, optional
        Defaults to ``pool_size``.
    padding : int or 2 ints, default 0
        Implicit padding on both sides, never chosen as a maximum.
    layout : str, default 'NCHW'
        'NCHW' or 'NHWC'.
    ceil_mode : bool, default False
        Round the output size up, so a last partial window is kept.
    """

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout='NCHW',
                 ceil_mode=False, **kwargs):
        super().__init__(2, pool_size, strides, padding, ceil_mode, False, 'max', layout,
                         **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over ``(N, C, D, H, W)`` (or ``'NDHWC'``); see ``MaxPool2D``."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCDHW', **kwargs):
        super().__init__(3, pool_size, strides, padding, ceil_mode, False, 'max', layout,
                         **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over ``(N, C, W)`` (or ``'NWC'``); see ``AvgPool2D``."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW', ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(1, pool_size, strides, padding, ceil_mode, False, 'avg', layout,
                         count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over ``(N, C, H, W)`` (or ``'NHWC'``).

    Parameters are those of ``MaxPool2D`` plus ``count_include_pad`` (default True):
    whether padded zeros count in each window's average.
    """

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCHW', count_include_pad=True, **kwargs):
        super().__init__(2, pool_size, strides, padding, ceil_mode, False, 'avg', layout,
                         count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over ``(N, C, D, H, W)`` (or ``'NDHWC'``); see ``AvgPool2D``."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCDHW', count_include_pad=True, **kwargs):
        super().__init__(3, pool_size, strides, padding, ceil_mode, False, 'avg', layout,
                         count_include_pad, **kwargs)


# Global pooling keeps one position per axis; MXNet builds it with ceil_mode=True,
# which shows in the repr and changes nothing else.
class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: ``(N, C, W)`` -> ``(N, C, 1)`` (or ``'NWC'``)."""

    def __init__(self, layout='NCW', **kwargs):
        super().__init__(1, 1, None, 0, True, True, 'max', layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over each channel: ``(N, C, H, W)`` -> ``(N, C, 1, 1)`` (or ``'NHWC'``)."""

    def __init__(self, layout='NCHW', **kwargs):
        super().__init__(2, 1, None, 0, True, True, 'max', layout, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over each channel: ``(N, C, D, H, W)`` -> ``(N, C, 1, 1, 1)`` (or ``'NDHWC'``)."""

    def __init__(self, layout='NCDHW', **kwargs):
        super().__init__(3, 1, None, 0, True, True, 'max', layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: ``(N, C, W)`` -> ``(N, C, 1)`` (or ``'NWC'``)."""

    def __init__(self, layout='NCW', **kwargs):
        super().__init__(1, 1, None, 0, True, True, 'avg', layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over each channel: ``(N, C, H, W)`` -> ``(N, C, 1, 1)`` (or ``'NHWC'``)."""

    def __init__(self, layout='NCHW', **kwargs):
        super().__init__(2, 1, None, 0, True, True, 'avg', layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over each channel: ``(N, C, D, H, W)`` -> ``(N, C, 1, 1, 1)`` (or ``'NDHWC'``)."""

    def __init__(self, layout='NCDHW', **kwargs):
        super().__init__(3, 1, None, 0, True, True, 'avg', layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the two spatial axes of ``(N, C, H, W)`` with their reflection at the border.

    Parameters
    ----------
    padding : int or 8 ints, default 0
        The same padding on each side of H and W, or MXNet's ``pad_width``: (before,
        after) for each of the four axes, those of N and C zero.

    Inputs: ``(N, C, H, W)``. Outputs: ``(N, C, H + 2 * padding, W + 2 * padding)``. Each
    padding must be smaller than the axis it pads.
    """

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, (int, np.integer)):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8 or any(padding[:4]):
            raise MXNetError('ReflectionPad2D: padding must be an int or 8 ints (before, after '
                             'per axis of NCHW, zero for N and C), got %s' % (padding,))
        self._padding = padding

    def hybrid_forward(self, F, x):
        """Pad the two spatial axes by reflecting ``x`` at its borders (the edge not repeated).

        Inputs: ``(N, C, H, W)``. Outputs: ``(N, C, H + top + bottom, W + left + right)``.
        """
        return F.pad(x, mode='reflect', pad_width=self._padding)

    def __repr__(self):
        return 'ReflectionPad2D(padding=%s)' % (self._padding,)
