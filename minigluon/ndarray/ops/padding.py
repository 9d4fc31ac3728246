"""``pad``: constant, edge and reflection padding of any axes.

The forward is the array module's own ``pad``. Padding an array is padding one axis
after another, so the backward undoes the axes one at a time: it crops the core and,
for 'edge' and 'reflect', adds back the gradient of every copied border element.
"""
from ...base import MXNetError
from ..registry import register

_MODES = ('constant', 'edge', 'reflect')


def _along(axis, ndim, index):
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def _unpad_axis(xp, grad, axis, before, after, size, mode):
    """The gradient of the unpadded array along ``axis`` from that of the padded one."""
    ndim = grad.ndim
    core = grad[_along(axis, ndim, slice(before, before + size))]
    if mode == 'constant' or not (before or after):
        return core
    core = core.copy()
    head = grad[_along(axis, ndim, slice(0, before))]
    tail = grad[_along(axis, ndim, slice(before + size, before + size + after))]
    if mode == 'edge':
        if before:
            core[_along(axis, ndim, slice(0, 1))] += head.sum(axis=axis, keepdims=True)
        if after:
            core[_along(axis, ndim, slice(size - 1, size))] += tail.sum(axis=axis,
                                                                         keepdims=True)
        return core
    # reflect: padded[before - 1 - j] = x[1 + j], padded[before + size + j] = x[size - 2 - j]
    if before:
        core[_along(axis, ndim, slice(1, before + 1))] += xp.flip(head, axis=axis)
    if after:
        core[_along(axis, ndim, slice(size - 1 - after, size - 1))] += xp.flip(tail, axis=axis)
    return core


@register('pad')
def pad(xp, data, mode='constant', pad_width=None, constant_value=0.0):
    """Pad ``data`` by ``pad_width``: ``(before_0, after_0, before_1, after_1, ...)``, two
    entries per axis.

    ``mode`` is 'constant' (``constant_value``), 'edge' (repeat the border element) or
    'reflect' (mirror the elements next to the border, which needs padding smaller
    than the axis). MXNet pads only the spatial axes of 4-D and 5-D arrays; any axis
    may be padded here.
    """
    if mode not in _MODES:
        raise MXNetError("pad: mode must be one of %s, got %r" % (', '.join(_MODES), mode))
    widths = tuple(int(w) for w in (pad_width or ()))
    if len(widths) != 2 * data.ndim or any(w < 0 for w in widths):
        raise MXNetError('pad: pad_width=%s needs two non-negative entries (before, after) '
                         'per axis of data of shape %s, %d in all'
                         % (widths, data.shape, 2 * data.ndim))
    pairs = [widths[2 * i:2 * i + 2] for i in range(data.ndim)]
    if mode == 'reflect':
        for axis, ((before, after), size) in enumerate(zip(pairs, data.shape)):
            if max(before, after) >= size:
                raise MXNetError('pad: reflection padding %s of axis %d must be smaller than '
                                 'its size %d' % ((before, after), axis, size))
    if mode == 'constant':
        out = xp.pad(data, pairs, mode='constant', constant_values=constant_value)
    else:
        out = xp.pad(data, pairs, mode=mode)

    def backward(dy):
        grad = dy
        for axis, ((before, after), size) in enumerate(zip(pairs, data.shape)):
            grad = _unpad_axis(xp, grad, axis, before, after, size, mode)
        return (grad,)
    return out, backward
