"""Object-detection ops of MXNet 1.x's ``nd.contrib``: ``box_iou``, ``box_nms``,
``bipartite_matching``, ``MultiBoxPrior``, ``MultiBoxTarget``, ``MultiBoxDetection``,
``box_encode`` and ``box_decode``.

Boxes are ``corner`` encoded (``[xmin, ymin, xmax, ymax]``) or ``center`` encoded
(``[x, y, width, height]``). The greedy steps (suppression, matching) are sequential by
nature: they loop in Python over boxes or matches, each step one array operation over
the whole batch (or the whole image), so the work per step stays vectorised.

As in MXNet, only ``box_nms`` passes gradients (to the rows it keeps, where they went);
MXNet's other detection ops have backwards that write zeros, so they are not
differentiable here.
"""
import numpy as np

from ...base import MXNetError
from ..registry import register

_FORMATS = ('corner', 'center')


def _check_format(op, name, value):
    if value not in _FORMATS:
        raise MXNetError("%s: %s must be 'corner' or 'center', got %r" % (op, name, value))


def _floats(op, name, value, length=None):
    """A tuple parameter (``sizes=(0.5, 0.25)``; one number is a tuple of one)."""
    values = (value,) if np.isscalar(value) else tuple(value)
    if length is not None and len(values) != length:
        raise MXNetError('%s: %s must hold %d numbers, got %r' % (op, name, length, value))
    return tuple(float(v) for v in values)


def _intersect(xp, a_lo, a_hi, b_lo, b_hi, encode):
    """The overlap of intervals along one axis, clamped at 0 (MXNet's ``Intersect``):
    for ``center``, ``*_lo`` are centres and ``*_hi`` lengths."""
    if encode == 'center':
        a_lo, a_hi = a_lo - a_hi / 2, a_lo + a_hi / 2
        b_lo, b_hi = b_lo - b_hi / 2, b_lo + b_hi / 2
    width = xp.minimum(a_hi, b_hi) - xp.maximum(a_lo, b_lo)
    return xp.maximum(width, 0)


def _area(xp, box, encode):
    """Box areas over the last axis (0 where a width or height is negative)."""
    if encode == 'center':
        width, height = box[..., 2], box[..., 3]
    else:
        width, height = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    return xp.where((width < 0) | (height < 0), 0, width * height).astype(box.dtype)


def _intersection(xp, a, b, encode):
    """Intersection areas of boxes ``a`` and ``b`` (broadcast against each other)."""
    return (_intersect(xp, a[..., 0], a[..., 2], b[..., 0], b[..., 2], encode)
            * _intersect(xp, a[..., 1], a[..., 3], b[..., 1], b[..., 3], encode))


@register('_contrib_box_iou', num_inputs=2, differentiable=False)
def box_iou(xp, lhs, rhs, format='corner'):  # pylint: disable=redefined-builtin
    """Intersection over union of every box of ``lhs`` with every box of ``rhs``.

    ``lhs`` ``(..., 4)`` and ``rhs`` ``(..., 4)`` give an output of shape
    ``lhs.shape[:-1] + rhs.shape[:-1]``; pairs that do not intersect give 0.
    ``format``: ``'corner'`` or ``'center'``.
    """
    _check_format('box_iou', 'format', format)
    for name, arr in (('lhs', lhs), ('rhs', rhs)):
        if arr.ndim < 2 or arr.shape[-1] != 4:
            raise MXNetError('box_iou: %s must have 2 or more dimensions, the last of 4 '
                             '(one box), got shape %s' % (name, arr.shape))
    a = lhs.reshape(-1, 1, 4)
    b = rhs.reshape(1, -1, 4)
    inter = _intersection(xp, a, b, format)
    union = _area(xp, a, format) + _area(xp, b, format) - inter
    positive = inter > 0
    iou = xp.where(positive, inter / xp.where(positive, union, 1), 0).astype(lhs.dtype)
    return iou.reshape(lhs.shape[:-1] + rhs.shape[:-1])


