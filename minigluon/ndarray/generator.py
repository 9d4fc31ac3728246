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
    value = int(seed_state)
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


def uniform01(xp, shape):
    """float32 samples of ``[0, 1)`` from the generator of ``xp``'s device (the seeded
    host generator for numpy; CuPy keeps one per GPU)."""
    if xp is np:
        return _host.random(shape, dtype='float32')
    return xp.random.random_sample(shape, dtype='float32')
