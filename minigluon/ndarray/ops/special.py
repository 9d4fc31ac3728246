"""Special functions: ``erf``, ``erfinv``, ``gamma`` and ``gammaln``, with their gradients.

numpy has none of them and scipy is no dependency, so they are computed here in
float64 from published approximations, written once against ``xp`` (numpy or cupy):

- ``erf``: W. J. Cody's rational Chebyshev approximations (Math. Comp. 23, 1969), on
  three ranges, accurate to a few units in the last place.
- ``erfinv``: M. Giles' approximation ("Approximating the erfinv function", 2010) as a
  first guess, refined by Halley steps on ``erf`` (or on ``erfc`` near +-1, where
  ``1 - |y|`` keeps the precision that ``erf(x) - y`` would lose).
- ``gamma`` and ``gammaln`` (``log|gamma(x)|``): below 10, the recurrence brings x
  within 1/2 of 2, where the Taylor series of ``lgamma(2 + z)`` (coefficients
  ``zeta(k) - 1``) is exact to rounding, also where ``gammaln`` crosses zero at 1 and
  2; from 10, Stirling's series; below 0, the reflection formula.

Inputs of other floating dtypes are computed in float64 and rounded back; integer
inputs give integers (the value truncated), as in MXNet.
"""
import math

import numpy as np

from ..registry import register

_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_EULER_GAMMA = 0.5772156649015329


def _horner(coefs, x):
    """``coefs[0] * x**(n-1) + ... + coefs[-1]`` (at least two coefficients)."""
    out = coefs[0]
    for c in coefs[1:]:
        out = out * x + c
    return out


# ---- erf and erfc (Cody) ----

_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
          2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
          2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
          1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
          3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
          1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
          6.05183413124413191e-2, 2.33520497626869185e-3)


def _cody_ratio(num_lead, nums, dens, x):
    """Cody's ``(num_lead*x^n + nums...) / (x^n + dens...)`` evaluated as he writes it."""
    xnum, xden = num_lead * x, x
    for a, b in zip(nums[:-1], dens[:-1]):
        xnum, xden = (xnum + a) * x, (xden + b) * x
    return (xnum + nums[-1]) / (xden + dens[-1])


def _exp_minus_square(xp, y):
    """``exp(-y*y)`` with ``y*y`` split so its rounding error does not reach the result."""
    head = xp.trunc(y * 16) / 16
    return xp.exp(-head * head) * xp.exp(-(y - head) * (y + head))


def _erfc_abs(xp, y):
    """``erfc(y)`` for ``y = |x| > 0.46875``, accurate relative to its (tiny) value."""
    mid = xp.minimum(y, 4.0)
    mid = _cody_ratio(_ERF_C[8], _ERF_C[:8], _ERF_D, mid)
    far = xp.maximum(y, 4.0)
    inv = 1 / (far * far)
    far = (1 / math.sqrt(math.pi) - inv * _cody_ratio(_ERF_P[5], _ERF_P[:5], _ERF_Q, inv)) / far
    out = xp.where(y <= 4.0, mid, far) * _exp_minus_square(xp, xp.minimum(y, 27.0))
    return xp.where(y < 27.0, out, xp.where(xp.isnan(y), y, 0.0))  # nan stays nan


def _erf_small(xp, x):
    """``erf(x)`` for ``|x| <= 0.46875``."""
    z = x * x
    return x * _cody_ratio(_ERF_A[4], _ERF_A[:4], _ERF_B, z)


def erf64(xp, x):
    """``erf`` of a float64 array."""
    y = xp.abs(x)
    small = _erf_small(xp, xp.clip(x, -0.5, 0.5))
    large = xp.copysign(1.0 - _erfc_abs(xp, xp.maximum(y, 0.46875)), x)
    return xp.where(y <= 0.46875, small, large)


def erfc64(xp, x):
    """``erfc`` of a float64 array (accurate for large positive ``x``)."""
    y = xp.abs(x)
    small = 1.0 - _erf_small(xp, xp.clip(x, -0.5, 0.5))
    tail = _erfc_abs(xp, xp.maximum(y, 0.46875))
    large = xp.where(x < 0, 2.0 - tail, tail)
    return xp.where(y <= 0.46875, small, large)


# ---- erfinv ----

_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erfinv64(xp, y):
    """``erfinv`` of a float64 array: -inf/inf at -1/1, nan outside [-1, 1]."""
    a = xp.abs(y)
    inside = a < 1
    a_in = xp.where(inside, a, 0.5)
    tail = 1.0 - a_in  # exact for a_in >= 0.5
    w = -xp.log(tail * (1.0 + a_in))
    guess = xp.where(w < 5.0, _horner(_GILES_CENTRAL, w - 2.5),
                     _horner(_GILES_TAIL, xp.sqrt(xp.maximum(w, 5.0)) - 3.0)) * a_in
    central = a_in <= 0.5
    x = guess
    for _ in range(4):
        slope = _TWO_OVER_SQRT_PI * xp.exp(-x * x)
        # |y| <= 1/2: Halley's method on erf(x) - a (cubic convergence)
        step = (erf64(xp, x) - a_in) / slope
        halley = x - step / (1 + x * step)
        # nearer 1: Newton's method on log(erfc(x)) - log(1 - a), nearly linear in x*x
        # there, and free of the cancellation in erf(x) - a
        tail_value = erfc64(xp, x)
        newton = x + (xp.log(tail_value) - xp.log(tail)) * tail_value / slope
        x = xp.clip(xp.where(central, halley, newton), 0.0, 27.0)
    out = xp.where(inside, x, xp.where(a == 1, xp.inf, xp.nan))
    return xp.copysign(out, y)


