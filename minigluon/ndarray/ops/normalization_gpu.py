"""BatchNorm's passes over its data as CUDA kernels (CuPy): the GPU twin of
normalization_cpu.py, the same functions on the same ``(pre, C, post)`` C-contiguous
arrays.

CuPy's generic path runs each elementwise step and each per-channel sum as its own
kernel (seven passes forward, nine backward); these fuse each chain into one kernel
and accumulate per-channel sums in float64, as the CPU kernels do.

The sums are the part that needs care. Convolution outputs are channels-last
(``post == 1``): a channel's values lie ``C`` elements apart, and a reduction that gives
each channel its own thread block (CuPy's, over axes 0 and 2) reads them one 32-byte
sector per value from a handful of blocks: 5 ms for one 128x64x32x32 batch on an
H200. Here a block of 32x8 threads reads 32 neighbouring channels of 8 rows at a time
(whole 128-byte lines), many blocks split the rows, and each writes its partial sums
for a short second pass: the same order every run, so the result is deterministic.

Only imported when an array is on a GPU.
"""
import functools

import numpy as np

from ...backend import cupy

_ROWS_SOURCE = r'''
extern "C" __global__ void channel_sums(
        const T* a, const T* b, const T* mean_a, const T* mean_b,
        double* part_sum, double* part_dot, long long rows, int channels, int mode) {
    // mode 0: sum(a); 1: also sum((a - mean_a) * (b - mean_b)), each difference rounded in T
    __shared__ double shared_sum[8][32];
    __shared__ double shared_dot[8][32];
    const int c = blockIdx.x * 32 + threadIdx.x;
    double s = 0.0, d = 0.0;
    if (c < channels) {
        const T ma = mode ? mean_a[c] : (T)0;
        const T mb = mode ? mean_b[c] : (T)0;
        const long long step = (long long)gridDim.y * 8;
        for (long long r = (long long)blockIdx.y * 8 + threadIdx.y; r < rows; r += step) {
            const long long at = r * channels + c;
            const T va = a[at];
            s += (double)va;
            if (mode) {
                const T da = va - ma;
                const T db = b[at] - mb;
                d += (double)da * (double)db;
            }
        }
    }
    shared_sum[threadIdx.y][threadIdx.x] = s;
    shared_dot[threadIdx.y][threadIdx.x] = d;
    __syncthreads();
    if (threadIdx.y == 0 && c < channels) {
        for (int k = 1; k < 8; ++k) {
            s += shared_sum[k][threadIdx.x];
            d += shared_dot[k][threadIdx.x];
        }
        part_sum[(long long)blockIdx.y * channels + c] = s;
        part_dot[(long long)blockIdx.y * channels + c] = d;
    }
}
'''
_ROWS_KERNELS = {}
_ROWS_PER_THREAD = 16
_MAX_ROW_BLOCKS = 256


def _rows_kernel(dtype):
    kernel = _ROWS_KERNELS.get(dtype)
    if kernel is None:
        ctype = {np.dtype(np.float32): 'float', np.dtype(np.float64): 'double'}[dtype]
        kernel = _ROWS_KERNELS[dtype] = cupy.RawKernel(
            'typedef %s T;\n%s' % (ctype, _ROWS_SOURCE), 'channel_sums')
    return kernel


def _row_sums(a, b=None, mean_a=None, mean_b=None):
    """float64 per-channel ``sum(a)`` and, given ``b``, ``sum((a - mean_a) * (b - mean_b))``
    over the rows of the ``(rows, C, 1)`` arrays ``a`` and ``b``."""
    if a.dtype == np.float16:  # kernels for float32 and float64: float16 is read widened
        a = a.astype(np.float32)
        b = None if b is None else b.astype(np.float32)
    rows, channels = a.shape[0], a.shape[1]
    grid_y = int(min(_MAX_ROW_BLOCKS, max(1, -(-rows // (8 * _ROWS_PER_THREAD)))))
    part_sum = cupy.empty((grid_y, channels), np.float64)
    part_dot = cupy.empty((grid_y, channels), np.float64)
    mode = 0 if b is None else 1
    if mode:
        mean_a = cupy.ascontiguousarray(mean_a, dtype=a.dtype)
        mean_b = cupy.ascontiguousarray(mean_b, dtype=a.dtype)
    else:
        b = mean_a = mean_b = a  # not read
    _rows_kernel(a.dtype)(((channels + 31) // 32, grid_y), (32, 8),
                          (a, b, mean_a, mean_b, part_sum, part_dot, np.int64(rows),
                           np.int32(channels), np.int32(mode)))
    return part_sum.sum(axis=0), (part_dot.sum(axis=0) if mode else None)


def _column(vector):
    return vector.reshape(1, -1, 1)


_CHANNEL = 'const long long k = (i / post) % channels;'
_SOURCES = {
    'normalise': ('T x, raw T mean, raw T scale, raw T shift, int64 channels, int64 post',
                  'T out', _CHANNEL + 'out = (x - mean[k]) * scale[k] + shift[k];'),
    'data_gradient': ('T dy, T x, raw T mean, raw T scale, raw T factor, raw T shift, '
                      'int64 channels, int64 post', 'T dx',
                      _CHANNEL + 'dx = dy * scale[k] + (x - mean[k]) * factor[k] - shift[k];'),
}


@functools.lru_cache(maxsize=None)
def _kernel(name):
    """The elementwise CUDA kernel ``name``, built at its first use."""
    in_params, out_params, body = _SOURCES[name]
    return cupy.ElementwiseKernel(in_params, out_params, body, 'minigluon_bn_' + name)


def sums(x3):
    """Per-channel float64 sums of ``x3``."""
    if x3.shape[2] == 1:
        return _row_sums(x3)[0]
    return x3.sum(axis=2, dtype=np.float64).sum(axis=0)  # contiguous runs: CuPy's own


def centred_squares(x3, mean):
    """Per-channel float64 sums of ``(x3 - mean)**2``, the difference rounded in ``x3``'s
    dtype."""
    if x3.shape[2] == 1:
        return _row_sums(x3, x3, mean, mean)[1]
    d = (x3 - _column(mean)).astype(np.float64)
    return (d * d).sum(axis=2).sum(axis=0)


def normalise(x3, mean, scale, shift, out):
    """``out = (x3 - mean) * scale + shift`` per channel."""
    _kernel('normalise')(x3, mean, scale, shift, x3.shape[1], x3.shape[2], out)


def gradient_sums(dy3, x3, mean):
    """Per-channel float64 ``sum(dy)`` and ``sum(dy * (x - mean))``."""
    if x3.shape[2] == 1:
        return _row_sums(dy3, x3, cupy.zeros_like(mean), mean)
    centred = (x3 - _column(mean)).astype(np.float64)
    return (dy3.sum(axis=2, dtype=np.float64).sum(axis=0),
            (dy3.astype(np.float64) * centred).sum(axis=2).sum(axis=0))


def data_gradient(dy3, x3, mean, scale, centred_factor, shift, dx):
    """``dx = dy * scale + (x - mean) * centred_factor - shift`` per channel."""
    _kernel('data_gradient')(dy3, x3, mean, scale, centred_factor, shift, x3.shape[1],
                             x3.shape[2], dx)
