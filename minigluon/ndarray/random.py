"""Random sampling (``nd.random``) from the generators of ``generator.py``."""
from ..context import Context, current_context
from .generator import host_generator, seed  # noqa: F401  (nd.random.seed)
from .dtypes import normalize_dtype
from .ndarray import NDArray


def _shape(shape):
    if shape is None or shape == ():
        return (1,)
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _sample(draw_host, draw_gpu, shape, dtype, ctx, out):
    if out is not None:
        ctx, shape, dtype = out.context, out.shape, out.dtype
    ctx = current_context() if ctx is None else Context(ctx)
    dt = normalize_dtype(dtype)
    if ctx.is_gpu:  # CuPy's generator has numpy's legacy method names
        with ctx.device():
            data = draw_gpu(ctx.xp.random, _shape(shape)).astype(dt, copy=False)
    else:
        data = draw_host(host_generator(), _shape(shape)).astype(dt, copy=False)
    if out is not None:
        out[:] = NDArray(data, ctx)
        return out
    return NDArray(data, ctx)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the uniform distribution on ``[low, high)``."""
    return _sample(lambda g, s: g.uniform(low, high, s), lambda g, s: g.uniform(low, high, s),
                   shape, dtype, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the normal distribution N(loc, scale**2)."""
    return _sample(lambda g, s: g.normal(loc, scale, s), lambda g, s: g.normal(loc, scale, s),
                   shape, dtype, ctx, out)


def randint(low, high, shape=None, dtype='int32', ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from ``[low, high)``."""
    return _sample(lambda g, s: g.integers(low, high, s), lambda g, s: g.randint(low, high, s),
                   shape, dtype, ctx, out)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    ctx = data.context
    if ctx.is_gpu:  # CuPy's generator on that GPU, as in _sample
        with ctx.device():
            perm = ctx.xp.random.permutation(data.shape[0])
    else:
        perm = host_generator().permutation(data.shape[0])
    return NDArray(data._data[perm], ctx)
