"""Variational dropout around a cell, the projected LSTM cell, and ``dynamic_unroll``
(a cell run by ``F.contrib.foreach``)."""
from ...rnn import BidirectionalCell, HybridRecurrentCell, ModifierCell
from ...rnn.rnn_cell import (_StackMixin, _format_sequence, _get_begin_state,
                             _mask_sequence_variable_length, tensor_types)

__all__ = ['VariationalDropoutCell', 'LSTMPCell']


class VariationalDropoutCell(ModifierCell):
    """Variational dropout on a base cell (Gal and Ghahramani, 2016,
    https://arxiv.org/abs/1512.05287): one dropout mask for all the time steps of a
    sequence, separate ones for the inputs, the states and the outputs.

    The masks are drawn at the first step and kept until ``reset()`` (which ``unroll``
    calls): a cell stepped by hand must be reset after each sequence.

    Parameters
    ----------
    base_cell : RecurrentCell
    drop_inputs : float, default 0.
        The dropout rate of the inputs (none at 0).
    drop_states : float, default 0.
        The dropout rate of the first state (h), the one fed back.
    drop_outputs : float, default 0.
        The dropout rate of the outputs.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and (isinstance(base_cell, BidirectionalCell) or (
                isinstance(base_cell, _StackMixin) and any(
                    isinstance(c, BidirectionalCell) for c in base_cell._children.values()))):
            raise AssertionError("BidirectionalCell doesn't support variational state "
                                 "dropout. Please add VariationalDropoutCell to the cells "
                                 "underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return 'vardrop'

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _initialize_input_masks(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)

    def _initialize_output_mask(self, F, output):
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)

    def hybrid_forward(self, F, inputs, states):
        self._initialize_input_masks(F, inputs, states)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask  # h, the state fed back
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        self._initialize_output_mask(F, next_output)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self):
        return '%s(p_out = %s, p_state = %s)' % (type(self).__name__, self.drop_outputs,
                                                 self.drop_states)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """As ``RecurrentCell.unroll``. Without state dropout, the input and output
        dropout apply to the whole sequence at once (one mask shared over the time
        axis) around the base cell's own unroll."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                merge_outputs=True, valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    r"""LSTM cell with a projected recurrent state (Sak et al., 2014,
    https://arxiv.org/abs/1402.1128).

    .. math::
        \begin{array}{ll}
        i_t = \sigma(W_{ii} x_t + b_{ii} + W_{ri} r_{t-1} + b_{ri}) \\
        f_t = \sigma(W_{if} x_t + b_{if} + W_{rf} r_{t-1} + b_{rf}) \\
        g_t = \tanh(W_{ig} x_t + b_{ig} + W_{rg} r_{t-1} + b_{rg}) \\
        o_t = \sigma(W_{io} x_t + b_{io} + W_{ro} r_{t-1} + b_{ro}) \\
        c_t = f_t * c_{t-1} + i_t * g_t \\
        h_t = o_t * \tanh(c_t) \\
        r_t = W_{hr} h_t
        \end{array}

    Parameters
    ----------
    hidden_size : int
        Number of units of the cell state.
    projection_size : int
        Number of units of the output ``r_t``.
    i2h_weight_initializer, h2h_weight_initializer, h2r_weight_initializer :
        str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    input_size : int, default 0
        Number of input units; 0 to infer it from the first input.
    prefix : str, default ``'lstmp_'`` plus a counter
    params : ParameterDict or None

    Inputs:
        - **data**: ``(batch_size, input_size)``.
        - **states**: ``[r, c]``, ``(batch_size, projection_size)`` and
          ``(batch_size, hidden_size)``.

    Outputs:
        - **out**: ``(batch_size, projection_size)``.
        - **next_states**: ``[r, c]`` after the step.
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        self.i2h_weight = self.params.get('i2h_weight', shape=(4 * hidden_size, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get('h2h_weight',
                                          shape=(4 * hidden_size, projection_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get('h2r_weight', shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get('i2h_bias', shape=(4 * hidden_size,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get('h2h_bias', shape=(4 * hidden_size,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._projection_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstmp'

    def __repr__(self):
        shape = self.i2h_weight.shape
        return '%s(%s -> %s -> %s)' % (type(self).__name__, shape[1] if shape[1] else None,
                                       shape[0], self.h2r_weight.shape[0])

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix = 't%d_' % self._counter
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=self._hidden_size * 4, name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=self._hidden_size * 4, name=prefix + 'h2h')
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice')
        in_gate = F.Activation(gates[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(gates[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = F.Activation(gates[2], act_type='tanh', name=prefix + 'c')
        out_gate = F.Activation(gates[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type='tanh'),
                                name=prefix + 'hidden')
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + 'out')
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout='TNC',
                   valid_length=None):
    """Run ``cell`` over the sequence ``inputs`` with ``F.contrib.foreach`` (one graph
    node for the loop when hybridized, however long the sequence).

    Parameters
    ----------
    cell : RecurrentCell
    inputs : NDArray or Symbol
        ``(T, N, ...)`` for ``layout='TNC'`` (the faster), ``(N, T, ...)`` for 'NTC'.
    begin_state : list of NDArray or Symbol
    drop_inputs, drop_outputs : float, default 0
        Dropout rates of the inputs and the outputs, one mask over the time axis.
    layout : str, default 'TNC'
    valid_length : NDArray or Symbol, optional
        ``(N,)``: each sample's number of valid steps. The states stop changing after
        them and the outputs past them are 0.

    Returns
    -------
    outputs : NDArray or Symbol
        Laid out as ``inputs``.
    states : list of NDArray or Symbol
    """
    inputs, axis, F, _ = _format_sequence(0, inputs, layout, True)
    axes = None
    if axis != 0:
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    states = begin_state
    if drop_inputs:  # time is axis 0 now: one mask for every step
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))
    if valid_length is None:
        def loop_body(step, states):
            return cell(step, states)
    else:
        states = list(states) + [F.zeros((1,))]  # the last state counts the steps

        def loop_body(step, states):
            cell_states, iter_no = states[:-1], states[-1]
            out, new_states = cell(step, cell_states)
            valid = F.broadcast_greater(valid_length, iter_no)
            new_states = [F.where(valid, new, old) for new, old in zip(new_states, cell_states)]
            return out, new_states + [iter_no + 1]
    outputs, states = F.contrib.foreach(loop_body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if axes is not None:
        outputs = F.transpose(outputs, axes=axes)
    if valid_length is None:
        return outputs, states
    outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True,
                             axis=axis)
    return outputs, states[:-1]
