"""2-D max pooling as compiled CPU kernels (numba).

numpy's path visits the window one offset at a time, each a strided pass over the
whole batch with a comparison, a masked copy and a masked index write: ResNet's 3x3
stride-2 pooling of a 112x112 map took a sixth of a 224-pixel training step. These do
one pass: each output position reads its window once, forward, and backward adds each
output gradient to the one input its maximum came from.

Arrays are ``(N, H, W, C)`` C-contiguous, so the innermost loops run along the
channels and vectorise; a channels-first array is passed as ``(N * C, H, W, 1)``. The
comparisons are numpy's path's, in the same order (the first maximum wins, NaN never
replaces a value, positions outside the input count as ``lowest``), so outputs and
gradients are identical.

Only imported when ``compiled.enabled()``.
"""
import numpy as np

from .compiled import kernel


@kernel
def max_pool_forward(x, kh, kw, sh, sw, ph, pw, lowest, out, best):
    """``out[n, i, j, c]``: the maximum of ``x`` over the window at ``(i * sh - ph,
    j * sw - pw)`` of ``kh x kw``; ``best``: its offset in the window, ``di * kw + dj``.

    A window is reduced in two small arrays of its own (the maxima and an int32 offset
    each), then written out: with the uint8 output as the running offset the compiler
    does not vectorise the loop over channels, which then runs 3x slower."""
    n_images, height, width, channels = x.shape
    out_h, out_w = out.shape[1], out.shape[2]
    top = np.empty(channels, x.dtype)
    at = np.empty(channels, np.int32)
    for n in range(n_images):
        for i in range(out_h):
            for j in range(out_w):
                for c in range(channels):
                    top[c] = lowest
                    at[c] = 0
                for di in range(kh):
                    h = i * sh - ph + di
                    inside_h = 0 <= h < height
                    for dj in range(kw):
                        w = j * sw - pw + dj
                        k = np.int32(di * kw + dj)
                        if inside_h and 0 <= w < width:
                            row = x[n, h, w]
                            if k == 0:
                                for c in range(channels):
                                    top[c] = row[c]
                            else:
                                for c in range(channels):
                                    v, cur = row[c], top[c]
                                    better = v > cur
                                    top[c] = v if better else cur
                                    at[c] = k if better else at[c]
                        elif k > 0:  # padding: only a -inf maximum is below ``lowest``
                            for c in range(channels):
                                if lowest > top[c]:
                                    top[c] = lowest
                                    at[c] = k
                o, b = out[n, i, j], best[n, i, j]
                for c in range(channels):
                    o[c] = top[c]
                    b[c] = np.uint8(at[c])


@kernel
def max_pool_backward(dy, best, kw, sh, sw, ph, pw, grad):
    """``grad`` (zeros, the input's shape) gets each ``dy`` at the input position its
    window's maximum came from (positions in the padding are dropped)."""
    n_images, height, width, channels = grad.shape
    out_h, out_w = dy.shape[1], dy.shape[2]
    for n in range(n_images):
        for i in range(out_h):
            for j in range(out_w):
                d, b = dy[n, i, j], best[n, i, j]
                for c in range(channels):
                    k = np.int64(b[c])
                    h = i * sh - ph + k // kw
                    w = j * sw - pw + k % kw
                    if 0 <= h < height and 0 <= w < width:
                        grad[n, h, w, c] += d[c]
