"""Recurrent cells: one time step of RNN, LSTM and GRU maths, and the cells that
combine them (stacks, bidirectional, dropout, zoneout, residual), with ``unroll``.

A cell is called on one step, ``output, new_states = cell(x_t, states)``, with ``F``
either ``mx.nd`` or ``mx.sym``; ``unroll`` runs it over a whole sequence. The weights
are MXNet 1.x's (``i2h_weight`` ``(gates * hidden, input)``, ``h2h_weight``,
``i2h_bias``, ``h2h_bias``; gates i, f, c, o for LSTM and r, z, n for GRU), so a cell
holding a layer's weights gives the layer's numbers, and graph nodes are named as
MXNet names them (``lstm0_t2_out``). Sequences of unequal lengths (``valid_length``)
go through ``SequenceMask``, ``SequenceLast`` and ``SequenceReverse``.
"""
from ... import ndarray, symbol
from ...base import numeric_types, string_types
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import Block, HybridBlock, _indent
from ..nn import LeakyReLU

__all__ = ['RecurrentCell', 'HybridRecurrentCell', 'RNNCell', 'LSTMCell', 'GRUCell',
           'SequentialRNNCell', 'HybridSequentialRNNCell', 'DropoutCell', 'ModifierCell',
           'ZoneoutCell', 'ResidualCell', 'BidirectionalCell']

tensor_types = (Symbol, NDArray)