def _check_nms_layout(data, coord_start, score_index, id_index):
    if data.ndim < 2:
        raise MXNetError('box_nms: data must have 2 or more dimensions (..., num_boxes, '
                         'box_width), got shape %s' % (data.shape,))
    width = data.shape[-1]
    expected = 6 if id_index >= 0 else 5
    if width < expected:
        raise MXNetError('box_nms: each box needs at least %d values (score, 4 coordinates%s), '
                         'got %d' % (expected, ', class id' if id_index >= 0 else '', width))
    coord_end = coord_start + 3
    if not 0 <= coord_start or coord_end >= width:
        raise MXNetError('box_nms: coordinates %d..%d are out of range for boxes of width %d'
                         % (coord_start, coord_end, width))
    for name, index in (('score_index', score_index), ('id_index', id_index)):
        if name == 'id_index' and index < 0:
            continue
        if not 0 <= index < width:
            raise MXNetError('box_nms: %s %d is out of range for boxes of width %d'
                             % (name, index, width))
        if coord_start <= index <= coord_end:
            raise MXNetError('box_nms: %s %d falls on the coordinates %d..%d'
                             % (name, index, coord_start, coord_end))
    if id_index >= 0 and id_index == score_index:
        raise MXNetError('box_nms: id_index and score_index are both %d' % id_index)


def _convert_boxes(xp, boxes, to_center):
    """Boxes re-encoded (corner <-> center), leaving those whose first value is negative
    (MXNet's marker of a removed box) as they are."""
    a, b, c, d = (boxes[..., i] for i in range(4))
    if to_center:
        new = xp.stack([(a + c) / 2, (b + d) / 2, c - a, d - b], axis=-1)
    else:
        new = xp.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=-1)
    return xp.where((a < 0)[..., None], boxes, new.astype(boxes.dtype))


@register('_contrib_box_nms', num_inputs=1)
def box_nms(xp, data, overlap_thresh=0.5, valid_thresh=0, topk=-1, coord_start=2,
            score_index=1, id_index=-1, background_id=-1, force_suppress=False,
            in_format='corner', out_format='corner'):
    """Non-maximum suppression of boxes ``(..., num_boxes, box_width)``.

    Per image (every leading axis is a batch axis), boxes with score above
    ``valid_thresh`` (and class other than ``background_id`` when ``id_index >= 0``)
    are sorted by descending score (ties keep their order), the first ``topk`` of them
    (all for -1) go through greedy suppression (a box is dropped when its IoU with a
    kept box of higher score exceeds ``overlap_thresh``; only within its class unless
    ``force_suppress`` or no ``id_index``), and the kept boxes are written first, in
    that order; every other row is -1. ``out_format`` re-encodes the coordinates of
    output rows whose first coordinate is not negative. With ``topk=0`` the output is
    the input.

    The gradient of each kept row goes to the input row it came from.
    """
    _check_format('box_nms', 'in_format', in_format)
    _check_format('box_nms', 'out_format', out_format)
    _check_nms_layout(data, coord_start, score_index, id_index)
    shape = data.shape
    num_elem, width = shape[-2], shape[-1]
    x = data.reshape(-1, num_elem, width)
    k = num_elem if topk < 0 else min(num_elem, topk)
    if k < 1:
        return data.copy(), lambda dy: (dy.copy(),)

    scores = x[:, :, score_index]
    # MXNet compares scores with the threshold in their dtype, IoUs with it as float32
    valid = scores > x.dtype.type(np.float32(valid_thresh))
    if id_index >= 0:
        valid &= x[:, :, id_index] != background_id
    # descending scores, ties in input order, the invalid boxes last
    order = xp.argsort(xp.where(valid, -scores, 0), axis=1, kind='stable')
    order = xp.take_along_axis(
        order, xp.argsort(~xp.take_along_axis(valid, order, axis=1), axis=1, kind='stable'),
        axis=1)[:, :k]
    alive = xp.arange(k)[None, :] < valid.sum(axis=1)[:, None]
    cand = xp.take_along_axis(x, order[:, :, None], axis=1)  # (batch, k, width)
    boxes = cand[:, :, coord_start:coord_start + 4]
    areas = _area(xp, boxes, in_format)
    classes = cand[:, :, id_index].astype('int64') if id_index >= 0 and not force_suppress \
        else None
    later = xp.arange(k)
    for ref in range(k - 1):
        ref_box = boxes[:, ref:ref + 1]
        inter = _intersection(xp, ref_box, boxes, in_format)
        union = areas[:, ref:ref + 1] + areas - inter
        # a zero union is 0/0 in MXNet: NaN, which suppresses nothing
        iou = inter / xp.where(union == 0, 1, union)
        drop = (union != 0) & (iou.astype('float64') > float(np.float32(overlap_thresh)))
        drop &= (later > ref)[None, :] & alive[:, ref:ref + 1]
        if classes is not None:
            drop &= classes == classes[:, ref:ref + 1]
        alive &= ~drop

    rank = xp.cumsum(alive, axis=1) - 1
    b_idx, k_idx = xp.nonzero(alive)
    src, dst = order[b_idx, k_idx], rank[b_idx, k_idx]
    out = xp.full(x.shape, -1, dtype=x.dtype)
    out[b_idx, dst] = x[b_idx, src]
    if in_format != out_format:
        out[:, :, coord_start:coord_start + 4] = _convert_boxes(
            xp, out[:, :, coord_start:coord_start + 4], out_format == 'center')

    def backward(dy):
        dy = dy.reshape(x.shape)
        dx = xp.zeros_like(dy)
        dx[b_idx, src] = dy[b_idx, dst]
        return (dx.reshape(shape),)
    return out.reshape(shape), backward


