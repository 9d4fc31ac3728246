"""Indexing, gathering and ordering: getitem/setitem, take, pick, where, topk, ..."""
import numpy as np

from ...backend import scatter_add
from ...base import MXNetError, MXNetIndexError
from ..registry import fill_from, register, shape_rule, unbroadcast


def along_axis(xp, indices, axis):
    """The index tuple that picks ``indices`` (an array of the target's number of
    dimensions) along ``axis``: ``indices`` there, a range shaped to broadcast on every
    other axis (numpy's take/put_along_axis, without their checks, which cost a small
    array more than the gather itself, and on CuPy versions that lack them)."""
    axis %= indices.ndim
    index = []
    for dim, size in enumerate(indices.shape):
        if dim == axis:
            index.append(indices)
        else:
            shape = [1] * indices.ndim
            shape[dim] = size
            index.append(xp.arange(size).reshape(shape))
    return tuple(index)


def put_along_axis(xp, target, indices, values, axis):
    """``target[..., indices, ...] = values`` along ``axis`` (numpy's put_along_axis)."""
    target[along_axis(xp, indices, axis)] = values


def _has_integer_array(key):
    """Integer-array indices may repeat positions, so their gradient must accumulate."""
    parts = key if isinstance(key, tuple) else (key,)
    return any(hasattr(k, 'dtype') and k.dtype != np.bool_ for k in parts)


@register('_getitem')
def _getitem(xp, data, key):
    """``data[key]`` for ints, slices (with steps), None, Ellipsis, integer and boolean arrays."""
    if data.ndim == 1 and isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if not -data.shape[0] <= key < data.shape[0]:
            raise IndexError('index %d is out of bounds for axis 0 with size %d'
                             % (key, data.shape[0]))
        key = slice(key % data.shape[0], key % data.shape[0] + 1)  # MXNet: a (1,) view
    out = data[key]
    natural_shape = np.shape(out)
    if not hasattr(out, 'shape') or out.ndim == 0:
        out = xp.asarray(out).reshape(1)
    src, dtype = data.shape, data.dtype

    def backward(dy):
        g = xp.zeros(src, dtype)
        if _has_integer_array(key):
            scatter_add(g, key, dy.reshape(natural_shape))
        else:
            g[key] = dy.reshape(natural_shape)
        return (g,)
    return out, backward


@register('_setitem', num_inputs=2)
def _setitem(xp, data, value, key):
    """A copy of ``data`` with ``data[key] = value`` (the recorded form of assignment)."""
    out = data.copy()
    out[key] = value

    def backward(dy):
        ddata = dy.copy()
        ddata[key] = 0
        return ddata, unbroadcast(xp, xp.asarray(dy[key]), value.shape)
    return out, backward


def _clip_or_wrap(xp, indices, size, mode):
    idx = indices.astype(np.int64)
    if mode == 'wrap':
        return idx % size
    if mode == 'clip':  # idx is a fresh copy: clipped in place, without clip's checks
        return xp.minimum(xp.maximum(idx, 0, out=idx), size - 1, out=idx)
    raise MXNetError("mode must be 'clip' or 'wrap', got %r" % (mode,))


@register('take', num_inputs=2)
def take(xp, a, indices, axis=0, mode='clip'):
    """Gather slices of ``a`` along ``axis`` at ``indices``, clipped or wrapped into range
    (``mode`` 'clip' or 'wrap'), or an error for one outside ``[0, size)`` ('raise')."""
    ax = axis % a.ndim
    if mode not in ('clip', 'wrap', 'raise'):
        raise MXNetError("take: mode must be 'clip', 'wrap' or 'raise', got %r" % (mode,))
    if mode == 'raise':
        if indices.size and (indices.min() < 0 or indices.max() >= a.shape[ax]):
            raise MXNetIndexError('take: indices out of range [0, %d) for axis %d of a %s '
                                  'array (mode=raise); use mode clip or wrap to bring them '
                                  'into range' % (a.shape[ax], axis, a.shape))
        mode = 'clip'
    idx = _clip_or_wrap(xp, indices, a.shape[ax], mode)
    out = xp.take(a, idx, axis=ax)
    src, dtype = a.shape, a.dtype

    def backward(dy):
        g = xp.zeros(src, dtype)
        moved = xp.moveaxis(g, ax, 0)
        dmoved = xp.moveaxis(dy, tuple(range(ax, ax + idx.ndim)), tuple(range(idx.ndim)))
        scatter_add(moved, idx, dmoved)
        return g, None
    return out, backward