def _as_list(obj):
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _split_steps(F, data, length, axis):
    """``data`` cut along ``axis`` into a list of ``length`` steps (the axis dropped)."""
    steps = F.split(data, num_outputs=length, axis=axis, squeeze_axis=True)
    return list(steps) if F is symbol else _as_list(steps)


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    """``begin_state``, or the cell's zero states (on the inputs' context)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, tensor_types) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """``(inputs, time axis, F, batch size)``: ``inputs`` (one tensor laid out as
    ``in_layout`` or ``layout``, or a list of ``(N, ...)`` steps) as a list of steps
    (``merge=False``), one tensor laid out as ``layout`` (``merge=True``), or as they
    are (``merge=None``)."""
    if inputs is None:
        raise ValueError('unroll needs inputs: make the input variables (or arrays) before '
                         'calling unroll')
    if not isinstance(layout, string_types) or 'T' not in layout or 'N' not in layout:
        raise ValueError("layout must name the time and batch axes, 'NTC' or 'TNC'; got %r"
                         % (layout,))
    axis = layout.find('T')
    batch_axis = layout.find('N')
    batch_size = 0
    in_axis = in_layout.find('T') if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError('unroll takes one Symbol, not a group of %d: pass '
                                 'list(inputs), or one Symbol for unroll to split'
                                 % len(inputs.list_outputs()))
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise ValueError('unroll(length=%d) got inputs with %d time steps (shape %s, '
                                 'layout %s)' % (length, inputs.shape[in_axis], inputs.shape,
                                                 in_layout or layout))
            inputs = _as_list(ndarray.split(inputs, axis=in_axis,
                                            num_outputs=inputs.shape[in_axis],
                                            squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise ValueError('unroll(length=%d) got a list of %d steps'
                             % (length, len(inputs)))
        if isinstance(inputs[0], Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, tensor_types) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """``data`` (a tensor or a list of steps) with every step past each sample's
    ``valid_length`` set to 0; one tensor when ``merge``, else a list of steps."""
    if not isinstance(data, tensor_types):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                             axis=time_axis)
    return outputs if merge else _split_steps(F, outputs, length, time_axis)


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """The list of steps ``sequences`` in reverse order, each sample over its own
    ``valid_length`` first steps when given (the padding stays at the end)."""
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    if valid_length is None:
        return list(reversed(sequences))
    reversed_sequences = F.SequenceReverse(F.stack(*sequences, axis=0),
                                           sequence_length=valid_length,
                                           use_sequence_length=True)
    return _split_steps(F, reversed_sequences, unroll_step, 0)


def _check_unmodified(cell):
    if cell._modified:
        raise AssertionError('After applying modifier cells (e.g. ZoneoutCell) the base cell '
                             'cannot be called directly. Call the modifier cell instead.')


class RecurrentCell(Block):
    """Abstract base class for RNN cells.

    Parameters
    ----------
    prefix : str, optional
        Prefix for the names of the cell's Blocks and of its weights (when ``params`` is
        None, that is, when the weights are created rather than shared).
    params : ParameterDict or None, default None
        Parameters to share with another cell; a new container when None.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before using the cell for another sequence or graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """The shape and layout of each state: a list of dicts (``shape``,
        ``__layout__``)."""
        raise NotImplementedError()

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states for this cell.

        Parameters
        ----------
        batch_size : int, default 0
            The batch size (``N`` in the layout); needed for NDArrays.
        func : callable, default ndarray.zeros
            Makes each state from ``name``, ``shape``, ``__layout__`` and ``kwargs``:
            ``nd.zeros``, ``nd.ones``, ``sym.zeros``, or ``sym.var`` to feed the states
            in as graph inputs.
        **kwargs
            Further arguments of ``func`` (``dtype``, ``ctx``, ...).

        Returns
        -------
        list of NDArray or Symbol
        """
        _check_unmodified(self)
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            if info is not None:
                info.update(kwargs)
            else:
                info = kwargs
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter),
                               **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """Run the cell over ``length`` time steps.

        Parameters
        ----------
        length : int
            The number of steps.
        inputs : NDArray, Symbol, or list of them
            One tensor ``(N, T, ...)`` for ``layout='NTC'`` or ``(T, N, ...)`` for
            ``'TNC'``, or a list of ``length`` steps of shape ``(N, ...)``.
        begin_state : list of NDArray or Symbol, optional
            The states to start from (``begin_state()``'s, or another unroll's);
            zeros by default.
        layout : str, default 'NTC'
            The layout of ``inputs`` when it is one tensor, and of merged outputs.
        merge_outputs : bool, optional
            True: the outputs as one tensor laid out as ``layout``; False: a list of
            steps; None: whichever is at hand.
        valid_length : NDArray or Symbol, optional
            ``(N,)``: each sample's number of valid steps (at most ``length``). The
            states returned are those after each sample's last valid step, and the
            outputs past it are 0.

        Returns
        -------
        outputs : NDArray, Symbol, or list of them
        states : list of NDArray or Symbol
            The states after the last (valid) step, shaped as ``begin_state()``'s.
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*step_states, axis=0),
                                     sequence_length=valid_length, use_sequence_length=True,
                                     axis=0)
                      for step_states in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """``activation`` (a name, a LeakyReLU block or a function) applied to ``inputs``."""
        func = {'tanh': F.tanh, 'relu': F.relu, 'sigmoid': F.sigmoid,
                'softsign': F.softsign}.get(activation)
        if func:
            return func(inputs, **kwargs)
        if isinstance(activation, string_types):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type='leaky', slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One time step: ``(output, new states)`` from the step's ``inputs`` ``(N, C)``
        and the previous ``states`` (a list)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell written as ``hybrid_forward``, so it can be hybridized."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _BaseCell(HybridRecurrentCell):
    """The weights every basic cell holds: ``gates * hidden_size`` rows each."""
    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        self.i2h_weight = self.params.get('i2h_weight', shape=(rows, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight', shape=(rows, hidden_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return type(self).__name__[:-len('Cell')].lower()

    def _mapping(self):
        shape = self.i2h_weight.shape
        return '%s -> %s' % (shape[1] if shape[1] else None, shape[0])

    def __repr__(self):
        return '%s(%s)' % (type(self).__name__, self._mapping())

    def _projections(self, F, inputs, state, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """The input and the recurrent projections of one step, named as MXNet names
        them (``t0_i2h``, ``t0_h2h``)."""
        prefix = 't%d_' % self._counter
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=state, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + 'h2h')
        return prefix, i2h, h2h


class RNNCell(_BaseCell):
    r"""Elman RNN cell: :math:`h_t = \tanh(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`
    (ReLU or another activation instead of tanh with ``activation``).

    Parameters
    ----------
    hidden_size : int
        Number of units of the output and the state.
    activation : str, LeakyReLU or callable, default 'tanh'
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
        Initializers of the input and the recurrent weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Number of input units; 0 to infer it from the first input.
    prefix : str, default ``'rnn_'`` plus a counter
    params : ParameterDict or None
        Parameters to share with another cell.

    Inputs:
        - **data**: ``(batch_size, input_size)``.
        - **states**: a list of one state ``(batch_size, hidden_size)``.

    Outputs:
        - **out**: ``(batch_size, hidden_size)``.
        - **next_states**: a list of one state, the output.
    """

    def __init__(self, hidden_size, activation='tanh', i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)
        self._activation = activation

    def __repr__(self):
        return '%s(%s, %s)' % (type(self).__name__, self._mapping(), self._activation)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        output = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + 'plus0'),
                                      self._activation, name=prefix + 'out')
        return output, [output]


