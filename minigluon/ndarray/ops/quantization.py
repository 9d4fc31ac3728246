"""MXNet's contrib ``quantize`` and ``dequantize``: float32 values to int8 or uint8 and back,
with the range ``[min_range, max_range]`` the integers stand for.

int8 keeps zero at zero: the range becomes ``[-r, r]`` with ``r = max(|min|, |max|)`` and
a value ``x`` becomes ``sign(x) * min(|x| * 127 / r + 0.5, 127)``, truncated. uint8 maps
the range onto 0..255 as ``(x - min) * 255 / (max - min) + 0.5``, truncated (values
outside the range saturate). Each step is
done in float32, as MXNet's kernels do it, so the integers equal MXNet's.
"""
import numpy as np

from ...base import MXNetError
from ..registry import output_shape_rule, register

# The integer range each quantized type stands for: int8 and int32 are zero-centred (the
# smaller of |min| and max, 127), uint8 spans 0..255.
_ZERO_CENTRED = {'int8': 127.0, 'int32': 2147483647.0}
_UNSIGNED = {'uint8': (0.0, 255.0)}


def _range(xp, min_range, max_range, op):
    for name, bound in (('min_range', min_range), ('max_range', max_range)):
        if bound.size != 1:
            raise MXNetError('%s: %s holds one value (shape (1,)), got shape %s'
                             % (op, name, bound.shape))
    return (min_range.reshape(()).astype(np.float32),
            max_range.reshape(()).astype(np.float32))


@register('_contrib_quantize', num_inputs=3, differentiable=False)
def quantize(xp, data, min_range, max_range, out_type='uint8'):
    """``data`` (float32) as ``out_type`` integers ('int8' or 'uint8'), with the range
    they stand for: ``(quantized, min_output, max_output)``."""
    if data.dtype != np.float32:
        raise MXNetError('quantize takes float32 data, got %s: cast it first' % data.dtype)
    lo, hi = _range(xp, min_range, max_range, 'quantize')
    x = data.astype(np.float32, copy=False)
    if out_type in _UNSIGNED:
        low, high = _UNSIGNED[out_type]
        scale = np.float32(high - low) / (hi - lo)
        # values outside the range saturate, as MXNet's CPU build gives them
        out = xp.clip((x - lo) * scale + np.float32(0.5), low, high).astype(out_type)
        bounds = lo, hi
    elif out_type == 'int8':
        levels = np.float32(_ZERO_CENTRED[out_type])
        real = xp.maximum(xp.abs(lo), xp.abs(hi))
        magnitude = xp.minimum(xp.abs(x) * (levels / real) + np.float32(0.5), levels)
        out = (xp.sign(x) * magnitude).astype(out_type)
        bounds = -real, real
    else:
        raise MXNetError("quantize: out_type must be 'int8' or 'uint8', got %r" % (out_type,))
    return (out,) + tuple(xp.asarray(b, np.float32).reshape(1) for b in bounds)


@register('_contrib_dequantize', num_inputs=3, differentiable=False)
def dequantize(xp, data, min_range, max_range, out_type='float32'):
    """The float32 values the integers ``data`` (int8, uint8 or int32) stand for, given
    the range ``[min_range, max_range]`` they were quantized over."""
    if out_type != 'float32':
        raise MXNetError("dequantize: out_type must be 'float32', got %r" % (out_type,))
    lo, hi = _range(xp, min_range, max_range, 'dequantize')
    kind = data.dtype.name
    if kind in _UNSIGNED:
        low, high = _UNSIGNED[kind]
        return data.astype(np.float32) * ((hi - lo) / np.float32(high - low)) + lo
    if kind in _ZERO_CENTRED:
        real = xp.maximum(xp.abs(lo), xp.abs(hi))
        return data.astype(np.float32) * (real / np.float32(_ZERO_CENTRED[kind]))
    raise MXNetError('dequantize takes int8, uint8 or int32 data, got %s' % kind)


# Shapes without running the kernels, whose zeros for a range would divide by zero.
@output_shape_rule('_contrib_quantize')
def _quantize_shapes(data, min_range, max_range, **_):
    return [tuple(data), (1,), (1,)]


@output_shape_rule('_contrib_dequantize')
def _dequantize_shapes(data, min_range, max_range, **_):
    return [tuple(data)]
