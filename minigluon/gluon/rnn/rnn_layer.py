"""Recurrent layers: RNN, LSTM and GRU over whole sequences, each stack of layers one
call of the fused ``RNN`` op with MXNet 1.x's parameter names and layout.

A layer holds, per layer ``i`` and direction (``l`` forwards, ``r`` backwards), the
Parameters ``{d}{i}_i2h_weight``, ``{d}{i}_h2h_weight``, ``{d}{i}_i2h_bias``,
``{d}{i}_h2h_bias`` (and ``{d}{i}_h2r_weight`` for an LSTM with a projection). Its
forward flattens them into the op's one parameter vector in MXNet's order: every
weight (layer by layer, direction by direction, i2h before h2h before h2r), then every
bias. ``save_parameters`` writes them under MXNet 1.x's structural names
(``_unfused.0.i2h_weight``, ``_unfused.0.l_cell.i2h_weight`` when bidirectional), so
files move both ways with MXNet.
"""
import numbers
import re

from ... import ndarray as nd
from ... import symbol
from ...base import MXNetError, MXNetValueError
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import HybridBlock
from ..utils import shape_is_known

__all__ = ['RNN', 'LSTM', 'GRU']

_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}
_PARAM_KEY = re.compile(r'(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z')


def _saved_key(key, bidirectional):
    """MXNet 1.x's structural name of the parameter at attribute ``key``: the name the
    layer's parameters had when it was a stack of cells (``_unfused.0.i2h_weight``)."""
    direction, layer, kind, what = _PARAM_KEY.match(key).groups()
    if bidirectional:
        return '_unfused.%s.%s_cell.%s_%s' % (layer, direction, kind, what)
    return '_unfused.%s.%s_%s' % (layer, kind, what)