@register('_contrib_bipartite_matching', num_inputs=1, differentiable=False)
def bipartite_matching(xp, data, is_ascend=False, threshold=None, topk=-1):
    """Greedy bipartite matching of a score matrix ``(..., rows, cols)``.

    Repeatedly the best remaining score (highest, or lowest with ``is_ascend``; ties
    go to the earlier entry) whose row and column are both unmatched is matched, while
    it is above ``threshold`` (below it with ``is_ascend``). ``topk > 0`` stops after
    ``topk + 1`` matches, as MXNet's kernel does.

    Returns ``(row_match (..., rows), col_match (..., cols))``: the matched column of
    each row and row of each column, -1 where unmatched.
    """
    if threshold is None:
        raise MXNetError('bipartite_matching: the parameter threshold is required')
    if data.ndim < 2:
        raise MXNetError('bipartite_matching: data must have 2 or more dimensions (..., '
                         'rows, cols), got shape %s' % (data.shape,))
    rows, cols = data.shape[-2:]
    scores = data.reshape(-1, rows * cols)
    batch = scores.shape[0]
    row_match = xp.full((batch, rows), -1, dtype=data.dtype)
    col_match = xp.full((batch, cols), -1, dtype=data.dtype)
    free = xp.ones(scores.shape, dtype=bool)
    going = xp.ones(batch, dtype=bool)
    worst = xp.asarray(np.inf if is_ascend else -np.inf, dtype=data.dtype)
    samples = xp.arange(batch)
    limit = min(rows, cols) if topk <= 0 else min(rows, cols, topk + 1)
    for _ in range(limit):
        masked = xp.where(free, scores, worst)
        best = xp.argmin(masked, axis=1) if is_ascend else xp.argmax(masked, axis=1)
        value = scores[samples, best]
        value, limit_value = value.astype('float64'), float(np.float32(threshold))
        good = (value < limit_value) if is_ascend else (value > limit_value)
        going &= free[samples, best] & good
        if not bool(going.any()):
            break
        r, c = best // cols, best % cols
        hit = samples[going]
        row_match[hit, r[going]] = c[going].astype(data.dtype)
        col_match[hit, c[going]] = r[going].astype(data.dtype)
        taken = ((xp.arange(rows * cols) // cols)[None, :] == r[:, None]) | \
            ((xp.arange(rows * cols) % cols)[None, :] == c[:, None])
        free &= ~(taken & going[:, None])
    lead = data.shape[:-2]
    return row_match.reshape(lead + (rows,)), col_match.reshape(lead + (cols,))


@register('_contrib_MultiBoxPrior', num_inputs=1, differentiable=False)
def multibox_prior(xp, data, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0),
                   offsets=(0.5, 0.5)):
    """SSD's anchor boxes for a feature map ``data (batch, channels, height, width)``.

    At each position (row-major), one box per size with the first ratio, then one per
    further ratio with the first size: ``len(sizes) + len(ratios) - 1`` boxes, corner
    encoded, relative to the map's size. ``steps`` ``(step_y, step_x)`` -1 means one
    cell; ``offsets`` ``(y, x)`` place the centre within a cell; ``clip`` clips the
    boxes to [0, 1]. Output ``(1, height * width * boxes_per_position, 4)``. The
    arithmetic is float32, as MXNet's kernel.
    """
    sizes = _floats('MultiBoxPrior', 'sizes', sizes)
    ratios = _floats('MultiBoxPrior', 'ratios', ratios)
    steps = _floats('MultiBoxPrior', 'steps', steps, 2)
    offsets = _floats('MultiBoxPrior', 'offsets', offsets, 2)
    if data.ndim < 4:
        raise MXNetError('MultiBoxPrior: data must be 4-D (batch, channel, y, x), got shape '
                         '%s' % (data.shape,))
    if not sizes or not ratios:
        raise MXNetError('MultiBoxPrior: sizes and ratios need at least one value each')
    if not all(0 <= o <= 1 for o in offsets):
        raise MXNetError('MultiBoxPrior: offsets must lie in [0, 1], got %r' % (offsets,))
    if steps[0] * steps[1] < 0:
        raise MXNetError('MultiBoxPrior: give both steps (step_y, step_x) or neither, got %r'
                         % (steps,))
    height, width = data.shape[2], data.shape[3]
    f32 = np.float32
    step_y, step_x = (f32(1) / f32(height), f32(1) / f32(width)) \
        if steps[0] <= 0 or steps[1] <= 0 else (f32(steps[0]), f32(steps[1]))
    # (size, sqrt(ratio)) of each box of a position, in MXNet's order
    shapes = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    half_w = np.array([f32(s) * f32(height) / f32(width) * np.sqrt(f32(r)) / f32(2)
                       for s, r in shapes], dtype=f32)
    half_h = np.array([f32(s) / np.sqrt(f32(r)) / f32(2) for s, r in shapes], dtype=f32)
    center_y = (xp.arange(height, dtype=f32) + f32(offsets[0])) * step_y
    center_x = (xp.arange(width, dtype=f32) + f32(offsets[1])) * step_x
    cy = center_y[:, None, None]
    cx = center_x[None, :, None]
    half_w, half_h = xp.asarray(half_w)[None, None, :], xp.asarray(half_h)[None, None, :]
    grid = (height, width, len(shapes))
    out = xp.stack([xp.broadcast_to(cx - half_w, grid), xp.broadcast_to(cy - half_h, grid),
                    xp.broadcast_to(cx + half_w, grid), xp.broadcast_to(cy + half_h, grid)],
                   axis=-1)
    if clip:
        out = xp.clip(out, 0, 1)
    return out.reshape(1, -1, 4).astype(data.dtype)


def _match_anchors(xp, overlaps, overlap_threshold):
    """MXNet's anchor-to-ground-truth matching of one image.

    ``overlaps`` (anchors, gts) float32. First each ground truth gets, greedily, its best
    still-free anchor (best IoU first, above 1e-6); then, when ``overlap_threshold > 0``,
    every other anchor whose best IoU exceeds it. Returns ``(flags, best_iou, best_gt)``:
    flags 1 for a positive anchor and -1 for undecided; ``best_iou`` -1 where not worked
    out (MXNet's marker).
    """
    num_anchors, num_gt = overlaps.shape
    flags = xp.full(num_anchors, -1, dtype='int8')
    best_iou = xp.full(num_anchors, -1, dtype='float32')
    best_gt = xp.full(num_anchors, -1, dtype='int64')
    anchor_free = xp.ones(num_anchors, dtype=bool)
    gt_free = xp.ones(num_gt, dtype=bool)
    for _ in range(num_gt):
        masked = xp.where(anchor_free[:, None] & gt_free[None, :], overlaps, -1)
        flat = int(xp.argmax(masked))
        value = masked.reshape(-1)[flat]
        if not bool(value > np.float32(1e-6)):
            break
        anchor, gt = divmod(flat, num_gt)
        best_iou[anchor], best_gt[anchor], flags[anchor] = value, gt, 1
        anchor_free[anchor] = False
        gt_free[gt] = False
    if overlap_threshold > 0:
        rest = flags != 1
        top_gt = xp.argmax(overlaps, axis=1)
        top_iou = xp.max(overlaps, axis=1)
        best_gt = xp.where(rest, top_gt, best_gt)
        best_iou = xp.where(rest, top_iou, best_iou)
        flags = xp.where(rest & (top_iou > np.float32(overlap_threshold)), 1, flags) \
            .astype('int8')
    return flags, best_iou, best_gt


def _background_prob(xp, preds):
    """Softmax probability of class 0 for each anchor of ``preds (classes, anchors)``,
    summed class by class in the input's precision as MXNet's loop does."""
    top = preds.max(axis=0)
    total = xp.zeros_like(top)
    for k in range(preds.shape[0]):
        total = total + xp.exp(preds[k] - top)
    return xp.exp(preds[0] - top) / total


def _loc_targets(xp, anchors, gts, variances):
    """SSD box-regression targets of ``anchors`` towards ``gts`` (both (n, 4) corner),
    in float32 as MXNet computes them."""
    a = anchors.astype('float32')
    g = gts.astype('float32')
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    ax, ay = (a[:, 0] + a[:, 2]) * np.float32(0.5), (a[:, 1] + a[:, 3]) * np.float32(0.5)
    gw, gh = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    gx, gy = (g[:, 0] + g[:, 2]) * np.float32(0.5), (g[:, 1] + g[:, 3]) * np.float32(0.5)
    vx, vy, vw, vh = (np.float32(v) for v in variances)
    return xp.stack([(gx - ax) / aw / vx, (gy - ay) / ah / vy,
                     xp.log(gw / aw) / vw, xp.log(gh / ah) / vh], axis=1)


@register('_contrib_MultiBoxTarget', num_inputs=3, differentiable=False)
def multibox_target(xp, anchor, label, cls_pred, overlap_threshold=0.5, ignore_label=-1.0,
                    negative_mining_ratio=-1.0, negative_mining_thresh=0.5,
                    minimum_negative_samples=0, variances=(0.1, 0.1, 0.2, 0.2)):
    """SSD training targets: match anchors to ground-truth boxes.

    ``anchor (1, anchors, 4)``, ``label (batch, labels, width >= 5)`` rows ``[class,
    xmin, ymin, xmax, ymax, ...]`` padded with rows starting -1, ``cls_pred (batch,
    classes, anchors)``. Positives (each ground truth's best anchor, then anchors whose
    best IoU exceeds ``overlap_threshold``) get class + 1 and box targets encoded with
    ``variances``. With ``negative_mining_ratio > 0``, up to ratio x positives anchors
    whose best IoU is below ``negative_mining_thresh`` and whose background
    probability (softmax of ``cls_pred``) is lowest become negatives (class 0), the
    rest ``ignore_label``; otherwise every non-positive anchor is negative. An image
    without ground truth is all ``ignore_label``. ``minimum_negative_samples`` is
    accepted and, as in MXNet's CPU kernel, unused.

    Returns ``(loc_target (batch, anchors*4), loc_mask (batch, anchors*4),
    cls_target (batch, anchors))``.
    """
    variances = _floats('MultiBoxTarget', 'variances', variances, 4)
    if anchor.ndim != 3 or anchor.shape[0] != 1 or anchor.shape[2] != 4 \
            or anchor.shape[1] < 1:
        raise MXNetError('MultiBoxTarget: anchor must have shape (1, num_anchors, 4), shared '
                         'by the batch, got %s' % (anchor.shape,))
    if label.ndim != 3 or label.shape[1] < 1 or label.shape[2] < 5:
        raise MXNetError('MultiBoxTarget: label must have shape (batch, num_labels, width >= '
                         '5), got %s' % (label.shape,))
    if cls_pred.ndim != 3 or cls_pred.shape[2] != anchor.shape[1]:
        raise MXNetError('MultiBoxTarget: cls_pred must have shape (batch, num_classes, %d), '
                         'got %s' % (anchor.shape[1], cls_pred.shape))
    dtype = cls_pred.dtype
    anchors = anchor[0].astype(dtype)
    batch, num_anchors = label.shape[0], anchors.shape[0]
    loc_target = xp.zeros((batch, num_anchors, 4), dtype=dtype)
    loc_mask = xp.zeros((batch, num_anchors, 4), dtype=dtype)
    cls_target = xp.full((batch, num_anchors), ignore_label, dtype=dtype)
    a = anchors[:, None, :]
    for b in range(batch):
        labels = label[b].astype(dtype)
        padding = xp.nonzero(labels[:, 0] == -1)[0]
        num_gt = int(padding[0]) if padding.size else labels.shape[0]
        if num_gt == 0:
            continue
        g = labels[None, :num_gt, 1:5]
        inter = xp.maximum(0, xp.minimum(a[..., 2], g[..., 2]) - xp.maximum(a[..., 0], g[..., 0])) \
            * xp.maximum(0, xp.minimum(a[..., 3], g[..., 3]) - xp.maximum(a[..., 1], g[..., 1]))
        union = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) \
            + (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1]) - inter
        overlaps = xp.where(union == 0, 0, inter / xp.where(union == 0, 1, union))
        flags, best_iou, best_gt = _match_anchors(xp, overlaps.astype('float32'),
                                                  overlap_threshold)
        positive = flags == 1
        num_positive = int(positive.sum())
        if negative_mining_ratio > 0:
            if not negative_mining_thresh > 0:
                raise MXNetError('MultiBoxTarget: negative_mining_thresh must be > 0 with '
                                 'negative mining, got %r' % negative_mining_thresh)
            num_negative = min(int(np.float32(num_positive) * np.float32(negative_mining_ratio)),
                               num_anchors - num_positive)
            if num_negative > 0:
                unknown = best_iou < 0
                ov32 = overlaps.astype('float32')
                best_gt = xp.where(unknown, xp.argmax(ov32, axis=1), best_gt)
                best_iou = xp.where(unknown, ov32.max(axis=1), best_iou)
                pool = (flags == -1) & (best_iou < np.float32(negative_mining_thresh))
                candidates = xp.nonzero(pool)[0]
                if candidates.size < num_negative:
                    raise MXNetError('MultiBoxTarget: %d negatives wanted but only %d anchors '
                                     'qualify; lower negative_mining_ratio or raise '
                                     'negative_mining_thresh'
                                     % (num_negative, int(candidates.size)))
                prob = _background_prob(xp, cls_pred[b][:, candidates]).astype('float32')
                hardest = candidates[xp.argsort(prob, kind='stable')[:num_negative]]
                flags[hardest] = 0
        else:
            flags = xp.where(positive, 1, 0).astype('int8')
        gt_rows = labels[xp.maximum(best_gt, 0)]
        cls_target[b] = xp.where(positive, gt_rows[:, 0] + 1,
                                 xp.where(flags == 0, 0, cls_target[b]))
        loc_mask[b] = positive[:, None].astype(dtype)
        targets = _loc_targets(xp, anchors, gt_rows[:, 1:5], variances).astype(dtype)
        loc_target[b] = xp.where(positive[:, None], targets, 0)
    return loc_target.reshape(batch, -1), loc_mask.reshape(batch, -1), cls_target


