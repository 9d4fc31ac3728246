"""contrib's Proposal and MultiProposal: Faster R-CNN's region proposal layer, following
MXNet 1.x's CPU kernel step by step (anchors, box decoding, small-box filter, stable
descending sort, greedy NMS, padding by repeating the kept boxes).

The work is sequential and small (one NMS per image), so it runs on the host in
float32, as MXNet's kernel does, and the result goes back to the inputs' device.
"""
import numpy as np

from ... import backend
from ...base import MXNetError
from ..registry import register

_F = np.float32


def _anchors(stride, ratios, scales):
    """``(len(ratios) * len(scales), 4)`` anchors around the first cell: ratios outer,
    scales inner, sizes rounded as py-faster-rcnn's generate_anchors does."""
    size = _F(stride) * _F(stride)
    centre = _F(0.5 * (stride - 1.0))
    boxes = []
    for ratio in ratios:
        for scale in scales:
            base = np.floor(size / _F(ratio))
            width = np.floor(np.sqrt(base) + _F(0.5)) * _F(scale)
            height = np.floor(width / _F(scale) * _F(ratio) + _F(0.5)) * _F(scale)
            half_w, half_h = _F(0.5) * (width - _F(1)), _F(0.5) * (height - _F(1))
            boxes.append([centre - half_w, centre - half_h, centre + half_w, centre + half_h])
    return np.array(boxes, dtype=_F)


def _decode(anchors, deltas, im_h, im_w, iou_loss):
    """Boxes ``(N, 4)`` from anchors and deltas ``(N, 4)``, clipped to the image."""
    if iou_loss:
        boxes = anchors + deltas
    else:
        width = anchors[:, 2] - anchors[:, 0] + _F(1)
        height = anchors[:, 3] - anchors[:, 1] + _F(1)
        ctr_x = anchors[:, 0] + _F(0.5) * (width - _F(1))
        ctr_y = anchors[:, 1] + _F(0.5) * (height - _F(1))
        pred_x = deltas[:, 0] * width + ctr_x
        pred_y = deltas[:, 1] * height + ctr_y
        half_w = _F(0.5) * (np.exp(deltas[:, 2]) * width - _F(1))
        half_h = _F(0.5) * (np.exp(deltas[:, 3]) * height - _F(1))
        boxes = np.stack([pred_x - half_w, pred_y - half_h, pred_x + half_w, pred_y + half_h],
                         axis=1)
    limit = np.array([im_w, im_h, im_w, im_h], dtype=_F) - _F(1)
    return np.maximum(np.minimum(boxes, limit), _F(0))


def _nms(boxes, threshold, limit):
    """Indices of the boxes (sorted by descending score) that greedy NMS keeps, at most
    ``limit``: a box goes when its IoU with a kept one is above ``threshold``."""
    area = (boxes[:, 2] - boxes[:, 0] + _F(1)) * (boxes[:, 3] - boxes[:, 1] + _F(1))
    alive, keep = np.arange(len(boxes)), []
    while alive.size and len(keep) < limit:
        i, rest = alive[0], alive[1:]
        keep.append(i)
        w = np.maximum(_F(0), np.minimum(boxes[i, 2], boxes[rest, 2]) -
                       np.maximum(boxes[i, 0], boxes[rest, 0]) + _F(1))
        h = np.maximum(_F(0), np.minimum(boxes[i, 3], boxes[rest, 3]) -
                       np.maximum(boxes[i, 1], boxes[rest, 1]) + _F(1))
        inter = w * h
        alive = rest[~(inter / (area[i] + area[rest] - inter) > _F(threshold))]
    return np.array(keep, dtype=np.int64)


def _propose(scores, deltas, info, anchors, p):
    """One image's ``(post_nms_top_n, 4)`` boxes and ``(post_nms_top_n,)`` scores from its
    foreground scores ``(A, H, W)`` and deltas ``(4 A, H, W)``."""
    num_anchors, height, width = scores.shape
    stride = p['feature_stride']
    shift_y, shift_x = np.meshgrid(np.arange(height), np.arange(width), indexing='ij')
    shifts = np.stack([shift_x, shift_y, shift_x, shift_y], axis=-1) * stride  # (H, W, 4)
    # proposals in (H, W, A) order, as MXNet enumerates them
    boxes = (anchors[None, None] + shifts[:, :, None].astype(_F)).reshape(-1, 4)
    score = scores.transpose(1, 2, 0).reshape(-1).copy()
    deltas = deltas.reshape(num_anchors, 4, height, width).transpose(2, 3, 0, 1).reshape(-1, 4)
    boxes = _decode(boxes, deltas, info[0], info[1], p['iou_loss'])
    real_h, real_w = int(info[0] / _F(stride)), int(info[1] / _F(stride))
    if real_h > height or real_w > width:
        raise MXNetError('Proposal: im_info says the image is %gx%g, larger than the %dx%d '
                         'feature map times feature_stride %d'
                         % (info[0], info[1], height, width, stride))
    padded = (np.arange(height)[:, None, None] >= real_h) | \
        (np.arange(width)[None, :, None] >= real_w)
    score[np.broadcast_to(padded, (height, width, num_anchors)).reshape(-1)] = -1
    min_size = _F(p['rpn_min_size']) * info[2]
    small = (boxes[:, 2] - boxes[:, 0] + _F(1) < min_size) | \
        (boxes[:, 3] - boxes[:, 1] + _F(1) < min_size)
    # MXNet also grows the small boxes it discards, which shows when they are repeated
    boxes[small] += np.array([-1, -1, 1, 1], dtype=_F) * (min_size / _F(2))
    score[small] = -1
    count = len(score)
    pre = p['rpn_pre_nms_top_n']
    pre = min(pre if pre > 0 else count, count)
    order = np.argsort(-score, kind='stable')[:pre]
    boxes, score = boxes[order], score[order]
    keep = _nms(boxes, p['threshold'], min(p['rpn_post_nms_top_n'], pre))
    rows = keep[np.arange(p['rpn_post_nms_top_n']) % len(keep)]
    return boxes[rows], score[rows]