class _RNNLayer(HybridBlock):
    """What RNN, LSTM and GRU share: the parameters, the states and the call of the
    fused op. ``mode`` is the op's: 'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        name = type(self).__name__
        if layout not in ('TNC', 'NTC'):
            raise MXNetValueError("%s: invalid layout %r; must be one of ['TNC' or 'NTC'] "
                                  "(T: time, N: batch, C: features)" % (name, layout))
        for what, value, least in (('hidden_size', hidden_size, 1),
                                   ('num_layers', num_layers, 1), ('input_size', input_size, 0)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) \
                    or value < least:
                raise MXNetValueError('%s: %s must be an int >= %d, got %r'
                                      % (name, what, least, value))
        if not 0 <= dropout < 1:
            raise MXNetValueError('%s: dropout must be in [0, 1), got %r' % (name, dropout))
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = _GATES[mode]
        self.skip_states = None  # whether the current call was given no states
        self._traced_skip_states = None  # the same, for the call the graph was traced on

        ng, nh, npj = self._gates, hidden_size, self._projection_size
        recurrent = npj or nh  # what the recurrent weights multiply: h, or its projection
        inits = {'i2h_weight': i2h_weight_initializer, 'h2h_weight': h2h_weight_initializer,
                 'i2h_bias': i2h_bias_initializer, 'h2h_bias': h2h_bias_initializer,
                 'h2r_weight': h2r_weight_initializer}
        ni = input_size
        for i in range(num_layers):
            shapes = {'i2h_weight': (ng * nh, ni), 'h2h_weight': (ng * nh, recurrent),
                      'i2h_bias': (ng * nh,), 'h2h_bias': (ng * nh,)}
            if npj:
                shapes['h2r_weight'] = (npj, nh)
            for d in ['l', 'r'][:self._dir]:
                for kind, shape in shapes.items():
                    self._register_layer_param('%s%d_%s' % (d, i, kind), shape, inits[kind],
                                               dtype)
            ni = recurrent * self._dir
        # the order of the op's flat parameter vector: weights, then biases
        kinds = ['i2h', 'h2h', 'h2r'] if npj else ['i2h', 'h2h']
        self._flat_names = ['%s%d_%s_%s' % (d, i, g, t)
                            for t in ['weight', 'bias']
                            for i in range(num_layers)
                            for d in ['l', 'r'][:self._dir]
                            for g in kinds if g != 'h2r' or t != 'bias']

    def _register_layer_param(self, name, shape, init, dtype):
        param = self.params.get(name, shape=shape, init=init, allow_deferred_init=True,
                                dtype=dtype)
        setattr(self, name, param)
        return param

    def __repr__(self):
        s = '%s(%s -> %d, %s' % (type(self).__name__, self.l0_i2h_weight.shape[1] or None,
                                 self.l0_i2h_weight.shape[0] // self._gates, self._layout)
        if self._num_layers != 1:
            s += ', num_layers=%d' % self._num_layers
        if self._dropout != 0:
            s += ', dropout=%s' % self._dropout
        if self._dir == 2:
            s += ', bidirectional'
        return s + ')'

    def _collect_params_with_prefix(self, prefix=''):
        """Structural names as MXNet 1.x writes them for a fused layer (those of the
        cell stack it replaced), so ``.params`` files load in both directions."""
        if prefix:
            prefix += '.'
        bidirectional = any(_PARAM_KEY.match(k).group(1) == 'r' for k in self._reg_params)
        out = {prefix + _saved_key(key, bidirectional): param
               for key, param in self._reg_params.items()}
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def state_info(self, batch_size=0):
        """The shapes (``(layers * directions, batch_size, size)``), layouts and dtypes
        of the recurrent states, one dict per state."""
        raise NotImplementedError

    def _unfuse(self):
        """The same network as a stack of cells (sharing this layer's parameters)."""
        from . import rnn_cell  # pylint: disable=import-outside-toplevel
        if self._projection_size:
            raise MXNetError('_unfuse: layers with a projection have no cell stack; use '
                             'gluon.contrib.rnn.LSTMPCell cells')
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise MXNetError('_unfuse: the cells do not clip states; make the layer without '
                             'state_clip_min/state_clip_max')
        hidden = self._hidden_size

        def get_cell(**kwargs):
            if self._mode == 'lstm':
                return rnn_cell.LSTMCell(hidden, **kwargs)
            if self._mode == 'gru':
                return rnn_cell.GRUCell(hidden, **kwargs)
            return rnn_cell.RNNCell(hidden, activation=self._mode[4:], **kwargs)

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kwargs = {'input_size': ni,
                          'i2h_weight_initializer': self._i2h_weight_initializer,
                          'h2h_weight_initializer': self._h2h_weight_initializer,
                          'i2h_bias_initializer': self._i2h_bias_initializer,
                          'h2h_bias_initializer': self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(get_cell(prefix='l%d_' % i, **kwargs),
                                                         get_cell(prefix='r%d_' % i, **kwargs)))
                else:
                    stack.add(get_cell(prefix='l%d_' % i, **kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """The initial recurrent states.

        Parameters
        ----------
        batch_size : int, default 0
            The batch size (N of the layout); 0 for a graph, where it is inferred.
        func : callable, default ``nd.zeros``
            Makes each state from ``name``, ``shape``, ``dtype`` and ``kwargs``:
            ``nd.zeros``, ``nd.ones``, ``nd.random.uniform`` ... or ``sym.zeros``,
            ``sym.var`` for a graph.
        **kwargs
            Passed on to ``func`` (``ctx``, ``dtype``, ``mean`` ...).

        Returns
        -------
        list of NDArray or Symbol
            One array per state (``[h]``; ``[h, c]`` for an LSTM).
        """
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info, **kwargs) if info is not None else kwargs
            states.append(func(name='%sh0_%d' % (self.prefix, i), **info))
        return states

    def forward(self, inputs, states=None, sequence_length=None):
        """Run the layer over the sequences ``inputs``.

        Parameters
        ----------
        inputs : NDArray or Symbol
            ``(T, N, C)`` for layout 'TNC', ``(N, T, C)`` for 'NTC'.
        states : NDArray or list of NDArray, optional
            The begin states (see ``state_info``); zeros when left out.
        sequence_length : NDArray, optional
            The valid length of each sequence, ``(N,)``; used (and needed) only by a
            layer made with ``use_sequence_length=True``.

        Returns
        -------
        NDArray, or (NDArray, list of NDArray)
            The output, ``(T, N, hidden * directions)`` in the input's layout (the
            projection size in place of ``hidden`` with a projection); with ``states``
            given, also the final states.
        """
        self.skip_states = states is None
        if isinstance(inputs, NDArray):
            self._check_inputs(inputs)
        if states is None:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find('N')]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            elif isinstance(inputs, Symbol):
                # batch size 0: the graph takes it from the data, as MXNet's does
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        if self._use_sequence_length and sequence_length is None:
            raise MXNetValueError('%s was made with use_sequence_length=True: give the valid '
                                  'length of each sequence as sequence_length (shape (N,))'
                                  % type(self).__name__)
        if self._active and self._traced_skip_states != self.skip_states:
            # the traced graph returns the states or not, as its first call asked
            self._clear_cached_op()
            self._traced_skip_states = self.skip_states
        if isinstance(inputs, NDArray):
            self._finish_deferred(inputs, (states,))  # before a trace, too
        if self._use_sequence_length:
            return super().forward(inputs, states, sequence_length)
        return super().forward(inputs, states)

    def _check_inputs(self, inputs):
        name = type(self).__name__
        if inputs.ndim != 3:
            raise MXNetValueError(
                '%s: inputs must have 3 dimensions, %s (T: time, N: batch, C: features), got '
                'shape %s; add an axis of length 1 for a single sequence or feature'
                % (name, self._layout, inputs.shape))
        features = inputs.shape[self._layout.find('C')]
        expected = self.l0_i2h_weight.shape[1]
        if expected and features != expected:
            raise MXNetValueError(
                '%s: inputs have %d features (axis %d of shape %s, layout %s) but the layer '
                'takes %d (input_size)' % (name, features, self._layout.find('C'),
                                           inputs.shape, self._layout, expected))

    def infer_shape(self, inputs, *args):
        """Complete the first layer's input weights from the inputs' feature axis."""
        features = inputs.shape[self._layout.find('C')]
        for d in ['l', 'r'][:self._dir]:
            param = getattr(self, '%s0_i2h_weight' % d)
            if not shape_is_known(param.shape):
                param.shape = (param.shape[0], features)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        """The fused op over the whole stack.

        Inputs: ``inputs`` in the layer's layout, ``states`` a list of begin states,
        ``sequence_length`` (with ``use_sequence_length``) and the parameters by
        attribute name. Outputs: the output, and the list of final states unless the
        call was given no states.
        """
        if F is nd:
            batch_size = inputs.shape[self._layout.find('N')]
            infos = self.state_info(batch_size)
            if len(states) != len(infos):
                raise MXNetValueError('%s takes %d begin state(s), got %d'
                                      % (type(self).__name__, len(infos), len(states)))
            for state, info in zip(states, infos):
                if state.shape != info['shape']:
                    raise MXNetValueError('Invalid recurrent state shape. Expecting %s, got %s.'
                                          % (str(info['shape']), str(state.shape)))
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == 'NTC':
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        flat = [kwargs[name].reshape(-1) for name in self._flat_names]
        # MXNet's graphs join them with _rnn_param_concat; plain concat where a graph
        # table lacks it (the same join)
        concat = getattr(F._internal, '_rnn_param_concat', None)  # pylint: disable=protected-access
        params = concat(*flat, dim=0) if concat is not None else F.concat(*flat, dim=0)
        rnn_args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        rnn = F.RNN(inputs, params, *rnn_args, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        if self._mode == 'lstm':
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, states = rnn[0], [rnn[1]]
        if self._layout == 'NTC':
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, states


def _state(shape, dtype):
    return {'shape': shape, '__layout__': 'LNC', 'dtype': dtype}


class RNN(_RNNLayer):
    r"""A stack of Elman RNN layers with ``tanh`` or ``relu`` activation, over sequences.

    Each layer computes, at each time step ``t``,
    ``h_t = activation(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh)``, where ``x_t`` is the
    input for the first layer and the previous layer's output (dropped out with
    probability ``dropout`` while training) for the others.

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state ``h``.
    num_layers : int, default 1
    activation : {'relu', 'tanh'}, default 'relu'
    layout : {'TNC', 'NTC'}, default 'TNC'
        The axes of the inputs and outputs: time, batch and features.
    dropout : float, default 0
        Dropout on the outputs of every layer but the last, while training.
    bidirectional : bool, default False
        Also run each layer backwards in time, its output concatenated on C.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
        For the input and the recurrent weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        The number of input features; 0 takes it from the first input.
    dtype : str, default 'float32'
        The parameters' and the default states' type.
    prefix, params
        As every Block's.

    Inputs: ``data`` ``(T, N, input_size)`` in layout 'TNC' (``(N, T, input_size)`` in
    'NTC'); ``states`` (optional) ``[h]`` or ``h`` of shape
    ``(num_layers * directions, N, hidden_size)``.

    Outputs: ``out`` ``(T, N, directions * hidden_size)`` in the input's layout; with
    ``states`` given, also the final states ``[h]``.
    """

    def __init__(self, hidden_size, num_layers=1, activation='relu', layout='TNC', dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 dtype='float32', **kwargs):
        if activation not in ('relu', 'tanh'):
            raise MXNetValueError("RNN: activation must be 'relu' or 'tanh', got %r"
                                  % (activation,))
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, 'rnn_' + activation,
                         None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [_state((self._num_layers * self._dir, batch_size, self._hidden_size),
                       self._dtype)]


class LSTM(_RNNLayer):
    r"""A stack of long short-term memory layers over sequences.

    Each layer computes, at each time step ``t``, with the gates in MXNet's order
    (input, forget, cell, output)::

        i = sigmoid(W_ii x_t + b_ii + W_hi h_(t-1) + b_hi)
        f = sigmoid(W_if x_t + b_if + W_hf h_(t-1) + b_hf)
        g = tanh(W_ig x_t + b_ig + W_hg h_(t-1) + b_hg)
        o = sigmoid(W_io x_t + b_io + W_ho h_(t-1) + b_ho)
        c_t = f * c_(t-1) + i * g
        h_t = o * tanh(c_t)            (W_hr o * tanh(c_t) with a projection)

    Parameters
    ----------
    hidden_size : int
        The size of the cell state ``c`` (and of ``h`` without a projection).
    num_layers : int, default 1
    layout : {'TNC', 'NTC'}, default 'TNC'
    dropout : float, default 0
        Dropout on the outputs of every layer but the last, while training.
    bidirectional : bool, default False
    input_size : int, default 0
        The number of input features; 0 takes it from the first input.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        (``mx.init.LSTMBias(1.0)`` sets the forget gate's bias to 1.)
    projection_size : int, optional
        Project ``h`` to this size (LSTMP): ``h`` and the outputs have this size.
    h2r_weight_initializer : str or Initializer, optional
        For the projection weights ``(projection_size, hidden_size)``.
    state_clip_min, state_clip_max : float, optional
        Clip the cell state into ``[min, max]`` after each step (both or neither).
    state_clip_nan : bool, default False
        Clip NaN cell states too (to min/max); only with the bounds.
    dtype : str, default 'float32'
    prefix, params
        As every Block's.

    Inputs: ``data`` as ``RNN``'s; ``states`` (optional) ``[h, c]``, each
    ``(num_layers * directions, N, size)`` with ``size`` the projection size for ``h``
    with a projection, else ``hidden_size``.

    Outputs: ``out`` ``(T, N, directions * size)``; with ``states`` given, also
    ``[h, c]`` at the end.
    """

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', projection_size=None, h2r_weight_initializer=None,
                 state_clip_min=None, state_clip_max=None, state_clip_nan=False,
                 dtype='float32', **kwargs):
        if (state_clip_min is None) != (state_clip_max is None):
            raise MXNetValueError('LSTM: give state_clip_min and state_clip_max together '
                                  '(got %r and %r)' % (state_clip_min, state_clip_max))
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, 'lstm', projection_size,
                         h2r_weight_initializer, state_clip_min, state_clip_max,
                         state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        layers = self._num_layers * self._dir
        return [_state((layers, batch_size, self._projection_size or self._hidden_size),
                       self._dtype),
                _state((layers, batch_size, self._hidden_size), self._dtype)]


class GRU(_RNNLayer):
    r"""A stack of gated recurrent unit layers over sequences (cuDNN's variant: the
    reset gate multiplies the recurrent term after its matrix product).

    Each layer computes, at each time step ``t``, with the gates in MXNet's order
    (reset, update, new)::

        r = sigmoid(W_ir x_t + b_ir + W_hr h_(t-1) + b_hr)
        z = sigmoid(W_iz x_t + b_iz + W_hz h_(t-1) + b_hz)
        n = tanh(W_in x_t + b_in + r * (W_hn h_(t-1) + b_hn))
        h_t = (1 - z) * n + z * h_(t-1)

    Parameters
    ----------
    hidden_size : int
    num_layers : int, default 1
    layout : {'TNC', 'NTC'}, default 'TNC'
    dropout : float, default 0
        Dropout on the outputs of every layer but the last, while training.
    bidirectional : bool, default False
    input_size : int, default 0
        The number of input features; 0 takes it from the first input.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    dtype : str, default 'float32'
    prefix, params
        As every Block's.

    Inputs and outputs: as ``RNN``'s.
    """

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0,
                 bidirectional=False, input_size=0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, 'gru', None, None, None,
                         None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [_state((self._num_layers * self._dir, batch_size, self._hidden_size),
                       self._dtype)]
