"""BatchNorm's passes over its data as CUDA kernels (CuPy): the GPU twin of
normalization_cpu.py, the same four functions on the same ``(pre, C, post)``
C-contiguous arrays.

CuPy's generic path runs each elementwise step and each per-channel sum as its own
kernel (seven passes forward, nine backward, plus the reshapes between them); these
fuse each step chain into one kernel and accumulate per-channel sums in float64, as
the CPU kernels do. Only imported when an array is on a GPU.
"""
from ...backend import cupy

# per-channel sums over the (pre, post) axes; inputs are broadcast against (1, C, 1)
_sum = cupy.ReductionKernel('T x', 'float64 total', '(double)x', 'a + b', 'total = a',
                            '0', 'minigluon_bn_sum')
_centred_dot = cupy.ReductionKernel(
    'T dy, T x, T mean', 'float64 total', '(double)dy * (double)(x - mean)', 'a + b',
    'total = a', '0', 'minigluon_bn_centred_dot')
_centred_square = cupy.ReductionKernel(
    'T x, T mean', 'float64 total', '(double)(x - mean) * (double)(x - mean)', 'a + b',
    'total = a', '0', 'minigluon_bn_centred_square')

_CHANNEL = 'const long long k = (i / post) % channels;'
_normalise = cupy.ElementwiseKernel(
    'T x, raw T mean, raw T scale, raw T shift, int64 channels, int64 post', 'T out',
    _CHANNEL + 'out = (x - mean[k]) * scale[k] + shift[k];', 'minigluon_bn_normalise')
_data_gradient = cupy.ElementwiseKernel(
    'T dy, T x, raw T mean, raw T scale, raw T factor, raw T shift, int64 channels, '
    'int64 post', 'T dx',
    _CHANNEL + 'dx = dy * scale[k] + (x - mean[k]) * factor[k] - shift[k];',
    'minigluon_bn_data_gradient')

_AXES = (0, 2)


def _column(vector):
    return vector.reshape(1, -1, 1)


def centred_squares(x3, mean):
    """Per-channel float64 sums of ``(x3 - mean)**2``, the difference rounded in ``x3``'s
    dtype."""
    return _centred_square(x3, _column(mean), axis=_AXES)


def normalise(x3, mean, scale, shift, out):
    """``out = (x3 - mean) * scale + shift`` per channel."""
    _normalise(x3, mean, scale, shift, x3.shape[1], x3.shape[2], out)


def sums(x3):
    """Per-channel float64 sums of ``x3``."""
    return _sum(x3, axis=_AXES)


def gradient_sums(dy3, x3, mean):
    """Per-channel float64 ``sum(dy)`` and ``sum(dy * (x - mean))``."""
    return _sum(dy3, axis=_AXES), _centred_dot(dy3, x3, _column(mean), axis=_AXES)


def data_gradient(dy3, x3, mean, scale, centred_factor, shift, dx):
    """``dx = dy * scale + (x - mean) * centred_factor - shift`` per channel."""
    _data_gradient(dy3, x3, mean, scale, centred_factor, shift, x3.shape[1], x3.shape[2], dx)