@register('_contrib_MultiBoxDetection', num_inputs=3, differentiable=False)
def multibox_detection(xp, cls_prob, loc_pred, anchor, clip=True, threshold=0.01,
                       background_id=0, nms_threshold=0.5, force_suppress=False,
                       variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    """SSD detections from class probabilities and box regressions.

    ``cls_prob (batch, classes, anchors)`` (class 0 the background), ``loc_pred (batch,
    anchors*4)``, ``anchor (1, anchors, 4)``. Each anchor takes its most probable
    non-background class (class -1 when that probability is below ``threshold``) and
    its box decoded with ``variances`` (clipped to [0, 1] with ``clip``). The kept
    anchors come first; when ``0 < nms_threshold <= 1`` they are sorted by descending
    probability, cut to ``nms_topk`` (> 0) and suppressed greedily (IoU >=
    ``nms_threshold``, within a class unless ``force_suppress``), a suppressed row
    getting class -1. Other rows are -1. Output ``(batch, anchors, 6)`` rows ``[class,
    prob, xmin, ymin, xmax, ymax]``. ``background_id`` is accepted and, as in MXNet's
    CPU kernel, class 0 is the background.
    """
    variances = _floats('MultiBoxDetection', 'variances', variances, 4)
    if cls_prob.ndim != 3 or loc_pred.ndim != 2 or anchor.ndim != 3 or anchor.shape[2] != 4:
        raise MXNetError('MultiBoxDetection: expected cls_prob (batch, classes, anchors), '
                         'loc_pred (batch, anchors*4) and anchor (1, anchors, 4), got %s, %s '
                         'and %s' % (cls_prob.shape, loc_pred.shape, anchor.shape))
    batch, num_classes, num_anchors = cls_prob.shape
    if anchor.shape[1] != num_anchors or loc_pred.shape[1] != 4 * num_anchors:
        raise MXNetError('MultiBoxDetection: %d anchors in cls_prob, but anchor has shape %s '
                         'and loc_pred %s' % (num_anchors, anchor.shape, loc_pred.shape))
    dtype = cls_prob.dtype
    out = xp.full((batch, num_anchors, 6), -1, dtype=dtype)
    if num_classes > 1:
        fg = cls_prob[:, 1:, :]
        score = fg.max(axis=1)
        cls_id = xp.argmax(fg, axis=1).astype(dtype)  # class - 1
        none = ~(score > -1)  # MXNet starts from -1: nothing above it leaves class 0
        score = xp.where(none, -1, score)
        cls_id = xp.where(none | (score < dtype.type(np.float32(threshold))), -1, cls_id)
    else:
        score = xp.full((batch, num_anchors), -1, dtype=dtype)
        cls_id = xp.full((batch, num_anchors), -1, dtype=dtype)
    boxes = _decode(xp, anchor[0].astype(dtype), loc_pred.reshape(batch, num_anchors, 4),
                    clip, variances)
    rows = xp.concatenate([cls_id[..., None], score[..., None], boxes], axis=-1)
    run_nms = 0 < nms_threshold <= 1
    for b in range(batch):
        kept = rows[b][cls_id[b] >= 0]
        count = kept.shape[0]
        out[b, :count] = kept
        if count < 1 or not run_nms:
            continue
        order = xp.argsort(-kept[:, 1], kind='stable')
        nkeep = count if nms_topk <= 0 else min(nms_topk, count)
        out[b, nkeep:count, 0] = -1
        top = kept[order[:nkeep]]
        ids = top[:, 0].copy()
        area = (top[:, 4] - top[:, 2]) * (top[:, 5] - top[:, 3])
        for i in range(nkeep - 1):
            if not bool(ids[i] >= 0):
                continue
            w = xp.maximum(0, xp.minimum(top[i, 4], top[i + 1:, 4])
                           - xp.maximum(top[i, 2], top[i + 1:, 2]))
            h = xp.maximum(0, xp.minimum(top[i, 5], top[i + 1:, 5])
                           - xp.maximum(top[i, 3], top[i + 1:, 3]))
            inter = w * h
            union = area[i] + area[i + 1:] - inter
            iou = xp.where(union <= 0, 0, inter / xp.where(union <= 0, 1, union))
            drop = (ids[i + 1:] >= 0) & (iou >= dtype.type(np.float32(nms_threshold)))
            if not force_suppress:
                drop &= ids[i + 1:] == ids[i]
            ids[i + 1:] = xp.where(drop, -1, ids[i + 1:])
        top[:, 0] = ids
        out[b, :nkeep] = top
    return out


def _decode(xp, anchors, loc, clip, variances):
    """Boxes from SSD regressions ``loc (batch, anchors, 4)`` around corner ``anchors``."""
    aw = anchors[:, 2] - anchors[:, 0]
    ah = anchors[:, 3] - anchors[:, 1]
    ax = (anchors[:, 0] + anchors[:, 2]) / 2
    ay = (anchors[:, 1] + anchors[:, 3]) / 2
    dt = loc.dtype.type
    vx, vy, vw, vh = (dt(np.float32(v)) for v in variances)
    ox = loc[..., 0] * vx * aw + ax
    oy = loc[..., 1] * vy * ah + ay
    ow = xp.exp(loc[..., 2] * vw) * aw / 2
    oh = xp.exp(loc[..., 3] * vh) * ah / 2
    boxes = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)
    if clip:
        boxes = xp.maximum(0, xp.minimum(1, boxes))
    return boxes.astype(loc.dtype)