def _run(name, xp, cls_prob, bbox_pred, im_info, params, single):
    if cls_prob.ndim != 4 or cls_prob.shape[1] % 2:
        raise MXNetError('%s: cls_prob must be (batch, 2 * anchors, height, width), got shape '
                         '%s' % (name, cls_prob.shape))
    n, two_a, height, width = cls_prob.shape
    if single and n != 1:
        raise MXNetError('Proposal takes one image (batch size 1), got %d; use MultiProposal '
                         'for a batch' % n)
    if bbox_pred.shape != (n, 2 * two_a, height, width) or im_info.shape != (n, 3):
        raise MXNetError('%s: bbox_pred must be %s and im_info %s, got %s and %s'
                         % (name, (n, 2 * two_a, height, width), (n, 3), bbox_pred.shape,
                            im_info.shape))
    ratios, scales = tuple(params['ratios']), tuple(params['scales'])
    if two_a // 2 != len(ratios) * len(scales):
        raise MXNetError('%s: cls_prob has %d anchors per cell but ratios x scales make %d'
                         % (name, two_a // 2, len(ratios) * len(scales)))
    if params['rpn_post_nms_top_n'] < 1:
        raise MXNetError('%s: rpn_post_nms_top_n must be positive, got %d'
                         % (name, params['rpn_post_nms_top_n']))
    anchors = _anchors(params['feature_stride'], ratios, scales)
    scores = backend.to_host(cls_prob).astype(_F)[:, two_a // 2:]
    deltas = backend.to_host(bbox_pred).astype(_F)
    info = backend.to_host(im_info).astype(_F)
    post = params['rpn_post_nms_top_n']
    rois = np.zeros((n, post, 5), dtype=_F)
    out_scores = np.zeros((n, post, 1), dtype=_F)
    for b in range(n):
        rois[b, :, 0] = b
        rois[b, :, 1:], out_scores[b, :, 0] = _propose(scores[b], deltas[b], info[b], anchors,
                                                       params)
    rois, out_scores = xp.asarray(rois.reshape(-1, 5)), xp.asarray(out_scores.reshape(-1, 1))
    return (rois, out_scores) if params['output_score'] else rois


_DOC = """

    ``cls_prob`` is ``(batch, 2 * A, H, W)`` (background scores, then foreground scores
    of the ``A = len(ratios) * len(scales)`` anchors of each cell), ``bbox_pred`` ``(batch,
    4 * A, H, W)`` and ``im_info`` ``(batch, 3)`` ``[height, width, scale]``. Anchors
    shifted by ``feature_stride`` per cell are decoded by the deltas (``iou_loss``: added
    to the corners) and clipped to the image; cells beyond the image and boxes under
    ``rpn_min_size * scale`` get score -1. The ``rpn_pre_nms_top_n`` best boxes (all for
    <= 0) go through greedy NMS at IoU ``threshold``; the first ``rpn_post_nms_top_n``
    kept boxes are returned as rows ``[batch_index, x1, y1, x2, y2]``, repeated in turn
    when fewer are kept, with their scores (a second output) when ``output_score``.
    Gradients are zero, as in MXNet."""


def _proposal_op(name, single):
    def forward(xp, cls_prob, bbox_pred, im_info, rpn_pre_nms_top_n=6000,
                rpn_post_nms_top_n=300, threshold=0.7, rpn_min_size=16,
                scales=(4.0, 8.0, 16.0, 32.0), ratios=(0.5, 1.0, 2.0), feature_stride=16,
                output_score=False, iou_loss=False):
        params = dict(rpn_pre_nms_top_n=int(rpn_pre_nms_top_n),
                      rpn_post_nms_top_n=int(rpn_post_nms_top_n), threshold=float(threshold),
                      rpn_min_size=int(rpn_min_size), scales=_floats(scales),
                      ratios=_floats(ratios), feature_stride=int(feature_stride),
                      output_score=bool(output_score), iou_loss=bool(iou_loss))
        return _run(name, xp, cls_prob, bbox_pred, im_info, params, single)
    forward.__name__ = name.lower()
    forward.__doc__ = ('Region proposals of one image (batch size 1), as Faster R-CNN\'s RPN '
                       'makes them.' if single else
                       'Region proposals of each image of a batch, as Faster R-CNN\'s RPN '
                       'makes them; image ``b``\'s rows come ``b``-th.') + _DOC
    register('_contrib_' + name, num_inputs=3, differentiable=False)(forward)
    return forward


def _floats(values):
    return (float(values),) if np.isscalar(values) else tuple(float(v) for v in values)


proposal = _proposal_op('Proposal', single=True)
multi_proposal = _proposal_op('MultiProposal', single=False)
