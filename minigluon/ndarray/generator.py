"""The random generators behind every sample: one numpy Generator for the host and
CuPy's generator on each GPU; ``seed`` reseeds them so runs are reproducible."""
import numpy as np

from .. import backend
from ..base import MXNetError
from ..context import Context

_host = np.random.default_rng()


def seed(seed_state, ctx='all'):
    """Seed the generators (``ctx='all'`` or one Context)."""
    global _host
    if not isinstance(seed_state, (int, np.integer)):
        raise MXNetError('seed must be an int, got %r' % (seed_state,))
    value = int(seed_state) % 2 ** 64  # MXNet takes any int, negative ones too
    if ctx == 'all' or not Context(ctx).is_gpu:
        _host = np.random.default_rng(value)
    if ctx == 'all' or Context(ctx).is_gpu:
        try:
            backend.seed_device(None if ctx == 'all' else Context(ctx).device_id, value)
        except Exception:  # CuPy without a usable GPU: nothing to seed
            pass


def host_generator():
    """The numpy Generator behind host sampling."""
    return _host


def uniform01(xp, shape, dtype='float32'):
    """Samples of ``[0, 1)`` (float32 or float64) from the generator of ``xp``'s device
    (the seeded host generator for numpy; CuPy keeps one per GPU)."""
    if xp is np:
        return _host.random(shape, dtype=dtype)
    return xp.random.random_sample(shape, dtype=dtype)


def device_generator(xp):
    """The generator that samples for ``xp``'s device: the host numpy Generator, or
    CuPy's (which has numpy's legacy method names) for the current GPU."""
    return _host if xp is np else xp.random
