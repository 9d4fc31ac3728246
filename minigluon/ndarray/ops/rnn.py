"""The fused recurrent op ``RNN`` (MXNet 1.x's), and ``_rnn_param_concat`` which Gluon's
recurrent layers use to build its flat parameter vector.

``RNN`` runs a stack of ``num_layers`` recurrent layers, each in one or two directions,
over ``data`` laid out ``(T, N, C)``. Modes and their gates (in the flat vector's row
order):

- ``rnn_relu`` / ``rnn_tanh``: ``h' = act(W_x x + b_x + W_h h + b_h)``;
- ``lstm``: gates i, f, c (written g below), o; ``c' = f c + i g``, ``h' = o tanh(c')``,
  and with ``projection_size`` the recurrent state is ``r' = W_r h'``;
- ``gru``: gates r, z, n; ``n = tanh(W_xn x + b_xn + r (W_hn h + b_hn))``,
  ``h' = (1 - z) n + z h`` (cuDNN's formula, as MXNet and PyTorch use).

The flat ``parameters`` vector holds every weight, layer by layer and direction by
direction (``i2h`` ``(G*H, C_in)``, ``h2h`` ``(G*H, P or H)``, then ``h2r`` ``(P, H)``
with a projection), then every bias in the same order (``i2h``, ``h2h``, ``(G*H,)``).

How it is computed, for speed on a CPU: per layer and direction, one GEMM projects the
inputs of all time steps; each step adds one recurrent GEMM into that buffer and
applies the gate functions in place, so the buffer ends up holding the gate
activations backward needs. Backward runs the steps in reverse writing the gates'
gradients into one buffer, then gets each weight's gradient, the biases' and the
inputs' with one GEMM (or sum) over all time steps. Gates keep the flat vector's order
(LSTM: i, f, g, o; the sigmoid goes over two blocks), so the weights are used as views of
it and the gradients are written straight into their places. In float32 on the host, an
LSTM step's gate arithmetic is one compiled pass (``rnn_cpu.py``) when numba is on. The
steps of each mode are in ``rnn_steps.py``. On several host threads the same work runs
as tasks over chunks of steps (see "the op" below), so stacked layers and the two
directions run side by side.
"""
import numpy as np

from ...base import MXNetError
from .. import tape
from . import compiled, host_threads, rnn_steps
from ..accumulate import sum_over
from ..generator import uniform01
from ..registry import register, shape_rule
from .shape import _concat_shapes, concat

_NUM_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}


def num_gates(mode):
    """How many gate blocks of ``state_size`` rows each weight matrix of ``mode`` has."""
    gates = _NUM_GATES.get(mode)
    if gates is None:
        raise MXNetError('RNN: unknown mode %r; choose one of %s'
                         % (mode, ', '.join(sorted(_NUM_GATES))))
    return gates


def param_layout(mode, num_layers, input_size, state_size, bidirectional=False,
                 projection_size=None):
    """Where each weight and bias lies in the flat parameter vector.

    Returns
    -------
    slots : list of dict
        One per layer and direction (``layer * directions + direction``), mapping
        ``'wx'``, ``'wh'``, ``'wr'`` (projection only), ``'bx'``, ``'bh'`` to
        ``(offset, shape)``.
    size : int
        The vector's length.
    """
    rows = num_gates(mode) * state_size
    dirs = 2 if bidirectional else 1
    out = projection_size or state_size
    slots, offset = [], 0
    for layer in range(num_layers):
        cols = input_size if layer == 0 else dirs * out
        for _ in range(dirs):
            slot = {}
            for key, shape in (('wx', (rows, cols)), ('wh', (rows, out)),
                               ('wr', (projection_size, state_size))):
                if key == 'wr' and not projection_size:
                    continue
                slot[key] = (offset, shape)
                offset += shape[0] * shape[1]
            slots.append(slot)
    for slot in slots:
        for key in ('bx', 'bh'):
            slot[key] = (offset, (rows,))
            offset += rows
    return slots, offset


def _view(flat, slot):
    offset, shape = slot
    size = shape[0] * (shape[1] if len(shape) > 1 else 1)
    return flat[offset:offset + size].reshape(shape)