@register('batch_take', num_inputs=2, differentiable=False)
def batch_take(xp, a, indices):
    """``out[i] = a[i, indices[i]]`` over the rows of ``a`` flattened to ``(-1, last axis)``,
    indices clipped (MXNet's deprecated form of ``pick``; it has no gradient)."""
    rows = a.reshape(-1, a.shape[-1])
    if indices.size != rows.shape[0]:
        raise MXNetError('batch_take: %d indices for %d rows of a %s array'
                         % (indices.size, rows.shape[0], a.shape))
    idx = _clip_or_wrap(xp, indices.reshape(-1), rows.shape[1], 'clip')
    return rows[xp.arange(rows.shape[0]), idx].reshape(indices.shape)


@register('pick', num_inputs=2)
def pick(xp, data, index, axis=-1, keepdims=False, mode='clip'):
    """Pick one element per row along ``axis``: ``out[i] = data[i, index[i]]``."""
    ax = axis % data.ndim
    idx = _clip_or_wrap(xp, index, data.shape[ax], mode)
    idx = idx.reshape(data.shape[:ax] + (1,) + data.shape[ax + 1:])
    where = along_axis(xp, idx, ax)
    out = data[where]
    src, dtype = data.shape, data.dtype

    def backward(dy):
        g = xp.zeros(src, dtype)
        g[where] = dy.reshape(idx.shape)
        return g, None
    return (out if keepdims else out.squeeze(axis=ax)), backward


@register('one_hot', differentiable=False)
def one_hot(xp, indices, depth, on_value=1.0, off_value=0.0, dtype='float32'):
    """One-hot encode integer ``indices`` into a new last axis of length ``depth``."""
    idx = indices.astype(np.int64)
    out = xp.full(idx.shape + (depth,), off_value, dtype=dtype)
    valid = (idx >= 0) & (idx < depth)
    hot = xp.arange(depth) == idx[..., None]
    out[hot & valid[..., None]] = on_value
    return out


@register('where', num_inputs=3)
def where(xp, condition, x, y):
    """``x`` where ``condition`` is non-zero, else ``y``; a 1-D condition selects rows.

    As in MXNet nothing broadcasts: ``x`` and ``y`` have one shape, and ``condition``
    has it too or is 1-D with one value per row.
    """
    cond = condition
    if x.shape != y.shape:
        raise MXNetError('where: x and y must have the same shape, got %s and %s'
                         % (x.shape, y.shape))
    if cond.shape != x.shape:
        if cond.ndim != 1 or x.ndim < 1 or cond.shape[0] != x.shape[0]:
            raise MXNetError('where: condition of shape %s must have the shape of x %s or be '
                             '1-D with one value per row (%d)'
                             % (cond.shape, x.shape, x.shape[0] if x.ndim else 1))
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    mask = cond != 0
    out = xp.where(mask, x, y)
    return out, lambda dy: (None, xp.where(mask, dy, 0).astype(dy.dtype),
                            xp.where(mask, 0, dy).astype(dy.dtype))


@shape_rule('where')
def _where_shapes(condition, x, y, out_shapes=None, **_):
    """x, y and the output have one shape; so has a condition of as many axes (else it has
    one value per row). As in MXNet, nothing is inferred before the condition is known."""
    if not condition or not all(condition):
        return condition, x, y
    shape = ()
    for other in (x, y) + tuple(out_shapes or ()):
        if other:
            shape = fill_from(shape, other) if len(shape) == len(other) else shape or other
    if len(condition) == len(shape):
        shape = fill_from(shape, condition)
    return condition, shape, shape


def _on_flattened(xp, forward, data, **params):
    """``forward`` along axis 0 of the flattened ``data``; the gradient comes back in
    ``data``'s shape."""
    out, backward = forward(xp, data.reshape(-1), axis=0, **params)
    src = data.shape
    return out, lambda dy: (backward(dy)[0].reshape(src),)


