"""Softmax, log-softmax and softmin along an axis, stable for large inputs."""
import numpy as np

from ...base import MXNetError
from ..registry import dtype_rule, register
from . import host_threads


def _scaled(data, temperature):
    return data if temperature is None or temperature == 1 else data / temperature


def _widened(xp, data, dtype):
    """``data`` in the dtype the op computes in: the wider of the input's and the output's
    (``dtype``, the input's when None), float16 at least float32 (MXNet accumulates so)."""
    out_dtype = xp.dtype(dtype or data.dtype)
    acc = xp.promote_types(xp.promote_types(data.dtype, out_dtype), xp.float32)
    return data.astype(acc, copy=False), out_dtype


def _length_mask(xp, shape, length, axis):
    """True where a position along ``axis`` lies within ``length`` (``length`` has the
    data's shape without ``axis``)."""
    axis %= len(shape)
    if tuple(length.shape) != shape[:axis] + shape[axis + 1:]:
        raise MXNetError('softmax: length must have the data shape %s without axis %d, '
                         'got %s' % (shape, axis, tuple(length.shape)))
    positions = xp.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1))
    return positions < xp.expand_dims(length.astype('int64'), axis)


@register('softmax', num_inputs=2)
def softmax(xp, data, length=None, axis=-1, temperature=None, dtype=None, use_length=False):
    """``exp(x) / sum(exp(x))`` along ``axis`` (optionally ``x / temperature``), of dtype
    ``dtype`` (the input's when None).

    With ``use_length``, only the first ``length`` positions along ``axis`` take part
    (``length`` has the data's shape without ``axis``); the others are 0.
    """
    wide, out_dtype = _widened(xp, data, dtype)
    x = _scaled(wide, temperature)
    if use_length:
        if length is None:
            raise MXNetError('softmax: use_length=True needs the length input')
        mask = _length_mask(xp, data.shape, length, axis)
        top = xp.where(mask, x, -xp.inf).max(axis=axis, keepdims=True)
        top = xp.where(xp.isfinite(top), top, 0)  # a length of 0 leaves nothing to scale
        e = xp.where(mask, xp.exp(x - top), 0).astype(x.dtype)
        total = e.sum(axis=axis, keepdims=True)
        y = e / xp.where(total > 0, total, 1)
    else:
        e = xp.exp(x - x.max(axis=axis, keepdims=True))
        y = e / e.sum(axis=axis, keepdims=True)

    def backward(dy):
        dy = dy.astype(y.dtype, copy=False)
        g = y * (dy - (dy * y).sum(axis=axis, keepdims=True))
        g = g if temperature is None or temperature == 1 else g / temperature
        return g.astype(data.dtype, copy=False), None
    return y.astype(out_dtype, copy=False), backward


def _by_rows(xp, fn, *arrays, axis):
    """``fn(*arrays, axis=axis)`` for a function of slices along ``axis``: on host
    arrays reduced along their last axis, runs of rows go to the host threads (each
    row's numbers are those of the whole call); elsewhere one call."""
    first = arrays[0]
    if xp is not np or first.ndim < 2 or axis % first.ndim != first.ndim - 1:
        return fn(*arrays, axis=axis)
    rows = [a.reshape(-1, first.shape[-1]) for a in arrays]
    parts = host_threads.each_run(lambda lo, hi: fn(*[a[lo:hi] for a in rows], axis=-1),
                                  rows[0].shape[0], first.size)
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)).reshape(first.shape)


@register('log_softmax')
def log_softmax(xp, data, axis=-1, temperature=None, dtype=None):
    """``log(softmax(x))`` along ``axis``, computed as ``x - logsumexp(x)``, of dtype
    ``dtype`` (the input's when None)."""
    wide, out_dtype = _widened(xp, data, dtype)
    x = _scaled(wide, temperature)

    def forward(x, axis):
        shifted = x - x.max(axis=axis, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
    y = _by_rows(xp, forward, x, axis=axis)

    def gradient(dy, y, axis):
        return dy - xp.exp(y) * dy.sum(axis=axis, keepdims=True)

    def backward(dy):
        dy = dy.astype(y.dtype, copy=False)
        g = _by_rows(xp, gradient, dy, y, axis=axis)
        g = g if temperature is None or temperature == 1 else g / temperature
        return (g.astype(data.dtype, copy=False),)
    return y.astype(out_dtype, copy=False), backward


@register('softmin')
def softmin(xp, data, axis=-1, temperature=None, dtype=None):
    """``softmax(-x)`` along ``axis``: the largest weight on the smallest value."""
    y, softmax_backward = softmax(xp, -data, axis=axis, temperature=temperature, dtype=dtype)
    return y, lambda dy: (-softmax_backward(dy)[0],)


@dtype_rule('softmax', 'log_softmax', 'softmin')
def _softmax_dtype(in_dtypes, dtype=None, **_):
    return [dtype or in_dtypes[0]]
