"""One direction of one recurrent layer, step by step, for each mode of ``RNN``
(``rnn.py``): forward over some time steps of some samples, and backward over them.

The functions work on views: ``order`` holds the time steps to process, which may be a
chunk of the sequence, and the arrays may hold a part of the batch, so that ``rnn.py``
can run chunks and parts as tasks on several threads. Gates keep the flat parameter
vector's order (LSTM: i, f, g, o; GRU: r, z, n).
"""
import numpy as np


class _RowsGemm:
    """``out = a @ w`` for the per-step recurrent products, where ``a`` has few rows (the
    batch). On the host it runs as ``(w.T @ a.T).T``: OpenBLAS runs that shape faster (a
    step's product at batch 32, 256 units, one thread: 276 against 308 us; on 2 BLAS
    threads 1.4x) and the transposed copy back costs little."""

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


def forward_simple(xp, cfg, w, gx, hs, h, order, valid):
    """rnn_relu / rnn_tanh steps: ``h = act(gx[t] + h W_h^T)`` into ``hs[t]``."""
    relu = cfg.mode == 'rnn_relu'
    recurrent = _RowsGemm(xp, w['wh'].T, h.shape[0], gx.dtype)
    gh = xp.empty(gx.shape[1:], dtype=gx.dtype)
    for t in order:
        g = gx[t]
        recurrent(h, gh)
        g += gh
        if relu:
            xp.maximum(g, 0, out=hs[t])
        else:
            xp.tanh(g, out=hs[t])
        _carry(xp, valid, t, hs[t], h)
        h = hs[t]


def forward_lstm(xp, cfg, w, gx, hs, h, c, order, valid, cs, tcs, hfull, masks, kernels):
    """LSTM steps: the gate activations into ``gx[t]``, the cell state into ``cs[t]``
    and its tanh into ``tcs[t]``, the output (projected, with ``hfull[t]`` before) into
    ``hs[t]``; ``masks[t]`` where the state was clipped."""
    hid = cfg.hidden
    batch = h.shape[0]
    wh_t = w['wh'].T
    wr_t = w['wr'].T if cfg.proj else None
    clip = cfg.clip
    tmp = xp.empty((batch, hid), dtype=gx.dtype)
    gh = xp.empty((batch, 4 * hid), dtype=gx.dtype)
    recurrent = _RowsGemm(xp, wh_t, batch, gx.dtype)
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


def forward_gru(xp, cfg, w, gx, hs, h, order, valid, ghn):
    """GRU steps: the r, z, n activations into ``gx[t]``, ``W_hn h + b_hn`` into
    ``ghn[t]``, the state into ``hs[t]``."""
    hid = cfg.hidden
    bhn = w['bh'][2 * hid:]
    recurrent = _RowsGemm(xp, w['wh'].T, h.shape[0], gx.dtype)
    gh = xp.empty((h.shape[0], 3 * hid), dtype=gx.dtype)
    for t in order:
        g = gx[t]
        recurrent(h, gh)
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


def backward_simple(xp, cfg, w, saved, dy, dh, order, step, valid, dg):
    """rnn_relu / rnn_tanh steps backward: the pre-activations' gradients into
    ``dg[t]``; ``dh`` carried to the earlier steps."""
    recurrent = _RowsGemm(xp, w['wh'], dh.shape[0], dg.dtype)
    hs = saved['hs']
    for t in order:
        keep = _add_step_grad(dh, dy[t], None if valid is None else valid[t])
        if cfg.mode == 'rnn_relu':
            xp.multiply(dh, hs[t] > 0, out=dg[t])
        else:
            xp.multiply(hs[t], hs[t], out=dg[t])
            xp.subtract(1, dg[t], out=dg[t])
            dg[t] *= dh
        recurrent(dg[t], dh)
        if valid is not None:
            dh += keep


def backward_lstm(xp, cfg, w, saved, dy, dh, dc, order, step, valid, dg, dr, kernels):
    """LSTM steps backward: the gate pre-activations' gradients into ``dg[t]``
    (and the projection's input gradients into ``dr[t]``); ``dh`` and ``dc`` carried to the
    earlier steps."""
    hid = cfg.hidden
    gates, cs, tcs, c0 = saved['gates'], saved['cs'], saved['tcs'], saved['c0']
    masks = saved['masks']
    wh = w['wh']
    batch = dh.shape[0]
    recurrent = _RowsGemm(xp, wh, batch, dg.dtype)
    wr = w['wr'] if cfg.proj else None
    tmp = xp.empty((batch, hid), dtype=dg.dtype)
    tmp2 = xp.empty((batch, 2 * hid), dtype=dg.dtype) if kernels is None else None
    dhf = xp.empty((batch, hid), dtype=dg.dtype) if cfg.proj else None
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


def backward_gru(xp, cfg, w, saved, dy, dh, order, step, valid, dg, dxn):
    """GRU steps backward: the gates' gradients into ``dg[t]`` (the n block's input
    side into ``dxn[t]``); ``dh`` carried to the earlier steps."""
    hid = cfg.hidden
    gates, hs, h0, ghn = saved['gates'], saved['hs'], saved['h0'], saved['ghn']
    recurrent = _RowsGemm(xp, w['wh'], dh.shape[0], dg.dtype)
    tmp = xp.empty((dh.shape[0], hid), dtype=dg.dtype)
    back = xp.empty_like(dh)
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
        recurrent(d, back)
        dh += back
        if valid is not None:
            dh += keep
