"""FlowNet's correlation layer (MXNet's ``Correlation``): every patch of one feature map
compared with the patches around the same place in another.

For each displacement in the neighbourhood the channels' products (or absolute
differences) are summed at every pixel into one map, and a box sum over the kernel
window, read at the output's stride, gives that displacement's output channel: a few
whole-array operations per displacement instead of a loop per output value. The
backward spreads each output gradient over its window the same way.
"""
import numpy as np

from ...base import MXNetError
from ..registry import register


class _Layout:
    """The sizes MXNet derives from the parameters and the input's shape."""

    def __init__(self, shape, kernel_size, max_displacement, stride1, stride2, pad_size):
        if len(shape) != 4:
            raise MXNetError('Correlation takes 4-d data (batch, channels, height, width), '
                             'got shape %s' % (shape,))
        if min(kernel_size, stride1, stride2) < 1 or min(max_displacement, pad_size) < 0:
            raise MXNetError('Correlation: kernel_size, stride1 and stride2 must be positive '
                             'and max_displacement, pad_size non-negative, got %d, %d, %d, '
                             '%d, %d' % (kernel_size, stride1, stride2, max_displacement,
                                         pad_size))
        self.padded = (shape[2] + 2 * pad_size, shape[3] + 2 * pad_size)
        border = max_displacement + (kernel_size - 1) // 2
        # MXNet rounds up: the last window still fits, as the border is kept on both sides
        self.out_hw = tuple(-(-(p - 2 * border) // stride1) for p in self.padded)
        if min(self.out_hw) < 1:
            raise MXNetError(
                'Correlation cannot be done with these settings: the neighbourhood '
                '(max_displacement=%d) and kernel (kernel_size=%d) do not fit in the padded '
                '%dx%d input; use a smaller kernel or displacement, or more padding'
                % ((max_displacement, kernel_size) + self.padded))
        if kernel_size % 2 == 0:
            raise MXNetError('Correlation: kernel_size must be odd, got %d' % kernel_size)
        radius = max_displacement // stride2
        # (dy, dx) of each output channel, row-major over the neighbourhood grid
        steps = [(d - radius) * stride2 for d in range(2 * radius + 1)]
        self.displacements = [(dy, dx) for dy in steps for dx in steps]
        self.stride, self.origin = stride1, max_displacement
        # the rows (columns) of data1 that some window reads
        self.span = tuple((n - 1) * stride1 + kernel_size for n in self.out_hw)

    def region(self, dy=0, dx=0):
        """The slices of the padded maps a window can read, moved by (dy, dx)."""
        y0, x0 = self.origin + dy, self.origin + dx
        return (Ellipsis, slice(y0, y0 + self.span[0]), slice(x0, x0 + self.span[1]))

    def window(self, h, w):
        """The slices of a region map that the windows' (h, w) element reads, per output."""
        (oh, ow), s = self.out_hw, self.stride
        return (Ellipsis, slice(h, h + (oh - 1) * s + 1, s), slice(w, w + (ow - 1) * s + 1, s))


def _padded(xp, x, pad, dtype):
    out = xp.zeros(x.shape[:2] + (x.shape[2] + 2 * pad, x.shape[3] + 2 * pad), dtype)
    out[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]] = x
    return out


@register('Correlation', num_inputs=2)
def correlation(xp, data1, data2, kernel_size=1, max_displacement=1, stride1=1, stride2=1,
                pad_size=0, is_multiply=True):
    """The correlation of two feature maps (N, C, H, W) of one shape.

    Output channel ``q`` at (i, j) compares the ``kernel_size`` square window of
    ``data1`` at ``(i, j) * stride1 + max_displacement`` (in the maps padded with
    ``pad_size`` zeros) with the window of ``data2`` moved by the ``q``-th displacement
    (multiples of ``stride2`` up to ``max_displacement`` each way, row-major): the mean
    over the window and the channels of their products (``is_multiply``) or of their
    absolute differences. The output is (N, (2 * (max_displacement // stride2) + 1)**2,
    ceil((H + 2 pad - 2 border) / stride1), likewise for W), where border is
    ``max_displacement + kernel_size // 2``.
    """
    if data1.shape != data2.shape:
        raise MXNetError('Correlation: data1 and data2 must have one shape, got %s and %s'
                         % (data1.shape, data2.shape))
    if data1.dtype.kind != 'f' or data2.dtype != data1.dtype:
        raise MXNetError('Correlation takes two floating-point arrays of one dtype, got %s '
                         'and %s; cast them with .astype("float32")' % (data1.dtype, data2.dtype))
    kernel_size, max_displacement = int(kernel_size), int(max_displacement)
    stride1, stride2, pad_size = int(stride1), int(stride2), int(pad_size)
    geo = _Layout(data1.shape, kernel_size, max_displacement, stride1, stride2, pad_size)
    # float16 sums many terms: accumulate in float32, as for the other reductions
    work = np.dtype(np.float32) if data1.dtype == np.float16 else data1.dtype
    p1 = _padded(xp, data1, pad_size, work)
    p2 = _padded(xp, data2, pad_size, work)
    n = data1.shape[0]
    count = work.type(kernel_size * kernel_size * data1.shape[1])  # values per output
    near = p1[geo.region()]
    out = xp.empty((n, len(geo.displacements)) + geo.out_hw, work)
    for q, (dy, dx) in enumerate(geo.displacements):
        far = p2[geo.region(dy, dx)]
        per_pixel = (near * far if is_multiply else xp.abs(near - far)).sum(axis=1)
        total = xp.zeros((n,) + geo.out_hw, work)
        for h in range(kernel_size):
            for w in range(kernel_size):
                total += per_pixel[geo.window(h, w)]
        out[:, q] = total / count
    out = out.astype(data1.dtype, copy=False)

    def backward(dy_out):
        g1 = xp.zeros(p1.shape, work)
        g2 = xp.zeros(p2.shape, work)
        span = (n,) + geo.span
        for q, (dy, dx) in enumerate(geo.displacements):
            # each output's gradient, spread over the window it read
            spread = xp.zeros(span, work)
            grad_q = dy_out[:, q].astype(work, copy=False) / count
            for h in range(kernel_size):
                for w in range(kernel_size):
                    spread[geo.window(h, w)] += grad_q
            spread = spread[:, None]
            far = p2[geo.region(dy, dx)]
            if is_multiply:
                g1[geo.region()] += spread * far
                g2[geo.region(dy, dx)] += spread * near
            else:
                # d|a - b| / da is 1 where a >= b (MXNet's choice at a tie), else -1
                signed = xp.where(near >= far, spread, -spread)
                g1[geo.region()] += signed
                g2[geo.region(dy, dx)] -= signed
        inside = (Ellipsis, slice(pad_size, pad_size + data1.shape[2]),
                  slice(pad_size, pad_size + data1.shape[3]))
        return (g1[inside].astype(data1.dtype), g2[inside].astype(data2.dtype))
    return out, backward