# ---- gamma, lgamma and digamma ----

_GAMMA_MAX = 171.62437695630272  # gamma overflows float64 above this


def _zeta_minus_one(orders):
    """``zeta(k) - 1`` for each ``k >= 2``: the sum to n = 1999 plus its Euler-Maclaurin tail."""
    n = np.arange(2, 2000, dtype=np.float64)
    k = np.asarray(orders, dtype=np.float64)[:, None]
    end = 2000.0
    tail = end ** (1 - k) / (k - 1) + end ** -k / 2 + k * end ** (-k - 1) / 12
    return ((n ** -k).sum(axis=1) + tail[:, 0]).tolist()


# lgamma(2 + z) = (1 - euler_gamma) z + sum_{k >= 2} (-1)^k (zeta(k) - 1) / k z^k, |z| < 2
_LGAMMA2_ORDERS = range(2, 42)
_LGAMMA2 = [(-1) ** k * c / k for k, c in zip(_LGAMMA2_ORDERS,
                                                _zeta_minus_one(_LGAMMA2_ORDERS))]
# Stirling's series for lgamma: sum_k B_2k / (2k (2k - 1) x^(2k - 1))
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)


def _lgamma_near_two(z):
    """``lgamma(2 + z)`` for ``|z| <= 1/2``."""
    return z * ((1 - _EULER_GAMMA) + z * _horner(_LGAMMA2[::-1], z))


def _reduce_to_two(xp, x):
    """``(z, factor, log_factor)`` with ``gamma(x) = exp(lgamma(2 + z)) * factor`` for
    0 < x < 10: ``gamma(x) = gamma(x + 2) / (x (x + 1))`` below 1/2, ``gamma(x + 1) / x``
    below 3/2, and ``gamma(y) y (y + 1) ... (x - 1)`` with y in [3/2, 5/2) above."""
    mid = xp.clip(x, 1.5, 10.0)
    steps = xp.floor(mid - 1.5)
    y = mid - steps  # exact, as is each y + j below
    product = 1.0
    for j in range(8):
        product = product * xp.where(j < steps, y + j, 1.0)
    low = xp.clip(x, 1e-300, 1.5)
    z = xp.where(x < 0.5, low, xp.where(x < 1.5, low - 1, y - 2))
    factor = xp.where(x < 0.5, 1 / (low * (1 + low)), xp.where(x < 1.5, 1 / low, product))
    log_factor = xp.where(x < 0.5, -xp.log(low) - xp.log1p(low),
                          xp.where(x < 1.5, -xp.log(low), xp.log(product)))
    return z, factor, log_factor


def _stirling_series(xp, x):
    """``lgamma(x) - ((x - 1/2) log(x) - x + log(2 pi) / 2)`` for x >= 10."""
    inv = 1 / x
    return inv * _horner(_STIRLING[::-1], inv * inv)


def _gamma_positive(xp, x):
    """``gamma(x)`` for 0 < x <= _GAMMA_MAX."""
    z, factor, _ = _reduce_to_two(xp, x)
    small = xp.exp(_lgamma_near_two(z)) * factor
    big = xp.maximum(x, 10.0)
    # x^(x - 1/2) e^-x sqrt(2 pi) e^series, its power halved so nothing overflows early
    half_power = xp.power(big, (big - 0.5) / 2)
    stirling = half_power * xp.exp(-big) * (_SQRT_2PI * xp.exp(_stirling_series(xp, big))) \
        * half_power
    return xp.where(x < 10, small, stirling)


def _sinpi(xp, x):
    """``sin(pi * x)``, with ``x`` reduced exactly so large ``x`` loses nothing."""
    r = x - 2 * xp.round(x / 2)  # in [-1, 1], exact
    r = xp.where(xp.abs(r) > 0.5, xp.sign(r) - r, r)  # sin(pi r) = sin(pi (1 - r))
    return xp.sin(math.pi * r)


def _is_nonpositive_integer(xp, x):
    return (x <= 0) & (xp.floor(x) == x)


