"""Ops that rearrange elements: reshape, transpose, concat, split, tile, ..."""
from ...base import MXNetError
from ..registry import register, unbroadcast


def infer_reshape(src, target, reverse=False):
    """MXNet's reshape codes: 0 copies a dim, -1 infers one, -2 copies the rest,
    -3 merges two dims, -4 splits one dim into the next two values."""
    if reverse:
        return tuple(reversed(infer_reshape(tuple(reversed(src)), tuple(reversed(target)))))
    out, i, infer_at, j = [], 0, None, 0
    target = list(target)
    while j < len(target):
        t = target[j]
        if t == 0:
            if i >= len(src):
                raise MXNetError('reshape: code 0 at position %d has no input dim to copy' % j)
            out.append(src[i])
            i += 1
        elif t == -1:
            if infer_at is not None:
                raise MXNetError('reshape: more than one -1 in %s' % (tuple(target),))
            infer_at = len(out)
            out.append(-1)
            i += 1
        elif t == -2:
            out.extend(src[i:])
            i = len(src)
        elif t == -3:
            out.append(src[i] * src[i + 1])
            i += 2
        elif t == -4:
            a, b = target[j + 1], target[j + 2]
            if a == -1:
                a = src[i] // b
            elif b == -1:
                b = src[i] // a
            if a * b != src[i]:
                raise MXNetError('reshape: -4 cannot split dim %d into %d x %d' % (src[i], a, b))
            out.extend([a, b])
            i += 1
            j += 2
        elif t > 0:
            out.append(t)
            i += 1
        else:
            raise MXNetError('reshape: invalid code %d in %s' % (t, (tuple(target),)))
        j += 1
    total = 1
    for n in src:
        total *= n
    if infer_at is not None:
        known = 1
        for k, n in enumerate(out):
            if k != infer_at:
                known *= n
        if known == 0 or total % known:
            raise MXNetError('reshape: cannot infer -1 reshaping %s to %s' % (src, tuple(target)))
        out[infer_at] = total // known
    size = 1
    for n in out:
        size *= n
    if size != total:
        raise MXNetError('reshape: cannot reshape array of shape %s (%d elements) into %s '
                         '(target %s)' % (tuple(src), total, tuple(out), tuple(target)))
    return tuple(out)


@register('reshape')
def reshape(xp, data, shape, reverse=False):
    """Reshape to ``shape`` (MXNet codes 0, -1, -2, -3, -4 allowed); shares memory when it can."""
    new = infer_reshape(data.shape, shape, reverse)
    src = data.shape
    return data.reshape(new), lambda dy: (dy.reshape(src),)


@register('flatten')
def flatten(xp, data):
    """Collapse all axes but the first: ``(N, a, b) -> (N, a*b)``."""
    src = data.shape
    return data.reshape(src[0] if src else 1, -1), lambda dy: (dy.reshape(src),)


@register('transpose')
def transpose(xp, data, axes=None):
    """Permute axes (reverse them when ``axes`` is None or empty)."""
    axes = tuple(axes) if axes else tuple(reversed(range(data.ndim)))
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    return xp.transpose(data, axes), lambda dy: (xp.transpose(dy, inverse),)


@register('swapaxes')
def swapaxes(xp, data, dim1=0, dim2=0):
    """Exchange two axes."""
    return xp.swapaxes(data, dim1, dim2), lambda dy: (xp.swapaxes(dy, dim1, dim2),)


@register('expand_dims')
def expand_dims(xp, data, axis):
    """Insert a length-1 axis at ``axis``."""
    src = data.shape
    return xp.expand_dims(data, axis), lambda dy: (dy.reshape(src),)


@register('squeeze')
def squeeze(xp, data, axis=None):
    """Remove length-1 axes (only ``axis`` when given)."""
    src = data.shape
    return xp.squeeze(data, axis=axis), lambda dy: (dy.reshape(src),)


