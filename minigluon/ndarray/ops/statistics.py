"""Statistics over an array: ``moments`` (mean and variance), ``cumsum`` and
``_histogram`` (``nd.histogram``)."""
import numpy as np

from ...base import MXNetError
from ..registry import register


def _reduction_axes(axes, ndim):
    """MXNet's checks of ``moments``' axes: given, in range, without duplicates."""
    if axes is None or (not isinstance(axes, int) and len(axes) == 0):
        raise MXNetError('moments: empty axes is not supported; for global moments pass '
                         'every axis, e.g. axes=%s' % (tuple(range(ndim)),))
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    normalized = []
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise MXNetError('moments: axis %d is out of range for a %d-d input'
                             % (axis, ndim))
        normalized.append(axis % ndim)
    if len(set(normalized)) != len(normalized):
        raise MXNetError('moments: axes %s has duplicates' % (axes,))
    return tuple(sorted(normalized))


def _working_dtype(dtype):
    """Integers are averaged in float64, float16 in float32 (then rounded back)."""
    if dtype.kind in 'biu':
        return np.dtype(np.float64)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


@register('moments')
def moments(xp, data, axes=None, keepdims=False):
    """Mean and (population) variance of ``data`` over ``axes``: two outputs.

    Parameters
    ----------
    axes : tuple of int
        The axes to reduce (required: MXNet has no default for them).
    keepdims : bool
        Keep the reduced axes with length 1.
    """
    axes = _reduction_axes(axes, data.ndim)
    x = data.astype(_working_dtype(data.dtype), copy=False)
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    count = int(np.prod([data.shape[a] for a in axes]))
    out_shape = mean.shape if keepdims else tuple(
        n for i, n in enumerate(data.shape) if i not in axes)

    def backward(dys):
        dmean, dvar = (dy.reshape(mean.shape) for dy in dys)
        grad = (dmean + 2 * dvar * centered) / count
        return (grad.astype(data.dtype, copy=False),)
    return (mean.reshape(out_shape).astype(data.dtype, copy=False),
            var.reshape(out_shape).astype(data.dtype, copy=False)), backward


@register('cumsum')
def cumsum(xp, a, axis=None, dtype=None):
    """Cumulative sum along ``axis`` (of the flattened array when None).

    ``dtype`` is the output's; by default the input's (bool counts as int64).
    """
    out_dtype = np.dtype(dtype) if dtype is not None else (
        np.dtype(np.int64) if a.dtype == np.bool_ else a.dtype)
    if axis is None:
        flat = a.reshape(-1)
        out = xp.cumsum(flat, dtype=out_dtype)
        ax = 0
    else:
        if not -a.ndim <= axis < a.ndim:
            raise MXNetError('cumsum: axis %d is out of range for a %d-d input'
                             % (axis, a.ndim))
        ax = axis % a.ndim
        out = xp.cumsum(a, axis=ax, dtype=out_dtype)
    src, src_dtype = a.shape, a.dtype

    def backward(dy):
        rev = xp.flip(dy, axis=ax)
        grad = xp.flip(xp.cumsum(rev, axis=ax), axis=ax)
        return (grad.reshape(src).astype(src_dtype, copy=False),)
    return out, backward


def _uniform_edges(xp, bin_cnt, low, high, dtype):
    i = np.arange(bin_cnt + 1, dtype=np.float64)
    return xp.asarray(((high * i + (bin_cnt - i) * low) / bin_cnt).astype(dtype))


@register('_histogram', num_inputs=2, differentiable=False)
def _histogram(xp, data, bins=None, bin_cnt=None, range=None):  # noqa: A002 (MXNet's name)
    """Counts of the flattened ``data`` in bins, and the bins' edges: two outputs (int64
    counts, edges in ``data``'s dtype).

    Either ``bin_cnt`` equal bins over ``range = (low, high)`` (if low == high the range
    is widened by 1/2 each side), or the edges ``bins`` (an array input). Values outside
    the edges are not counted; the last bin includes its right edge.
    """
    values = data.reshape(-1)
    if bin_cnt is not None or range is not None:
        if bin_cnt is None or range is None:
            raise MXNetError('histogram: give both bin_cnt and range, or bins (an array '
                             'of edges) alone')
        if len(range) != 2:
            raise MXNetError('histogram: range must be (low, high), got %r' % (range,))
        low, high = float(range[0]), float(range[1])
        if low > high:
            raise MXNetError('histogram: the low end of range (%s) must not be above the '
                             'high end (%s)' % (low, high))
        if low == high:
            low, high = low - 0.5, high + 0.5
        count = int(bin_cnt)
        edges = _uniform_edges(xp, count, low, high, data.dtype)
        x = values.astype(np.float64)
        inside = (x >= low) & (x <= high)
        target = xp.minimum(((x - low) * count / (high - low)).astype(np.int64), count - 1)
        target = xp.clip(target, 0, count - 1)
        # the edges as rounded to data's dtype decide, as MXNet's kernel does
        e = edges.astype(np.float64)
        target = target - (x < e[target])
        target = target + ((x >= e[xp.minimum(target + 1, count)]) & (target != count - 1))
    else:
        if bins is None:
            raise MXNetError('histogram: give bins (an array of edges) or bin_cnt and range')
        if bins.ndim != 1 or bins.shape[0] < 2:
            raise MXNetError('histogram: bins must be a 1-d array of at least 2 edges, got '
                             'shape %s' % (bins.shape,))
        edges = bins.astype(data.dtype)
        count = bins.shape[0] - 1
        e = edges.astype(np.float64)
        x = values.astype(np.float64)
        inside = (x >= e[0]) & (x <= e[-1])
        target = xp.minimum(xp.searchsorted(e, x, side='right') - 1, count - 1)
    counts = xp.bincount(target[inside].astype(np.int64), minlength=count)
    return counts.astype(np.int64), edges.copy()