def gamma64(xp, x):
    """``gamma`` of a float64 array (nan at negative integers and -inf, +-inf at +-0)."""
    positive = _gamma_positive(xp, xp.clip(x, 1e-300, _GAMMA_MAX))
    # reflection for x < 0: gamma(x) = pi / (-x sin(pi x) gamma(-x)), with -x exact where
    # 1 - x would be rounded
    flipped = xp.maximum(-x, 1e-300)
    sine = _sinpi(xp, -flipped)
    reflected = math.pi / (sine * _gamma_positive(xp, xp.minimum(flipped, _GAMMA_MAX))) \
        / flipped
    # where gamma(-x) overflows, the result is below the smallest normal number
    far = xp.sign(sine) * xp.exp(math.log(math.pi) - xp.log(xp.abs(sine)) - xp.log(flipped)
                                 - lgamma64(xp, xp.minimum(flipped, 1e300)))
    reflected = xp.where(flipped <= _GAMMA_MAX, reflected, far)
    out = xp.where(x > 0, positive, reflected)
    out = xp.where(x > _GAMMA_MAX, xp.inf, out)
    out = xp.where(xp.abs(x) < 1e-300, 1 / x, out)  # 1/x to rounding; +-inf at +-0
    return xp.where(_is_nonpositive_integer(xp, x) & (x != 0), xp.nan, out)


def _lgamma_positive(xp, x):
    """``lgamma(x)`` for x > 0."""
    z, _, log_factor = _reduce_to_two(xp, xp.minimum(x, 10.0))
    small = _lgamma_near_two(z) + log_factor
    tiny = -xp.log(x)  # below 1e-300, lgamma(x) = -log(x) to rounding
    big = xp.maximum(x, 10.0)
    stirling = (big - 0.5) * xp.log(big) - big + (0.5 * math.log(2 * math.pi)
                                                  + _stirling_series(xp, big))
    stirling = xp.where(xp.isinf(big), xp.inf, stirling)
    return xp.where(x < 1e-300, tiny, xp.where(x < 10, small, stirling))


def lgamma64(xp, x):
    """``log|gamma(x)|`` of a float64 array (inf at non-positive integers and +-inf)."""
    positive = _lgamma_positive(xp, xp.maximum(x, 1e-320))
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - log(-x) - lgamma(-x), -x exact
    flipped = xp.maximum(-x, 1e-320)
    reflected = math.log(math.pi) - xp.log(xp.abs(_sinpi(xp, -flipped))) - xp.log(flipped) \
        - _lgamma_positive(xp, flipped)
    out = xp.where(x > 0, positive, reflected)
    out = xp.where(_is_nonpositive_integer(xp, x) | xp.isinf(x), xp.inf, out)
    return xp.where(xp.isnan(x), xp.nan, out)


def digamma64(xp, x):
    """``psi(x) = d lgamma(x) / dx`` of a float64 array (the gradients' need)."""
    y = xp.where(x > 0, x, 1 - x)  # reflection below: psi(x) = psi(1 - x) - pi / tan(pi x)
    shift = 0.0
    for _ in range(10):  # psi(y) = psi(y + 1) - 1 / y, up to y >= 10
        low = y < 10
        shift = shift + xp.where(low, 1 / y, 0.0)
        y = xp.where(low, y + 1, y)
    inv2 = 1 / (y * y)
    series = inv2 * _horner((-691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12),
                            inv2)
    psi = xp.log(y) - 0.5 / y - series - shift
    sine = _sinpi(xp, x)
    cosine = _sinpi(xp, x + 0.5)
    reflected = psi - math.pi * cosine / sine
    out = xp.where(x > 0, psi, reflected)
    return xp.where(_is_nonpositive_integer(xp, x), xp.nan, out)


# ---- the ops ----

def _special(name, doc):
    """Register ``name``: ``forward(xp, data)`` from ``fn(xp, x64) -> (y64, grad_fn)`` where
    ``grad_fn(x64, y64)`` is ``dy/dx`` in float64."""
    def deco(fn):
        def forward(xp, data):
            with np.errstate(all='ignore'):
                x64 = data.astype(np.float64)
                y64, grad_fn = fn(xp, x64)
                out = y64 if data.dtype == np.float64 else y64.astype(data.dtype)

            def backward(dy):
                with np.errstate(all='ignore'):
                    slope = grad_fn(x64, y64)
                    return ((dy * slope.astype(dy.dtype, copy=False)).astype(dy.dtype),)
            return out, backward
        forward.__doc__ = doc
        forward.__name__ = name
        register(name)(forward)
        return fn
    return deco


@_special('erf', 'Elementwise Gauss error function ``erf(x) = 2/sqrt(pi) * int_0^x '
                 'exp(-t^2) dt``.')
def _erf(xp, x):
    return erf64(xp, x), lambda x, y: _TWO_OVER_SQRT_PI * xp.exp(-x * x)


@_special('erfinv', 'Elementwise inverse of ``erf``: -inf and inf at -1 and 1, nan '
                    'outside [-1, 1].')
def _erfinv(xp, x):
    return erfinv64(xp, x), lambda x, y: (0.5 * math.sqrt(math.pi)) * xp.exp(y * y)


@_special('gamma', 'Elementwise gamma function (nan at negative integers, +-inf at '
                   '+-0).')
def _gamma(xp, x):
    return gamma64(xp, x), lambda x, y: y * digamma64(xp, x)


@_special('gammaln', 'Elementwise ``log(|gamma(x)|)`` (inf at non-positive integers).')
def _gammaln(xp, x):
    return lgamma64(xp, x), lambda x, y: digamma64(xp, x)