@register('broadcast_to')
def broadcast_to(xp, data, shape):
    """Broadcast to ``shape``; a 0 in ``shape`` keeps that input dimension."""
    shape = tuple(s if s != 0 else data.shape[i] for i, s in enumerate(shape))
    src = data.shape
    return xp.broadcast_to(data, shape), lambda dy: (unbroadcast(xp, dy, src),)


@register('broadcast_like', num_inputs=2)
def broadcast_like(xp, lhs, rhs):
    """Broadcast ``lhs`` to the shape of ``rhs``."""
    src = lhs.shape
    return xp.broadcast_to(lhs, rhs.shape), lambda dy: (unbroadcast(xp, dy, src), None)


@register('tile')
def tile(xp, data, reps):
    """Repeat the whole array ``reps`` times along each axis."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    out = xp.tile(data, reps)
    src = data.shape

    def backward(dy):
        nd_ = max(len(reps), len(src))
        full_src = (1,) * (nd_ - len(src)) + src
        full_reps = (1,) * (nd_ - len(reps)) + reps
        split = []
        for r, n in zip(full_reps, full_src):
            split.extend([r, n])
        g = dy.reshape(split).sum(axis=tuple(range(0, 2 * nd_, 2)))
        return (g.reshape(src),)
    return out, backward


@register('repeat')
def repeat(xp, data, repeats, axis=None):
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None)."""
    out = xp.repeat(data, repeats, axis=axis)
    src = data.shape

    def backward(dy):
        if axis is None:
            return (dy.reshape(-1, repeats).sum(axis=1).reshape(src),)
        ax = axis % len(src)
        g = dy.reshape(src[:ax] + (src[ax], repeats) + src[ax + 1:]).sum(axis=ax + 1)
        return (g,)
    return out, backward


@register('concat', num_inputs=None)
def concat(xp, *data, dim=1):
    """Join arrays along axis ``dim`` (default 1, as in MXNet)."""
    if not data:
        raise MXNetError('concat needs at least one array')
    out = xp.concatenate(data, axis=dim)
    bounds, total = [], 0
    for d in data[:-1]:
        total += d.shape[dim]
        bounds.append(total)
    return out, lambda dy: tuple(xp.split(dy, bounds, axis=dim))


@register('stack', num_inputs=None)
def stack(xp, *data, axis=0):
    """Join arrays of equal shape along a new axis ``axis``."""
    if not data:
        raise MXNetError('stack needs at least one array')
    out = xp.stack(data, axis=axis)
    ax = axis % out.ndim
    return out, lambda dy: tuple(xp.take(dy, i, axis=ax) for i in range(len(data)))


@register('split')
def split(xp, data, num_outputs, axis=1, squeeze_axis=False):
    """Cut into ``num_outputs`` equal parts along ``axis`` (default 1, as in MXNet).

    Returns a list of arrays (a single array when ``num_outputs`` is 1).
    """
    if data.shape[axis] % num_outputs:
        raise MXNetError('split: axis %d of length %d cannot be split into %d equal parts'
                         % (axis, data.shape[axis], num_outputs))
    parts = xp.split(data, num_outputs, axis=axis)
    if squeeze_axis:
        parts = [p.squeeze(axis=axis) for p in parts]

    def backward(dys):
        dys = dys if isinstance(dys, tuple) else (dys,)
        if squeeze_axis:
            dys = [xp.expand_dims(d, axis) for d in dys]
        return (xp.concatenate(dys, axis=axis),)
    return (parts[0] if num_outputs == 1 else tuple(parts)), backward


@register('slice_axis')
def slice_axis(xp, data, axis, begin, end):
    """Elements ``begin:end`` along ``axis`` (``end`` None means to the end)."""
    index = [slice(None)] * data.ndim
    index[axis] = slice(begin, end)
    index = tuple(index)
    src, dtype = data.shape, data.dtype

    def backward(dy):
        g = xp.zeros(src, dtype)
        g[index] = dy
        return (g,)
    return data[index], backward
