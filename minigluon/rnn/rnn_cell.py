"""The symbolic recurrent cells of MXNet 1.x's ``mx.rnn``: each ``unroll`` builds an ``mx.sym``
graph, one step of cell maths per time step (``FusedRNNCell``: one ``RNN`` node for all).

Parameter names follow MXNet: a cell with prefix ``lstm_`` owns ``lstm_i2h_weight``,
``lstm_i2h_bias``, ``lstm_h2h_weight`` and ``lstm_h2h_bias``, its gates stacked in the
order i, f, c, o (LSTM) or r, z, n (GRU), so graphs and ``.params`` files are MXNet's.
"""
import functools
import warnings

import numpy as np

from .. import initializer as init
from .. import ndarray
from .. import symbol
from ..base import MXNetError, numeric_types
from ..ndarray.ops.rnn import param_layout

__all__ = ['RNNParams', 'BaseRNNCell', 'RNNCell', 'LSTMCell', 'GRUCell', 'FusedRNNCell',
           'SequentialRNNCell', 'DropoutCell', 'ModifierCell', 'ZoneoutCell', 'ResidualCell',
           'BidirectionalCell', 'BaseConvRNNCell', 'ConvRNNCell', 'ConvLSTMCell',
           'ConvGRUCell']

_MODIFIED = ('After applying modifier cells (e.g. DropoutCell) the base cell cannot be called '
             'directly. Call the modifier cell instead.')


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """``inputs`` as one symbol with time on ``layout``'s T axis (``merge`` True) or as a
    list of ``length`` per-step symbols (``merge`` False); ``merge`` None keeps the form.

    Returns the inputs and the time axis.
    """
    if inputs is None:
        raise MXNetError('unroll(inputs=None) is no longer supported: create the input '
                         'variables first and pass them (one symbol or a list of symbols)')
    axis = layout.find('T')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError('unroll takes one single-output symbol or a list of symbols, '
                                 'not a grouped symbol; pass list(inputs) instead')
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise MXNetError('unroll(length=%d) was given %d input symbols'
                             % (length, len(inputs)))
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs],
                                   dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim0=axis, dim1=in_axis)
    return inputs, axis


def _cells_state_info(cells):
    return sum([c.state_info for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _cells_unpack_weights(cells, args):
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args):
    for cell in cells:
        args = cell.pack_weights(args)
    return args


class RNNParams:
    """The variables of cells, by name, so that several cells can share them.

    Parameters
    ----------
    prefix : str
        Put before the name of every variable this container creates.
    """

    def __init__(self, prefix=''):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The variable ``prefix + name``, created (``symbol.Variable(..., **kwargs)``) on
        first use."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Base class of the symbolic cells.

    Parameters
    ----------
    prefix : str
        Put before the names of the cell's nodes (and of its weights when ``params`` is
        None).
    params : RNNParams, optional
        Variables shared with other cells; a new container with ``prefix`` if None.
    """

    def __init__(self, prefix='', params=None):
        self._own_params = params is None
        self._params = RNNParams(prefix) if params is None else params
        self._prefix = prefix
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before building another graph with this cell."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, '_cells', ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One time step: ``(output, new states)`` for ``inputs`` (batch, features) and the
        states of the previous step (or of ``begin_state()``)."""
        raise NotImplementedError()

    @property
    def params(self):
        """The cell's :class:`RNNParams` (asking for them gives up owning them)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """``[{'shape': ..., '__layout__': ...}]``, one dict per state (0: the batch)."""
        raise NotImplementedError()

    @property
    def state_shape(self):
        """The shapes of the states."""
        return [info['shape'] for info in self.state_info]

    @property
    def _gate_names(self):
        """Suffixes of the gates stacked in the weights (empty: nothing to (un)pack)."""
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The states of the first step, ``func(name=..., shape=..., **kwargs)`` each.

        Parameters
        ----------
        func : callable, default symbol.zeros
            ``symbol.zeros``, ``symbol.Variable`` (to feed the states), ``symbol.uniform``...
        **kwargs
            Passed on to ``func`` (e.g. ``dtype``).

        Returns
        -------
        list of Symbol
        """
        if self._modified:
            raise MXNetError(_MODIFIED)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter),
                               **kwargs))
        return states

    def unpack_weights(self, args):
        """Split each stacked weight and bias into one array per gate.

        Parameters
        ----------
        args : dict of str to NDArray
            E.g. ``Module.get_params()[0]``.

        Returns
        -------
        dict of str to NDArray
            A copy of ``args`` where ``<prefix>i2h_weight`` became ``<prefix>i2h_i_weight``,
            ``<prefix>i2h_f_weight``... (no change for cells without gates).
        """
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ('i2h', 'h2h'):
            for kind in ('weight', 'bias'):
                stacked = args.pop('%s%s_%s' % (self._prefix, group, kind))
                for j, gate in enumerate(self._gate_names):
                    args['%s%s%s_%s' % (self._prefix, group, gate, kind)] = \
                        stacked[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """The inverse of :meth:`unpack_weights`: stack the per-gate arrays again."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ('i2h', 'h2h'):
            for kind in ('weight', 'bias'):
                parts = [args.pop('%s%s%s_%s' % (self._prefix, group, gate, kind))
                         for gate in self._gate_names]
                args['%s%s_%s' % (self._prefix, group, kind)] = ndarray.concat(*parts, dim=0)
        return args

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        """Unroll the cell over ``length`` time steps.

        Parameters
        ----------
        length : int
        inputs : Symbol or list of Symbol
            One symbol of shape (batch, length, ...) for 'NTC' or (length, batch, ...) for
            'TNC', or a list of ``length`` symbols of shape (batch, ...).
        begin_state : list of Symbol, optional
            The first step's states; ``begin_state()`` if None.
        layout : str, default 'NTC'
        merge_outputs : bool, optional
            True: one output symbol in ``layout``; False: a list, one per step; None:
            whichever the cell makes more cheaply.

        Returns
        -------
        outputs : Symbol or list of Symbol
        states : list of Symbol
            The states after the last step.
        """
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        """``activation`` applied: an ``Activation`` act_type name or a symbol function."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class _DenseCell(BaseRNNCell):
    """A cell whose gates are fully connected transforms of the input (``i2h``) and of the
    previous output (``h2h``), with ``_num_states`` states of ``num_hidden`` each."""
    _num_states = 1

    def __init__(self, num_hidden, prefix, params, i2h_bias_init=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get('i2h_weight')
        self._iB = self.params.get('i2h_bias', **({'init': i2h_bias_init} if i2h_bias_init
                                                   else {}))
        self._hW = self.params.get('h2h_weight')
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self):
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}
                for _ in range(self._num_states)]


