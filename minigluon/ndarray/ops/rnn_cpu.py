"""The LSTM's per-step gate arithmetic as compiled CPU kernels (numba), for float32.

numpy spends most of an LSTM step outside the recurrent GEMM: each gate function is a
few passes over the gates, and its ``exp``/``tanh`` are not vectorised for float32 on
every CPU. These kernels do a step's gate arithmetic in one pass, forward and
backward, with ``tanh`` as a rational function (Eigen's float approximation, within a
few float32 ulps of the true value) that the compiler vectorises; the sigmoid is
``(1 + tanh(x / 2)) / 2``. Gates are in the op's order i, f, o, g (see ``rnn.py``).

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


@kernel
def lstm_forward_step(gates, gh, c_prev, c, tanh_c, h):
    """``gates += gh`` made into the gate activations; the new cell state ``c``, its
    ``tanh`` and the output ``h = o * tanh(c)``. (Loops over one kind of gate at a time
    vectorise; one loop doing all four does not.)"""
    batch, hidden = c.shape
    for n in range(batch):
        g, r = gates[n], gh[n]
        for j in range(3 * hidden):
            g[j] = _sigmoid(g[j] + r[j])
        for j in range(3 * hidden, 4 * hidden):
            g[j] = _tanh(g[j] + r[j])
        before, cell, tcell, out = c_prev[n], c[n], tanh_c[n], h[n]
        for j in range(hidden):
            new_c = g[hidden + j] * before[j] + g[j] * g[3 * hidden + j]
            t = _tanh(new_c)
            cell[j] = new_c
            tcell[j] = t
            out[j] = g[2 * hidden + j] * t


@kernel
def lstm_backward_step(gates, tanh_c, c_prev, dh, dc, d):
    """The gradients of one step's gate pre-activations ``d`` from those of its output
    ``dh`` and cell state ``dc``; ``dc`` becomes the previous cell state's."""
    batch, hidden = dc.shape
    for n in range(batch):
        g, out = gates[n], d[n]
        for j in range(hidden):
            i, f, o, cell = g[j], g[hidden + j], g[2 * hidden + j], g[3 * hidden + j]
            t = tanh_c[n, j]
            grad_h = dh[n, j]
            grad_c = dc[n, j] + grad_h * o * (np.float32(1) - t * t)
            out[j] = grad_c * cell * i * (np.float32(1) - i)
            out[hidden + j] = grad_c * c_prev[n, j] * f * (np.float32(1) - f)
            out[2 * hidden + j] = grad_h * t * o * (np.float32(1) - o)
            out[3 * hidden + j] = grad_c * i * (np.float32(1) - cell * cell)
            dc[n, j] = grad_c * f