class _Config:
    """The op's parameters, checked, and the sizes they imply with ``data``'s."""

    def __init__(self, data_shape, state_size, num_layers, bidirectional, mode, p,
                 projection_size, clip_min, clip_max, clip_nan):
        if state_size is None or num_layers is None or mode is None:
            raise MXNetError('RNN: state_size, num_layers and mode are required')
        if len(data_shape) != 3:
            raise MXNetError('RNN: data must be (sequence length, batch size, input size), '
                             'got shape %s' % (data_shape,))
        self.gates = num_gates(mode)
        self.mode = mode
        self.steps, self.batch, self.input_size = data_shape
        self.hidden = int(state_size)
        self.layers = int(num_layers)
        self.dirs = 2 if bidirectional else 1
        self.proj = int(projection_size) if projection_size else 0
        if self.proj and mode != 'lstm':
            raise MXNetError('RNN: projection_size is only supported for mode lstm, not %r'
                             % mode)
        if self.proj and self.proj > self.hidden:
            raise MXNetError('RNN: projection_size (%d) must not exceed state_size (%d)'
                             % (self.proj, self.hidden))
        self.out = self.proj or self.hidden
        if not 0 <= p < 1:
            raise MXNetError('RNN: p (dropout between layers) must be in [0, 1), got %r' % p)
        self.p = p
        self.clip = None
        if clip_min is not None or clip_max is not None:
            if mode != 'lstm':
                raise MXNetError('RNN: lstm_state_clip_min/max only apply to mode lstm')
            if clip_min is None or clip_max is None or clip_max < clip_min:
                raise MXNetError('RNN: lstm_state_clip_min and lstm_state_clip_max must be '
                                 'given together with min <= max, got %r and %r'
                                 % (clip_min, clip_max))
            self.clip = (float(clip_min), float(clip_max), bool(clip_nan))
        self.masked = False  # sequence lengths given (set by the op)
        self.slots, self.size = param_layout(mode, self.layers, self.input_size, self.hidden,
                                             bidirectional, self.proj)


def _check_inputs(cfg, parameters, state, state_cell, sequence_length=None,
                  use_sequence_length=False):
    if parameters.shape != (cfg.size,):
        raise MXNetError('RNN: parameters must be a vector of %d values for mode %s, %d '
                         'layers, %d direction(s), input size %d, state size %d%s; got shape '
                         '%s' % (cfg.size, cfg.mode, cfg.layers, cfg.dirs, cfg.input_size,
                                 cfg.hidden, ', projection %d' % cfg.proj if cfg.proj else '',
                                 parameters.shape))
    want = (cfg.layers * cfg.dirs, cfg.batch, cfg.out)
    if state.shape != want:
        raise MXNetError('RNN: state must have shape %s (layers * directions, batch, %s), '
                         'got %s' % (want, 'projection_size' if cfg.proj else 'state_size',
                                     state.shape))
    if cfg.mode == 'lstm':
        want = (cfg.layers * cfg.dirs, cfg.batch, cfg.hidden)
        if state_cell is None:
            raise MXNetError('RNN: mode lstm needs the state_cell input %s' % (want,))
        if state_cell.shape != want:
            raise MXNetError('RNN: state_cell must have shape %s, got %s'
                             % (want, state_cell.shape))
    if use_sequence_length:
        if sequence_length is None:
            raise MXNetError('RNN: use_sequence_length=True needs the sequence_length input')
        if sequence_length.shape != (cfg.batch,):
            raise MXNetError('RNN: sequence_length must have shape (%d,), one length per '
                             'sample, got %s' % (cfg.batch, sequence_length.shape))


def _valid_mask(xp, cfg, sequence_length):
    """``(T, N, 1)`` booleans: step t of sample n is within its length."""
    lengths = sequence_length.astype('int64')
    if bool(((lengths < 0) | (lengths > cfg.steps)).any()):
        raise MXNetError('RNN: sequence_length values must be in [0, %d], got %s'
                         % (cfg.steps, lengths.tolist()))
    return (xp.arange(cfg.steps)[:, None] < lengths[None, :])[:, :, None]


# ---- the op: its work as tasks over time chunks and batch parts ----
#
# On the host with several threads, each layer and direction's time steps are cut into
# chunks, and the batch into one part per thread (samples never mix in a recurrence):
# a chunk's input projection is one task, its steps for one part another, so a layer
# starts on its first chunk as soon as the layer below has finished that chunk, and the
# parts run side by side, each thread with a one-threaded BLAS (``host_threads``). The
# weights' gradients are one GEMM each over all steps, tasks of their own. With one
# thread, or on a GPU, there is one chunk and one part: the whole-sequence GEMMs.

