"""Random sampling (``nd.random``, ``mx.random``) from the generators of ``generator.py``.

Every sampler takes its distribution's parameters as numbers or as NDArrays of one
shape. With numbers it draws an array of ``shape`` (one element by default) on
``ctx``; with NDArrays it draws ``shape`` samples for each parameter element, an
array of ``param.shape + shape`` on the parameters' context, as in MXNet.
"""
import numpy as np

from ..base import MXNetError, MXNetValueError, numeric_types
from ..context import Context, current_context
from .dispatch import invoke
from .dtypes import normalize_dtype
from .generator import device_generator, host_generator, seed  # noqa: F401  (nd.random.seed)
from .ndarray import NDArray
from .registry import get_op


def _shape(shape):
    if shape is None:
        return ()
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def _sample(draw, params, shape, dtype, ctx, out, default_dtype='float32'):
    """Run ``draw(generator, *params, size)`` for numbers or NDArray parameters.

    ``generator`` is numpy's Generator on CPUs and CuPy's module on a GPU; both have
    ``uniform``, ``normal``, ``gamma``, ``exponential``, ``poisson`` and
    ``negative_binomial``.
    """
    arrays = [p for p in params if isinstance(p, NDArray)]
    if arrays:
        if len(arrays) != len(params):
            raise MXNetValueError('distribution parameters must all be NDArrays or all be '
                                  'numbers, got %s' % ', '.join(type(p).__name__ for p in params))
        ref = arrays[0]
        if any(p.shape != ref.shape or p.context != ref.context for p in arrays):
            raise MXNetValueError('NDArray distribution parameters must have one shape and '
                                  'context, got %s' % ', '.join('%s @%s' % (p.shape, p.context)
                                                                for p in arrays))
        ctx, extra = ref.context, _shape(shape)
        size = ref.shape + extra
        values = [p._data.reshape(ref.shape + (1,) * len(extra)) for p in arrays]
        default_dtype = ref.dtype if np.dtype(ref.dtype).kind == 'f' else default_dtype
    else:
        if not all(isinstance(p, numeric_types) for p in params):
            raise MXNetValueError('distribution parameters must be numbers or NDArrays, got %s'
                                  % ', '.join(type(p).__name__ for p in params))
        size = _shape(shape) or (1,)
        values = params
    if out is not None:
        ctx, size, dtype = out.context, out.shape if not arrays else size, out.dtype
    ctx = current_context() if ctx is None else Context(ctx)
    dt = normalize_dtype(dtype if dtype is not None else default_dtype)
    with ctx.device():
        data = draw(device_generator(ctx.xp), *values, size).astype(dt, copy=False)
    result = NDArray(data, ctx)
    if out is not None:
        out[:] = result
        return out
    return result


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the uniform distribution on ``[low, high)``.

    Parameters
    ----------
    low, high : float or NDArray, default 0, 1
        The bounds: both numbers, or NDArrays of one shape and context giving one
        distribution per element.
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(lambda g, lo, hi, s: g.uniform(lo, hi, s), [low, high], shape, dtype, ctx,
                   out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the normal distribution N(loc, scale**2).

    Parameters
    ----------
    loc, scale : float or NDArray, default 0, 1
        The mean and standard deviation: both numbers, or NDArrays of one shape and
        context giving one distribution per element.
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(lambda g, m, sd, s: g.normal(m, sd, s), [loc, scale], shape, dtype, ctx, out)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, out=None, **kwargs):
    """Normal samples of shape ``shape`` (given as positional ints), N(loc, scale**2)."""
    return normal(loc, scale, shape, dtype, ctx, out)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution of shape ``alpha`` and scale ``beta`` (mean
    ``alpha * beta``).

    Parameters
    ----------
    alpha, beta : float or NDArray
        Shape and scale, default 1, 1: numbers, or
        NDArrays of one shape and context (one distribution per element).
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(lambda g, a, b, s: g.gamma(a, b, s), [alpha, beta], shape, dtype, ctx, out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution of mean ``scale``.

    Parameters
    ----------
    scale : float or NDArray
        The mean (1 / rate), default 1; a number or an NDArray (one
        distribution per element).
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(lambda g, b, s: g.exponential(b, s), [scale], shape, dtype, ctx, out)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the Poisson distribution of rate ``lam`` (float32 by default).

    Parameters
    ----------
    lam : float or NDArray
        The rate, default 1; a number or an NDArray (one distribution per
        element).
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(lambda g, rate, s: g.poisson(rate, s), [lam], shape, dtype, ctx, out)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the negative binomial distribution: the failures before ``k``
    successes of trials that succeed with probability ``p``.

    Parameters
    ----------
    k, p : float or NDArray
        Successes and success probability, default 1, 1: numbers, or
        NDArrays of one shape and context (one distribution per element).
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(lambda g, n, prob, s: g.negative_binomial(n, prob, s), [k, p], shape, dtype,
                   ctx, out)


def _gamma_poisson(g, mu, alpha, size):
    """Poisson draws whose rate is Gamma(1/alpha, mu*alpha): mean mu, variance mu + alpha mu^2
    (a plain Poisson where alpha is 0)."""
    safe = alpha + (alpha == 0)  # numbers or arrays alike
    rate = g.gamma(1.0 / safe, mu * safe, size)
    return g.poisson(rate * (alpha != 0) + mu * (alpha == 0), size)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None,
                                  **kwargs):
    """Samples from the generalized negative binomial distribution of mean ``mu`` and
    dispersion ``alpha`` (a Gamma-Poisson mixture; a Poisson where ``alpha`` is 0).

    The variance is ``mu + alpha * mu**2``.

    Parameters
    ----------
    mu, alpha : float or NDArray
        Mean and dispersion, default 1, 1: numbers, or
        NDArrays of one shape and context (one distribution per element).
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; float32 by default (with NDArray parameters, their dtype
        when it is a float type).
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    return _sample(_gamma_poisson, [mu, alpha], shape, dtype, ctx, out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from ``[low, high)`` (int32 by default).

    Parameters
    ----------
    low, high : int or NDArray
        The bounds, ``high`` excluded: both numbers, or NDArrays of one shape and
        context.
    shape : int or tuple of int, optional
        Samples per parameter value: with number parameters the output's shape ((1,)
        when omitted); with NDArray parameters it is appended to their shape.
    dtype : str, optional
        The element type; int32 by default.
    ctx : Context, optional
        The device, for number parameters; the current context by default (NDArray
        parameters give their own).
    out : NDArray, optional
        Write the samples into this array, whose context and dtype are used (and its
        shape, with number parameters).

    Returns
    -------
    NDArray
    """
    def draw(g, lo, hi, s):
        if g is host_generator():
            return g.integers(lo, hi, s, dtype=np.int64)
        return g.randint(lo, hi, s, dtype=np.int64)
    return _sample(draw, [low, high], shape, dtype, ctx, out, default_dtype='int32')


