"""Ops that rearrange elements: reshape, transpose, concat, split, tile, ..."""
import math

from ...base import MXNetError, MXNetValueError
from ...util import is_np_shape
from ..registry import register, shape_rule, unbroadcast


def _axis(axis, ndim):
    """``axis`` as an index in ``[0, ndim)``; error when it is out of range."""
    if not -ndim <= axis < ndim:
        raise MXNetError('axis %d is out of range for an array of %d dimensions' % (axis, ndim))
    return axis % ndim


def _axis_tuple(axes):
    """An int, a sequence or None as a tuple of ints."""
    if axes is None:
        return ()
    return (int(axes),) if not hasattr(axes, '__len__') else tuple(int(a) for a in axes)


def infer_reshape(src, target, reverse=False):
    """MXNet's reshape codes: 0 copies a dim, -1 infers one, -2 copies the rest,
    -3 merges two dims, -4 splits one dim into the next two values."""
    if reverse:
        return tuple(reversed(infer_reshape(tuple(reversed(src)), tuple(reversed(target)))))
    out, i, infer_at, j = [], 0, None, 0
    target = list(target) if hasattr(target, '__len__') else [target]  # MXNet's shape='-1'
    while j < len(target):
        t = target[j]
        if t == 0:
            if i >= len(src):
                raise MXNetValueError('reshape: code 0 at position %d has no input dim to copy' % j)
            out.append(src[i])
            i += 1
        elif t == -1:
            if infer_at is not None:
                raise MXNetValueError('reshape: more than one -1 in %s' % (tuple(target),))
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
                raise MXNetValueError('reshape: -4 cannot split dim %d into %d x %d'
                                      % (src[i], a, b))
            out.extend([a, b])
            i += 1
            j += 2
        elif t > 0:
            out.append(t)
            i += 1
        else:
            raise MXNetValueError('reshape: invalid code %d in %s' % (t, (tuple(target),)))
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
            raise MXNetValueError('reshape: cannot infer -1 reshaping %s to %s'
                                  % (src, tuple(target)))
        out[infer_at] = total // known
    size = 1
    for n in out:
        size *= n
    if size != total:
        raise MXNetValueError('reshape: cannot reshape array of shape %s (%d elements) into %s '
                         '(target %s)' % (tuple(src), total, tuple(out), tuple(target)))
    return tuple(out)


def legacy_target_shape(src, target_shape, keep_highest=False):
    """The shape MXNet's deprecated ``target_shape`` argument asks for: its one 0 (after
    the first dimension with ``keep_highest``, which keeps ``src``'s first) is inferred."""
    out = list(target_shape)
    if keep_highest and out:
        out[0] = src[0]
    zeros = [i for i in range(1 if keep_highest else 0, len(out)) if out[i] == 0]
    if len(zeros) == 1:
        known = math.prod(d for i, d in enumerate(out) if i != zeros[0])
        out[zeros[0]] = math.prod(src) // known if known else 0
    return tuple(out)


@register('reshape')
def reshape(xp, data, shape=(), reverse=False, target_shape=(), keep_highest=False):
    """Reshape to ``shape`` (MXNet codes 0, -1, -2, -3, -4 allowed); shares memory when it can.

    ``target_shape`` (with ``keep_highest``) is MXNet's deprecated spelling, used when
    ``shape`` is empty: one 0 in it is inferred."""
    if shape or not target_shape:
        new = infer_reshape(data.shape, shape, reverse)
    else:
        new = legacy_target_shape(data.shape, target_shape, keep_highest)
        if math.prod(new) != data.size:
            raise MXNetValueError('reshape: target_shape %s (giving %s) does not hold the %d '
                                  'elements of shape %s' % (tuple(target_shape), new,
                                                           data.size, data.shape))
    src = data.shape
    return data.reshape(new), lambda dy: (dy.reshape(src),)


