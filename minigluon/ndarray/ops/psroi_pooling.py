"""contrib's PSROIPooling: position-sensitive ROI average pooling (R-FCN, Dai et al. 2016),
following MXNet 1.x's kernel (ROI corners rounded to pixels, bins from floor to ceil).

Bin ``(i, j)`` of output channel ``k`` averages input channel
``(k * group_size + gi) * group_size + gj`` over the pixels of the bin, where ``(gi, gj)``
is the bin's cell in a ``group_size`` x ``group_size`` grid. A bin's pixel set is a row
range times a column range, so each ROI's sums are ``rows @ image @ cols.T`` with 0/1
matrices, divided by the bin's area.
"""
import numpy as np

from ... import backend
from ...base import MXNetError
from ..registry import register
from .vision import host_rois


def _bin_ranges(start, size, pooled, limit, dtype):
    """``(R, pooled, limit)`` 0/1 matrices: which pixels each bin covers along one axis."""
    dt = np.dtype(dtype).type
    bins = size / dt(pooled)
    p = np.arange(pooled, dtype=dtype)
    low = np.floor(p[None] * bins[:, None] + start[:, None]).astype(np.int64)
    high = np.ceil((p[None] + dt(1)) * bins[:, None] + start[:, None]).astype(np.int64)
    low, high = np.clip(low, 0, limit), np.clip(high, 0, limit)
    pixels = np.arange(limit)
    return (pixels >= low[..., None]) & (pixels < high[..., None]), high - low


@register('_contrib_PSROIPooling', num_inputs=2)
def psroi_pooling(xp, data, rois, spatial_scale=None, output_dim=None, pooled_size=None,
                  group_size=0):
    """Position-sensitive average pooling of each region of interest into
    ``pooled_size`` x ``pooled_size`` bins, giving ``(R, output_dim, pooled_size,
    pooled_size)``.

    ``rois`` is ``(R, 5)`` ``[batch_index, x1, y1, x2, y2]`` in image pixels, scaled by
    ``spatial_scale``; ``data`` needs at least ``output_dim * group_size ** 2`` channels
    (``group_size`` defaults to ``pooled_size``). Empty bins give 0; rois get no gradient.
    """
    if spatial_scale is None or output_dim is None or pooled_size is None:
        raise MXNetError('PSROIPooling needs spatial_scale, output_dim and pooled_size')
    if data.ndim != 4:
        raise MXNetError('PSROIPooling expects 4-D data (batch, channel, height, width), got '
                         'shape %s' % (data.shape,))
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise MXNetError('PSROIPooling: rois must be (num_rois, 5) [batch_index, x1, y1, x2, '
                         'y2], got shape %s' % (rois.shape,))
    pooled, dim = int(pooled_size), int(output_dim)
    groups = int(group_size) or pooled
    n, c, h, w = data.shape
    if pooled < 1 or dim < 1 or groups < 1:
        raise MXNetError('PSROIPooling: output_dim, pooled_size and group_size must be '
                         'positive, got %d, %d, %d' % (dim, pooled, groups))
    if c < dim * groups * groups:
        raise MXNetError('PSROIPooling: data needs output_dim * group_size^2 = %d channels, '
                         'got %d' % (dim * groups * groups, c))
    dtype = np.dtype(data.dtype)
    dt = dtype.type
    boxes, batch = host_rois('PSROIPooling', rois, n, dtype)
    scale = dt(np.float32(spatial_scale))
    x1, y1 = np.round(boxes[:, 1]) * scale, np.round(boxes[:, 2]) * scale
    x2, y2 = (np.round(boxes[:, 3]) + dt(1)) * scale, (np.round(boxes[:, 4]) + dt(1)) * scale
    roi_w, roi_h = np.maximum(x2 - x1, dt(0.1)), np.maximum(y2 - y1, dt(0.1))
    rows, heights = _bin_ranges(y1, roi_h, pooled, h, dtype)  # (R, P, H), (R, P)
    cols, widths = _bin_ranges(x1, roi_w, pooled, w, dtype)
    area = (heights[:, :, None] * widths[:, None, :]).astype(dtype)  # (R, P, P)
    inverse = xp.asarray(np.where(area > 0, dt(1) / np.where(area > 0, area, dt(1)), dt(0)))
    cell = np.minimum(np.arange(pooled) * groups // pooled, groups - 1)
    channel = (np.arange(dim)[:, None, None] * groups + cell[:, None]) * groups + cell
    rows, cols = xp.asarray(rows.astype(dtype)), xp.asarray(cols.astype(dtype))
    channel = xp.asarray(channel)  # (dim, P, P): the input channel of each output cell
    count = len(boxes)
    per_image = [(b, xp.asarray(np.nonzero(batch == b)[0])) for b in np.unique(batch)]
    out = xp.zeros((count, dim, pooled, pooled), dtype=data.dtype)
    for b, sel in per_image:
        image = data[b][channel]  # (dim, P, P, H, W)
        sums = xp.einsum('rph,cpqhw,rqw->rcpq', rows[sel], image, cols[sel])
        out[sel] = sums * inverse[sel][:, None]

    def backward(dy):
        grad = xp.zeros(data.shape, dtype=dy.dtype)
        for b, sel in per_image:
            share = dy[sel] * inverse[sel][:, None].astype(dy.dtype)  # (r, dim, P, P)
            spread = xp.einsum('rph,rcpq,rqw->cpqhw', rows[sel], share, cols[sel])
            # several output cells read one channel when pooled_size > group_size
            backend.scatter_add(grad[b], channel.reshape(-1), spread.reshape(-1, h, w))
        return grad, xp.zeros(rois.shape, dtype=rois.dtype)
    return out, backward