class RNNCell(_DenseCell):
    """Elman cell: ``h' = activation(W_i x + b_i + W_h h + b_h)``.

    Parameters
    ----------
    num_hidden : int
    activation : str or callable, default 'tanh'
    prefix : str, default 'rnn_'
    params : RNNParams, optional
    """

    def __init__(self, num_hidden, activation='tanh', prefix='rnn_', params=None):
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def _gate_names(self):
        return ('',)

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name='%si2h' % name)
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name='%sh2h' % name)
        output = self._get_activation(i2h + h2h, self._activation, name='%sout' % name)
        return output, [output]


class LSTMCell(_DenseCell):
    """Long short-term memory cell (gates i, f, c, o stacked in that order).

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'lstm_'
    params : RNNParams, optional
    forget_bias : float, default 1.0
        Initial bias of the forget gate (through ``mx.init.LSTMBias`` on ``i2h_bias``).
    """

    _num_states = 2

    def __init__(self, num_hidden, prefix='lstm_', params=None, forget_bias=1.0):
        super().__init__(num_hidden, prefix, params, init.LSTMBias(forget_bias=forget_bias))

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 4, name='%si2h' % name)
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 4, name='%sh2h' % name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name='%sslice' % name)
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name='%sf' % name)
        in_transform = symbol.Activation(gates[2], act_type='tanh', name='%sc' % name)
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name='%so' % name)
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                                        name='%sstate' % name)
        next_h = symbol._internal._mul(out_gate, symbol.Activation(next_c, act_type='tanh'),
                                       name='%sout' % name)
        return next_h, [next_h, next_c]


class GRUCell(_DenseCell):
    """Gated recurrent unit in cuDNN's form (the reset gate scales ``W_h h + b_h``), gates
    r, z, n stacked in that order.

    Parameters
    ----------
    num_hidden : int
    prefix : str, default 'gru_'
    params : RNNParams, optional
    """

    def __init__(self, num_hidden, prefix='gru_', params=None):
        super().__init__(num_hidden, prefix, params)

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        prev_h = states[0]
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 3, name='%s_i2h' % name)
        h2h = symbol.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 3, name='%s_h2h' % name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name='%s_h2h_slice' % name)
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid',
                                        name='%s_z_act' % name)
        candidate = symbol.Activation(i2h + reset_gate * h2h, act_type='tanh',
                                      name='%s_h_act' % name)
        next_h = symbol._internal._plus((1. - update_gate) * candidate, update_gate * prev_h,
                                        name='%sout' % name)
        return next_h, [next_h]


