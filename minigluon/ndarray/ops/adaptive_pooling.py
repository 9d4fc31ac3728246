"""contrib's AdaptiveAvgPooling2D: average pooling to a given output size.

Output cell ``i`` of an axis of length ``n`` pooled to ``m`` averages the input cells
``floor(i * n / m)`` to ``ceil((i + 1) * n / m) - 1``, as MXNet 1.x's (and Torch's) kernel
does. The windows of the two axes are independent, so the op is ``rows @ x @ cols.T``
with one small averaging matrix per axis, and its backward is the same product
transposed.
"""
import numpy as np

from ...base import MXNetError
from ..registry import register


def _window_matrix(size, pooled, dtype):
    """``(pooled, size)``: row ``i`` averages input cells ``floor(i * size / pooled)`` to
    ``ceil((i + 1) * size / pooled) - 1``."""
    i = np.arange(pooled)
    # float32 division, as MXNet's START_IND/END_IND macros compute it
    start = np.floor(np.float32(i * size) / np.float32(pooled)).astype(np.int64)
    end = np.ceil(np.float32((i + 1) * size) / np.float32(pooled)).astype(np.int64)
    cells = np.arange(size)
    inside = (cells >= start[:, None]) & (cells < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _output_size(output_size):
    if output_size is None or output_size == ():
        return 1, 1
    if isinstance(output_size, int):
        return output_size, output_size
    size = tuple(int(v) for v in output_size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise MXNetError('AdaptiveAvgPooling2D: output_size must be an int or (height, width), '
                         'got %r' % (output_size,))
    return size


@register('_contrib_AdaptiveAvgPooling2D')
def adaptive_avg_pooling_2d(xp, data, output_size=None):
    """Average-pool NCHW ``data`` to ``output_size`` (an int for a square output, or
    ``(height, width)``; 1x1 when not given), each output cell averaging the input cells
    its window covers; neighbouring windows overlap when the sizes do not divide."""
    if data.ndim != 4:
        raise MXNetError('AdaptiveAvgPooling2D expects 4-D data (batch, channel, height, '
                         'width), got shape %s' % (data.shape,))
    oh, ow = _output_size(output_size)
    if oh < 1 or ow < 1:
        raise MXNetError('AdaptiveAvgPooling2D: output_size must be positive, got %r'
                         % (output_size,))
    rows = xp.asarray(_window_matrix(data.shape[2], oh, data.dtype))
    cols_t = xp.asarray(_window_matrix(data.shape[3], ow, data.dtype).T)
    out = xp.matmul(xp.matmul(rows, data), cols_t)

    def backward(dy):
        return (xp.matmul(xp.matmul(rows.T, dy), cols_t.T),)
    return out, backward