@register('_contrib_box_encode', num_inputs=6, differentiable=False)
def box_encode(xp, samples, matches, anchors, refs, means, stds):
    """Box-regression targets of ``anchors (B, N, 4)`` towards their matched ``refs
    (B, M, 4)`` (both corner encoded): ``((dx, dy, log dw, log dh) - means) / stds`` for
    anchors whose ``samples (B, N)`` value is above 0.5, 0 elsewhere. ``matches (B, N)``
    gives each anchor's row of ``refs``.

    Returns ``(targets (B, N, 4), masks (B, N, 4))``, masks 1 where a target is set.
    """
    if samples.ndim != 2 or anchors.ndim != 3 or anchors.shape[-1] != 4 or refs.ndim != 3 \
            or refs.shape[-1] != 4 or means.shape != (4,) or stds.shape != (4,):
        raise MXNetError('box_encode: expected samples (B, N), matches (B, N), anchors '
                         '(B, N, 4), refs (B, M, 4), means (4,) and stds (4,), got %s'
                         % ([a.shape for a in (samples, matches, anchors, refs, means,
                                               stds)],))
    dtype = anchors.dtype
    index = matches.astype('int64')
    ref = xp.take_along_axis(refs.astype(dtype), index[..., None], axis=1)

    def centre(box):
        width, height = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
        return box[..., 0] + width * 0.5, box[..., 1] + height * 0.5, width, height
    rx, ry, rw, rh = centre(ref)
    ax, ay, aw, ah = centre(anchors)
    means, stds = means.astype(dtype), stds.astype(dtype)
    valid = samples > 0.5
    with np.errstate(divide='ignore', invalid='ignore'):
        targets = xp.stack([((rx - ax) / aw - means[0]) / stds[0],
                            ((ry - ay) / ah - means[1]) / stds[1],
                            (xp.log(rw / aw) - means[2]) / stds[2],
                            (xp.log(rh / ah) - means[3]) / stds[3]], axis=-1)
    masks = xp.broadcast_to(valid[..., None], targets.shape).astype(dtype)
    return xp.where(valid[..., None], targets, 0).astype(dtype), masks


