"""Ops that test arrays' values and answer with a flag: ``all_finite`` and
``multi_all_finite`` (mixed precision's overflow check) and ``contrib.allclose``."""
import numpy as np

from ...base import MXNetError
from ..registry import register


def _finite(xp, arrays, op):
    """1.0 (float32, shape (1,)) when every value of ``arrays`` is finite, else 0.0.

    Values are taken as float32, as MXNet's kernel reads them: a float64 beyond float32's
    range counts as an overflow, which is what a float16/float32 model must know."""
    for a in arrays:
        if a.dtype.kind != 'f':
            raise MXNetError('%s checks floating-point arrays, got %s' % (op, a.dtype))
    with np.errstate(over='ignore'):  # the overflow is the answer, not a warning
        finite = all(bool(xp.isfinite(a.astype(np.float32, copy=False)).all())
                     for a in arrays)
    return xp.full((1,), 1.0 if finite else 0.0, np.float32)


@register('all_finite', differentiable=False)
def all_finite(xp, data, init_output=True):
    """1.0 if every value of ``data`` is finite (no inf, no NaN), else 0.0; shape (1,),
    float32. With ``init_output=False`` and ``out=``, a finite ``data`` leaves ``out`` as it
    was, so several calls can share one flag (``nd.all_finite`` does that)."""
    return _finite(xp, [data], 'all_finite')


@register('multi_all_finite', num_inputs=None, differentiable=False)
def multi_all_finite(xp, *arrays, num_arrays=1, init_output=True):
    """``all_finite`` over all the ``num_arrays`` arrays given."""
    if int(num_arrays) != len(arrays):
        raise MXNetError('multi_all_finite: num_arrays=%s but %d arrays were given'
                         % (num_arrays, len(arrays)))
    return _finite(xp, arrays, 'multi_all_finite')


@register('_contrib_allclose', num_inputs=2, differentiable=False, zero_dim=True)
def allclose(xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=True):
    """1 (uint8, shape (), as in MXNet) if ``|a - b| <= atol + rtol * |b|`` everywhere, else 0.

    ``a`` and ``b`` have one shape and dtype. NaNs compare equal to NaNs where
    ``equal_nan``; the tolerances are float32, as MXNet holds them."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise MXNetError('allclose compares arrays of one shape and dtype, got %s %s and %s %s'
                         % (a.shape, a.dtype, b.shape, b.dtype))
    # the bound in float32 (float64 for float64 data), as MXNet's kernel computes it
    work = np.float64 if a.dtype == np.float64 else np.float32
    rtol, atol = np.float32(rtol).astype(work), np.float32(atol).astype(work)
    wide_a, wide_b = a.astype(work, copy=False), b.astype(work, copy=False)
    diff = xp.abs(a - b) if a.dtype.kind == 'f' else xp.abs(wide_a - wide_b)
    close = (a == b) | (diff.astype(work, copy=False) <= atol + rtol * xp.abs(wide_b))
    if a.dtype.kind == 'f':
        nan_a, nan_b = xp.isnan(a), xp.isnan(b)
        either = nan_a | nan_b
        close = xp.where(either, bool(equal_nan) & (nan_a == nan_b), close)
    return xp.asarray(close.all(), dtype=np.uint8).reshape(())
