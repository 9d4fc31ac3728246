"""Elementwise unary maths, activations and dtype/copy ops."""
import math

import numpy as np

from ..dtypes import normalize_dtype
from ..registry import register
from . import host_threads


def _unary(name, doc):
    """Register ``forward(xp, x) -> (y, grad_fn)`` where ``grad_fn(dy)`` is dx."""
    def deco(fn):
        def forward(xp, data):
            out, grad_fn = fn(xp, data)
            if out.dtype != data.dtype and data.dtype.kind in 'iu':
                out = out.astype(data.dtype)  # MXNet keeps integer arrays integer
            return out, lambda dy: (grad_fn(dy),)
        forward.__doc__ = doc
        forward.__name__ = name
        register(name)(forward)
        return fn
    return deco


@_unary('negative', 'Elementwise ``-x``.')
def _negative(xp, x):
    return xp.negative(x), lambda dy: -dy


@_unary('abs', 'Elementwise absolute value.')
def _abs(xp, x):
    return xp.abs(x), lambda dy: dy * xp.sign(x)


@_unary('sign', 'Elementwise sign (-1, 0 or 1); its gradient is zero.')
def _sign(xp, x):
    return xp.sign(x), xp.zeros_like


@_unary('floor', 'Elementwise floor; its gradient is zero.')
def _floor(xp, x):
    return xp.floor(x), xp.zeros_like


@_unary('ceil', 'Elementwise ceiling; its gradient is zero.')
def _ceil(xp, x):
    return xp.ceil(x), xp.zeros_like


@_unary('round', 'Elementwise rounding to the nearest integer, halves away from zero '
                 '(C ``round``, as MXNet; numpy rounds halves to even); zero gradient.')
def _round(xp, x):
    t = xp.trunc(x)
    # x - t is exact, so no float32 value just below .5 is pushed over by an added 0.5
    return xp.where(xp.abs(x - t) >= 0.5, t + xp.sign(x), t), xp.zeros_like


@_unary('rint', 'Elementwise rounding to the nearest integer, halves down (MXNet\'s rule: '
                '1.5 -> 1, -0.5 -> -1); its gradient is zero.')
def _rint(xp, x):
    lo, hi = xp.floor(x), xp.ceil(x)
    return xp.where(x - lo <= hi - x, lo, hi), xp.zeros_like


@_unary('fix', 'Elementwise rounding toward zero; its gradient is zero.')
def _fix(xp, x):
    return xp.fix(x), xp.zeros_like


@_unary('trunc', 'Elementwise truncation toward zero; its gradient is zero.')
def _trunc(xp, x):
    return xp.trunc(x), xp.zeros_like


@_unary('sqrt', 'Elementwise square root.')
def _sqrt(xp, x):
    y = xp.sqrt(x)
    return y, lambda dy: dy * 0.5 / y


@_unary('rsqrt', 'Elementwise ``1 / sqrt(x)``.')
def _rsqrt(xp, x):
    y = 1 / xp.sqrt(x)
    return y, lambda dy: dy * -0.5 * y * y * y


@_unary('exp', 'Elementwise exponential.')
def _exp(xp, x):
    y = xp.exp(x)
    return y, lambda dy: dy * y


@_unary('expm1', 'Elementwise ``exp(x) - 1``, accurate near zero.')
def _expm1(xp, x):
    y = xp.expm1(x)
    return y, lambda dy: dy * (y + 1)


@_unary('log', 'Elementwise natural logarithm.')
def _log(xp, x):
    return xp.log(x), lambda dy: dy / x


@_unary('log1p', 'Elementwise ``log(1 + x)``, accurate near zero.')
def _log1p(xp, x):
    return xp.log1p(x), lambda dy: dy / (1 + x)


@_unary('square', 'Elementwise ``x * x``.')
def _square(xp, x):
    return xp.square(x), lambda dy: dy * 2 * x


@_unary('reciprocal', 'Elementwise ``1 / x``.')
def _reciprocal(xp, x):
    y = 1 / x
    return y, lambda dy: -dy * y * y


@_unary('sin', 'Elementwise sine.')
def _sin(xp, x):
    return xp.sin(x), lambda dy: dy * xp.cos(x)


@_unary('cos', 'Elementwise cosine.')
def _cos(xp, x):
    return xp.cos(x), lambda dy: -dy * xp.sin(x)


@_unary('tan', 'Elementwise tangent.')
def _tan(xp, x):
    y = xp.tan(x)
    return y, lambda dy: dy * (1 + y * y)


@_unary('arcsin', 'Elementwise inverse sine.')
def _arcsin(xp, x):
    return xp.arcsin(x), lambda dy: dy / xp.sqrt(1 - x * x)


@_unary('arccos', 'Elementwise inverse cosine.')
def _arccos(xp, x):
    return xp.arccos(x), lambda dy: -dy / xp.sqrt(1 - x * x)


@_unary('arctan', 'Elementwise inverse tangent.')
def _arctan(xp, x):
    return xp.arctan(x), lambda dy: dy / (1 + x * x)


@_unary('degrees', 'Elementwise radians to degrees.')
def _degrees(xp, x):
    return xp.degrees(x), lambda dy: dy * (180 / math.pi)


@_unary('radians', 'Elementwise degrees to radians.')
def _radians(xp, x):
    return xp.radians(x), lambda dy: dy * (math.pi / 180)


@_unary('sinh', 'Elementwise hyperbolic sine.')
def _sinh(xp, x):
    return xp.sinh(x), lambda dy: dy * xp.cosh(x)