@register('_contrib_box_decode', num_inputs=2, differentiable=False)
def box_decode(xp, data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0,
               format='center'):  # pylint: disable=redefined-builtin
    """Corner boxes from regressions ``data (B, N, 4)`` around ``anchors (1, N, 4)``
    (encoded as ``format`` says): centre ``+ data * std * anchor size``, size ``anchor
    size * exp(data * std)``, the log-size offsets capped at ``clip`` when it is > 0.
    """
    _check_format('box_decode', 'format', format)
    if data.ndim != 3 or data.shape[-1] != 4 or anchors.ndim < 3 or anchors.shape[-1] != 4:
        raise MXNetError('box_decode: expected data (B, N, 4) and anchors (1, N, 4), got %s '
                         'and %s' % (data.shape, anchors.shape))
    dtype = data.dtype
    a = anchors.reshape(-1, 4)[:data.shape[1]].astype(dtype)
    ax, ay, aw, ah = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    if format == 'corner':
        aw, ah = aw - ax, ah - ay
        ax, ay = ax + aw * 0.5, ay + ah * 0.5
    std = [dtype.type(np.float32(s)) for s in (std0, std1, std2, std3)]
    ox = data[..., 0] * std[0] * aw + ax
    oy = data[..., 1] * std[1] * ah + ay
    dw, dh = data[..., 2] * std[2], data[..., 3] * std[3]
    if clip > 0:
        bound = dtype.type(np.float32(clip))
        dw, dh = xp.minimum(dw, bound), xp.minimum(dh, bound)
    ow, oh = xp.exp(dw) * aw * 0.5, xp.exp(dh) * ah * 0.5
    return xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1).astype(dtype)
