"""Convolutional recurrent cells (Shi et al., 2015, https://arxiv.org/abs/1506.04214):
the RNN, LSTM and GRU maths with convolutions in place of the matrix products, over 1, 2
or 3 spatial dimensions.

The input projection is a convolution of ``i2h_kernel`` (padding ``i2h_pad``), the
recurrent one a 'same' convolution of the odd ``h2h_kernel``; the weights are MXNet's
(``i2h_weight`` ``(gates * hidden_channels, in_channels, *i2h_kernel)`` for channels-
first layouts), gates stacked on the channel axis as the matrix cells stack them.
"""
from math import floor

from ....base import numeric_types
from ...rnn import HybridRecurrentCell

__all__ = ['Conv1DRNNCell', 'Conv2DRNNCell', 'Conv3DRNNCell',
           'Conv1DLSTMCell', 'Conv2DLSTMCell', 'Conv3DLSTMCell',
           'Conv1DGRUCell', 'Conv2DGRUCell', 'Conv3DGRUCell']

_LAYOUTS = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}


def _get_conv_out_size(dimensions, kernels, paddings, dilations):
    return tuple(int(floor(x + 2 * p - d * (k - 1) - 1) + 1) if x else 0
                 for x, k, p, d in zip(dimensions, kernels, paddings, dilations))


def _per_dim(value, dims, what):
    if isinstance(value, numeric_types):
        return (value,) * dims
    if len(value) != dims:
        raise AssertionError('For %dD convolution, the convolution settings can only be either '
                             'int or list/tuple of length %d; %s is %r'
                             % (dims, dims, what, value))
    return tuple(value)


class _BaseConvRNNCell(HybridRecurrentCell):
    """What the convolutional cells share: their settings, weights, the two
    convolutions of a step, and the shape of the states."""
    _dims = 0  # the number of spatial dimensions, set by each public class
    _gate_names = ()

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=0,
                 i2h_dilate=1, h2h_dilate=1, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', conv_layout=None, activation='tanh',
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        dims = self._dims
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout or _LAYOUTS[dims]
        self._activation = activation
        self._i2h_kernel = _per_dim(i2h_kernel, dims, 'i2h_kernel')
        self._stride = (1,) * dims
        self._i2h_pad = _per_dim(i2h_pad, dims, 'i2h_pad')
        self._i2h_dilate = _per_dim(i2h_dilate, dims, 'i2h_dilate')
        self._h2h_kernel = _per_dim(h2h_kernel, dims, 'h2h_kernel')
        if not all(k % 2 == 1 for k in self._h2h_kernel):
            raise AssertionError('Only support odd number, get h2h_kernel= %s'
                                 % str(h2h_kernel))
        self._h2h_dilate = _per_dim(h2h_dilate, dims, 'h2h_dilate')
        (self._channel_axis, self._in_channels, i2h_param_shape, h2h_param_shape,
         self._h2h_pad, self._state_shape) = self._decide_shapes()
        gates = hidden_channels * self._num_gates
        self.i2h_weight = self.params.get('i2h_weight', shape=i2h_param_shape,
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=h2h_param_shape,
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(gates,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(gates,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def _decide_shapes(self):
        """(channel axis, input channels, i2h weight shape, h2h weight shape, h2h
        padding, state shape without the batch)."""
        channel_axis = self._conv_layout.find('C')
        input_shape = self._input_shape
        in_channels = input_shape[channel_axis - 1]
        hidden = self._hidden_channels
        dimensions = input_shape[1:] if channel_axis == 1 else input_shape[:-1]
        total_out = hidden * self._num_gates
        conv_out_size = _get_conv_out_size(dimensions, self._i2h_kernel, self._i2h_pad,
                                           self._i2h_dilate)
        h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        if channel_axis == 1:
            i2h_shape = (total_out, in_channels) + self._i2h_kernel
            h2h_shape = (total_out, hidden) + self._h2h_kernel
            state_shape = (hidden,) + conv_out_size
        else:
            i2h_shape = (total_out,) + self._i2h_kernel + (in_channels,)
            h2h_shape = (total_out,) + self._h2h_kernel + (hidden,)
            state_shape = conv_out_size + (hidden,)
        return channel_axis, in_channels, i2h_shape, h2h_shape, h2h_pad, state_shape

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return '%s(%s -> %s, %s, %s)' % (type(self).__name__, in_channels or None, shape[0],
                                         self._activation, self._conv_layout)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size,) + self._state_shape, '__layout__': self._conv_layout}
                for _ in range(self._num_states)]

    _num_states = 1

    def _conv_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                      prefix):
        num_filter = self._hidden_channels * self._num_gates
        i2h = F.Convolution(data=inputs, num_filter=num_filter, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            weight=i2h_weight, bias=i2h_bias, layout=self._conv_layout,
                            name=prefix + 'i2h')
        h2h = F.Convolution(data=states[0], num_filter=num_filter, kernel=self._h2h_kernel,
                            dilate=self._h2h_dilate, pad=self._h2h_pad, stride=self._stride,
                            weight=h2h_weight, bias=h2h_bias, layout=self._conv_layout,
                            name=prefix + 'h2h')
        return i2h, h2h


