"""N-d gathers and scatters (``gather_nd``, ``scatter_nd`` and the scatter-add that is
``gather_nd``'s gradient), flat/multi-index conversion, and the contrib ops
``boolean_mask`` and ``index_copy``."""
import numpy as np

from ...backend import scatter_add
from ...base import MXNetError
from ..registry import register


def _nd_index(indices, what, target_ndim):
    """The leading-axis index tuple of an ``(M, ...)`` indices array, checked as MXNet does."""
    if indices.ndim < 2:
        raise MXNetError('%s requires an index array of at least 2 dimensions, (M, ...); got '
                         'shape %s' % (what, indices.shape))
    if indices.shape[0] > target_ndim:
        raise MXNetError('%s: %d index components for %d axes'
                         % (what, indices.shape[0], target_ndim))
    return tuple(indices[m].astype(np.int64) for m in range(indices.shape[0]))


def _gather_index(xp, data, indices):
    """gather_nd's index: bounds checked on the raw values, negatives wrapped once."""
    _nd_index(indices, 'gather_nd', data.ndim)
    index = []
    for m in range(indices.shape[0]):
        size = data.shape[m]
        row = indices[m]
        bad = (row < -size) | (row > size - 1)
        if bool(bad.any()):
            value = row[bad].reshape(-1)[0].item()
            raise IndexError('index %s is out of bounds for axis %d with size %d'
                             % (value, m, size))
        index.append((row + size).astype(np.int64) % size)
    return tuple(index)


@register('gather_nd', num_inputs=2)
def gather_nd(xp, data, indices):
    """``out[i...] = data[indices[0, i...], indices[1, i...], ..., :]``: indices of shape
    (M, ...) pick along the first M axes of ``data``. The gradient is a scatter-add
    (``_backward_gather_nd``)."""
    index = _gather_index(xp, data, indices)
    src, dtype = data.shape, data.dtype
    return data[index], lambda dy: (_scatter_added(xp, dy, index, src, dtype), None)


def _scatter_added(xp, values, index, shape, dtype):
    out = xp.zeros(shape, dtype)
    scatter_add(out, index, values.astype(dtype, copy=False))
    return out


@register('_backward_gather_nd', num_inputs=2)
def _backward_gather_nd(xp, data, indices, shape):
    """Zeros of ``shape`` with ``data`` added at ``indices`` (repeated positions sum):
    ``gather_nd``'s gradient."""
    index = _nd_index(indices, '_backward_gather_nd', len(shape))
    return _scatter_added(xp, data, index, tuple(shape), data.dtype), \
        lambda dy: (dy[index], None)


def _check_scatter_shapes(data, indices, shape):
    if indices.ndim < 2:
        raise MXNetError('scatter_nd requires an index array of at least 2 dimensions')
    m = indices.shape[0]
    valid = m <= len(shape) and \
        data.shape == tuple(indices.shape[1:]) + tuple(shape[m:])
    if not valid:
        raise MXNetError('scatter_nd: data %s, indices %s and shape %s do not fit: data '
                         'must be indices.shape[1:] + shape[M:] with M = indices.shape[0]'
                         % (data.shape, indices.shape, tuple(shape)))


@register('scatter_nd', num_inputs=2)
def scatter_nd(xp, data, indices, shape):
    """Zeros of ``shape`` with ``out[indices[:, i...]] = data[i...]``, the inverse of
    ``gather_nd`` (at repeated positions one of the values is kept)."""
    shape = tuple(shape)
    _check_scatter_shapes(data, indices, shape)
    index = _nd_index(indices, 'scatter_nd', len(shape))
    out = xp.zeros(shape, data.dtype)
    out[index] = data
    return out, lambda dy: (dy[index], None)


@register('ravel_multi_index', differentiable=False)
def ravel_multi_index(xp, data, shape=None):
    """Flat indices of the columns of ``data`` (shape ``(len(shape), N)``) into an array
    of ``shape`` (its first dimension is not used, and may be -1). Out-of-range indices
    are not checked, as in MXNet."""
    if not shape:
        raise MXNetError('ravel_multi_index: give the shape the indices apply to')
    if data.ndim != 2 or data.shape[0] != len(shape):
        raise MXNetError('ravel_multi_index: data must have shape (%d, N) for a %d-d shape, '
                         'got %s' % (len(shape), len(shape), data.shape))
    idx = data.astype(np.int64)
    flat = idx[0]
    for j in range(1, len(shape)):
        flat = flat * int(shape[j]) + idx[j]
    return flat.astype(data.dtype)


@register('unravel_index', differentiable=False)
def unravel_index(xp, data, shape=None):
    """Multi-indices, shape ``(len(shape), N)``, of the flat indices ``data`` (1-d) into
    an array of ``shape``; the first coordinate is not wrapped (its dimension may be -1).
    Indices are truncated to integers first, and negative ones follow C's division."""
    if not shape:
        raise MXNetError('unravel_index: give the shape the indices apply to')
    if data.ndim != 1:
        raise MXNetError('unravel_index: data must be a 1-d array of flat indices, got '
                         'shape %s; reshape it with .reshape(-1)' % (data.shape,))
    idx = data.astype(np.int64)
    rows = [None] * len(shape)
    for j in range(len(shape) - 1, 0, -1):
        size = int(shape[j])
        quotient = idx // size
        quotient = quotient + ((quotient * size != idx) & (idx < 0))  # toward zero
        rows[j] = idx - quotient * size
        idx = quotient
    rows[0] = idx
    return xp.stack(rows).astype(data.dtype)


@register('_contrib_boolean_mask', num_inputs=2)
def boolean_mask(xp, data, index, axis=0):
    """The slices of ``data`` along ``axis`` where the 1-d ``index`` is non-zero."""
    ax = axis % data.ndim if -data.ndim <= axis < data.ndim else None
    if ax is None:
        raise MXNetError('boolean_mask: axis %d is out of range for a %d-d input'
                         % (axis, data.ndim))
    if index.ndim != 1 or index.shape[0] != data.shape[ax]:
        raise MXNetError('boolean_mask: index must be 1-d with one value per slice (%d) of '
                         'axis %d, got shape %s' % (data.shape[ax], ax, index.shape))
    mask = index != 0
    key = (slice(None),) * ax + (mask,)
    out = data[key]

    def backward(dy):
        grad = xp.zeros_like(data)
        grad[key] = dy
        return grad, None
    return out, backward


@register('_contrib_index_copy', num_inputs=3)
def index_copy(xp, old_tensor, index_vector, new_tensor):
    """A copy of ``old_tensor`` with its rows ``index_vector[i]`` replaced by
    ``new_tensor[i]``."""
    if index_vector.ndim != 1 or new_tensor.shape[:1] != index_vector.shape or \
            new_tensor.shape[1:] != old_tensor.shape[1:]:
        raise MXNetError('index_copy: index_vector must be 1-d with one index per row of '
                         'new_tensor, whose rows have the shape of old_tensor\'s; got %s, '
                         '%s, %s' % (old_tensor.shape, index_vector.shape, new_tensor.shape))
    index = index_vector.astype(np.int64)
    if index.size and bool(((index < 0) | (index >= old_tensor.shape[0])).any()):
        raise MXNetError('index_copy: indices must be in [0, %d), got %s'
                         % (old_tensor.shape[0], index.tolist()))
    out = old_tensor.copy()
    out[index] = new_tensor

    def backward(dy):
        dold = dy.copy()
        dold[index] = 0
        return dold, None, dy[index]
    return out, backward
