"""The LSTM's per-step gate arithmetic as compiled CPU kernels (numba), for float32.

numpy spends most of an LSTM step outside the recurrent GEMM: each gate function is a
few passes over the gates, and its ``exp``/``tanh`` are not vectorised for float32 on
every CPU. These kernels do a step's gate arithmetic in one pass, forward and
backward, with ``tanh`` as a rational function (Eigen's float approximation, within a
few float32 ulps of the true value) that the compiler vectorises; the sigmoid is
``(1 + tanh(x / 2)) / 2``. Gates are in the flat vector's order i, f, g, o (see
``rnn.py``).

Only imported when ``compiled.enabled()``; float64 keeps numpy's exact functions.
"""
import numpy as np

from .compiled import numba_module


def kernel(fn, inline='never'):
    """``compiled.kernel`` with numpy's error model: a division by zero gives inf
    instead of raising, so no test stops the loops from being vectorised."""
    return numba_module().njit(cache=True, nogil=True, boundscheck=False,
                               error_model='numpy', inline=inline)(fn)


def scalar(fn):
    """A scalar function inlined into the kernels that call it."""
    return kernel(fn, inline='always')


@scalar
def _tanh(x):
    x = min(max(x, np.float32(-9.0)), np.float32(9.0))
    x2 = x * x
    p = np.float32(-2.76076847742355e-16)
    p = p * x2 + np.float32(2.00018790482477e-13)
    p = p * x2 + np.float32(-8.60467152213735e-11)
    p = p * x2 + np.float32(5.12229709037114e-08)
    p = p * x2 + np.float32(1.48572235717979e-05)
    p = p * x2 + np.float32(6.37261928875436e-04)
    p = p * x2 + np.float32(4.89352455891786e-03)
    q = np.float32(1.19825839466702e-06)
    q = q * x2 + np.float32(1.18534705686654e-04)
    q = q * x2 + np.float32(2.26843463243900e-03)
    q = q * x2 + np.float32(4.89352518554385e-03)
    return x * p / q


@scalar
def _sigmoid(x):
    return np.float32(0.5) + np.float32(0.5) * _tanh(np.float32(0.5) * x)


@scalar
def _forward_row(g, r, c_prev, c, tanh_c, h):
    """One sample of ``lstm_forward_step``. Each gate block is a view of its own and
    each loop does one kind of gate: such loops vectorise."""
    hidden = c.shape[0]
    for j in range(2 * hidden):
        g[j] = _sigmoid(g[j] + r[j])
    gi, gf = g[:hidden], g[hidden:2 * hidden]
    gg, rg = g[2 * hidden:3 * hidden], r[2 * hidden:3 * hidden]
    for j in range(hidden):
        gg[j] = _tanh(gg[j] + rg[j])
    go, ro = g[3 * hidden:], r[3 * hidden:]
    for j in range(hidden):
        go[j] = _sigmoid(go[j] + ro[j])
    for j in range(hidden):
        new_c = gf[j] * c_prev[j] + gi[j] * gg[j]
        t = _tanh(new_c)
        c[j] = new_c
        tanh_c[j] = t
        h[j] = go[j] * t


@scalar
def _backward_row(g, tanh_c, c_prev, dh, dc, d):
    """One sample of ``lstm_backward_step``."""
    hidden = dc.shape[0]
    gi, gf, gg, go = g[:hidden], g[hidden:2 * hidden], g[2 * hidden:3 * hidden], g[3 * hidden:]
    di, df, dg, do = d[:hidden], d[hidden:2 * hidden], d[2 * hidden:3 * hidden], d[3 * hidden:]
    one = np.float32(1)
    for j in range(hidden):
        i, f, cell, o, t = gi[j], gf[j], gg[j], go[j], tanh_c[j]
        grad_h = dh[j]
        grad_c = dc[j] + grad_h * o * (one - t * t)
        di[j] = grad_c * cell * i * (one - i)
        df[j] = grad_c * c_prev[j] * f * (one - f)
        dg[j] = grad_c * i * (one - cell * cell)
        do[j] = grad_h * t * o * (one - o)
        dc[j] = grad_c * f


@kernel
def lstm_forward_step(gates, gh, c_prev, c, tanh_c, h):
    """``gates += gh`` made into the gate activations; the new cell state ``c``, its
    ``tanh`` and the output ``h = o * tanh(c)``."""
    for n in range(c.shape[0]):
        _forward_row(gates[n], gh[n], c_prev[n], c[n], tanh_c[n], h[n])


@kernel
def lstm_backward_step(gates, tanh_c, c_prev, dh, dc, d):
    """The gradients of one step's gate pre-activations ``d`` from those of its output
    ``dh`` and cell state ``dc``; ``dc`` becomes the previous cell state's."""
    for n in range(dc.shape[0]):
        _backward_row(gates[n], tanh_c[n], c_prev[n], dh[n], dc[n], d[n])