_FUSED_GATES = init.FUSED_RNN_GATES


class FusedRNNCell(BaseRNNCell):
    """All layers and time steps of an RNN as one ``RNN`` node over one flat parameter
    vector (MXNet's fused layout: every weight, layer by layer and direction by direction,
    then every bias in the same order).

    Parameters
    ----------
    num_hidden : int
    num_layers : int, default 1
    mode : str, default 'lstm'
        'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
    bidirectional : bool, default False
        The outputs then have 2 * num_hidden features.
    dropout : float, default 0
        Dropout between layers while training.
    get_next_state : bool, default False
        Whether ``unroll`` returns the final states.
    forget_bias : float, default 1.0
        Initial bias of LSTM forget gates.
    prefix : str, optional
        ``'<mode>_'`` if None.
    params : RNNParams, optional
    """

    def __init__(self, num_hidden, num_layers=1, mode='lstm', bidirectional=False,
                 dropout=0., get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in _FUSED_GATES:
            raise MXNetError('FusedRNNCell: mode must be one of %s, got %r'
                             % (sorted(_FUSED_GATES), mode))
        if prefix is None:
            prefix = '%s_' % mode
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ['l', 'r'] if bidirectional else ['l']
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional,
                                    forget_bias)
        self._parameter = self.params.get('parameters', init=initializer)

    @property
    def state_info(self):
        layers = len(self._directions) * self._num_layers
        return [{'shape': (layers, 0, self._num_hidden), '__layout__': 'LNC'}
                for _ in range(2 if self._mode == 'lstm' else 1)]

    @property
    def _gate_names(self):
        return _FUSED_GATES[self._mode]

    def _pieces(self, size):
        """``(name, offset, shape)`` of each per-gate array in a flat vector of ``size``."""
        return [(self._prefix + name, offset, shape) for name, offset, shape in
                init.fused_rnn_pieces(self._mode, self._num_layers, self._num_hidden,
                                      self._bidirectional, size)]

    def unpack_weights(self, args):
        """Split ``<prefix>parameters`` into ``<prefix>l0_i2h_i_weight``... (``r`` for the
        reverse direction), the names :meth:`unfuse`'s cells use once packed per cell."""
        args = dict(args)
        flat = args.pop(self._parameter.name)
        for name, offset, shape in self._pieces(flat.size):
            size = int(np.prod(shape))
            args[name] = flat[offset:offset + size].reshape(shape).copy()
        return args

    def pack_weights(self, args):
        """The inverse of :meth:`unpack_weights`."""
        args = dict(args)
        num_input = args['%sl0_i2h%s_weight' % (self._prefix, self._gate_names[0])].shape[1]
        _, size = param_layout(self._mode, self._num_layers, num_input, self._num_hidden,
                               self._bidirectional)
        pieces = [args.pop(name).reshape((-1,)) for name, _, _ in self._pieces(size)]
        args[self._parameter.name] = ndarray.concat(*pieces, dim=0)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError('FusedRNNCell cannot be stepped; use unroll, or unfuse() '
                                  'it into cells that can')

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis not in (0, 1):
            raise MXNetError('FusedRNNCell: unsupported layout %r (use TNC or NTC)' % layout)
        if axis == 1:
            warnings.warn('NTC layout detected. Consider using TNC for FusedRNNCell for '
                          'faster speed')
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        states = self.begin_state() if begin_state is None else begin_state
        state_args = {'state': states[0]}
        if self._mode == 'lstm':
            state_args['state_cell'] = states[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter,
                         state_size=self._num_hidden, num_layers=self._num_layers,
                         bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode,
                         name=self._prefix + 'rnn', **state_args)
        if self._get_next_state:
            outputs, states = rnn[0], list(rnn)[1:]
            for state in states:
                state._set_attr(__layout__='LNC')
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a :class:`SequentialRNNCell` of plain cells (steppable), whose
        weights are this cell's once unpacked and packed per cell.

        Returns
        -------
        SequentialRNNCell
        """
        def make(cell_prefix):
            if self._mode in ('rnn_relu', 'rnn_tanh'):
                return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=cell_prefix)
            if self._mode == 'lstm':
                return LSTMCell(self._num_hidden, prefix=cell_prefix)
            return GRUCell(self._num_hidden, prefix=cell_prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make('%sl%d_' % (self._prefix, layer)),
                                            make('%sr%d_' % (self._prefix, layer)),
                                            output_prefix='%sbi_l%d_' % (self._prefix, layer)))
            else:
                stack.add(make('%sl%d_' % (self._prefix, layer)))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout,
                                      prefix='%s_dropout%d_' % (self._prefix, layer)))
        return stack


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each takes the outputs of the one before.

    Parameters
    ----------
    params : RNNParams, optional
        Variables for all the cells added (which then must not have their own).
    """

    def __init__(self, params=None):
        super().__init__(prefix='', params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Put ``cell`` on top of the stack."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise MXNetError('Either specify params for SequentialRNNCell or for its '
                                 'child cells, not both')
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):  # pylint: disable=arguments-differ
        if self._modified:
            raise MXNetError(_MODIFIED)
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args):
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        start = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise MXNetError('a SequentialRNNCell holding a BidirectionalCell cannot be '
                                 'stepped; use unroll')
            count = len(cell.state_info)
            inputs, state = cell(inputs, states[start:start + count])
            start += count
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        start = 0
        next_states = []
        for i, cell in enumerate(self._cells):
            count = len(cell.state_info)
            last = i == len(self._cells) - 1
            inputs, states = cell.unroll(length, inputs=inputs,
                                         begin_state=begin_state[start:start + count],
                                         layout=layout,
                                         merge_outputs=merge_outputs if last else None)
            start += count
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs, no state.

    Parameters
    ----------
    dropout : float
        The fraction dropped.
    prefix : str, default 'dropout_'
    params : RNNParams, optional
    """

    def __init__(self, dropout, prefix='dropout_', params=None):
        super().__init__(prefix, params)
        if not isinstance(dropout, numeric_types):
            raise MXNetError('DropoutCell: dropout must be a number, got %r' % (dropout,))
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            # Merged: one Dropout over all steps.
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base class of cells that wrap another (``base_cell``) and change its steps; the base
    cell is then only used through the wrapper."""

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs):  # pylint: disable=arguments-differ
        if self._modified:
            raise MXNetError(_MODIFIED)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError()


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): while training, each output and state value keeps its
    previous step's value with probability ``zoneout_outputs`` / ``zoneout_states``.

    Parameters
    ----------
    base_cell : BaseRNNCell
    zoneout_outputs : float, default 0
    zoneout_states : float, default 0
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, FusedRNNCell):
            raise MXNetError('FusedRNNCell does not support zoneout; unfuse() it first')
        if isinstance(base_cell, BidirectionalCell):
            raise MXNetError('BidirectionalCell does not support zoneout (it cannot be '
                             'stepped); wrap the cells inside it instead')
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p, like):
            # Dropout of ones: 0 where the value is zoned out (kept from the last step).
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output
        if prev_output is None:
            prev_output = symbol.zeros((0, 0))
        output = next_output
        if self.zoneout_outputs != 0.:
            output = symbol.where(mask(self.zoneout_outputs, next_output), next_output,
                                  prev_output)
        if self.zoneout_states != 0.:
            next_states = [symbol.where(mask(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Output = the base cell's output + the input (Wu et al. 2016).

    Parameters
    ----------
    base_cell : BaseRNNCell
    """

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name='%s_plus_residual' % output.name)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs,
                                          name='%s_plus_residual' % outputs.name)
        else:
            outputs = [symbol.elemwise_add(out, inp, name='%s_plus_residual' % out.name)
                       for out, inp in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(BaseRNNCell):
    """One cell runs forward in time, the other backward; their outputs are concatenated.

    Parameters
    ----------
    l_cell : BaseRNNCell
        The forward cell.
    r_cell : BaseRNNCell
        The backward cell.
    params : RNNParams, optional
    output_prefix : str, default 'bi_'
        Prefix of the names of the concatenated outputs.
    """

    def __init__(self, l_cell, r_cell, params=None, output_prefix='bi_'):
        super().__init__('', params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise MXNetError('Either specify params for BidirectionalCell or for its '
                                 'child cells, not both')
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        raise NotImplementedError('BidirectionalCell cannot be stepped; use unroll')

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):  # pylint: disable=arguments-differ
        if self._modified:
            raise MXNetError(_MODIFIED)
        return _cells_begin_state(self._cells, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        split = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:split],
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=states[split:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = (isinstance(l_outputs, symbol.Symbol)
                             and isinstance(r_outputs, symbol.Symbol))
            if not merge_outputs:
                if isinstance(l_outputs, symbol.Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
                if isinstance(r_outputs, symbol.Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis,
                                                         num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            outputs = symbol.Concat(l_outputs, symbol.reverse(r_outputs, axis=axis), dim=2,
                                    name='%sout' % self._output_prefix)
        else:
            outputs = [symbol.Concat(l_out, r_out, dim=1,
                                     name='%st%d' % (self._output_prefix, step))
                       for step, (l_out, r_out) in enumerate(zip(l_outputs,
                                                                  reversed(r_outputs)))]
        # MXNet returns the two cells' state lists nested.
        return outputs, [l_states, r_states]


_LEAKY = functools.partial(symbol.LeakyReLU, act_type='leaky', slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Base class of the convolutional cells (Shi et al. 2015): ``i2h`` and ``h2h`` are
    convolutions; the state has the shape of ``i2h``'s output. A cell made without a
    ``prefix`` takes its class's ``_default_prefix``."""
    _default_prefix = ''

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_LEAKY, prefix=None, params=None, conv_layout='NCHW'):
        super().__init__(prefix=self._default_prefix if prefix is None else prefix,
                         params=params)
        if not all(k % 2 == 1 for k in h2h_kernel):
            raise MXNetError('conv RNN cells need an odd h2h_kernel (the state keeps its '
                             'size), got %s' % (h2h_kernel,))
        self._h2h_kernel = h2h_kernel
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel))
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable('data'), num_filter=num_hidden,
                                   kernel=i2h_kernel, stride=i2h_stride, pad=i2h_pad,
                                   dilate=i2h_dilate, layout=conv_layout)
        out_shape = probe.infer_shape(data=input_shape)[1][0]
        self._state_shape = (0,) + tuple(out_shape[1:])
        self._iW = self.params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self.params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self.params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self.params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}
                for _ in range(self._num_states)]

    _num_states = 1

    def _conv_forward(self, inputs, states, name):
        num_filter = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name='%si2h' % name, data=inputs, num_filter=num_filter,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name='%sh2h' % name, data=states[0], num_filter=num_filter,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError('BaseConvRNNCell is the base class of the conv cells')


