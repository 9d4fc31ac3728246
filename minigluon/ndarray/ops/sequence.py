"""Variable-length sequences: ``SequenceMask``, ``SequenceLast``, ``SequenceReverse``.

As in MXNet 1.x, ``data`` has the time steps on ``axis`` (0: ``(T, N, ...)``, 1:
``(N, T, ...)``) and the optional input ``sequence_length`` ``(N,)`` gives each sample's
number of valid steps; it is read only when ``use_sequence_length`` is true, and its
values are truncated to integers. Without it every sample has all ``T`` steps. No
gradient flows into ``sequence_length``.
"""
from ...base import MXNetError
from ..registry import register, shape_rule


def _lengths(op, data, sequence_length, use_sequence_length, axis, axes):
    """Each sample's valid steps as int64 ``(N,)``, or None when every step is valid."""
    if axis not in axes:
        raise MXNetError('%s: axis must be %s, got %r'
                         % (op, ' or '.join(map(str, axes)), axis))
    if data.ndim < 2:
        raise MXNetError('%s: data must have 2 or more dimensions (time and batch), got '
                         'shape %s' % (op, data.shape))
    if not use_sequence_length:
        return None
    if sequence_length is None:
        raise MXNetError('%s: use_sequence_length=True needs the sequence_length input'
                         % op)
    batch = data.shape[1 - axis]
    if sequence_length.shape != (batch,):
        raise MXNetError('%s: sequence_length must have shape (%d,), one length per sample '
                         'of data %s, got %s' % (op, batch, data.shape, sequence_length.shape))
    return sequence_length.astype('int64')


def _check_at_most(op, xp, lengths, steps):
    if bool((lengths > steps).any()):
        raise MXNetError('%s: sequence_length must not exceed the %d time steps of data, got '
                         '%s' % (op, steps, lengths.tolist()))


def _time_major(mask, axis, ndim):
    """A ``(T, N)`` mask laid out as data (``(N, T)`` for axis 1), broadcastable to it."""
    mask = mask if axis == 0 else mask.T
    return mask.reshape(mask.shape + (1,) * (ndim - 2))


@register('SequenceMask', num_inputs=2)
def sequence_mask(xp, data, sequence_length=None, use_sequence_length=False, value=0.0,
                  axis=0):
    """``data`` with every step at or after its sample's length set to ``value``.

    ``axis`` (0 or 1) is the time axis. Without ``use_sequence_length`` this is the
    identity.
    """
    lengths = _lengths('SequenceMask', data, sequence_length, use_sequence_length, axis,
                       (0, 1))
    if lengths is None:
        return data.copy(), lambda dy: (dy, None)
    steps = data.shape[axis]
    valid = _time_major(xp.arange(steps)[:, None] < lengths[None, :], axis, data.ndim)
    out = xp.where(valid, data, xp.asarray(value, dtype=data.dtype))

    def backward(dy):
        return xp.where(valid, dy, xp.zeros((), dtype=dy.dtype)), None
    return out, backward


@register('SequenceLast', num_inputs=2)
def sequence_last(xp, data, sequence_length=None, use_sequence_length=False, axis=0):
    """Each sample's last valid step: ``(N, ...)`` out of ``data`` with time on ``axis``
    (0 or 1). A length of 0 takes the first step.
    """
    lengths = _lengths('SequenceLast', data, sequence_length, use_sequence_length, axis,
                       (0, 1))
    steps, batch = data.shape[axis], data.shape[1 - axis]
    if lengths is None:
        last = xp.full((batch,), steps - 1, dtype='int64')
    else:
        _check_at_most('SequenceLast', xp, lengths, steps)
        last = xp.maximum(lengths - 1, 0)
    samples = xp.arange(batch)
    where = (last, samples) if axis == 0 else (samples, last)
    out = data[where]

    def backward(dy):
        grad = xp.zeros(data.shape, dtype=dy.dtype)
        grad[where] = dy  # one step per sample: no index repeats
        return grad, None
    return out, backward


@register('SequenceReverse', num_inputs=2)
def sequence_reverse(xp, data, sequence_length=None, use_sequence_length=False, axis=0):
    """``data`` ``(T, N, ...)`` with each sample's first ``length`` steps in reverse
    order; the steps after them stay where they are. Only ``axis=0`` is supported, as
    in MXNet.
    """
    lengths = _lengths('SequenceReverse', data, sequence_length, use_sequence_length, axis,
                       (0,))
    if lengths is None:
        return data[::-1].copy(), lambda dy: (dy[::-1].copy(), None)
    steps = data.shape[0]
    _check_at_most('SequenceReverse', xp, lengths, steps)
    t = xp.arange(steps)[:, None]
    # the step each output step comes from; reversing a prefix is its own inverse
    source = _time_major(xp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t), 0,
                         data.ndim)

    def gather(a):
        return xp.take_along_axis(a, xp.broadcast_to(source, a.shape), axis=0)
    return gather(data), lambda dy: (gather(dy), None)


@shape_rule('SequenceMask', 'SequenceLast', 'SequenceReverse')
def _sequence_shapes(data, sequence_length=None, axis=0, **_):
    """sequence_length: one length per sample, ``(N,)``."""
    if sequence_length is None or len(data) < 2 or axis not in (0, 1):
        return data, sequence_length
    return data, (data[1 - axis],)