# Rows of a chunk's input projection (steps times batch) aimed at: fewer rows make
# GEMMs slower per row, more make the next layer wait longer for its first chunk.
CHUNK_ROWS = 128
# Samples per batch part at least: fewer make the per-step products slower per row.
PART_ROWS = 8


def _weights(cfg, flat, index):
    """The weights and biases of one layer and direction: views of ``flat``."""
    slot = cfg.slots[index]
    return {key: _view(flat, slot[key]) for key in slot}


def _dropout_mask(xp, cfg, shape, dtype):
    # float32 draws whatever the dtype, as Dropout's: the same mask for the same seed
    return (uniform01(xp, shape) >= cfg.p) * dtype.type(1 / (1 - cfg.p))


def _kernels(xp, cfg, data):
    """The compiled LSTM step kernels when they apply (float32 host arrays, no state
    clipping, numba on), else None."""
    if cfg.mode != 'lstm' or cfg.clip or data.dtype != np.float32 or \
            not compiled.applies(xp, data):
        return None
    from . import rnn_cpu
    return rnn_cpu


def _splits(xp, cfg):
    """``(chunks, parts)``: the time steps as ``[(start, stop)]`` and the batch as
    ``[(lo, hi)]``. The batch is split only when the layers and directions give fewer
    chains of steps than there are threads: a step's product with half the batch takes
    more than half the time (the whole recurrent weight is read either way)."""
    count = host_threads.threads() if xp is np else 1
    if count <= 1 or cfg.steps == 0 or cfg.batch == 0:
        return [(0, cfg.steps)], [(0, cfg.batch)]
    per = max(1, -(-CHUNK_ROWS // cfg.batch))
    chunks = [(a, min(a + per, cfg.steps)) for a in range(0, cfg.steps, per)]
    split = min(-(-count // (cfg.layers * cfg.dirs)), max(1, cfg.batch // PART_ROWS))
    parts = [(run[0], run[-1] + 1) for run in host_threads.chunks(range(cfg.batch), split)]
    return chunks, parts


class _Tasks:
    """The op's tasks for ``host_threads.run_tasks`` (on a GPU, in order on the calling
    thread); ``add`` returns a task's index."""

    def __init__(self, xp):
        self.list = []
        self.host = xp is np

    def add(self, fn, deps, priority, *args):
        self.list.append((lambda: fn(*args), list(deps), priority))
        return len(self.list) - 1

    def run(self):
        host_threads.run_tasks(self.list, here=not self.host)


def _in_order(chunks, backward_in_time):
    """The chunks' indices in the order their steps are processed."""
    indices = range(len(chunks))
    return list(reversed(indices)) if backward_in_time else list(indices)


def _project(xp, cfg, saved, x2, start, stop):
    """Steps ``start:stop`` of ``x W_x^T`` plus the biases that add to it (GRU: all but
    the n block of b_h) into the gates buffer."""
    rows = slice(start * cfg.batch, stop * cfg.batch)
    out = saved['gates'].reshape(-1, saved['gates'].shape[2])[rows]
    xp.matmul(x2[rows], saved['w']['wx'].T, out=out)
    out += saved['bias']


# A direction's per-step buffers, (T, N, ...): a part of the batch slices their axis 1
_STEP_BUFFERS = ('gates', 'hs', 'cs', 'tcs', 'hfull', 'masks', 'ghn')


def _part_of(saved, rows):
    """``saved``'s arrays for the samples ``rows`` (the per-step buffers and the initial
    states; None stays None)."""
    return {key: None if value is None else
            value[:, rows] if key in _STEP_BUFFERS else value[rows]
            for key, value in saved.items() if key not in ('w', 'bias')}


def _forward_steps(xp, cfg, saved, chunk, part, reverse, valid, y, sl, kernels):
    """One part of the batch through one chunk of steps, its outputs into ``y[..., sl]``."""
    (start, stop), rows = chunk, slice(*part)
    order = range(stop - 1, start - 1, -1) if reverse else range(start, stop)
    before = stop if reverse else start - 1
    first = not 0 <= before < cfg.steps
    view = _part_of(saved, rows)
    hs, gx, w = view['hs'], view['gates'], saved['w']
    h = view['h0'] if first else hs[before]
    valid_part = valid[:, rows] if valid is not None else None
    if cfg.mode == 'lstm':
        c = view['c0'] if first else view['cs'][before]
        rnn_steps.forward_lstm(xp, cfg, w, gx, hs, h, c, order, valid_part, view['cs'],
                               view['tcs'], view['hfull'], view['masks'], kernels)
    elif cfg.mode == 'gru':
        rnn_steps.forward_gru(xp, cfg, w, gx, hs, h, order, valid_part, view['ghn'])
    else:
        rnn_steps.forward_simple(xp, cfg, w, gx, hs, h, order, valid_part)
    if saved['hs'] is not y:
        steps = slice(start, stop)
        if valid is not None:
            xp.multiply(hs[steps], valid_part[steps], out=y[steps, rows, sl])
        else:
            y[steps, rows, sl] = hs[steps]


def _apply_mask(xp, y, mask, out, start, stop):
    """Steps ``start:stop`` of the next layer's input: this layer's output, dropped out."""
    xp.multiply(y[start:stop], mask[start:stop], out=out[start:stop])


def _direction_buffers(xp, cfg, w, h0, c0, y, dtype):
    """What one direction of one layer computes forward, which backward reads."""
    steps, batch, hid = cfg.steps, cfg.batch, cfg.hidden
    bias = w['bx'] + w['bh']
    if cfg.mode == 'gru':  # the reset gate scales W_hn h + b_hn: b_hn is added per step
        bias[2 * hid:] = w['bx'][2 * hid:]
    # the states in a buffer of their own when y's slice is strided or gets masked
    own = y.shape[2] != cfg.out or cfg.masked
    saved = {'w': w, 'bias': bias, 'h0': h0, 'c0': c0,
             'gates': xp.empty((steps, batch, cfg.gates * hid), dtype=dtype),
             'hs': xp.empty((steps, batch, cfg.out), dtype=dtype) if own else y}
    if cfg.mode == 'lstm':
        saved['cs'] = xp.empty((steps, batch, hid), dtype=dtype)
        saved['tcs'] = xp.empty_like(saved['cs'])
        saved['hfull'] = xp.empty_like(saved['cs']) if cfg.proj else None
        saved['masks'] = xp.empty(saved['cs'].shape, dtype=bool) if cfg.clip else None
    elif cfg.mode == 'gru':
        saved['ghn'] = xp.empty((steps, batch, hid), dtype=dtype)
    return saved


def _forward(xp, cfg, data, parameters, state, state_cell, valid, kernels, training):
    """Every layer forward: ``(output, hy, cy, layers)``, ``layers`` holding per layer
    what backward needs."""
    chunks, parts = _splits(xp, cfg)
    tasks = _Tasks(xp)
    dtype, out_size = data.dtype, cfg.out
    layers, x, below = [], data, [[] for _ in chunks]  # below: tasks finishing x per chunk
    for layer in range(cfg.layers):
        x2 = x.reshape(-1, x.shape[2])
        y = xp.empty((cfg.steps, cfg.batch, cfg.dirs * out_size), dtype=dtype)
        record = {'x2': x2, 'dirs': [], 'mask': None}
        done = [[] for _ in chunks]
        for d in range(cfg.dirs):
            index = layer * cfg.dirs + d
            saved = _direction_buffers(xp, cfg, _weights(cfg, parameters, index), state[index],
                                       state_cell[index] if state_cell is not None else None,
                                       y, dtype)
            sl = slice(d * out_size, (d + 1) * out_size)
            last = [None] * len(parts)
            for wave, k in enumerate(_in_order(chunks, d == 1), start=layer):
                projected = tasks.add(_project, below[k], 4 * wave, xp, cfg, saved, x2,
                                      *chunks[k])
                for j, part in enumerate(parts):
                    deps = [projected] + ([last[j]] if last[j] is not None else [])
                    last[j] = tasks.add(_forward_steps, deps, 4 * wave + 1, xp, cfg, saved,
                                        chunks[k], part, d == 1, valid, y, sl, kernels)
                    done[k].append(last[j])
            record['dirs'].append(saved)
        if training and layer < cfg.layers - 1:
            mask = record['mask'] = _dropout_mask(xp, cfg, y.shape, dtype)
            x = xp.empty_like(y)
            below = [[tasks.add(_apply_mask, done[k], 4 * (layer + k) + 2, xp, y, mask, x,
                                *chunks[k])] for k in range(len(chunks))]
        else:
            x, below = y, done
        layers.append(record)
    tasks.run()
    hy = xp.empty(state.shape, dtype=dtype)
    cy = xp.empty(state_cell.shape, dtype=dtype) if state_cell is not None else None
    for index, saved in enumerate(saved for record in layers for saved in record['dirs']):
        last_step = 0 if index % cfg.dirs else cfg.steps - 1  # the reverse direction ends at 0
        hy[index] = saved['hs'][last_step] if cfg.steps else saved['h0']
        if cy is not None:
            cy[index] = saved['cs'][last_step] if cfg.steps else saved['c0']
    return x, hy, cy, layers


@register('RNN', num_inputs=5, takes_needs_grad=True)
def rnn(xp, data, parameters, state, state_cell=None, sequence_length=None, state_size=None,
        num_layers=None, bidirectional=False, mode=None, p=0.0, state_outputs=False,
        projection_size=None, lstm_state_clip_min=None, lstm_state_clip_max=None,
        lstm_state_clip_nan=False, use_sequence_length=False, *, needs_grad=None):
    """A stack of recurrent layers over ``data`` ``(T, N, C)``, MXNet 1.x's fused op.

    Inputs: ``parameters`` (the flat vector, see the module docstring), ``state``
    ``(L*D, N, H or P)``, for lstm ``state_cell`` ``(L*D, N, H)``, and with
    ``use_sequence_length`` the per-sample lengths ``sequence_length`` ``(N,)`` (for
    modes other than lstm it may come in the ``state_cell`` slot, as MXNet's positional
    inputs put it).

    Returns ``out`` ``(T, N, D*H or D*P)``, and with ``state_outputs`` also the final
    states ``hy`` (and for lstm ``cy``). ``p`` drops the outputs of every layer but the
    last while training. With sequence lengths, steps past a sample's length give zero
    outputs and leave its states as they were (the reverse direction starts at the
    sample's last valid step). ``lstm_state_clip_min/max`` clip the cell state at every
    step (``lstm_state_clip_nan``: NaN becomes the lower bound instead of spreading).
    """
    if mode != 'lstm' and use_sequence_length and sequence_length is None:
        state_cell, sequence_length = None, state_cell
    cfg = _Config(data.shape, state_size, num_layers, bidirectional, mode, p,
                  projection_size, lstm_state_clip_min, lstm_state_clip_max,
                  lstm_state_clip_nan)
    _check_inputs(cfg, parameters, state, state_cell, sequence_length, use_sequence_length)
    if mode != 'lstm':
        state_cell = None
    valid = None
    if use_sequence_length:
        valid = _valid_mask(xp, cfg, sequence_length)
    cfg.masked = valid is not None
    kernels = _kernels(xp, cfg, data)
    training = tape.is_training() and cfg.p > 0
    with np.errstate(over='ignore'):
        out, hy, cy, layers = _forward(xp, cfg, data, parameters, state, state_cell, valid,
                                       kernels, training)

    def backward(grads):
        if state_outputs:
            dout, dhy = grads[0], grads[1]
            dcy = grads[2] if mode == 'lstm' else None
        else:
            dout, dhy, dcy = grads, None, None
        want_dx = needs_grad is None or needs_grad[0]
        dx, dparams, dstate, dcell = _backward(xp, cfg, layers, parameters, dout, dhy, dcy,
                                               valid, want_dx, kernels)
        return dx, dparams, dstate, dcell, None

    if state_outputs:
        return ((out, hy, cy) if mode == 'lstm' else (out, hy)), backward
    return out, backward


def _backward_steps(xp, cfg, saved, grads, dy, chunk, part, reverse, valid, kernels):
    """One part of the batch back through one chunk of steps: writes the gates'
    gradients and carries the state gradients ``grads['dh']`` (and ``'dc'``) on."""
    (start, stop), rows = chunk, slice(*part)
    order = range(start, stop) if reverse else range(stop - 1, start - 1, -1)
    step = -1 if reverse else 1
    view = _part_of(saved, rows)
    w, dh, dg = saved['w'], grads['dh'][rows], grads['dg'][:, rows]
    dy = dy[:, rows]
    valid_part = valid[:, rows] if valid is not None else None
    if cfg.mode == 'lstm':
        dr = grads['dr'][:, rows] if cfg.proj else None
        rnn_steps.backward_lstm(xp, cfg, w, view, dy, dh, grads['dc'][rows], order, step,
                                valid_part, dg, dr, kernels)
    elif cfg.mode == 'gru':
        rnn_steps.backward_gru(xp, cfg, w, view, dy, dh, order, step, valid_part, dg,
                               grads['dxn'][:, rows])
    else:
        rnn_steps.backward_simple(xp, cfg, w, view, dy, dh, order, step, valid_part, dg)


def _direction_grads(xp, cfg, dhy, dcy, dtype):
    """The buffers one direction's backward writes, the state gradients from above."""
    steps, batch, hid = cfg.steps, cfg.batch, cfg.hidden
    grads = {'dh': xp.zeros((batch, cfg.out), dtype=dtype) if dhy is None else dhy.copy(),
             'dg': xp.empty((steps, batch, cfg.gates * hid), dtype=dtype)}
    if cfg.mode == 'lstm':
        grads['dc'] = xp.zeros((batch, hid), dtype=dtype) if dcy is None else dcy.copy()
        grads['dr'] = xp.empty((steps, batch, cfg.out), dtype=dtype) if cfg.proj else None
    elif cfg.mode == 'gru':
        grads['dxn'] = xp.empty((steps, batch, hid), dtype=dtype)
    return grads


def _input_grad(xp, cfg, record, dir_grads, dx2, mask, start, stop):
    """Steps ``start:stop`` of the layer input's gradient, the directions' parts added in
    order (times the dropout mask the input was multiplied by)."""
    hid, rows = cfg.hidden, slice(start * cfg.batch, stop * cfg.batch)
    out = dx2[rows]
    for d, (saved, grads) in enumerate(zip(record['dirs'], dir_grads)):
        wx = saved['w']['wx']
        dg2 = grads['dg'].reshape(-1, grads['dg'].shape[2])[rows]
        part = out if d == 0 else xp.empty_like(out)
        if cfg.mode == 'gru':  # the n block's input-side gradient is its own buffer
            xp.matmul(dg2[:, :2 * hid], wx[:2 * hid], out=part)
            part += xp.matmul(grads['dxn'].reshape(-1, hid)[rows], wx[2 * hid:])
        else:
            xp.matmul(dg2, wx, out=part)
        if d:
            out += part
    if mask is not None:
        out *= mask[start:stop].reshape(out.shape)


def _backward(xp, cfg, layers, parameters, dout, dhy, dcy, valid, want_dx, kernels):
    """Every layer backward: ``(dx or None, dparameters, dstate, dstate_cell)``."""
    chunks, parts = _splits(xp, cfg)
    tasks = _Tasks(xp)
    dtype = dout.dtype
    dparams = xp.empty_like(parameters)  # every slot is written
    all_grads = []
    dy, above = dout, [[] for _ in chunks]  # above: tasks finishing dy per chunk
    for layer in range(cfg.layers - 1, -1, -1):
        record = layers[layer]
        done = [[] for _ in chunks]
        dir_grads = []
        depth = cfg.layers - 1 - layer
        for d, saved in enumerate(record['dirs']):
            index = layer * cfg.dirs + d
            grads = _direction_grads(xp, cfg, None if dhy is None else dhy[index],
                                     None if dcy is None else dcy[index], dtype)
            dyd = dy[:, :, d * cfg.out:(d + 1) * cfg.out]
            last = [None] * len(parts)
            for wave, k in enumerate(_in_order(chunks, d == 0), start=depth):
                for j, part in enumerate(parts):
                    deps = above[k] + ([last[j]] if last[j] is not None else [])
                    last[j] = tasks.add(_backward_steps, deps, 4 * wave + 1, xp, cfg, saved,
                                        grads, dyd, chunks[k], part, d == 1, valid, kernels)
                    done[k].append(last[j])
            finished = [i for i in last if i is not None]
            for rows in host_threads.chunks(range(cfg.gates * cfg.hidden), len(parts)):
                tasks.add(_weight_grads, finished, 1 << 30, xp, cfg, dparams, index, saved,
                          grads, record['x2'], d == 1, slice(rows[0], rows[-1] + 1))
            dir_grads.append(grads)
        all_grads[:0] = dir_grads
        if layer == 0 and not want_dx:
            dy = None
            break
        dx2 = xp.empty((cfg.steps * cfg.batch, record['x2'].shape[1]), dtype=dtype)
        mask = layers[layer - 1]['mask'] if layer > 0 else None
        above = [[tasks.add(_input_grad, done[k], 4 * (depth + len(chunks) - 1 - k) + 2, xp,
                            cfg, record, dir_grads, dx2, mask, *chunks[k])]
                 for k in range(len(chunks))]
        dy = dx2.reshape(cfg.steps, cfg.batch, -1)
    tasks.run()
    dstate = xp.stack([grads['dh'] for grads in all_grads])
    dcell = xp.stack([grads['dc'] for grads in all_grads]) if cfg.mode == 'lstm' else None
    return dy, dparams, dstate, dcell


def _weight_grads(xp, cfg, dparams, index, saved, grads, x2, reverse, block):
    """Gate rows ``block`` of one direction's weights' and biases' gradients, each one
    GEMM (or sum) over all steps (and the projection's, with the first block)."""
    slot = cfg.slots[index]
    hid, steps = cfg.hidden, cfg.steps
    hs, h0 = saved['hs'], saved['h0']
    dg = grads['dg'][:, :, block]
    dg2 = dg.reshape(-1, dg.shape[2]) if dg.flags.c_contiguous else \
        grads['dg'].reshape(-1, grads['dg'].shape[2])[:, block]
    # h_prev of step t is hs[t - step] (h0 at the first step): two GEMMs, no copy
    first, rest = (steps - 1, slice(0, steps - 1)) if reverse else (0, slice(1, None))
    prev = slice(1, None) if reverse else slice(0, steps - 1)
    dwh = _view(dparams, slot['wh'])[block]
    xp.matmul(dg[first].T, h0, out=dwh)
    if steps > 1:
        rest2 = dg2[:-cfg.batch] if reverse else dg2[cfg.batch:]
        dwh += xp.matmul(rest2.T, hs[prev].reshape(-1, hs.shape[2]))
    dbh = _view(dparams, slot['bh'])[block]
    dbh[...] = sum_over(xp, dg2, (0,))
    _view(dparams, slot['bx'])[block] = dbh
    # the input weights' gradient: one GEMM over all steps
    xp.matmul(dg2.T, x2, out=_view(dparams, slot['wx'])[block])
    if cfg.mode == 'gru':  # the n block's input side has a gradient buffer of its own
        low, high = max(block.start, 2 * hid), min(block.stop, 3 * hid)
        if low < high:
            dxn2 = grads['dxn'].reshape(-1, hid)[:, low - 2 * hid:high - 2 * hid]
            _view(dparams, slot['bx'])[low:high] = sum_over(xp, dxn2, (0,))
            xp.matmul(dxn2.T, x2, out=_view(dparams, slot['wx'])[low:high])
    if cfg.proj and block.start == 0:
        xp.matmul(grads['dr'].reshape(-1, cfg.out).T, saved['hfull'].reshape(-1, hid),
                  out=_view(dparams, slot['wr']))


@register('_rnn_param_concat', num_inputs=None)
def rnn_param_concat(xp, *data, dim=1):
    """``concat`` for building the fused RNN op's flat parameter vector: the same join,
    with a shape rule that also sizes up to two unknown inputs from the output's size
    (the first layers' input weights of both directions, before the input is seen)."""
    return concat(xp, *data, dim=dim)


@shape_rule('_rnn_param_concat')
def _rnn_param_concat_shapes(*data, dim=1, out_shapes=None, **_):
    shapes = [list(d) for d in _concat_shapes(*data, dim=dim, out_shapes=out_shapes)]
    out = out_shapes[0] if out_shapes else None
    if not out or not shapes or any(len(d) != len(out) for d in shapes):
        return tuple(tuple(d) for d in shapes)
    axis = dim % len(out)
    missing = [d for d in shapes if not d[axis]]
    if out[axis] and missing and len(missing) <= 2:
        residual = out[axis] - sum(d[axis] for d in shapes)
        if residual < 0 or residual % len(missing):
            raise MXNetError('_rnn_param_concat: the inputs\' sizes %s do not fit the output\'s '
                             '%d along axis %d' % ([d[axis] for d in shapes], out[axis], axis))
        for d in missing:
            d[axis] = residual // len(missing)
    return tuple(tuple(d) for d in shapes)
