"""Reductions over axes: sum, mean, prod, max, min, norm, argmax, argmin."""
from ...base import MXNetError
from ..registry import dtype_rule, register
from ..accumulate import sum_over


def _axes(ndim, axis, exclude=False):
    """Normalised tuple of reduced axes (MXNet's ``exclude`` inverts the set)."""
    if axis is None or axis == ():
        axes = tuple(range(ndim))
        return () if exclude else axes
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise MXNetError('axis %d is out of range for an array of %d dimensions' % (a, ndim))
        out.append(a % ndim)
    if exclude:
        return tuple(i for i in range(ndim) if i not in out)
    return tuple(sorted(set(out)))


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _reduction(name, doc):
    """Register a reduction given ``fn(xp, x, axes) -> (y_keepdims, grad_fn)``.

    ``grad_fn(dy_keepdims)`` returns dx; both work with the reduced axes kept as 1s.
    """
    def deco(fn):
        def forward(xp, data, axis=None, keepdims=False, exclude=False):
            axes = _axes(data.ndim, axis, exclude)
            kept = _kept_shape(data.shape, axes)
            y, grad_fn = fn(xp, data, axes)
            if y.dtype != data.dtype and data.dtype.kind != 'b':
                y = y.astype(data.dtype)  # MXNet keeps the dtype (numpy widens int8/uint8/int32)
            out = y if keepdims else y.reshape(tuple(n for i, n in enumerate(y.shape)
                                                    if i not in axes))
            return out, lambda dy: (grad_fn(dy.reshape(kept)),)
        forward.__doc__ = doc + ' Parameters: ``axis`` (int, tuple or None for all), ' \
            '``keepdims``, ``exclude`` (reduce every axis except ``axis``).'
        forward.__name__ = name
        register(name)(forward)
        return fn
    return deco


@_reduction('sum', 'Sum over ``axis``.')
def _sum(xp, x, axes):
    y = sum_over(xp, x, axes, keepdims=True) if x.dtype.kind == 'f' else \
        x.sum(axis=axes, keepdims=True)
    return y, lambda dy: xp.broadcast_to(dy, x.shape)


@_reduction('nansum', 'Sum over ``axis`` treating NaN as zero.')
def _nansum(xp, x, axes):
    return xp.nansum(x, axis=axes, keepdims=True), \
        lambda dy: xp.where(xp.isnan(x), 0, xp.broadcast_to(dy, x.shape)).astype(x.dtype)


@_reduction('mean', 'Mean over ``axis``.')
def _mean(xp, x, axes):
    count = 1
    for a in axes:
        count *= x.shape[a]
    if x.dtype.kind == 'f':  # float16 accumulates in float32, as numpy's mean does
        y = sum_over(xp, x, axes, 'float32' if x.dtype == 'float16' else None, keepdims=True)
        y = y / max(count, 1)
    else:
        y = x.mean(axis=axes, keepdims=True)
    return y, \
        lambda dy: xp.broadcast_to(dy / max(count, 1), x.shape)


@_reduction('prod', 'Product over ``axis``.')
def _prod(xp, x, axes):
    y = x.prod(axis=axes, keepdims=True)
    # d prod / d x_i = prod of the others; written without dividing so zeros are fine
    def grad(dy):
        if not axes:
            return dy * xp.ones_like(x)
        moved = xp.moveaxis(x, axes, tuple(range(len(axes))))
        flat = moved.reshape((-1,) + moved.shape[len(axes):])
        ones = xp.ones((1,) + flat.shape[1:], x.dtype)
        before = xp.cumprod(xp.concatenate([ones, flat[:-1]]), axis=0)
        after = xp.cumprod(xp.concatenate([ones, flat[::-1][:-1]]), axis=0)[::-1]
        others = (before * after).reshape(moved.shape)
        return dy * xp.moveaxis(others, tuple(range(len(axes))), axes)
    return y, grad


@_reduction('nanprod', 'Product over ``axis`` treating NaN as one.')
def _nanprod(xp, x, axes):
    nan = xp.isnan(x)
    y, prod_grad = _prod(xp, xp.where(nan, 1, x).astype(x.dtype), axes)
    return y, lambda dy: xp.where(nan, 0, prod_grad(dy)).astype(x.dtype)


def _extreme(xp, x, axes, y):
    """Gradient of max/min: shared evenly between the positions holding the extreme."""
    def grad(dy):
        mask = (x == y)
        return dy * mask / mask.sum(axis=axes, keepdims=True)
    return grad


@_reduction('max', 'Maximum over ``axis``; ties share the gradient evenly.')
def _max(xp, x, axes):
    y = x.max(axis=axes, keepdims=True)
    return y, _extreme(xp, x, axes, y)


@_reduction('min', 'Minimum over ``axis``; ties share the gradient evenly.')
def _min(xp, x, axes):
    y = x.min(axis=axes, keepdims=True)
    return y, _extreme(xp, x, axes, y)


@register('norm')
def norm(xp, data, ord=2, axis=None, out_dtype=None, keepdims=False):
    # pylint: disable=redefined-builtin
    """The L2 (``ord=2``) or L1 (``ord=1``) norm over ``axis`` (all elements by default),
    of dtype ``out_dtype`` (the input's by default); float16 accumulates in float32."""
    if ord not in (1, 2):
        raise MXNetError('norm: ord must be 1 or 2, got %r' % (ord,))
    axes = _axes(data.ndim, axis)
    kept = _kept_shape(data.shape, axes)
    out_dtype = xp.dtype(out_dtype or data.dtype)
    acc = xp.promote_types(data.dtype, out_dtype)
    if acc == xp.float16:
        acc = xp.dtype(xp.float32)
    wide = data.astype(acc, copy=False)
    if ord == 2:
        y = xp.sqrt(xp.square(wide).sum(axis=axes, keepdims=True))
    else:
        y = xp.abs(wide).sum(axis=axes, keepdims=True)
    out = y if keepdims else y.reshape(tuple(n for i, n in enumerate(data.shape) if i not in axes))

    def backward(dy):
        dy = dy.reshape(kept)
        if ord == 1:
            return ((dy * xp.sign(wide)).astype(data.dtype, copy=False),)
        safe = xp.where(y == 0, 1, y)
        return ((dy * wide / safe).astype(data.dtype, copy=False),)
    return out.astype(out_dtype, copy=False), backward


@dtype_rule('norm')
def _norm_dtype(in_dtypes, out_dtype=None, **_):
    return [out_dtype or in_dtypes[0]]


def _arg_reduce(name, fn_name):
    def forward(xp, data, axis=None, keepdims=False):
        if axis is None:
            out = getattr(xp, fn_name)(data.reshape(-1))
            return out.reshape((1,) * data.ndim if keepdims else (1,)).astype('float32')
        out = getattr(xp, fn_name)(data, axis=axis)
        if keepdims:
            out = xp.expand_dims(out, axis)
        return out.astype('float32')
    forward.__doc__ = ('Index of the %s along ``axis`` (flattened when None), returned as '
                       'float32 as in MXNet.' % ('maximum' if 'max' in name else 'minimum'))
    forward.__name__ = name
    register(name, differentiable=False)(forward)


_arg_reduce('argmax', 'argmax')
_arg_reduce('argmin', 'argmin')


@register('argmax_channel', differentiable=False)
def argmax_channel(xp, data):
    """Index of the maximum along the last axis (float32), e.g. the class of each row."""
    return xp.argmax(data, axis=-1).astype('float32')
