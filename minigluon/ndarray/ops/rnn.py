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
LSTM step's gate arithmetic is one compiled pass (``rnn_cpu.py``) when numba is on.
"""
import numpy as np

from ...base import MXNetError
from .. import tape
from . import compiled, host_threads
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


class _RowsGemm:
    """``out = a @ w`` for the per-step recurrent products, where ``a`` has few rows (the
    batch). On the host it runs as ``(w.T @ a.T).T``: OpenBLAS spreads that shape over
    its threads better (a step's GEMM at batch 32, 256 units: 1.4x faster on 2 threads)
    and the transposed copy back costs little."""

    def __init__(self, xp, w, rows, dtype):
        self.xp, self.w, self.w_t = xp, w, w.T
        self.host = xp is np
        self.scratch = xp.empty((w.shape[1], rows), dtype=dtype) if self.host else None

    def __call__(self, a, out):
        if self.host:
            np.matmul(self.w_t, a.T, out=self.scratch)
            np.copyto(out, self.scratch.T)
        else:
            self.xp.matmul(a, self.w, out=out)


def _sigmoid_(xp, x):
    """``x`` replaced by ``sigmoid(x)``, in place (exp may overflow to inf: 1/inf is 0)."""
    xp.negative(x, out=x)
    xp.exp(x, out=x)
    x += 1
    xp.reciprocal(x, out=x)


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


# ---- one direction of one layer, forward ----
#
# Each takes ``gx`` (T, N, G*H): the input projection with the biases folded in, which
# becomes the gate activations; ``hs`` (T, N, O): where each step's state goes (a slice
# of the layer's output, or its own buffer when steps can be masked); ``h`` and ``c``
# the initial states; ``order`` the time steps in processing order; ``valid`` the
# (T, N, 1) mask or None. Returns what backward needs and the final states.

def _carry(xp, valid, t, new, old):
    """Samples past their length keep their state."""
    if valid is not None:
        xp.copyto(new, old, where=~valid[t])


def _forward_simple(xp, cfg, w, gx, hs, h, order, valid):
    wh_t = w['wh'].T
    relu = cfg.mode == 'rnn_relu'
    for t in order:
        g = gx[t]
        g += xp.matmul(h, wh_t)
        if relu:
            xp.maximum(g, 0, out=hs[t])
        else:
            xp.tanh(g, out=hs[t])
        _carry(xp, valid, t, hs[t], h)
        h = hs[t]
    return {}, h, None


def _forward_lstm(xp, cfg, w, gx, hs, h, c, order, valid, cs, tcs, hfull, kernels):
    hid = cfg.hidden
    wh_t = w['wh'].T
    wr_t = w['wr'].T if cfg.proj else None
    clip = cfg.clip
    masks = xp.empty(cs.shape, dtype=bool) if clip else None
    tmp = xp.empty((cfg.batch, hid), dtype=gx.dtype)
    gh = xp.empty((cfg.batch, 4 * hid), dtype=gx.dtype)
    recurrent = _RowsGemm(xp, wh_t, cfg.batch, gx.dtype)
    for t in order:
        g = gx[t]
        recurrent(h, gh)
        hout = hfull[t] if cfg.proj else hs[t]
        if kernels is not None:  # one pass: gates, cell state, output
            kernels.lstm_forward_step(g, gh, c, cs[t], tcs[t], hout)
        else:
            g += gh
            _sigmoid_(xp, g[:, :2 * hid])
            _sigmoid_(xp, g[:, 3 * hid:])
            cell = g[:, 2 * hid:3 * hid]
            xp.tanh(cell, out=cell)
            xp.multiply(g[:, hid:2 * hid], c, out=cs[t])
            xp.multiply(g[:, :hid], cell, out=tmp)
            cs[t] += tmp
            if clip:
                low, high, no_nan = clip
                xp.greater_equal(cs[t], low, out=masks[t])
                masks[t] &= cs[t] <= high
                if no_nan:  # fmax takes the number where one side is NaN
                    xp.fmax(cs[t], low, out=cs[t])
                    xp.fmin(cs[t], high, out=cs[t])
                else:
                    xp.clip(cs[t], low, high, out=cs[t])
            _carry(xp, valid, t, cs[t], c)
            xp.tanh(cs[t], out=tcs[t])
            xp.multiply(g[:, 3 * hid:], tcs[t], out=hout)
        if kernels is not None:
            _carry(xp, valid, t, cs[t], c)
        if cfg.proj:
            xp.matmul(hfull[t], wr_t, out=hs[t])
        _carry(xp, valid, t, hs[t], h)
        h, c = hs[t], cs[t]
    return {'masks': masks}, h, c


def _forward_gru(xp, cfg, w, gx, hs, h, order, valid, ghn):
    hid = cfg.hidden
    wh_t = w['wh'].T
    bhn = w['bh'][2 * hid:]
    gh = xp.empty((cfg.batch, 3 * hid), dtype=gx.dtype)
    for t in order:
        g = gx[t]
        xp.matmul(h, wh_t, out=gh)
        rz = g[:, :2 * hid]
        rz += gh[:, :2 * hid]
        _sigmoid_(xp, rz)
        xp.add(gh[:, 2 * hid:], bhn, out=ghn[t])
        n = g[:, 2 * hid:]
        n += g[:, :hid] * ghn[t]
        xp.tanh(n, out=n)
        xp.subtract(h, n, out=hs[t])
        hs[t] *= g[:, hid:2 * hid]
        hs[t] += n
        _carry(xp, valid, t, hs[t], h)
        h = hs[t]
    return {}, h, None


# ---- one direction of one layer, backward ----
#
# Each takes ``dy`` (T, N, O) the gradient of the states from above (None: zeros), ``dh``
# and ``dc`` the gradients of the final states (overwritten), and writes the gradient
# of each step's gate pre-activations into ``dg`` (T, N, G*H). Returns the gradients of
# the initial states.

def _hprev(t, order_step, hs, h0):
    prev = t - order_step
    return h0 if prev < 0 or prev >= hs.shape[0] else hs[prev]


def _add_step_grad(dh, dy_t, valid_t):
    """Adds step t's output gradient ``dy_t`` to ``dh``. With sequence lengths, samples
    past their length output constant zeros and pass their state gradient through the
    step untouched: that part of ``dh`` is taken out and returned (else None)."""
    if valid_t is None:
        dh += dy_t
        return None
    keep = dh * ~valid_t
    dh += dy_t
    dh *= valid_t
    return keep


def _backward_simple(xp, cfg, w, saved, dy, dh, order, step, valid, dg):
    wh = w['wh']
    hs = saved['hs']
    for t in order:
        keep = _add_step_grad(dh, dy[t], None if valid is None else valid[t])
        if cfg.mode == 'rnn_relu':
            xp.multiply(dh, hs[t] > 0, out=dg[t])
        else:
            xp.multiply(hs[t], hs[t], out=dg[t])
            xp.subtract(1, dg[t], out=dg[t])
            dg[t] *= dh
        xp.matmul(dg[t], wh, out=dh)
        if valid is not None:
            dh += keep
    return dh, None


def _backward_lstm(xp, cfg, w, saved, dy, dh, dc, order, step, valid, dg, dr, kernels):
    hid = cfg.hidden
    gates, cs, tcs, c0 = saved['gates'], saved['cs'], saved['tcs'], saved['c0']
    masks = saved['masks']
    wh = w['wh']
    recurrent = _RowsGemm(xp, wh, cfg.batch, dg.dtype)
    wr = w['wr'] if cfg.proj else None
    tmp = xp.empty((cfg.batch, hid), dtype=dg.dtype)
    tmp2 = xp.empty((cfg.batch, 2 * hid), dtype=dg.dtype) if kernels is None else None
    dhf = xp.empty((cfg.batch, hid), dtype=dg.dtype) if cfg.proj else None
    for t in order:
        keep_h = _add_step_grad(dh, dy[t], None if valid is None else valid[t])
        if valid is not None:
            keep_c = dc * ~valid[t]
            dc *= valid[t]
        if cfg.proj:
            dr[t] = dh
            xp.matmul(dh, wr, out=dhf)
            dout = dhf
        else:
            dout = dh
        g, d = gates[t], dg[t]
        tc = tcs[t]
        prev = t - step
        c_prev = c0 if prev < 0 or prev >= cs.shape[0] else cs[prev]
        if kernels is not None:
            kernels.lstm_backward_step(g, tc, c_prev, dout, dc, d)
            recurrent(d, dh)
            if valid is not None:
                dh += keep_h
                dc += keep_c
            continue
        # dc += dout * o * (1 - tanh(c)^2)
        xp.multiply(tc, tc, out=tmp)
        xp.subtract(1, tmp, out=tmp)
        tmp *= g[:, 3 * hid:]
        tmp *= dout
        dc += tmp
        xp.multiply(dout, tc, out=d[:, 3 * hid:])
        if masks is not None:
            dc *= masks[t]
        cell = g[:, 2 * hid:3 * hid]
        xp.multiply(dc, cell, out=d[:, :hid])
        xp.multiply(dc, c_prev, out=d[:, hid:2 * hid])
        xp.multiply(dc, g[:, :hid], out=d[:, 2 * hid:3 * hid])
        dc *= g[:, hid:2 * hid]
        # through the gate functions: sigmoid' = s (1 - s), tanh' = 1 - g^2
        for sl, scratch in ((slice(0, 2 * hid), tmp2), (slice(3 * hid, None), tmp)):
            sig = g[:, sl]
            ds = d[:, sl]
            ds *= sig
            xp.multiply(ds, sig, out=scratch)
            ds -= scratch
        xp.multiply(cell, cell, out=tmp)
        xp.subtract(1, tmp, out=tmp)
        d[:, 2 * hid:3 * hid] *= tmp
        recurrent(d, dh)
        if valid is not None:
            dh += keep_h
            dc += keep_c
    return dh, dc


def _backward_gru(xp, cfg, w, saved, dy, dh, order, step, valid, dg, dxn):
    hid = cfg.hidden
    gates, hs, h0, ghn = saved['gates'], saved['hs'], saved['h0'], saved['ghn']
    wh = w['wh']
    tmp = xp.empty((cfg.batch, hid), dtype=dg.dtype)
    for t in order:
        keep = _add_step_grad(dh, dy[t], None if valid is None else valid[t])
        g, d = gates[t], dg[t]
        r, z, n = g[:, :hid], g[:, hid:2 * hid], g[:, 2 * hid:]
        h_prev = _hprev(t, step, hs, h0)
        dn = dxn[t]
        # dn_pre = dh (1 - z) (1 - n^2)
        xp.multiply(n, n, out=tmp)
        xp.subtract(1, tmp, out=tmp)
        xp.subtract(dh, dh * z, out=dn)
        dn *= tmp
        # dz_pre = dh (h_prev - n) z (1 - z)
        dz = d[:, hid:2 * hid]
        xp.subtract(h_prev, n, out=dz)
        dz *= dh
        dz *= z
        dz -= dz * z
        # the reset gate scales W_hn h + b_hn
        dr_ = d[:, :hid]
        xp.multiply(dn, ghn[t], out=dr_)
        dr_ *= r
        dr_ -= dr_ * r
        xp.multiply(dn, r, out=d[:, 2 * hid:])
        dh *= z
        dh += xp.matmul(d, wh)
        if valid is not None:
            dh += keep
    return dh, None


# ---- the op ----

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


def _input_projection(xp, cfg, w, x2):
    """``x W_x^T`` plus the biases that add to it (GRU: all but the n block of b_h), for
    every step at once: ``(T, N, G*H)``, C-contiguous."""
    hid = cfg.hidden
    bias = w['bx'] + w['bh']
    if cfg.mode == 'gru':  # the reset gate scales W_hn h + b_hn: b_hn is added per step
        bias[2 * hid:] = w['bx'][2 * hid:]
    gx = xp.matmul(x2, w['wx'].T)
    gx += bias
    return gx.reshape(cfg.steps, cfg.batch, -1)


def _forward_direction(xp, cfg, w, x2, h0, c0, reverse, valid, y, sl, kernels):
    """One direction of one layer: writes its outputs into ``y[:, :, sl]``; returns what
    backward needs and the final states."""
    steps, batch, hid, out_size = cfg.steps, cfg.batch, cfg.hidden, cfg.out
    dtype = y.dtype
    gx = _input_projection(xp, cfg, w, x2)
    # the states in a buffer of their own when y's slice is strided or gets masked
    own = cfg.dirs > 1 or valid is not None
    hs = xp.empty((steps, batch, out_size), dtype=dtype) if own else y
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    saved = {'gates': gx, 'hs': hs, 'h0': h0, 'w': w}
    c = None
    if cfg.mode == 'lstm':
        cs = xp.empty((steps, batch, hid), dtype=dtype)
        tcs = xp.empty_like(cs)
        hfull = xp.empty_like(cs) if cfg.proj else None
        extra, h, c = _forward_lstm(xp, cfg, w, gx, hs, h0, c0, order, valid, cs, tcs, hfull,
                                    kernels)
        saved.update(cs=cs, tcs=tcs, hfull=hfull, c0=c0)
    elif cfg.mode == 'gru':
        ghn = xp.empty((steps, batch, hid), dtype=dtype)
        extra, h, _ = _forward_gru(xp, cfg, w, gx, hs, h0, order, valid, ghn)
        saved['ghn'] = ghn
    else:
        extra, h, _ = _forward_simple(xp, cfg, w, gx, hs, h0, order, valid)
    saved.update(extra)
    if valid is not None:
        xp.multiply(hs, valid, out=y[:, :, sl])
    elif own:
        y[:, :, sl] = hs
    return saved, h, c


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
    dtype = data.dtype
    dirs, out_size = cfg.dirs, cfg.out
    kernels = _kernels(xp, cfg, data)
    training = tape.is_training() and cfg.p > 0
    hy = xp.empty(state.shape, dtype=dtype)
    cy = xp.empty(state_cell.shape, dtype=dtype) if state_cell is not None else None
    layers = []  # per layer: what backward needs
    x = data
    # the per-step products do not split by images: they get the BLAS's threads
    with np.errstate(over='ignore'), host_threads.blas_threads():
        for layer in range(cfg.layers):
            x2 = x.reshape(-1, x.shape[2])
            y = xp.empty((cfg.steps, cfg.batch, dirs * out_size), dtype=dtype)
            record = {'x2': x2, 'dirs': [], 'mask': None}
            for d in range(dirs):
                index = layer * dirs + d
                w = _weights(cfg, parameters, index)
                saved, hy[index], c = _forward_direction(
                    xp, cfg, w, x2, state[index],
                    state_cell[index] if state_cell is not None else None, d == 1, valid,
                    y, slice(d * out_size, (d + 1) * out_size), kernels)
                if c is not None:
                    cy[index] = c
                record['dirs'].append(saved)
            if training and layer < cfg.layers - 1:
                record['mask'] = _dropout_mask(xp, cfg, y.shape, dtype)
                x = y * record['mask']
            else:
                x = y
            layers.append(record)

    def backward(grads):
        with host_threads.blas_threads():
            return gradients(grads)

    def gradients(grads):
        if state_outputs:
            dout, dhy = grads[0], grads[1]
            dcy = grads[2] if mode == 'lstm' else None
        else:
            dout, dhy, dcy = grads, None, None
        dparams = xp.empty_like(parameters)  # every slot is written
        dstate = xp.empty_like(state)
        dcell = xp.empty_like(state_cell) if state_cell is not None else None
        dy = dout
        for layer in range(cfg.layers - 1, -1, -1):
            record = layers[layer]
            want_dx = layer > 0 or needs_grad is None or needs_grad[0]
            dx = None
            for d, saved in enumerate(record['dirs']):
                index = layer * dirs + d
                dh0, dc0, part = _backward_direction(
                    xp, cfg, saved, dy[:, :, d * out_size:(d + 1) * out_size],
                    None if dhy is None else dhy[index], None if dcy is None else dcy[index],
                    d == 1, valid, record['x2'], dparams, index, want_dx, kernels)
                dstate[index] = dh0
                if dcell is not None:
                    dcell[index] = dc0
                if part is not None:
                    dx = part if dx is None else dx + part
            if dx is not None:
                dx = dx.reshape(cfg.steps, cfg.batch, -1)
                if layer > 0 and layers[layer - 1]['mask'] is not None:
                    dx *= layers[layer - 1]['mask']
            dy = dx
        return dy, dparams, dstate, dcell, None

    if state_outputs:
        return ((x, hy, cy) if mode == 'lstm' else (x, hy)), backward
    return x, backward


def _backward_direction(xp, cfg, saved, dy, dhy, dcy, reverse, valid, x2, dparams, index,
                        want_dx, kernels):
    """One direction of one layer backward: writes its parameters' gradients into
    ``dparams``; returns the gradients of its initial states and its part of the
    input's gradient ``(T*N, C_in)`` (None unless ``want_dx``)."""
    steps, batch, hid, out_size = cfg.steps, cfg.batch, cfg.hidden, cfg.out
    dtype = dy.dtype
    w = saved['w']
    rows = cfg.gates * hid
    dh = xp.zeros((batch, out_size), dtype=dtype) if dhy is None else dhy.copy()
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    step = -1 if reverse else 1
    dg = xp.empty((steps, batch, rows), dtype=dtype)
    dxn = dr = None
    dc0 = None
    if cfg.mode == 'lstm':
        dc = xp.zeros((batch, hid), dtype=dtype) if dcy is None else dcy.copy()
        dr = xp.empty((steps, batch, out_size), dtype=dtype) if cfg.proj else None
        dh0, dc0 = _backward_lstm(xp, cfg, w, saved, dy, dh, dc, order, step, valid, dg, dr,
                                  kernels)
    elif cfg.mode == 'gru':
        dxn = xp.empty((steps, batch, hid), dtype=dtype)
        dh0, _ = _backward_gru(xp, cfg, w, saved, dy, dh, order, step, valid, dg, dxn)
    else:
        dh0, _ = _backward_simple(xp, cfg, w, saved, dy, dh, order, step, valid, dg)
    _weight_grads(xp, cfg, dparams, index, saved, dg, step, dxn, dr)
    # the input weights' gradient and the input's: one GEMM each over all steps
    dg2 = dg.reshape(-1, rows)
    dwx = _view(dparams, cfg.slots[index]['wx'])
    xp.matmul(dg2.T, x2, out=dwx)
    part = xp.matmul(dg2, w['wx']) if want_dx else None
    if dxn is not None:  # GRU: the n block's input-side gradient is its own buffer
        dxn2 = dxn.reshape(-1, hid)
        xp.matmul(dxn2.T, x2, out=dwx[2 * hid:])
        if want_dx:
            part = xp.matmul(dg2[:, :2 * hid], w['wx'][:2 * hid])
            part += xp.matmul(dxn2, w['wx'][2 * hid:])
    return dh0, dc0, part


def _weight_grads(xp, cfg, dparams, index, saved, dg, step, dxn, dr):
    """The recurrent weights', biases' (and projection's) gradients of one direction."""
    slot = cfg.slots[index]
    hid = cfg.hidden
    steps = cfg.steps
    hs, h0 = saved['hs'], saved['h0']
    rows = dg.shape[2]
    dg2 = dg.reshape(-1, rows)
    # h_prev of step t is hs[t - step] (h0 at the first step): two GEMMs, no copy
    first, rest = (0, slice(1, None)) if step == 1 else (steps - 1, slice(0, steps - 1))
    prev = slice(0, steps - 1) if step == 1 else slice(1, None)
    dwh = _view(dparams, slot['wh'])
    xp.matmul(dg[first].T, h0, out=dwh)
    if steps > 1:
        dwh += xp.matmul(dg[rest].reshape(-1, rows).T, hs[prev].reshape(-1, hs.shape[2]))
    dbh = _view(dparams, slot['bh'])
    dbx = _view(dparams, slot['bx'])
    dbh[...] = sum_over(xp, dg2, (0,))
    dbx[...] = dbh
    if dxn is not None:  # GRU: the n block of b_h was scaled by r
        dbx[2 * hid:] = sum_over(xp, dxn.reshape(-1, hid), (0,))
    if cfg.proj:
        xp.matmul(dr.reshape(-1, cfg.out).T, saved['hfull'].reshape(-1, hid),
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
