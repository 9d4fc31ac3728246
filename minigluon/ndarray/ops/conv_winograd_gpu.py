"""The transforms of Winograd's F(2x2, 3x3) as CUDA kernels (CuPy): the GPU twin of
conv_winograd_cpu.py, the same three functions with the same arguments.

The array-module path gathers each tile with a strided copy and transforms it with a
GEMM against a mostly-zero Kronecker product: on a GPU that is three passes over
four times the data, and the GEMM's K of 16 leaves it memory-bound. Here one thread
per tile and channel reads its inputs once and writes its outputs once, adjacent
threads on adjacent channels (contiguous in channels-last arrays). Arrays are
C-contiguous, of one float dtype. Only imported when an array is on a GPU.
"""
import functools

from ...backend import cupy

# i runs over (tile, channel); a tile p is (image b, tile row r, tile column j)
_TILE = ('const long long k = i % c; const long long p = i / c; '
         'const long long j = p % tw; const long long b = p / tw / th; '
         'const long long r = (p / tw) % th;')

_SOURCES = {}
_SOURCES['input_tiles'] = (
    'raw T xpad, int64 th, int64 tw, int64 c, int64 tiles', 'raw T out', _TILE + '''
    const long long wp = 2 * tw + 2, hp = 2 * th + 2;
    T d[4][4];
    for (int a = 0; a < 4; ++a)
        for (int e = 0; e < 4; ++e)
            d[a][e] = xpad[((b * hp + 2 * r + a) * wp + 2 * j + e) * c + k];
    T t[4][4];  // B^T down the rows, then across: B^T = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]]
    for (int e = 0; e < 4; ++e) {
        t[0][e] = d[0][e] - d[2][e];
        t[1][e] = d[1][e] + d[2][e];
        t[2][e] = d[2][e] - d[1][e];
        t[3][e] = d[1][e] - d[3][e];
    }
    for (int a = 0; a < 4; ++a) {
        out[((4 * a) * tiles + p) * c + k] = t[a][0] - t[a][2];
        out[((4 * a + 1) * tiles + p) * c + k] = t[a][1] + t[a][2];
        out[((4 * a + 2) * tiles + p) * c + k] = t[a][2] - t[a][1];
        out[((4 * a + 3) * tiles + p) * c + k] = t[a][1] - t[a][3];
    }''')

_SOURCES['output_tiles'] = (
    'raw T m, int64 h, int64 w, int64 th, int64 tw, int64 c, int64 tiles', 'raw T y',
    _TILE + '''
    T cols[2][4];  // A^T = [[1,1,1,0],[0,1,-1,-1]] down each column of the tile
    for (int s = 0; s < 4; ++s) {
        const T m0 = m[(s * tiles + p) * c + k], m1 = m[((4 + s) * tiles + p) * c + k];
        const T m2 = m[((8 + s) * tiles + p) * c + k], m3 = m[((12 + s) * tiles + p) * c + k];
        cols[0][s] = m0 + m1 + m2;
        cols[1][s] = m1 - m2 - m3;
    }
    for (int a = 0; a < 2; ++a) {
        if (2 * r + a >= h) break;
        const long long row = (b * h + 2 * r + a) * w;
        y[(row + 2 * j) * c + k] = cols[a][0] + cols[a][1] + cols[a][2];
        if (2 * j + 1 < w)
            y[(row + 2 * j + 1) * c + k] = cols[a][1] - cols[a][2] - cols[a][3];
    }''')

_SOURCES['output_tile_grads'] = (
    'raw T dy, int64 th, int64 tw, int64 c, int64 tiles', 'raw T out', _TILE + '''
    const long long width = 2 * tw;
    T cols[4][2];  // A = [[1,0],[1,1],[1,-1],[0,-1]] down each column of the 2x2 tile
    for (int s = 0; s < 2; ++s) {
        const long long x = 2 * j + s;
        const T g0 = dy[((b * 2 * th + 2 * r) * width + x) * c + k];
        const T g1 = dy[((b * 2 * th + 2 * r + 1) * width + x) * c + k];
        cols[0][s] = g0;
        cols[1][s] = g0 + g1;
        cols[2][s] = g0 - g1;
        cols[3][s] = -g1;
    }
    for (int a = 0; a < 4; ++a) {
        out[((4 * a) * tiles + p) * c + k] = cols[a][0];
        out[((4 * a + 1) * tiles + p) * c + k] = cols[a][0] + cols[a][1];
        out[((4 * a + 2) * tiles + p) * c + k] = cols[a][0] - cols[a][1];
        out[((4 * a + 3) * tiles + p) * c + k] = -cols[a][1];
    }''')


@functools.lru_cache(maxsize=None)
def _kernel(name):
    """The CUDA kernel ``name``, built at its first use (compiled once, then cached on
    disk by CuPy)."""
    in_params, out_params, body = _SOURCES[name]
    return cupy.ElementwiseKernel(in_params, out_params, body, 'minigluon_winograd_' + name)


def input_tiles(xpad, out):
    """``B^T d B`` of every 4x4 patch of ``xpad`` ``(n, 2*th + 2, 2*tw + 2, C)`` into
    ``out`` ``(16, n*th*tw, C)``."""
    n, hp, wp, c = xpad.shape
    th, tw = (hp - 2) // 2, (wp - 2) // 2
    tiles = n * th * tw
    _kernel('input_tiles')(xpad, th, tw, c, tiles, out, size=tiles * c)


def output_tiles(m, y):
    """``A^T m A`` of every tile of ``m`` ``(16, n*th*tw, F)`` into ``y`` ``(n, H, W, F)``."""
    n, h, w, f = y.shape
    th, tw = (h + 1) // 2, (w + 1) // 2
    tiles = n * th * tw
    _kernel('output_tiles')(m, h, w, th, tw, f, tiles, y, size=tiles * f)


def output_tile_grads(dy, out):
    """``A g A^T`` of every 2x2 tile of ``dy`` ``(n, 2*th, 2*tw, F)`` into ``out``
    ``(16, n*th*tw, F)``."""
    n, h, w, f = dy.shape
    th, tw = h // 2, w // 2
    tiles = n * th * tw
    _kernel('output_tile_grads')(dy, th, tw, f, tiles, out, size=tiles * f)
