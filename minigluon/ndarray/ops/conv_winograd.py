"""3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3).

Each 2x2 output tile is ``A^T [(G w G^T) * (B^T d B)] A`` for its 4x4 input patch ``d``:
16 multiplies per channel pair instead of 36, so the bulk of the work becomes 16
GEMMs with 4/9 of a direct convolution's FLOPs. Each transform is one gathering copy
and one small GEMM with a Kronecker product of the 1-D transform. The coefficients
are 0, +-1 and 1/2, so float32 results differ from a direct convolution by rounding
only.

Measured against im2col on ResNet-18's 3x3 layers at batch 64 (2 cores, forward +
both gradients): 13% less time for 64 channels at 32x32, 31% for 128 at 16x16, 41%
for 256 at 8x8 and 512 at 4x4.

Arrays are channels-last, ``(N, H, W, C)``, a block of images at a time (conv.py
chooses the blocks), of the context's ``xp``. On the CPU, with numba, the transforms
run as compiled kernels instead (conv_winograd_cpu.py: the same sums in one pass over
memory; 1.25x the training throughput of ResNet-18 on one core).
"""
import numpy as np

from ... import backend
from . import compiled

_G = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]])
_GG = np.kron(_G, _G)  # (16, 9): weight 3x3 -> transformed 4x4, row-major both
_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
_BB = np.kron(_BT, _BT)  # (16, 16): input patch 4x4 -> transformed 4x4
_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])
_AA = np.kron(_AT, _AT)  # (4, 16): transformed 4x4 -> output 2x2
_AA_T = np.ascontiguousarray(_AA.T)

_ON_DEVICE = {}  # (matrix id, dtype, GPU id) -> the matrix on that GPU


def _matrix(xp, host, dtype):
    """The constant ``host`` in ``dtype`` for ``xp``'s arrays. A GPU gets its copy once:
    a copy from host memory per call would stop the host until the GPU caught up."""
    if xp is np:
        return host.astype(dtype, copy=False)
    key = (id(host), np.dtype(dtype), xp.cuda.get_device_id())
    found = _ON_DEVICE.get(key)
    if found is None:
        found = _ON_DEVICE[key] = xp.asarray(host, dtype=dtype)
    return found


# Fewer channels make the 16 GEMMs too thin to pay for the transforms: at batch 64 on
# 32x32 images im2col was faster for 16 (forward 3.7 vs 4.5 ms), even at 32.
MIN_CHANNELS = 32


def applies(geo, channels, filters):
    """True when ``geo`` is a plain 3x3 'same' convolution worth transforming."""
    return (geo.kernel == (3, 3) and geo.stride == (1, 1) and geo.pad == (1, 1)
            and geo.dilate == (1, 1) and geo.groups == 1
            and min(channels, filters) >= MIN_CHANNELS)


def transform_weight(xp, w):
    """``(F, C, 3, 3)`` -> ``(16, C, F)``: ``G w G^T`` of every channel pair.

    One GEMM writes it as ``(16, F, C)``; the result is the transposed view, which BLAS
    reads as it is (a transposing copy of the weight cost more than the GEMMs it feeds).
    """
    f, c = w.shape[:2]
    ut = xp.matmul(_matrix(xp, _GG, w.dtype), w.reshape(f * c, 9).T)
    return ut.reshape(16, f, c).transpose(0, 2, 1)


# G with its columns reversed is G with rows 0 and 3 swapped, so the transformed
# flipped kernel is a permutation of the transformed kernel.
_FLIP = np.array([4 * (3 - a if a in (0, 3) else a) + (3 - b if b in (0, 3) else b)
                  for a in range(4) for b in range(4)])


def flip(u):
    """The transformed weight of the data-gradient convolution: the kernel flipped and
    its channel axes swapped, ``(16, C, F)`` -> ``(16, F, C)``."""
    xp = backend.get_array_module(u)
    # gathers whole (F, C) slices: no transposing copy
    return u.transpose(0, 2, 1)[_matrix(xp, _FLIP, np.int64)]


def _compiled(xp, *arrays):
    """The fused transforms for ``arrays``: CUDA ones on a GPU, numba's on the host when
    they are on; else None (the array-module path)."""
    if backend.is_device_array(arrays[0]):
        if any(a.dtype not in (np.float32, np.float64) for a in arrays):
            return None
        from . import conv_winograd_gpu
        return conv_winograd_gpu
    if not compiled.applies(xp, *arrays):
        return None
    from . import conv_winograd_cpu
    return conv_winograd_cpu


