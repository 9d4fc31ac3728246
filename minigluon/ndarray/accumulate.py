"""Sums over many rows that stay accurate in float32.

Per-channel statistics of channels-last activations, bias gradients and the gradient
of a broadcast are sums over the outer axes of an array in memory. numpy's pairwise
summation only applies along the contiguous axis; an outer-axis reduction, ``einsum``
and BLAS ``gemv`` all add one row after another, so their float32 error grows with the
number of rows (about 1e-5 of the result for ResNet's 65,536 rows at batch 64). In
BatchNorm that error moved a whole channel's mean, every ReLU input of the channel
with it, and gradients through the ReLUs that flipped. Here rows are summed in blocks
of ``_BLOCK`` by one batched ``gemv`` (``einsum`` for products), and the block sums in
blocks again: the error grows with ``log_64(rows)`` instead, at the plain ``gemv``'s
speed (2 cores, 65,536 x 64 float32: 0.67 ms either way).
"""
import math

_BLOCK = 64


def column_sums(xp, rows, dtype=None):
    """Sums over axis -2 of ``rows`` (``(..., n, c)``), accumulated in ``dtype``."""
    rows = rows.astype(dtype or rows.dtype, copy=False)
    n, c = rows.shape[-2:]
    if n <= _BLOCK:
        return xp.matmul(xp.ones(n, rows.dtype), rows)
    full = n - n % _BLOCK
    blocks = xp.matmul(xp.ones(_BLOCK, rows.dtype),
                       rows[..., :full, :].reshape(rows.shape[:-2] + (-1, _BLOCK, c)))
    total = column_sums(xp, blocks)
    if full < n:
        total += xp.matmul(xp.ones(n - full, rows.dtype), rows[..., full:, :])
    return total


def column_dots(xp, a, b, dtype=None):
    """Sums over axis 0 of ``a * b`` (2-D, one shape), without the product in memory."""
    dtype = dtype or a.dtype
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    n, c = a.shape
    full = n - n % _BLOCK
    if not full:
        return xp.einsum('pc,pc->c', a, b)
    blocks = xp.einsum('bpc,bpc->bc', a[:full].reshape(-1, _BLOCK, c),
                       b[:full].reshape(-1, _BLOCK, c))
    total = column_sums(xp, blocks)
    if full < n:
        total += xp.einsum('pc,pc->c', a[full:], b[full:])
    return total


def sum_over(xp, a, axes, dtype=None, keepdims=False):
    """``a.sum(axis=axes)``, accurate however the axes lie in memory.

    The axes are taken in memory order; when the summed ones form one run there, the
    array is ``(outer, summed, inner)`` without a copy: pairwise along a contiguous run
    (numpy's own), blockwise over rows otherwise. Other layouts fall back to ``sum``.
    """
    summed = 1
    for ax in axes:
        summed *= a.shape[ax]
    if summed <= _BLOCK:  # few enough terms for any order (and the Python below costs 5 us)
        return a.sum(axis=tuple(axes), dtype=dtype, keepdims=keepdims)
    axes = tuple(sorted(ax % a.ndim for ax in axes))
    # axes of length 1 have no place in memory: order the others by stride, then them
    order = sorted(range(a.ndim), key=lambda ax: (a.shape[ax] == 1, -a.strides[ax]))
    t = a.transpose(order)
    where = [i for i, ax in enumerate(order) if ax in axes and a.shape[ax] != 1]
    if (not where or a.size == 0 or not t.flags.c_contiguous
            or where != list(range(where[0], where[0] + len(where)))):
        return a.sum(axis=axes, dtype=dtype, keepdims=keepdims)
    lo, hi = where[0], where[-1] + 1
    outer = math.prod(t.shape[:lo])
    inner = math.prod(t.shape[hi:])
    r = t.reshape(outer, -1, inner)
    if inner == 1:
        s = r.sum(axis=1, dtype=dtype)
    else:
        s = column_sums(xp, r, dtype)
    kept = [ax for ax in order if ax not in axes]
    s = s.reshape([a.shape[ax] for ax in kept])
    s = s.transpose([kept.index(ax) for ax in sorted(kept)])
    if keepdims:
        s = s.reshape([1 if ax in axes else n for ax, n in enumerate(a.shape)])
    return s


def channel_sums(xp, a3, dtype=None):
    """Per-channel sums of ``(pre, C, post)``."""
    return sum_over(xp, a3, (0, 2), dtype)


def channel_dots(xp, a3, b3, dtype=None):
    """Per-channel sums of ``a3 * b3``, both ``(pre, C, post)``."""
    if a3.shape[2] != 1:
        return sum_over(xp, (a3 * b3).sum(axis=2, dtype=dtype), (0,))
    return column_dots(xp, a3[:, :, 0], b3[:, :, 0], dtype)