@shape_rule('reshape')
def _reshape_shapes(data, shape=(), reverse=False, out_shapes=None, **_):
    """Data's one unknown dimension from the output's size, when the output is known (a
    graph's ``Reshape(-1)`` of a weight whose input size is inferred later)."""
    out = out_shapes[0] if out_shapes else None
    if not data or not out or not all(out) or sum(d == 0 for d in data) != 1:
        return (data,)
    known, total = math.prod(d for d in data if d), math.prod(out)
    if total % known:
        return (data,)
    return (tuple(d or total // known for d in data),)


# flatten, expand_dims and squeeze return new arrays, as MXNet's ops do (a later write into
# the input must not show in them); their ``inplace=True`` methods give views instead.
@register('flatten')
def flatten(xp, data):
    """Collapse all axes but the first: ``(N, a, b) -> (N, a*b)``."""
    src = data.shape
    return data.reshape(src[0] if src else 1, -1).copy(), lambda dy: (dy.reshape(src),)


@register('transpose')
def transpose(xp, data, axes=None):
    """Permute axes (reverse them when ``axes`` is None or empty)."""
    axes = tuple(axes) if axes else tuple(reversed(range(data.ndim)))
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    return xp.transpose(data, axes), lambda dy: (xp.transpose(dy, inverse),)


@shape_rule('transpose')
def _transpose_shapes(data, axes=None, out_shapes=None, **_):
    """Data's unknown dimensions from the output's (a graph whose transposed operand is
    ``ones(shape=(-1, -1))`` learns its shape from what it is added to)."""
    out = out_shapes[0] if out_shapes else None
    if not data or not out or len(out) != len(data):
        return (data,)
    axes = tuple(a % len(data) for a in axes) if axes else tuple(reversed(range(len(data))))
    full = [0] * len(data)
    for position, axis in enumerate(axes):
        full[axis] = out[position]
    return (tuple(d or f for d, f in zip(data, full)),)


@register('swapaxes')
def swapaxes(xp, data, dim1=0, dim2=0):
    """Exchange axes ``dim1`` and ``dim2`` (both default to 0, a no-op)."""
    return xp.swapaxes(data, dim1, dim2), lambda dy: (xp.swapaxes(dy, dim1, dim2),)


@register('expand_dims')
def expand_dims(xp, data, axis):
    """Insert a length-1 axis at ``axis``."""
    src = data.shape
    return xp.expand_dims(data, axis).copy(), lambda dy: (dy.reshape(src),)


@register('squeeze')
def squeeze(xp, data, axis=None):
    """Remove length-1 axes (only ``axis`` when given)."""
    src = data.shape
    return xp.squeeze(data, axis=axis).copy(), lambda dy: (dy.reshape(src),)


@register('broadcast_to')
def broadcast_to(xp, data, shape):
    """Broadcast to ``shape``; a 0 in ``shape`` keeps that input dimension."""
    shape = tuple(s if s != 0 else data.shape[i] for i, s in enumerate(shape))
    src = data.shape
    return xp.broadcast_to(data, shape), lambda dy: (unbroadcast(xp, dy, src),)


@register('broadcast_like', num_inputs=2)
def broadcast_like(xp, lhs, rhs, lhs_axes=None, rhs_axes=None):
    """Broadcast ``lhs`` to the shape of ``rhs``; with ``lhs_axes`` and ``rhs_axes``, only
    axis ``lhs_axes[i]`` of ``lhs`` takes the length of axis ``rhs_axes[i]`` of ``rhs``."""
    if lhs_axes is None and rhs_axes is None:
        shape = rhs.shape
    else:
        lhs_axes, rhs_axes = _axis_tuple(lhs_axes), _axis_tuple(rhs_axes)
        if not lhs_axes or len(lhs_axes) != len(rhs_axes):
            raise MXNetError('broadcast_like: lhs_axes %s and rhs_axes %s must be non-empty and '
                             'of the same length' % (lhs_axes, rhs_axes))
        shape = list(lhs.shape)
        for la, ra in zip(lhs_axes, rhs_axes):
            shape[_axis(la, lhs.ndim)] = rhs.shape[_axis(ra, rhs.ndim)]
    src = lhs.shape
    return xp.broadcast_to(lhs, tuple(shape)), lambda dy: (unbroadcast(xp, dy, src), None)


@register('broadcast_axis')
def broadcast_axis(xp, data, axis=(), size=()):
    """Broadcast the length-1 axes ``axis`` of ``data`` to lengths ``size``."""
    axis, size = _axis_tuple(axis), _axis_tuple(size)
    if len(axis) != len(size):
        raise MXNetError('broadcast_axis: axis %s and size %s differ in length' % (axis, size))
    shape = list(data.shape)
    for a, n in zip(axis, size):
        a = _axis(a, data.ndim)
        if shape[a] != 1:
            raise MXNetError('broadcast_axis: axis %d has length %d; only length-1 axes can be '
                             'broadcast' % (a, shape[a]))
        shape[a] = n
    src = data.shape
    return xp.broadcast_to(data, tuple(shape)), lambda dy: (unbroadcast(xp, dy, src),)


@register('tile')
def tile(xp, data, reps):
    """Repeat the whole array ``reps`` times along each axis."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    # MXNet 1.x's shapes spell an unknown size 0: empty arrays exist only in np_shape mode
    if any(r < 0 for r in reps) or (0 in reps and not is_np_shape()):
        raise MXNetError('tile: reps %s must be positive (0 is allowed inside '
                         'mx.util.np_shape(), where arrays may be empty)' % (reps,))
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


@shape_rule('concat')
def _concat_shapes(*data, dim=1, out_shapes=None, **_):
    """Every input has the others' (and the output's) sizes off axis ``dim``; one input's
    size on it is the output's less the others'."""
    shapes = [list(d) for d in data]
    out = list(out_shapes[0]) if out_shapes and out_shapes[0] else None
    ndim = len(out) if out else max(len(d) for d in data)
    if any(len(d) != ndim for d in shapes):
        return data
    axis = dim % ndim
    for k in range(ndim):
        if k != axis:
            size = next((d[k] for d in shapes + [out or [0] * ndim] if d[k]), 0)
            for d in shapes:
                d[k] = d[k] or size
    missing = [d for d in shapes if not d[axis]]
    if out and out[axis] and len(missing) == 1:
        missing[0][axis] = out[axis] - sum(d[axis] for d in shapes)
    return tuple(tuple(d) for d in shapes)


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


@shape_rule('split')
def _split_shapes(data, num_outputs=1, axis=1, squeeze_axis=False, out_shapes=None, **_):
    """data from the outputs' shapes (all alike): ``num_outputs`` times their size on
    ``axis``."""
    ax = axis % len(data) if data else 0
    known = [o for o in out_shapes or () if o and len(o) == len(data) - bool(squeeze_axis)]
    if not known:
        return (data,)
    sizes = [next((o[k] for o in known if o[k]), 0) for k in range(len(known[0]))]
    if squeeze_axis:
        full = sizes[:ax] + [num_outputs] + sizes[ax:]
    else:
        full = sizes[:ax] + [sizes[ax] * num_outputs] + sizes[ax + 1:]
    return (tuple(d or f for d, f in zip(data, full)),)


@register('slice_axis')
def slice_axis(xp, data, axis, begin, end=None):
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


def slice_key(shape, begin, end, step=None):
    """MXNet's ``begin``/``end``/``step`` (tuples over the leading axes, None entries for
    the defaults) as a tuple of Python slices."""
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step else (None,) * len(begin)
    if len(end) != len(begin) or len(step) != len(begin) or len(begin) > len(shape):
        raise MXNetError('slice: begin %s, end %s and step %s must have the same length, at '
                         'most the %d dimensions of the array' % (begin, end, step, len(shape)))
    if any(s == 0 for s in step):
        raise MXNetError('slice: step cannot be 0, got %s' % (step,))
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _slice_backward(xp, src, dtype, key):
    def backward(dy):
        g = xp.zeros(src, dtype)
        g[key] = dy
        return (g,)
    return backward


@register('slice')
def slice_op(xp, data, begin, end, step=()):
    """The elements ``begin[i]:end[i]:step[i]`` along each leading axis ``i``.

    ``begin``, ``end`` and ``step`` are tuples as long as the axes they slice; a None entry
    takes the default (the whole axis, step 1). ``nd.crop`` is the same op.
    """
    key = slice_key(data.shape, begin, end, step)
    return data[key].copy(), _slice_backward(xp, data.shape, data.dtype, key)


@register('slice_like', num_inputs=2)
def slice_like(xp, data, shape_like, axes=()):
    """Cut ``data`` to the shape of ``shape_like`` along ``axes`` (every axis when empty),
    keeping the first elements."""
    axes = _axis_tuple(axes)
    if not axes:
        if shape_like.ndim != data.ndim:
            raise MXNetError('slice_like: shape_like has %d dimensions but data has %d; name the '
                             'axes to cut' % (shape_like.ndim, data.ndim))
        axes = range(data.ndim)
    key = [slice(None)] * data.ndim
    for a in axes:
        key[_axis(a, data.ndim)] = slice(0, shape_like.shape[_axis(a, shape_like.ndim)])
    key = tuple(key)
    backward = _slice_backward(xp, data.shape, data.dtype, key)
    return data[key].copy(), lambda dy: backward(dy) + (None,)


def _assign_key(data, begin, end, step):
    return slice_key(data.shape, begin, end, step)


@register('_slice_assign', num_inputs=2)
def _slice_assign(xp, lhs, rhs, begin, end, step=()):
    """A copy of ``lhs`` whose region ``begin:end:step`` is ``rhs`` (``_crop_assign``)."""
    key = _assign_key(lhs, begin, end, step)
    out = lhs.copy()
    out[key] = rhs

    def backward(dy):
        dlhs = dy.copy()
        dlhs[key] = 0
        return dlhs, unbroadcast(xp, xp.ascontiguousarray(dy[key]), rhs.shape)
    return out, backward


@register('_slice_assign_scalar')
def _slice_assign_scalar(xp, data, scalar=0.0, begin=(), end=(), step=()):
    """A copy of ``data`` whose region ``begin:end:step`` is ``scalar``."""
    key = _assign_key(data, begin, end, step)
    out = data.copy()
    out[key] = scalar

    def backward(dy):
        g = dy.copy()
        g[key] = 0
        return (g,)
    return out, backward


def _like_range(ndim, side, begin, end):
    """``reshape_like``'s axes ``begin:end`` of a ``side`` operand of ``ndim`` dimensions as
    non-negative indices (negative ones count from the end, None is the whole shape)."""
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= b < e <= ndim:
        raise MXNetValueError('reshape_like: %s_begin=%s, %s_end=%s do not give a non-empty '
                              'range of the %d axes of %s' % (side, begin, side, end, ndim, side))
    return b, e


@register('reshape_like', num_inputs=2)
def reshape_like(xp, lhs, rhs, lhs_begin=None, lhs_end=None, rhs_begin=None, rhs_end=None):
    """``lhs`` with axes ``lhs_begin:lhs_end`` replaced by the axes ``rhs_begin:rhs_end`` of
    ``rhs`` (by default: the whole shape of ``rhs``)."""
    lb, le = _like_range(lhs.ndim, 'lhs', lhs_begin, lhs_end)
    rb, re_ = _like_range(rhs.ndim, 'rhs', rhs_begin, rhs_end)
    shape = lhs.shape[:lb] + rhs.shape[rb:re_] + lhs.shape[le:]
    if math.prod(shape) != lhs.size:
        raise MXNetValueError('reshape_like: cannot reshape %s (%d elements) into %s'
                              % (lhs.shape, lhs.size, shape))
    src = lhs.shape
    return lhs.reshape(shape), lambda dy: (dy.reshape(src), None)


@register('flip')
def flip(xp, data, axis):
    """Reverse the order of elements along ``axis`` (an int or a tuple); alias ``reverse``."""
    axes = tuple(_axis(a, data.ndim) for a in _axis_tuple(axis))
    return xp.flip(data, axes).copy(), lambda dy: (xp.flip(dy, axes),)


@register('split_v2')
def split_v2(xp, data, indices_or_sections, axis=0, squeeze_axis=False):
    """Split along ``axis`` into ``indices_or_sections`` equal parts (an int), or at the
    given indices (a tuple), as ``numpy.split`` does."""
    n = data.shape[axis]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise MXNetError('split_v2: axis %d of length %d cannot be split into %d equal parts'
                             % (axis, n, indices_or_sections))
        bounds = [i * n // indices_or_sections for i in range(1, indices_or_sections)]
    else:
        bounds = [int(i) for i in indices_or_sections]
        if bounds and bounds[0] == 0:
            bounds = bounds[1:]
    parts = xp.split(data, bounds, axis=axis)
    if squeeze_axis:
        parts = [p.squeeze(axis=axis) for p in parts]

    def backward(dys):
        dys = dys if isinstance(dys, tuple) else (dys,)
        if squeeze_axis:
            dys = [xp.expand_dims(d, axis) for d in dys]
        return (xp.concatenate(dys, axis=axis),)
    return (parts[0] if len(parts) == 1 else tuple(parts)), backward


def _check_blocks(name, shape, block_size):
    """MXNet's checks of ``depth_to_space``/``space_to_depth`` inputs: 4-D, no empty axis,
    a positive block size."""
    if len(shape) != 4:
        raise MXNetError('%s needs 4-D data (N, C, H, W), got shape %s' % (name, shape))
    if block_size <= 0:
        raise MXNetError('%s: block_size must be a positive integer, got %d'
                         % (name, block_size))
    if 0 in shape:
        raise MXNetError('%s: data of shape %s has an empty axis; every axis needs at least '
                         'one element' % (name, shape))


@register('depth_to_space')
def depth_to_space(xp, data, block_size):
    """Move channel blocks into space: ``(N, C, H, W) -> (N, C/b^2, H*b, W*b)``."""
    b = block_size
    _check_blocks('depth_to_space', data.shape, b)
    n, c, h, w = data.shape
    if c % (b * b):
        raise MXNetError('depth_to_space: %d channels are not divisible by block_size^2 = %d'
                         % (c, b * b))
    out = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    out = out.reshape(n, c // (b * b), h * b, w * b)
    return out, lambda dy: (_space_to_depth(dy, b),)


def _space_to_depth(x, b):
    n, c, h, w = x.shape
    out = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return out.reshape(n, c * b * b, h // b, w // b)


@register('space_to_depth')
def space_to_depth(xp, data, block_size):
    """Move spatial blocks into channels: ``(N, C, H, W) -> (N, C*b^2, H/b, W/b)``."""
    b = block_size
    _check_blocks('space_to_depth', data.shape, b)
    _, _, h, w = data.shape
    if h % b or w % b:
        raise MXNetError('space_to_depth: height %d and width %d must be divisible by '
                         'block_size %d' % (h, w, b))
    return _space_to_depth(data, b), lambda dy: (depth_to_space(xp, dy, b)[0],)


@register('diag')
def diag(xp, data, k=0, axis1=0, axis2=1):
    """A 1-D input becomes a matrix with it on diagonal ``k``; an N-D input gives its
    diagonal ``k`` over axes ``axis1`` and ``axis2`` (as a new last axis)."""
    if data.ndim == 1:
        out = xp.diag(data, k)
        return out, lambda dy: (xp.diagonal(dy, k).copy(),)
    if data.ndim == 0:
        raise MXNetError('diag: the input must have at least one axis, got a scalar')
    axis1, axis2 = _axis(axis1, data.ndim), _axis(axis2, data.ndim)
    if axis1 == axis2:
        raise MXNetError('diag: axis1 and axis2 both refer to axis %d; give two different '
                         'axes' % axis1)
    rows, cols = data.shape[axis1], data.shape[axis2]
    if min(rows + min(k, 0), cols - max(k, 0)) < 0:
        raise MXNetError('diag: diagonal k=%d does not exist in a %dx%d matrix (axes %d, %d); '
                         'k must lie in [%d, %d]' % (k, rows, cols, axis1, axis2, -rows, cols))
    out = xp.diagonal(data, k, axis1, axis2).copy()
    src, dtype = data.shape, data.dtype

    def backward(dy):
        g = xp.zeros(src, dtype)
        view = xp.diagonal(g, k, axis1, axis2)  # read-only in numpy: write through indices
        index = xp.arange(view.shape[-1])
        rows, cols = (index + max(-k, 0), index + max(k, 0))
        moved = xp.moveaxis(g, (axis1, axis2), (-2, -1))
        moved[..., rows, cols] = dy
        return (g,)
    return out, backward


@register('shape_array', differentiable=False)
def shape_array(xp, data):
    """The shape of ``data`` as a 1-D int64 array."""
    return xp.asarray(data.shape, dtype='int64')


@register('size_array', differentiable=False)
def size_array(xp, data):
    """The number of elements of ``data`` as a 1-element int64 array."""
    return xp.asarray([data.size], dtype='int64')