def _tiles(size):
    return (size + 1) // 2


def tiles(spatial):
    """Number of 2x2 output tiles of one image."""
    return _tiles(spatial[0]) * _tiles(spatial[1])


def transform_input(xp, xl):
    """``(n, H, W, C)`` -> ``(16, n*tiles, C)``: ``B^T d B`` of every 4x4 patch ``d``.

    One copy gathers the patches (overlapping by 2), one GEMM with ``B^T (x) B^T``
    transforms them all; 20% faster than twenty elementwise passes, measured.
    """
    n, h, w, c = xl.shape
    th, tw = _tiles(h), _tiles(w)
    xpad = xp.zeros((n, 2 * th + 2, 2 * tw + 2, c), xl.dtype)
    xpad[:, 1:h + 1, 1:w + 1] = xl
    kernels = _compiled(xp, xpad)
    if kernels is not None:
        v = xp.empty((16, n * th * tw, c), xl.dtype)
        kernels.input_tiles(xpad, v)
        return v
    st = xpad.strides
    patches = xp.lib.stride_tricks.as_strided(
        xpad, (4, 4, n, th, tw, c), (st[1], st[2], st[0], 2 * st[1], 2 * st[2], st[3]))
    d = xp.ascontiguousarray(patches).reshape(16, -1)
    return xp.matmul(_matrix(xp, _BB, xl.dtype), d).reshape(16, n * th * tw, c)


def transform_output(xp, m, out):
    """``(16, n*tiles, F)`` -> ``out`` ``(n, H, W, F)``: ``A^T m A`` of every tile.

    One GEMM with ``A^T (x) A^T`` over all tiles and channels, then one copy that puts
    each tile's 2x2 outputs in place: half the time of eight elementwise passes, and
    the GEMM uses every core.
    """
    n, h, w, f = out.shape
    kernels = _compiled(xp, m, out)
    if kernels is not None and m.dtype == out.dtype and out.flags.c_contiguous:
        kernels.output_tiles(xp.ascontiguousarray(m), out)
        return
    th, tw = _tiles(h), _tiles(w)
    y = xp.matmul(_matrix(xp, _AA, m.dtype), m.reshape(16, -1))
    y = y.reshape(2, 2, n, th, tw, f).transpose(2, 3, 0, 4, 1, 5)  # (n, th, i, tw, j, F)
    if h % 2 == 0 and w % 2 == 0:
        out.reshape(n, th, 2, tw, 2, f)[...] = y
    else:
        out[...] = y.reshape(n, 2 * th, 2 * tw, f)[:, :h, :w]


def transform_output_grad(xp, dyl):
    """``(n, H, W, F)`` -> ``(16, n*tiles, F)``: ``A dy A^T``, the gradient of the tiles'
    transformed products (the transpose of ``transform_output``): one copy gathers
    each tile's 2x2 gradients, one GEMM with ``A (x) A`` expands them."""
    n, h, w, f = dyl.shape
    th, tw = _tiles(h), _tiles(w)
    if h % 2 or w % 2:
        padded = xp.zeros((n, 2 * th, 2 * tw, f), dyl.dtype)
        padded[:, :h, :w] = dyl
        dyl = padded
    kernels = _compiled(xp, dyl)
    if kernels is not None:
        dm = xp.empty((16, n * th * tw, f), dyl.dtype)
        kernels.output_tile_grads(xp.ascontiguousarray(dyl), dm)
        return dm
    d = xp.empty((2, 2, n, th, tw, f), dyl.dtype)
    d[...] = dyl.reshape(n, th, 2, tw, 2, f).transpose(2, 4, 0, 1, 3, 5)
    return xp.matmul(_matrix(xp, _AA_T, dyl.dtype), d.reshape(4, -1)).reshape(
        16, n * th * tw, f)


def weight_grad(xp, dut):
    """``(F, C, 3, 3)`` from ``dut`` ``(16, F, C)``, the gradient of the transformed weight
    summed over tiles (``dm^T v``): ``G^T dut G``, one GEMM that writes the weight's
    layout."""
    _, f, c = dut.shape
    return xp.matmul(dut.reshape(16, f * c).T, _matrix(xp, _GG, dut.dtype)).reshape(
        f, c, 3, 3)