class LSTMCell(_BaseCell):
    r"""Long short-term memory cell (Hochreiter and Schmidhuber, 1997).

    .. math::
        \begin{array}{ll}
        i_t = \sigma(W_{ii} x_t + b_{ii} + W_{hi} h_{t-1} + b_{hi}) \\
        f_t = \sigma(W_{if} x_t + b_{if} + W_{hf} h_{t-1} + b_{hf}) \\
        g_t = \tanh(W_{ig} x_t + b_{ig} + W_{hg} h_{t-1} + b_{hg}) \\
        o_t = \sigma(W_{io} x_t + b_{io} + W_{ho} h_{t-1} + b_{ho}) \\
        c_t = f_t * c_{t-1} + i_t * g_t \\
        h_t = o_t * \tanh(c_t)
        \end{array}

    The weights stack the gates in the order i, f, g (``c``), o.

    Parameters
    ----------
    hidden_size : int
        Number of units of the output and of each state.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Number of input units; 0 to infer it from the first input.
    prefix : str, default ``'lstm_'`` plus a counter
    params : ParameterDict or None
    activation : str, default 'tanh'
        The activation of ``g_t`` and of the cell state in ``h_t``.
    recurrent_activation : str, default 'sigmoid'
        The activation of the gates i, f and o.

    Inputs:
        - **data**: ``(batch_size, input_size)``.
        - **states**: ``[h, c]``, each ``(batch_size, hidden_size)``.

    Outputs:
        - **out**: ``(batch_size, hidden_size)``.
        - **next_states**: ``[h, c]`` after the step.
    """
    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None, activation='tanh', recurrent_activation='sigmoid'):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=prefix + 'plus0'), num_outputs=4,
                               name=prefix + 'slice')
        gate = self._recurrent_activation
        in_gate = self._get_activation(F, gates[0], gate, name=prefix + 'i')
        forget_gate = self._get_activation(F, gates[1], gate, name=prefix + 'f')
        in_transform = self._get_activation(F, gates[2], self._activation,
                                            name=prefix + 'c')
        out_gate = self._get_activation(F, gates[3], gate, name=prefix + 'o')
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + 'mul0'),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + 'mul1'),
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=self._activation,
                                                       name=prefix + 'activation0'),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class GRUCell(_BaseCell):
    r"""Gated recurrent unit cell, cuDNN's variant of Cho et al. (2014): the reset gate
    multiplies the recurrent projection after its matrix product.

    .. math::
        \begin{array}{ll}
        r_t = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}) \\
        z_t = \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}) \\
        n_t = \tanh(W_{in} x_t + b_{in} + r_t * (W_{hn} h_{t-1} + b_{hn})) \\
        h_t = (1 - z_t) * n_t + z_t * h_{t-1}
        \end{array}

    The weights stack the gates in the order r, z, n.

    Parameters
    ----------
    hidden_size : int
        Number of units of the output and the state.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Number of input units; 0 to infer it from the first input.
    prefix : str, default ``'gru_'`` plus a counter
    params : ParameterDict or None

    Inputs:
        - **data**: ``(batch_size, input_size)``.
        - **states**: a list of one state ``(batch_size, hidden_size)``.

    Outputs:
        - **out**: ``(batch_size, hidden_size)``.
        - **next_states**: a list of one state, the output.
    """
    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prev_h = states[0]
        prefix, i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice')
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice')
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + 'plus0'),
                                  act_type='sigmoid', name=prefix + 'r_act')
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + 'plus1'),
                                   act_type='sigmoid', name=prefix + 'z_act')
        candidate = F.Activation(
            F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + 'mul0'),
                           name=prefix + 'plus2'),
            act_type='tanh', name=prefix + 'h_act')
        ones = F.ones_like(update_gate, name=prefix + 'ones_like0')
        next_h = F.elemwise_add(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + 'minus0'),
                           candidate, name=prefix + 'mul1'),
            F.elemwise_mul(update_gate, prev_h, name=prefix + 'mul20'),
            name=prefix + 'out')
        return next_h, [next_h]


