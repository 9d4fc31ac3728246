"""Mixed precision's casts: ``amp_cast`` and ``amp_multicast``, which convert only the
float16 and float32 arrays and pass every other dtype through unchanged."""
import numpy as np

from ...base import MXNetError
from ..dtypes import normalize_dtype
from ..registry import dtype_rule, register

# The dtypes mixed precision moves between (MXNet also has bfloat16, which numpy lacks).
_AMP_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))


@register('amp_cast')
def amp_cast(xp, data, dtype):
    """Cast a float16 or float32 array to ``dtype``; other dtypes pass unchanged. The
    gradient is cast back to the input's dtype."""
    dtype = normalize_dtype(dtype)
    src = data.dtype
    if src not in _AMP_DTYPES:
        return data.copy(), lambda dy: (dy,)
    return data.astype(dtype), lambda dy: (dy.astype(src, copy=False),)


@dtype_rule('amp_cast')
def _amp_cast_dtype(in_dtypes, dtype, **_):
    src = in_dtypes[0]
    if src is None:
        return [None]
    return [normalize_dtype(dtype) if src in _AMP_DTYPES else src]


def _multicast_dtypes(dtypes, cast_narrow):
    """MXNet's rule: the float16/float32 arrays become float32 when one of them is
    (float16 when one is and ``cast_narrow``), otherwise the first array's dtype."""
    if cast_narrow:
        target = np.dtype(np.float16) if np.dtype(np.float16) in dtypes else \
            np.dtype(np.float32)
    else:
        target = np.dtype(np.float32) if np.dtype(np.float32) in dtypes else dtypes[0]
    return [target if d in _AMP_DTYPES else d for d in dtypes]


@register('amp_multicast', num_inputs=None)
def amp_multicast(xp, *data, num_outputs, cast_narrow=False):
    """Cast the float16 and float32 arrays among ``data`` to one dtype: float32 if any is
    float32 (else the first array's), or with ``cast_narrow`` float16 if any is float16.
    Other dtypes pass unchanged. Returns ``num_outputs`` (the number of arrays) arrays;
    each gradient is cast back to its input's dtype."""
    if int(num_outputs) != len(data):
        raise MXNetError('amp_multicast: num_outputs=%s but %d arrays were given; pass '
                         'num_outputs equal to the number of arrays' % (num_outputs, len(data)))
    targets = _multicast_dtypes([d.dtype for d in data], cast_narrow)
    outs = tuple(d.astype(t) for d, t in zip(data, targets))

    def backward(dys):
        dys = dys if isinstance(dys, tuple) else (dys,)
        return tuple(dy.astype(d.dtype, copy=False) for dy, d in zip(dys, data))
    return (outs[0] if len(outs) == 1 else outs), backward


@dtype_rule('amp_multicast')
def _amp_multicast_dtype(in_dtypes, cast_narrow=False, **_):
    if any(d is None for d in in_dtypes):
        return [None] * len(in_dtypes)
    return _multicast_dtypes([np.dtype(d) for d in in_dtypes], cast_narrow)
