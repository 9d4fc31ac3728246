"""Connectionist temporal classification: ``CTCLoss`` (Graves et al., 2006).

Each label sequence ``l`` is extended with blanks, ``l' = (blank, l1, blank, l2, ...,
blank)`` of length ``S = 2L + 1``; the forward variables ``alpha[t, s]`` (log
probability of every path prefix ending at ``l'_s`` at time ``t``) and the backward
variables ``beta`` run over time in log space, one vectorised step over the batch and
every position ``s`` per time step. The gradient with respect to the unnormalised
activations is ``softmax - occupancy``, where the occupancy of class ``k`` at time ``t``
is ``sum over s with l'_s = k of exp(alpha + beta - log y - log p)``.
"""
from ...base import MXNetError
from ..registry import register

_BLANKS = ('first', 'last')


def _shift(xp, a, by, fill):
    """``a`` moved ``by`` positions along axis 1 (right when positive), ``fill`` let in."""
    out = xp.full_like(a, fill)
    if by > 0:
        out[:, by:] = a[:, :-by]
    else:
        out[:, :by] = a[:, -by:]
    return out


def _log_softmax(xp, x):
    shifted = x - x.max(axis=2, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=2, keepdims=True))


def _lengths(given, use, default, low, high, what):
    """Per-sample lengths: ``given`` when ``use``, else ``default``."""
    if not use:
        return default
    if given is None:
        raise MXNetError('CTCLoss: use_%s_lengths=True needs the %s_lengths input'
                         % (what, what))
    lengths = given.astype('int64').reshape(-1)
    if bool(((lengths < low) | (lengths > high)).any()):
        raise MXNetError('CTCLoss: %s_lengths must lie in [%d, %d], got %s'
                         % (what, low, high, lengths.tolist()))
    return lengths


@register('CTCLoss', num_inputs=4)
def ctc_loss(xp, data, label, data_lengths=None, label_lengths=None, use_data_lengths=False,
             use_label_lengths=False, blank_label='first'):
    """CTC loss of unnormalised activations ``data`` ``(T, N, C)`` (softmax is applied
    inside) against ``label`` ``(N, L)``; returns ``-log p(label | data)``, shape ``(N,)``.

    ``blank_label='first'`` reserves class 0 for the blank, labels are 1..C-1 and a
    label row ends at its first 0; ``'last'`` reserves class C-1, labels are 0..C-2 and
    a row ends at its first -1. ``use_label_lengths`` takes the lengths from
    ``label_lengths`` instead; ``use_data_lengths`` takes each sample's number of time
    steps from ``data_lengths`` (steps after it get no gradient). A label that no
    alignment fits into its time steps (too long, or too many repeats) gets loss 0, as
    in MXNet, and no gradient.
    """
    if blank_label not in _BLANKS:
        raise MXNetError("CTCLoss: blank_label must be 'first' or 'last', got %r"
                         % (blank_label,))
    if data.ndim != 3 or label.ndim != 2 or label.shape[0] != data.shape[1]:
        raise MXNetError('CTCLoss: needs data (T, N, C) and label (N, L) with the same N, got '
                         'data %s and label %s' % (data.shape, label.shape))
    steps, batch, classes = data.shape
    blank = 0 if blank_label == 'first' else classes - 1
    work = 'float32' if data.dtype == 'float16' else data.dtype
    logits = data.astype(work, copy=False)
    logy = _log_softmax(xp, logits)

    labels = label.astype('int64')
    max_len = labels.shape[1]
    padding = labels == (0 if blank_label == 'first' else -1)
    first_pad = xp.where(padding.any(axis=1), padding.argmax(axis=1), max_len)
    label_len = _lengths(label_lengths, use_label_lengths, first_pad, 0, max_len, 'label')
    time_len = _lengths(data_lengths, use_data_lengths, xp.full(batch, steps, dtype='int64'),
                        1, steps, 'data')
    within = xp.arange(max_len)[None, :] < label_len[:, None]
    if bool((within & ((labels < 0) | (labels >= classes))).any()):
        raise MXNetError('CTCLoss: labels must lie in [0, %d), the %d classes of data'
                         % (classes, classes))

    # the extended labels l', their log probabilities and where l' may skip a blank
    positions = 2 * max_len + 1
    ext = xp.full((batch, positions), blank, dtype='int64')
    ext[:, 1::2] = xp.where(within, labels, blank)
    skip = xp.zeros((batch, positions), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    logy_ext = xp.take_along_axis(logy, xp.broadcast_to(ext, (steps,) + ext.shape), axis=2)
    neg_inf = -xp.inf
    last = 2 * label_len  # l'_{S_n - 1}, the final blank
    is_end = (xp.arange(positions)[None, :] == last[:, None]) | \
        ((xp.arange(positions)[None, :] == last[:, None] - 1) & (label_len[:, None] > 0))

    alpha = xp.empty((steps, batch, positions), dtype=work)
    start = xp.full((batch, positions), neg_inf, dtype=work)
    start[:, :2] = logy_ext[0, :, :2]
    alpha[0] = start
    for t in range(1, steps):
        prev = alpha[t - 1]
        paths = xp.logaddexp(prev, _shift(xp, prev, 1, neg_inf))
        paths = xp.logaddexp(paths, xp.where(skip, _shift(xp, prev, 2, neg_inf), neg_inf))
        # samples already past their last step keep their final alphas
        alpha[t] = xp.where((t < time_len)[:, None], paths + logy_ext[t], prev)
    final = alpha[steps - 1]
    log_p = xp.take_along_axis(final, last[:, None], axis=1)[:, 0]
    before_last = xp.take_along_axis(final, xp.maximum(last - 1, 0)[:, None], axis=1)[:, 0]
    log_p = xp.logaddexp(log_p, xp.where(label_len > 0, before_last, neg_inf))
    # as MXNet (warp-ctc): a label that fits no alignment costs 0 and gets no gradient
    loss = xp.where(xp.isfinite(log_p), -log_p, 0)

    def backward(dy):
        beta = xp.empty_like(alpha)
        after = xp.full((batch, positions), neg_inf, dtype=work)
        skip_next = _shift(xp, skip, -2, False)  # may s jump to s + 2?
        for t in range(steps - 1, -1, -1):
            paths = xp.logaddexp(after, _shift(xp, after, -1, neg_inf))
            paths = xp.logaddexp(paths, xp.where(skip_next, _shift(xp, after, -2, neg_inf),
                                                 neg_inf))
            here = paths + logy_ext[t]
            here = xp.where((t == time_len - 1)[:, None],
                            xp.where(is_end, logy_ext[t], neg_inf), here)
            here = xp.where((t >= time_len)[:, None], neg_inf, here)
            beta[t] = after = here
        finite = xp.isfinite(log_p)
        log_occ = alpha + beta - logy_ext - xp.where(finite, log_p, 0)[None, :, None]
        occupancy = xp.exp(log_occ)  # (T, N, S)
        one_hot = (ext[:, :, None] == xp.arange(classes)[None, None, :]).astype(work)
        by_class = xp.matmul(occupancy.transpose(1, 0, 2), one_hot).transpose(1, 0, 2)
        active = (xp.arange(steps)[:, None] < time_len[None, :]) & finite[None, :]
        # where, not a product: the steps past a sample's length may hold anything (NaN)
        grad = xp.where(active[:, :, None], xp.exp(logy) - by_class, 0).astype(work)
        grad *= dy.astype(work, copy=False)[None, :, None]
        return grad.astype(data.dtype, copy=False), None, None, None
    return loss.astype(data.dtype, copy=False), backward
