"""Array creation: array, zeros, ones, empty, full, arange, linspace, eye, ..."""
import math

import numpy as np

from ..base import MXNetError
from ..context import Context, current_context
from ..util import is_np_shape
from .dtypes import normalize_dtype
from .ndarray import NDArray, to_array

array = to_array


def _ctx(ctx):
    return current_context() if ctx is None else Context(ctx)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise MXNetError('shape must be an int or a tuple of ints, got %r' % (shape,)) from None
    if any(s < 0 for s in shape):
        raise MXNetError('shape %s has a negative dimension' % (shape,))
    return shape


def _known_shape(shape, name):
    """``shape`` as a tuple; outside ``np_shape`` mode, as in MXNet 1.x, a shape of ``()``
    or with a 0 dimension means "unknown" there and cannot be made."""
    shape = _shape(shape)
    if not is_np_shape() and (not shape or 0 in shape):
        raise MXNetError('%s: shape %s means an unknown shape outside NumPy shape semantics; '
                         'give every dimension a size, or create it inside '
                         'mx.np_shape() (mx.util.set_np_shape(True)) for a scalar or an '
                         'empty array' % (name, shape))
    return shape


def _make(fill, shape, ctx, dtype, out=None):
    """A new array from ``fill(xp, shape, dtype)``, or written into ``out`` (which then
    gives the context, and the dtype unless ``dtype`` is given)."""
    if out is not None:
        ctx, dtype = out.context, out.dtype if dtype is None else dtype
    ctx = _ctx(ctx)
    dt = normalize_dtype(dtype)
    with ctx.device():
        result = NDArray(fill(ctx.xp, _shape(shape), dt), ctx)
    if out is None:
        return result
    out[:] = result
    return out


def zeros(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of zeros (float32 unless ``dtype`` says otherwise).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape; no dimension may be negative, and outside ``mx.np_shape()``
        none may be 0 nor the shape ``()`` (as in MXNet 1.x).
    ctx : Context or str, optional
        The device; the current context (``mx.cpu()`` unless a ``with`` block says
        otherwise) by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.
    out : NDArray, optional
        Write into this array instead; it then gives the context, and the dtype
        unless ``dtype`` is given.

    Returns
    -------
    NDArray
        A new array, or ``out`` filled.
    """
    return _make(lambda xp, s, d: xp.zeros(s, d), _known_shape(shape, 'zeros'), ctx, dtype, out)


def ones(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of ones (float32 unless ``dtype`` says otherwise).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape; no dimension may be negative, and outside ``mx.np_shape()``
        none may be 0 nor the shape ``()`` (as in MXNet 1.x).
    ctx : Context or str, optional
        The device; the current context (``mx.cpu()`` unless a ``with`` block says
        otherwise) by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.
    out : NDArray, optional
        Write into this array instead; it then gives the context, and the dtype
        unless ``dtype`` is given.

    Returns
    -------
    NDArray
        A new array, or ``out`` filled.
    """
    return _make(lambda xp, s, d: xp.ones(s, d), _known_shape(shape, 'ones'), ctx, dtype, out)


def empty(shape, ctx=None, dtype=None):
    """An uninitialised array: its values are whatever the allocation held.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape; no dimension may be negative.
    ctx : Context or str, optional
        The device; the current context (``mx.cpu()`` unless a ``with`` block says
        otherwise) by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.

    Returns
    -------
    NDArray
        A new array.
    """
    return _make(lambda xp, s, d: xp.empty(s, d), shape, ctx, dtype)


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array filled with ``val``.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape; no dimension may be negative.
    val : scalar
        The fill value.
    ctx : Context or str, optional
        The device; the current context (``mx.cpu()`` unless a ``with`` block says
        otherwise) by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.
    out : NDArray, optional
        Write into this array instead; it then gives the context, and the dtype
        unless ``dtype`` is given.

    Returns
    -------
    NDArray
        A new array, or ``out`` filled.
    """
    return _make(lambda xp, s, d: xp.full(s, val, d), shape, ctx, dtype, out)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, ctx=None, dtype=None,
           out=None):
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times.

    Parameters
    ----------
    start : number
        The first value; with ``stop`` omitted, the end, and the values start at 0.
    stop : number, optional
        The end, excluded.
    step : number, default 1.0
        The spacing.
    repeat : int, default 1
        How many times each value appears in a row.
    infer_range : bool, default False
        Accepted for MXNet compatibility; ignored.
    ctx : Context or str, optional
        The device; the current context by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.
    out : NDArray, optional
        Write into this array instead; it then gives the context, and the dtype
        unless ``dtype`` is given.

    Returns
    -------
    NDArray
    """
    if stop is None:
        start, stop = 0, start
    count = max(int(math.ceil((stop - start) / step)), 0)

    def fill(xp, _, d):
        # MXNet's kernel: the count in double, each value ``start + i * step`` in the
        # output's dtype (an integer dtype truncates start and step first)
        if d.kind == 'f':
            first, spacing = d.type(start), d.type(step)
        else:
            first, spacing = int(start), int(step)
        values = xp.arange(count, dtype=np.int64 if d.kind != 'f' else d) * spacing + first
        values = values.astype(d, copy=False)
        return xp.repeat(values, repeat) if repeat != 1 else values
    return _make(fill, 0, ctx, dtype, out)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None, out=None):
    """``num`` evenly spaced values from ``start`` to ``stop``.

    Parameters
    ----------
    start, stop : number
        The first and the last value (the end, excluded, without ``endpoint``).
    num : int
        How many values.
    endpoint : bool, default True
        Whether ``stop`` is the last value.
    ctx : Context or str, optional
        The device; the current context by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.
    out : NDArray, optional
        Write into this array instead; it then gives the context, and the dtype
        unless ``dtype`` is given.

    Returns
    -------
    NDArray
    """
    return _make(lambda xp, _, d: xp.linspace(start, stop, num, endpoint=endpoint).astype(d),
                 0, ctx, dtype, out)


def eye(N, M=0, k=0, ctx=None, dtype=None, out=None):
    """A 2-D array with ones on diagonal ``k`` and zeros elsewhere.

    Parameters
    ----------
    N : int
        The number of rows.
    M : int, default 0
        The number of columns; 0 means ``N``.
    k : int, default 0
        The diagonal: 0 the main one, positive above it, negative below.
    ctx : Context or str, optional
        The device; the current context by default.
    dtype : str or numpy dtype, optional
        The element type, float32 by default.
    out : NDArray, optional
        Write into this array instead; it then gives the context, and the dtype
        unless ``dtype`` is given.

    Returns
    -------
    NDArray
    """
    return _make(lambda xp, _, d: xp.eye(N, M or N, k, dtype=d), 0, ctx, dtype, out)
