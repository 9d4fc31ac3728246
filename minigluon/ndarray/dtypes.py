"""The dtypes an NDArray may have, and the one function that reads a user's dtype."""
import numpy as np

from ..base import MXNetError

SUPPORTED_DTYPES = ('float16', 'float32', 'float64', 'int8', 'int32', 'int64', 'uint8', 'bool')
_DTYPE_OBJECTS = {np.dtype(n) for n in SUPPORTED_DTYPES}
_DEFAULT_DTYPE = np.dtype('float32')


def normalize_dtype(dtype, default=_DEFAULT_DTYPE):
    """A numpy dtype from a name, type or dtype; error for dtypes minigluon lacks."""
    if dtype is None:
        return default
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise MXNetError('unknown dtype %r; supported: %s' % (dtype, ', '.join(SUPPORTED_DTYPES))) \
            from None
    if dt not in _DTYPE_OBJECTS:
        raise MXNetError('unsupported dtype %s; supported: %s (cast with .astype first)'
                         % (dt, ', '.join(SUPPORTED_DTYPES)))
    return dt
