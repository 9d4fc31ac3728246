"""contrib's RROIAlign: ROIAlign over rotated regions of interest (text detection's
Rotation Proposals, Ma et al. 2018), following MXNet 1.x's CPU kernel.

A rotated box's sampling points do not separate into a row part and a column part as
ROIAlign's do, so each point keeps its four bilinear neighbours and their weights
(worked out on the host, the boxes being few) and the op gathers them from the data.
"""
import numpy as np

from ...base import MXNetError
from ..registry import register
from .vision import _pair, _sampling_grid, host_rois


def _corners(y, x, height, width, dtype):
    """Flat indices ``(4, ...)`` of the bilinear neighbours of the points ``(y, x)`` and
    their weights; points more than one pixel outside the map get weight 0."""
    dt = np.dtype(dtype).type
    outside = (y < -1) | (y > height) | (x < -1) | (x > width)
    y, x = np.maximum(y, dt(0)), np.maximum(x, dt(0))
    y_low, x_low = y.astype(np.int64), x.astype(np.int64)
    y_top, x_top = y_low >= height - 1, x_low >= width - 1
    y_low = np.where(y_top, height - 1, y_low)
    x_low = np.where(x_top, width - 1, x_low)
    y_high = np.where(y_top, height - 1, y_low + 1)
    x_high = np.where(x_top, width - 1, x_low + 1)
    ly = np.where(y_top, dt(0), y - y_low.astype(dtype))
    lx = np.where(x_top, dt(0), x - x_low.astype(dtype))
    hy, hx = dt(1) - ly, dt(1) - lx
    index = np.stack([y_low * width + x_low, y_low * width + x_high,
                      y_high * width + x_low, y_high * width + x_high])
    weight = np.stack([hy * hx, hy * lx, ly * hx, ly * lx])
    weight[:, outside] = 0
    index[:, outside] = 0
    return index, weight


@register('_contrib_RROIAlign', num_inputs=2, differentiable=False)
def rroi_align(xp, data, rois, pooled_size=None, spatial_scale=None, sampling_ratio=-1):
    """Average bilinear samples of each rotated region of interest into ``pooled_size``
    bins.

    ``rois`` is ``(R, 6)``: ``[batch_index, center_x, center_y, width, height, theta]``,
    ``theta`` in degrees (counter-clockwise); coordinates are scaled by
    ``spatial_scale``, boxes smaller than one pixel grow to one. Each bin averages
    ``sampling_ratio`` x ``sampling_ratio`` points (adaptive, ``ceil(roi size / pooled
    size)``, when <= 0). MXNet has no backward for it: neither has this op.
    """
    if data.ndim != 4:
        raise MXNetError('RROIAlign expects 4-D data (batch, channel, height, width), got '
                         'shape %s' % (data.shape,))
    if pooled_size is None or spatial_scale is None:
        raise MXNetError('RROIAlign needs pooled_size and spatial_scale')
    if rois.ndim != 2 or rois.shape[1] != 6:
        raise MXNetError('RROIAlign: rois must be (num_rois, 6) [batch_index, x, y, w, h, '
                         'theta], got shape %s' % (rois.shape,))
    ph, pw = _pair('RROIAlign: pooled_size', pooled_size)
    n, c, h, w = data.shape
    dtype = np.dtype(data.dtype)
    dt = dtype.type
    boxes, batch = host_rois('RROIAlign', rois, n, dtype)
    scale = dt(np.float32(spatial_scale))
    cx, cy, roi_w, roi_h = (boxes[:, 1:5] * scale).T
    theta = (boxes[:, 5].astype(np.float64) * np.pi / 180.0).astype(dtype)
    roi_w, roi_h = np.maximum(roi_w, dt(1)), np.maximum(roi_h, dt(1))
    bin_h, bin_w, grid_h, grid_w = _sampling_grid(roi_h, roi_w, ph, pw, sampling_ratio, dt)
    gh, gw = max(int(grid_h.max(initial=1)), 1), max(int(grid_w.max(initial=1)), 1)

    def col(v):  # per-roi values against (R, ph, pw, gh, gw)
        return v.reshape(-1, 1, 1, 1, 1)
    p = np.arange(ph, dtype=dtype).reshape(1, -1, 1, 1, 1)
    q = np.arange(pw, dtype=dtype).reshape(1, 1, -1, 1, 1)
    iy = np.arange(gh).reshape(1, 1, 1, -1, 1)
    ix = np.arange(gw).reshape(1, 1, 1, 1, -1)
    yy = col(-roi_h / dt(2)) + p * col(bin_h) + \
        (iy + 0.5).astype(dtype) * col(bin_h) / col(grid_h.astype(dtype))
    xx = col(-roi_w / dt(2)) + q * col(bin_w) + \
        (ix + 0.5).astype(dtype) * col(bin_w) / col(grid_w.astype(dtype))
    cos, sin = col(np.cos(theta)), col(np.sin(theta))
    x = xx * cos + yy * sin + col(cx)
    y = yy * cos - xx * sin + col(cy)
    index, weight = _corners(y, x, h, w, dtype)
    used = (iy < col(grid_h)) & (ix < col(grid_w))
    weight = weight * used
    count = len(boxes)
    index = xp.asarray(index.reshape(4, count, -1))  # (4, R, ph * pw * gh * gw)
    weight = xp.asarray(weight.reshape(4, count, -1).astype(dtype))
    flat = data.reshape(n, c, h * w)
    sel = xp.asarray(batch)[:, None]
    out = xp.zeros((count, c, ph * pw * gh * gw), dtype=data.dtype)
    for k in range(4):
        out += flat[sel, :, index[k]].transpose(0, 2, 1) * weight[k][:, None]
    points = xp.asarray((grid_h * grid_w).astype(dtype)).reshape(-1, 1, 1, 1)
    return out.reshape(count, c, ph, pw, gh * gw).sum(axis=-1) / points