def multinomial(data, shape=None, get_prob=False, out=None, dtype='int32', **kwargs):
    """Draw category indices from the distributions along the last axis of ``data``.

    ``data`` of shape ``(d1, ..., k)`` holds probabilities summing to 1 over its last
    axis; ``shape`` draws are made from each, giving ``(d1, ..., *shape)``. With
    ``get_prob=True`` returns ``[samples, log_probabilities]``; the gradient of the
    log-probabilities reaches ``data`` (for REINFORCE-style estimators).
    """
    if not isinstance(data, NDArray):
        raise MXNetError('multinomial: data must be an NDArray of probabilities, got %s'
                         % type(data).__name__)
    result = invoke(get_op('_sample_multinomial'), (data,),
                    {'shape': _shape(shape), 'get_prob': get_prob, 'dtype': dtype})
    if out is None:
        return result
    if get_prob:
        out[0][:], out[1][:] = result
    else:
        out[:] = result
    return out


def _like(sampler, data, params, kwargs):
    if not isinstance(data, NDArray):
        raise MXNetError('%s_like needs an NDArray, got %s' % (sampler.__name__,
                                                               type(data).__name__))
    return sampler(*params, shape=data.shape, dtype=data.dtype, ctx=data.context, **kwargs)


def uniform_like(data, low=0, high=1, **kwargs):
    """Uniform samples with the shape, dtype and context of ``data``."""
    return _like(uniform, data, [low, high], kwargs)


def normal_like(data, loc=0, scale=1, **kwargs):
    """Normal samples with the shape, dtype and context of ``data``."""
    return _like(normal, data, [loc, scale], kwargs)


def gamma_like(data, alpha=1, beta=1, **kwargs):
    """Gamma samples with the shape, dtype and context of ``data``."""
    return _like(gamma, data, [alpha, beta], kwargs)


def exponential_like(data, lam=1, **kwargs):
    """Exponential samples of rate ``lam`` with the shape, dtype and context of ``data``."""
    return _like(exponential, data, [1.0 / lam], kwargs)


def poisson_like(data, lam=1, **kwargs):
    """Poisson samples with the shape, dtype and context of ``data``."""
    return _like(poisson, data, [lam], kwargs)


def negative_binomial_like(data, k=1, p=1, **kwargs):
    """Negative binomial samples with the shape, dtype and context of ``data``."""
    return _like(negative_binomial, data, [k, p], kwargs)


def generalized_negative_binomial_like(data, mu=1, alpha=1, **kwargs):
    """Generalized negative binomial samples shaped like ``data``."""
    return _like(generalized_negative_binomial, data, [mu, alpha], kwargs)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    ctx = data.context
    with ctx.device():
        perm = device_generator(ctx.xp).permutation(data.shape[0])
    return NDArray(data._data[perm], ctx)


def unique_zipfian(range_max, shape):
    """Draw, for each of ``shape[0]`` rows, ``shape[1]`` distinct classes in
    ``[0, range_max)`` from the log-uniform (Zipfian) distribution
    ``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)``.

    Returns ``(classes, trials)``: int64 arrays of ``shape`` and ``(shape[0],)``, the
    second counting the draws each row needed to find its distinct classes. This is
    MXNet's ``_sample_unique_zipfian``, used for sampled softmax.
    """
    rows, num_sampled = shape
    if num_sampled > range_max:
        raise MXNetError('unique_zipfian: cannot draw %d distinct classes from %d'
                         % (num_sampled, range_max))
    rng = host_generator()
    log_range = np.log(range_max + 1.0)
    classes = np.empty((rows, num_sampled), np.int64)
    trials = np.empty(rows, np.int64)
    for r in range(rows):
        drawn = np.empty(0, np.int64)
        while True:
            more = np.exp(rng.random(max(2 * num_sampled, 1024)) * log_range).astype(np.int64)
            drawn = np.concatenate([drawn, np.minimum(more - 1, range_max - 1)])
            _, first = np.unique(drawn, return_index=True)
            if first.size >= num_sampled:
                first.sort()
                classes[r] = drawn[first[:num_sampled]]
                trials[r] = first[num_sampled - 1] + 1
                break
    ctx = current_context()
    return NDArray(ctx.put(classes), ctx), NDArray(ctx.put(trials), ctx)