@register('sort')
def sort(xp, data, axis=-1, is_ascend=True):
    """Sorted values along ``axis`` (of the flattened array when None)."""
    if axis is None:
        return _on_flattened(xp, sort, data, is_ascend=is_ascend)
    order = xp.argsort(data, axis=axis, kind='stable')
    if not is_ascend:
        order = xp.flip(order, axis=axis)
    out = xp.take_along_axis(data, order, axis=axis)

    def backward(dy):
        g = xp.zeros_like(data)
        put_along_axis(xp, g, order, dy, axis)
        return (g,)
    return out, backward


def _negated(data):
    """``-data`` as a descending sort key, also right for bool, uint8 and int8 data."""
    if data.dtype.kind in 'biu':
        return -data.astype(np.int64)
    return -data


@register('argsort', differentiable=False)
def argsort(xp, data, axis=-1, is_ascend=True, dtype='float32'):
    """Indices that sort ``data`` along ``axis`` (float32 by default, as in MXNet; of the
    flattened array when ``axis`` is None)."""
    if axis is None:
        return argsort(xp, data.reshape(-1), 0, is_ascend, dtype)
    order = xp.argsort(data if is_ascend else _negated(data), axis=axis, kind='stable')
    return order.astype(dtype)


@register('topk')
def topk(xp, data, axis=-1, k=1, ret_typ='indices', is_ascend=False, dtype='float32'):
    """The ``k`` largest (or smallest) entries along ``axis``.

    ``ret_typ``: 'indices' (default), 'value', 'both' ([values, indices]) or 'mask'.
    ``axis=None`` takes them from the flattened array (a mask keeps the input's shape).
    """
    if axis is None:
        out, backward = _on_flattened(xp, topk, data, k=k, ret_typ=ret_typ,
                                      is_ascend=is_ascend, dtype=dtype)
        return (out.reshape(data.shape) if ret_typ == 'mask' else out), backward
    if ret_typ not in ('indices', 'value', 'both', 'mask'):
        raise MXNetError("topk: ret_typ must be 'indices', 'value', 'both' or 'mask', got %r"
                         % (ret_typ,))
    ax = axis % data.ndim
    if not 0 < k <= data.shape[ax]:
        raise MXNetError('topk: k=%d is out of range for axis %d of length %d'
                         % (k, ax, data.shape[ax]))
    order = xp.argsort(data if is_ascend else _negated(data), axis=ax, kind='stable')
    order = xp.take(order, xp.arange(k), axis=ax)
    values = xp.take_along_axis(data, order, axis=ax)

    def scatter(dv):
        g = xp.zeros_like(data)
        put_along_axis(xp, g, order, dv, ax)
        return g

    if ret_typ == 'value':
        return values, lambda dy: (scatter(dy),)
    if ret_typ == 'both':
        return (values, order.astype(dtype)), lambda dys: (scatter(dys[0]),)
    if ret_typ == 'mask':
        mask = scatter(xp.ones_like(values))
        return mask, lambda dy: (xp.zeros_like(data),)
    return order.astype(dtype), lambda dy: (xp.zeros_like(data),)


@register('fill_element_0index', num_inputs=3)
def fill_element_0index(xp, lhs, mhs, rhs):
    """A copy of the 2-D ``lhs`` with ``out[i, rhs[i]] = mhs[i]`` in every row ``i``."""
    rows = xp.arange(lhs.shape[0])
    cols = rhs.astype(np.int64)
    out = lhs.copy()
    out[rows, cols] = mhs

    def backward(dy):
        dlhs = dy.copy()
        dlhs[rows, cols] = 0
        return dlhs, dy[rows, cols], None
    return out, backward


@register('_contrib_index_array', differentiable=False)
def index_array(xp, data, axes=None):
    """The index of every element of ``data``: for data of shape ``(d1, ..., dn)`` an int64
    array of shape ``(d1, ..., dn, n)`` whose entry ``[i1, ..., in, :]`` is
    ``[i1, ..., in]``; with ``axes``, only those axes' indices, in that order. Its
    gradient is zero (as in MXNet)."""
    ndim = data.ndim
    grid = xp.indices(data.shape, dtype=np.int64)  # (ndim, *shape)
    if axes is not None:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        for axis in axes:
            if not -ndim <= axis < ndim:
                raise MXNetError('index_array: axis %d is out of range for data with %d '
                                 'dimensions' % (axis, ndim))
        grid = grid[[axis % ndim for axis in axes]] if axes else grid[:0]
    return xp.moveaxis(grid, 0, -1)