_CONV_DOC = """
    Parameters
    ----------
    input_shape : tuple of int
        Shape of one step's input (batch first).
    num_hidden : int
        Channels of the state.
    h2h_kernel, h2h_dilate : tuple of int, default (3, 3), (1, 1)
        Of the state-to-state convolution (odd kernel; padded to keep the size).
    i2h_kernel, i2h_stride, i2h_pad, i2h_dilate : tuple of int
        Of the input-to-state convolution; default (3, 3), (1, 1), (1, 1), (1, 1).
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
    activation : str or callable, default leaky ReLU with slope 0.2
    prefix : str
    params : RNNParams, optional
    conv_layout : str, default 'NCHW'
    """

class ConvRNNCell(BaseConvRNNCell):
    __doc__ = 'Convolutional Elman cell.\n' + _CONV_DOC

    _default_prefix = 'ConvRNN_'

    @property
    def _gate_names(self):
        return ('',)

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name='%sout' % name)
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    __doc__ = ('Convolutional LSTM cell (Shi et al. 2015), gates i, f, c, o; ``activation`` '
               'takes the place of tanh.\n' + _CONV_DOC)

    _num_states = 2
    _default_prefix = 'ConvLSTM_'

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4,
                                    axis=self._conv_layout.find('C'), name='%sslice' % name)
        in_gate = symbol.Activation(gates[0], act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name='%sf' % name)
        in_transform = self._get_activation(gates[2], self._activation, name='%sc' % name)
        out_gate = symbol.Activation(gates[3], act_type='sigmoid', name='%so' % name)
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                                        name='%sstate' % name)
        next_h = symbol._internal._mul(out_gate, self._get_activation(next_c, self._activation),
                                       name='%sout' % name)
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    __doc__ = ('Convolutional GRU cell, gates r, z, n; ``activation`` takes the place of '
               'tanh.\n' + _CONV_DOC)

    _default_prefix = 'ConvGRU_'

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        self._counter += 1
        name = '%st%d_' % (self._prefix, self._counter)
        i2h, h2h = self._conv_forward(inputs, states, name)
        # SliceChannel splits the channel axis of NCHW (axis 1, its default).
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name='%s_h2h_slice' % name)
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid',
                                        name='%s_z_act' % name)
        candidate = self._get_activation(i2h + reset_gate * h2h, self._activation,
                                         name='%s_h_act' % name)
        next_h = symbol._internal._plus((1. - update_gate) * candidate, update_gate * states[0],
                                        name='%sout' % name)
        return next_h, [next_h]