class _ConvRNNCell(_BaseConvRNNCell):
    _gate_names = ('',)

    def _alias(self):
        return 'conv_rnn'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + 'out')
        return output, [output]


class _ConvLSTMCell(_BaseConvRNNCell):
    _gate_names = ('_i', '_f', '_c', '_o')
    _num_states = 2

    def _alias(self):
        return 'conv_lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice',
                               axis=self._channel_axis)
        in_gate = F.Activation(gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(gates[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = self._get_activation(F, gates[2], self._activation, name=prefix + 'c')
        out_gate = F.Activation(gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    _gate_names = ('_r', '_z', '_o')

    def _alias(self):
        return 'conv_gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice',
                                           axis=self._channel_axis)
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice',
                                           axis=self._channel_axis)
        reset_gate = F.Activation(i2h_r + h2h_r, act_type='sigmoid', name=prefix + 'r_act')
        update_gate = F.Activation(i2h_z + h2h_z, act_type='sigmoid', name=prefix + 'z_act')
        candidate = self._get_activation(F, i2h + reset_gate * h2h, self._activation,
                                         name=prefix + 'h_act')
        next_h = F.elemwise_add((1. - update_gate) * candidate, update_gate * states[0],
                                name=prefix + 'out')
        return next_h, [next_h]


_DOC = r"""{dims}D convolutional {kind} cell{maths}

    Parameters
    ----------
    input_shape : tuple of int
        The shape of one sample's input at one step (no batch or time axis), laid out
        as ``conv_layout``: ``{example}`` for '{layout}'.
    hidden_channels : int
        Number of channels of the output and the states.
    i2h_kernel : int or tuple of int
        Kernel of the input convolution.
    h2h_kernel : int or tuple of int
        Kernel of the recurrent convolution; odd sizes only (it keeps the state's size).
    i2h_pad : int or tuple of int, default 0
        Padding of the input convolution.
    i2h_dilate, h2h_dilate : int or tuple of int, default 1
        Dilation of the input and the recurrent convolutions.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    conv_layout : str, default '{layout}'
        The layout of the inputs, states and weights: '{layout}' or '{last}'.
    activation : str or Block, default 'tanh'
        {activation}
    prefix : str, default ``'{alias}_'`` plus a counter
    params : ParameterDict or None
        Parameters to share with another cell.
    """

_MATHS = {
    'RNN': r""":

    .. math::
        h_t = \tanh(W_i \ast x_t + R_i \ast h_{t-1} + b_i)
""",
    'LSTM': r""" (Shi et al., 2015):

    .. math::
        \begin{array}{ll}
        i_t = \sigma(W_i \ast x_t + R_i \ast h_{t-1} + b_i) \\
        f_t = \sigma(W_f \ast x_t + R_f \ast h_{t-1} + b_f) \\
        o_t = \sigma(W_o \ast x_t + R_o \ast h_{t-1} + b_o) \\
        c^\prime_t = \tanh(W_c \ast x_t + R_c \ast h_{t-1} + b_c) \\
        c_t = f_t \circ c_{t-1} + i_t \circ c^\prime_t \\
        h_t = o_t \circ \tanh(c_t)
        \end{array}
""",
    'GRU': r""":

    .. math::
        \begin{array}{ll}
        r_t = \sigma(W_r \ast x_t + R_r \ast h_{t-1} + b_r) \\
        z_t = \sigma(W_z \ast x_t + R_z \ast h_{t-1} + b_z) \\
        n_t = \tanh(W_i \ast x_t + b_i + r_t \circ (R_n \ast h_{t-1} + b_n)) \\
        h_t = (1 - z_t) \circ n_t + z_t \circ h_{t-1}
        \end{array}
""",
}
_ACTIVATION = {'RNN': 'The activation of the step.',
               'LSTM': r'The activation of :math:`c^\prime_t` and of the cell state in '
                       r':math:`h_t`.',
               'GRU': 'The activation of :math:`n_t`.'}
_EXAMPLES = {1: '(C, W)', 2: '(C, H, W)', 3: '(C, D, H, W)'}


def _public(kind, dims, base):
    layout = _LAYOUTS[dims]
    name = 'Conv%dD%sCell' % (dims, kind)
    doc = _DOC.format(dims=dims, kind=kind, maths=_MATHS[kind], example=_EXAMPLES[dims],
                      layout=layout, last='N' + layout[2:] + 'C', activation=_ACTIVATION[kind],
                      alias=base._alias(None))
    return type(name, (base,), {'__doc__': doc, '_dims': dims, '__module__': __name__})


Conv1DRNNCell = _public('RNN', 1, _ConvRNNCell)
Conv2DRNNCell = _public('RNN', 2, _ConvRNNCell)
Conv3DRNNCell = _public('RNN', 3, _ConvRNNCell)
Conv1DLSTMCell = _public('LSTM', 1, _ConvLSTMCell)
Conv2DLSTMCell = _public('LSTM', 2, _ConvLSTMCell)
Conv3DLSTMCell = _public('LSTM', 3, _ConvLSTMCell)
Conv1DGRUCell = _public('GRU', 1, _ConvGRUCell)
Conv2DGRUCell = _public('GRU', 2, _ConvGRUCell)
Conv3DGRUCell = _public('GRU', 3, _ConvGRUCell)
