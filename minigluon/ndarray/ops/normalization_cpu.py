"""BatchNorm's passes over its data as compiled CPU kernels (numba).

numpy's BatchNorm makes seven passes over the data forward and nine backward (each
elementwise step its own); these make three and two, with the same float32 steps per
element, so outputs round as numpy's do, and per-channel sums accumulated in float64
(exact enough that their order does not matter; numpy's path needs blockwise sums for
that). Arrays are ``(pre, C, post)`` C-contiguous, float32 or float64: channels-last
convolution outputs have ``post == 1`` and the loops then run along the channels,
otherwise along ``post``.

With several host threads (``host_threads``) each pass splits its rows into one run
per thread; per-channel sums add the runs' float64 sums in order.

Only imported when ``compiled.enabled()``.
"""
import numpy as np

from . import host_threads
from .compiled import kernel


@kernel
def _centred_squares(x3, mean):
    """Per-channel float64 sums of ``(x3 - mean)**2``, the difference rounded in ``x3``'s
    dtype as numpy's path rounds it."""
    pre, c, post = x3.shape
    total = np.zeros(c, np.float64)
    for p in range(pre):
        row = x3[p]
        if post == 1:
            for k in range(c):
                d = np.float64(row[k, 0] - mean[k])
                total[k] += d * d
        else:
            for k in range(c):
                s = 0.0
                m = mean[k]
                for q in range(post):
                    d = np.float64(row[k, q] - m)
                    s += d * d
                total[k] += s
    return total


@kernel
def _normalise(x3, mean, scale, shift, out):
    """``out = (x3 - mean) * scale + shift`` per channel, rounded after each step."""
    pre, c, post = x3.shape
    for p in range(pre):
        row, dst = x3[p], out[p]
        if post == 1:
            for k in range(c):
                dst[k, 0] = (row[k, 0] - mean[k]) * scale[k] + shift[k]
        else:
            for k in range(c):
                m, s, b = mean[k], scale[k], shift[k]
                for q in range(post):
                    dst[k, q] = (row[k, q] - m) * s + b


@kernel
def _gradient_sums(dy3, x3, mean):
    """Per-channel float64 ``sum(dy)`` and ``sum(dy * (x - mean))`` (with ``dy = x`` and
    ``mean = 0``, the first is the data's sum)."""
    pre, c, post = x3.shape
    dsum = np.zeros(c, np.float64)
    dot = np.zeros(c, np.float64)
    for p in range(pre):
        g, row = dy3[p], x3[p]
        if post == 1:
            for k in range(c):
                dy = np.float64(g[k, 0])
                dsum[k] += dy
                dot[k] += dy * np.float64(row[k, 0] - mean[k])
        else:
            for k in range(c):
                s = 0.0
                t = 0.0
                m = mean[k]
                for q in range(post):
                    dy = np.float64(g[k, q])
                    s += dy
                    t += dy * np.float64(row[k, q] - m)
                dsum[k] += s
                dot[k] += t
    return dsum, dot




@kernel
def _data_gradient(dy3, x3, mean, scale, centred_factor, shift, dx):
    """``dx = dy * scale + (x - mean) * centred_factor - shift`` per channel, rounded
    after each step in numpy's order."""
    pre, c, post = x3.shape
    for p in range(pre):
        g, row, dst = dy3[p], x3[p], dx[p]
        if post == 1:
            for k in range(c):
                dst[k, 0] = (g[k, 0] * scale[k] + (row[k, 0] - mean[k]) * centred_factor[k]
                             - shift[k])
        else:
            for k in range(c):
                m, s, f, b = mean[k], scale[k], centred_factor[k], shift[k]
                for q in range(post):
                    dst[k, q] = g[k, q] * s + (row[k, q] - m) * f - b


def _each_run(fn, x3):
    """``fn(lo, hi)`` for each run of ``x3``'s rows, on the host threads."""
    return host_threads.each_run(fn, x3.shape[0], x3.size)


def _add_runs(runs):
    """Per-run results (tuples of per-channel sums) added run after run."""
    return tuple(host_threads.add_in_order(list(sums_of_one)) for sums_of_one in zip(*runs))


def centred_squares(x3, mean):
    """Per-channel float64 sums of ``(x3 - mean)**2``, the difference rounded in ``x3``'s
    dtype as numpy's path rounds it."""
    return _add_runs(_each_run(lambda lo, hi: (_centred_squares(x3[lo:hi], mean),), x3))[0]


def normalise(x3, mean, scale, shift, out):
    """``out = (x3 - mean) * scale + shift`` per channel, rounded after each step."""
    _each_run(lambda lo, hi: _normalise(x3[lo:hi], mean, scale, shift, out[lo:hi]), x3)


def gradient_sums(dy3, x3, mean):
    """Per-channel float64 ``sum(dy)`` and ``sum(dy * (x - mean))``."""
    return _add_runs(_each_run(lambda lo, hi: _gradient_sums(dy3[lo:hi], x3[lo:hi], mean),
                               x3))


def sums(x3):
    """Per-channel float64 sums of ``x3``."""
    zeros = np.zeros(x3.shape[1], x3.dtype)
    return _add_runs(_each_run(lambda lo, hi: _gradient_sums(x3[lo:hi], x3[lo:hi], zeros),
                               x3))[0]


def data_gradient(dy3, x3, mean, scale, centred_factor, shift, dx):
    """``dx = dy * scale + (x - mean) * centred_factor - shift`` per channel, rounded
    after each step in numpy's order."""
    _each_run(lambda lo, hi: _data_gradient(dy3[lo:hi], x3[lo:hi], mean, scale,
                                            centred_factor, shift, dx[lo:hi]), x3)
