"""NDArrays sharing memory with other array libraries: numpy arrays and DLPack capsules."""
import numpy as np

from .. import backend
from ..base import MXNetTypeError, MXNetValueError
from ..context import Context, cpu
from .dtypes import normalize_dtype
from .ndarray import NDArray


def from_numpy(ndarray, zero_copy=True):
    """An NDArray on ``cpu(0)`` holding the numpy array ``ndarray``.

    With ``zero_copy`` (the default) the NDArray uses the numpy array's own memory and,
    as in MXNet, the numpy array becomes read-only so that only the NDArray writes it;
    the array must be C-contiguous. Without, the data is copied. The dtype is kept.
    """
    if not isinstance(ndarray, np.ndarray):
        raise MXNetTypeError('from_numpy: expected a numpy.ndarray, got %s'
                             % type(ndarray).__name__)
    normalize_dtype(ndarray.dtype)  # a clear error for dtypes minigluon lacks
    if not zero_copy:
        return NDArray(np.array(ndarray, order='C'), cpu(0))
    if not ndarray.flags['C_CONTIGUOUS']:
        raise MXNetValueError('from_numpy(zero_copy=True): the array is not C-contiguous; pass '
                              'numpy.ascontiguousarray(a), or zero_copy=False to copy it')
    if not ndarray.flags['WRITEABLE']:
        try:  # made read-only by an earlier from_numpy: its memory is still writable
            ndarray.flags['WRITEABLE'] = True
        except ValueError:
            raise MXNetValueError('from_numpy(zero_copy=True): the array\'s memory is '
                                  'read-only; pass zero_copy=False to copy it') from None
    shared = ndarray.view()
    ndarray.flags['WRITEABLE'] = False  # the NDArray writes the memory from now on
    return NDArray(shared, cpu(0))


class _Capsule:
    """Hands a DLPack capsule to ``numpy.from_dlpack``/``cupy.from_dlpack``, which take
    an object with ``__dlpack__`` rather than a bare capsule."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


# DLPack device types
_DL_CPU, _DL_CUDA = 1, 2


def from_dlpack(dlpack):
    """An NDArray sharing memory with ``dlpack``: a capsule from ``to_dlpack_for_read`` /
    ``to_dlpack_for_write`` (of minigluon or MXNet), or any object with ``__dlpack__``
    (a PyTorch tensor, a numpy or CuPy array).

    A capsule from ``to_dlpack_for_read`` gives a read-only array on the CPU.
    """
    if hasattr(dlpack, '__dlpack__'):
        device_type, device_id = dlpack.__dlpack_device__()
        source = dlpack
    elif type(dlpack).__name__ == 'PyCapsule':
        # a bare capsule does not say its device to Python: try the host, then the GPU
        device_type, device_id, source = None, 0, _Capsule(dlpack, (_DL_CPU, 0))
    else:
        raise MXNetTypeError('from_dlpack: expected a DLPack capsule or an object with '
                             '__dlpack__, got %s' % type(dlpack).__name__)
    if device_type in (None, _DL_CPU):
        try:
            return NDArray(np.from_dlpack(source), cpu(0))
        except (BufferError, RuntimeError, TypeError, ValueError) as exc:
            if device_type == _DL_CPU:
                raise MXNetValueError('from_dlpack: cannot import the array: %s' % exc) from None
    if not backend.num_gpus():
        raise MXNetValueError('from_dlpack: the array is not in host memory and no GPU is '
                              'usable')
    ctx = Context('gpu', device_id)
    if isinstance(source, _Capsule):
        source = dlpack  # CuPy takes a bare capsule
    with ctx.device():
        return NDArray(ctx.xp.from_dlpack(source), ctx)


def to_dlpack_for_read(data):
    """A DLPack capsule of ``data``'s memory, for reading by another framework."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule of ``data``'s memory that the consumer may also write."""
    return data.to_dlpack_for_write()
