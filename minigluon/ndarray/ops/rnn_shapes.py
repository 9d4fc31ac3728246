"""The fused ``RNN`` op's shape rules: its inputs' shapes from what graph inference
knows, and its outputs' shapes from its inputs' without running it (a run on zeros
would cost a whole forward pass)."""
from ..registry import output_shape_rule, shape_rule
from .rnn import _check_inputs, _Config, param_layout


@shape_rule('RNN')
def _rnn_shapes(data, parameters, state, state_cell=None, sequence_length=None, state_size=None,
                num_layers=None, bidirectional=False, mode=None, projection_size=None,
                use_sequence_length=False, out_shapes=None, **_):
    """The flat vector's length and the states' shapes from data's ``(T, N, C)``; data's
    ``T`` and ``N`` from the output's when only that is known."""
    out = out_shapes[0] if out_shapes else None
    if data and out and len(data) == 3 and len(out) == 3:
        data = (data[0] or out[0], data[1] or out[1], data[2])
    if mode != 'lstm' and use_sequence_length and sequence_length is None:
        state_cell, sequence_length = None, state_cell
    if not data or len(data) != 3:
        return data, parameters, state, state_cell, sequence_length
    dirs = 2 if bidirectional else 1
    batch = data[1]
    rows = (num_layers * dirs, batch, projection_size or state_size)
    if data[2]:
        parameters = (param_layout(mode, num_layers, data[2], state_size, bidirectional,
                                   projection_size)[1],)
    if state is not None:
        state = rows
    if state_cell is not None and mode == 'lstm':
        state_cell = rows[:2] + (state_size,)
    if sequence_length is not None:
        sequence_length = (batch,)
    if mode != 'lstm' and use_sequence_length:
        return data, parameters, state, sequence_length, None
    return data, parameters, state, state_cell, sequence_length


class _Shape:
    """An input of known shape alone, for the checks that take arrays."""

    def __init__(self, shape):
        self.shape = tuple(shape)


@output_shape_rule('RNN')
def _rnn_output_shapes(data, parameters, state, state_cell=None, sequence_length=None,
                       state_size=None, num_layers=None, bidirectional=False, mode=None, p=0.0,
                       state_outputs=False, projection_size=None, lstm_state_clip_min=None,
                       lstm_state_clip_max=None, lstm_state_clip_nan=False,
                       use_sequence_length=False, **_):
    """The outputs' shapes, checked as the kernel checks its inputs, without running it
    (which would cost a whole forward pass)."""
    if mode != 'lstm' and use_sequence_length and sequence_length is None:
        state_cell, sequence_length = None, state_cell
    cfg = _Config(data, state_size, num_layers, bidirectional, mode, p, projection_size,
                  lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan)
    _check_inputs(cfg, *[None if s is None else _Shape(s)
                         for s in (parameters, state, state_cell, sequence_length)],
                  use_sequence_length)
    shapes = [(cfg.steps, cfg.batch, cfg.dirs * cfg.out)]
    if state_outputs:
        shapes.append(tuple(state))
        if mode == 'lstm':
            shapes.append(tuple(state_cell))
    return shapes