class _StackMixin:
    """What both sequential cells share: ``add``, indexing, states, step and unroll."""

    def __repr__(self):
        return '%s(\n%s\n)' % (type(self).__name__, '\n'.join(
            '(%s): %s' % (i, _indent(repr(m), 2)) for i, m in self._children.items()))

    def add(self, cell):
        """Append ``cell`` to the stack.

        Parameters
        ----------
        cell : RecurrentCell
        """
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, batch_size=0, **kwargs):
        _check_unmodified(self)
        return _cells_begin_state(self._children.values(), batch_size=batch_size, **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        start = 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise AssertionError('a stack holding a BidirectionalCell cannot be stepped: '
                                     'call unroll')
            count = len(cell.state_info())
            inputs, state = cell(inputs, states[start:start + count])
            start += count
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        last = len(self._children) - 1
        start = 0
        next_states = []
        for i, cell in enumerate(self._children.values()):
            count = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs,
                                         begin_state=begin_state[start:start + count],
                                         layout=layout,
                                         merge_outputs=merge_outputs if i == last else None,
                                         valid_length=valid_length)
            start += count
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """A stack of recurrent cells, each feeding the next."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, *args, **kwargs):
        """Not available: this stack is a plain Block (use ``HybridSequentialRNNCell`` to
        hybridize one)."""
        raise NotImplementedError('SequentialRNNCell is not a HybridBlock: call it, or use '
                                  'HybridSequentialRNNCell to hybridize the stack')


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """A stack of hybridizable recurrent cells, each feeding the next; it can sit inside
    a hybridized block."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the input; the states pass through.

    Parameters
    ----------
    rate : float
        The fraction of the elements to drop.
    axes : tuple of int, default ()
        Axes along which one mask is shared; () for plain dropout.

    Inputs:
        - **data**: ``(batch_size, size)``.
        - **states**: a list of states (returned as they are).

    Outputs:
        - **out**: ``(batch_size, size)``.
        - **next_states**: the input ``states``.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types):
            raise AssertionError('rate must be a number, got %r' % (rate,))
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return '%s(rate=%s, axes=%s)' % (type(self).__name__, self._rate, self._axes)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return 'dropout'

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name='t%d_fwd' % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, tensor_types):  # the whole sequence at once
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base class of the cells that modify another cell (``base_cell``), such as
    ZoneoutCell. The base cell must not be called directly any more: call the
    modifier cell."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise AssertionError('Cell %s is already modified. One cell cannot be modified '
                                 'twice' % base_cell.name)
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        _check_unmodified(self)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return '%s(%r)' % (type(self).__name__, self.base_cell)


class ZoneoutCell(ModifierCell):
    """Zoneout on a base cell (Krueger et al., 2016): in training, each output and
    state unit keeps its previous value with probability ``zoneout_outputs`` or
    ``zoneout_states``.

    Parameters
    ----------
    base_cell : RecurrentCell
        Not a BidirectionalCell (which cannot be stepped).
    zoneout_outputs : float, default 0
    zoneout_states : float, default 0
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell) or (
                isinstance(base_cell, _StackMixin) and any(
                    isinstance(c, BidirectionalCell) for c in base_cell._children.values())):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't "
                                 "support step. Please add ZoneoutCell to the cells "
                                 "underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return '%s(p_out=%s, p_state=%s, %r)' % (type(self).__name__, self.zoneout_outputs,
                                                 self.zoneout_states, self.base_cell)

    def _alias(self):
        return 'zoneout'

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # nonzero where the new value is kept (all, in inference)
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        p_outputs, p_states = self.zoneout_outputs, self.zoneout_states
        output = F.where(keep_new(p_outputs, next_output), next_output, prev_output) \
            if p_outputs != 0. else next_output
        if p_states != 0.:
            next_states = [F.where(keep_new(p_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output (Wu et al., 2016,
    https://arxiv.org/abs/1609.08144)."""

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name='t%d_fwd' % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:  # the padding adds nothing to the (zero) outputs
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis,
                                                    merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards over a sequence and concatenates
    their outputs on the feature axis. It can only be unrolled, not stepped.

    Parameters
    ----------
    l_cell : RecurrentCell
        The cell run forwards in time.
    r_cell : RecurrentCell
        The cell run backwards in time (over each sample's valid steps).
    output_prefix : str, default 'bi_'
        The prefix of the output nodes' names.
    """

    def __init__(self, l_cell, r_cell, output_prefix='bi_'):
        super().__init__(prefix='', params=None)
        self.register_child(l_cell, 'l_cell')
        self.register_child(r_cell, 'r_cell')
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    def __repr__(self):
        return '%s(forward=%r, backward=%r)' % (type(self).__name__,
                                                 self._children['l_cell'],
                                                 self._children['r_cell'])

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, batch_size=0, **kwargs):
        _check_unmodified(self)
        return _cells_begin_state(self._children.values(), batch_size=batch_size, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = list(_reverse_sequences(inputs, length, valid_length))
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        split = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:split],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[split:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, tensor_types)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r_outputs, _, _, _ = _format_sequence(None, reversed_r_outputs, layout,
                                                           merge_outputs)
        if merge_outputs:
            if not isinstance(reversed_r_outputs, tensor_types):
                reversed_r_outputs = F.stack(*reversed_r_outputs, axis=axis)
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2,
                               name='%sout' % self._output_prefix)
        else:
            outputs = [F.concat(l_o, r_o, dim=1, name='%st%d' % (self._output_prefix, i))
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states
