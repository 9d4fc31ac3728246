"""Random sampling (``nd.random``): one generator for the host, one per GPU.

``seed(s)`` reseeds all of them so runs are reproducible.
"""
import numpy as np

from ..base import MXNetError
from ..context import Context, current_context, cupy
from .ndarray import NDArray, normalize_dtype

_host = np.random.default_rng()
_seed_value = None


def seed(seed_state, ctx='all'):
    """Seed the generators (``ctx='all'`` or one Context)."""
    global _host, _seed_value
    if not isinstance(seed_state, (int, np.integer)):
        raise MXNetError('seed must be an int, got %r' % (seed_state,))
    _seed_value = int(seed_state)
    if ctx == 'all' or not Context(ctx).is_gpu:
        _host = np.random.default_rng(_seed_value)
    if cupy is not None and (ctx == 'all' or Context(ctx).is_gpu):
        try:
            if ctx == 'all':
                cupy.random.seed(_seed_value)
            else:
                with cupy.cuda.Device(Context(ctx).device_id):
                    cupy.random.seed(_seed_value)
        except Exception:  # CuPy without a usable GPU: nothing to seed
            pass


def _shape(shape):
    if shape is None or shape == ():
        return (1,)
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _sample(draw_host, draw_gpu, shape, dtype, ctx, out):
    if out is not None:
        ctx, shape, dtype = out.context, out.shape, out.dtype
    ctx = current_context() if ctx is None else Context(ctx)
    dt = normalize_dtype(dtype)
    if ctx.is_gpu:
        with ctx.device():
            data = draw_gpu(ctx.xp.random, _shape(shape)).astype(dt, copy=False)
    else:
        data = draw_host(_host, _shape(shape)).astype(dt, copy=False)
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
    xp = data.context.xp
    if data.context.is_gpu:
        with data.context.device():
            perm = xp.random.permutation(data.shape[0])
    else:
        perm = xp.asarray(_host.permutation(data.shape[0]))
    return NDArray(data._data[perm], data.context)


def host_generator():
    """The numpy Generator behind host sampling (for layers such as Dropout)."""
    return _host