@_unary('cosh', 'Elementwise hyperbolic cosine.')
def _cosh(xp, x):
    return xp.cosh(x), lambda dy: dy * xp.sinh(x)


@_unary('arcsinh', 'Elementwise inverse hyperbolic sine.')
def _arcsinh(xp, x):
    return xp.arcsinh(x), lambda dy: dy / xp.sqrt(x * x + 1)


@_unary('arccosh', 'Elementwise inverse hyperbolic cosine.')
def _arccosh(xp, x):
    return xp.arccosh(x), lambda dy: dy / xp.sqrt(x * x - 1)


@_unary('arctanh', 'Elementwise inverse hyperbolic tangent.')
def _arctanh(xp, x):
    return xp.arctanh(x), lambda dy: dy / (1 - x * x)


@_unary('log10', 'Elementwise base-10 logarithm.')
def _log10(xp, x):
    return xp.log10(x), lambda dy: dy / x * (1 / math.log(10))


@_unary('log2', 'Elementwise base-2 logarithm.')
def _log2(xp, x):
    return xp.log2(x), lambda dy: dy / x * (1 / math.log(2))


@_unary('cbrt', 'Elementwise cube root.')
def _cbrt(xp, x):
    y = xp.cbrt(x)
    return y, lambda dy: dy / (3 * y * y)


@_unary('rcbrt', 'Elementwise ``1 / cbrt(x)``.')
def _rcbrt(xp, x):
    y = 1 / xp.cbrt(x)
    return y, lambda dy: dy * (-1.0 / 3) * y / x


@_unary('relu', 'Rectified linear unit ``max(x, 0)``.')
def _relu(xp, x):
    if xp is not np:
        y = xp.maximum(x, 0)
        return y, lambda dy: dy * (y > 0)
    # on the host, split over the host threads (a ResNet's ReLUs pass over every
    # activation twice a step); empty_like keeps x's memory order, as maximum would
    y = host_threads.apply_rows(lambda a, out: np.maximum(a, 0, out=out), np.empty_like(x), x)
    return y, lambda dy: host_threads.apply_rows(
        lambda d, a, out: np.multiply(d, a > 0, out=out), np.empty_like(dy), dy, y)


@_unary('sigmoid', 'Logistic sigmoid ``1 / (1 + exp(-x))``, computed without overflow.')
def _sigmoid(xp, x):
    y = xp.tanh(x * 0.5) * 0.5 + 0.5
    return y, lambda dy: dy * y * (1 - y)


@_unary('tanh', 'Hyperbolic tangent.')
def _tanh(xp, x):
    y = xp.tanh(x)
    return y, lambda dy: dy * (1 - y * y)


@_unary('softrelu', 'Softplus ``log(1 + exp(x))``, computed without overflow.')
def _softrelu(xp, x):
    y = xp.logaddexp(0, x).astype(x.dtype, copy=False)
    return y, lambda dy: dy * (xp.tanh(x * 0.5) * 0.5 + 0.5)


@_unary('softsign', 'Softsign ``x / (1 + |x|)``.')
def _softsign(xp, x):
    denom = 1 + xp.abs(x)
    return x / denom, lambda dy: dy / (denom * denom)


@register('clip')
def clip(xp, data, a_min, a_max):
    """Clip values to ``[a_min, a_max]``; the gradient flows where no clipping happened."""
    out = xp.clip(data, a_min, a_max)
    if out.dtype != data.dtype:
        out = out.astype(data.dtype)
    return out, lambda dy: (dy * ((data >= a_min) & (data <= a_max)),)


@register('cast')
def cast(xp, data, dtype):
    """Convert to ``dtype``; the gradient is converted back."""
    dtype = normalize_dtype(dtype)  # an MXNetError for dtypes minigluon lacks
    src = data.dtype
    return data.astype(dtype), lambda dy: (dy.astype(src),)


@register('copy')
def copy(xp, data):
    """A copy that does not share memory with ``data``."""
    return data.copy(), lambda dy: (dy,)


@register('BlockGrad', differentiable=False)
def block_grad(xp, data):
    """``data`` unchanged, as a graph's gradient barrier (``stop_gradient``): no gradient
    flows back through it."""
    return data.copy()


@register('_identity_with_attr_like_rhs', num_inputs=2)
def _identity_with_attr_like_rhs(xp, lhs, rhs):
    """``lhs`` unchanged; in a graph ``rhs`` takes its shape (MXNet's shape constraint
    for backward shape inference). ``rhs`` gets no gradient."""
    return lhs.copy(), lambda dy: (dy, None)


def _to_context(params):
    return params['ctx']


@register('_copyto', output_context=_to_context)
def _copyto(xp, data, ctx, src):
    """Copy ``data`` from context ``src`` to context ``ctx``; the gradient goes back."""
    return ctx.put(data), lambda dy: (src.put(dy),)


@register('zeros_like', differentiable=False)
def zeros_like(xp, data):
    """Zeros with the shape and dtype of ``data``."""
    return xp.zeros_like(data)


@register('logical_not', differentiable=False)
def logical_not(xp, data):
    """Elementwise ``not data``: 1 where ``data`` is 0, else 0, in ``data``'s dtype."""
    return xp.logical_not(data).astype(data.dtype)


@register('ones_like', differentiable=False)
def ones_like(xp, data):
    """Ones with the shape and dtype of ``data``."""
    return xp.ones_like(data)
