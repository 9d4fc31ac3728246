"""Sampling ops whose outputs have gradients: multinomial draws with their log-likelihood."""
import numpy as np

from ...backend import scatter_add
from ...base import MXNetError
from ..dtypes import normalize_dtype
from ..generator import uniform01
from ..registry import register

# The largest integer each dtype holds exactly: category indices must fit.
_EXACT_UP_TO = {'f': {2: 2 ** 11, 4: 2 ** 24, 8: 2 ** 53}}


def _largest_index(dtype):
    if dtype.kind == 'f':
        return _EXACT_UP_TO['f'][dtype.itemsize]
    return np.iinfo(dtype).max


@register('_sample_multinomial')
def _sample_multinomial(xp, data, shape=(), get_prob=False, dtype='int32'):
    """Draw category indices from the distributions along the last axis of ``data``
    (each row sums to 1), ``shape`` draws per distribution.

    Returns the indices (``dtype``), and with ``get_prob`` also their log-probabilities
    ``log(data[..., index])``, whose gradient flows back to ``data``.
    """
    dtype = normalize_dtype(dtype)
    k = data.shape[-1]
    if k - 1 > _largest_index(dtype):
        raise MXNetError('multinomial: %d categories do not fit in dtype %s; use a wider dtype '
                         'such as int32' % (k, dtype))
    shape = (shape,) if isinstance(shape, int) else tuple(shape or ())
    rows = data.reshape(-1, k)
    count = int(np.prod(shape)) if shape else 1
    # one searchsorted over all rows: row r's cumulative sums lie in [2r, 2r + 1]
    offsets = 2 * xp.arange(rows.shape[0], dtype=np.float64)[:, None]
    cdf = xp.cumsum(rows.astype(np.float64), axis=1) + offsets
    draws = uniform01(xp, (rows.shape[0], count), 'float64') + offsets
    index = xp.searchsorted(cdf.reshape(-1), draws.reshape(-1), side='right').reshape(draws.shape)
    index = xp.clip(index - xp.arange(rows.shape[0])[:, None] * k, 0, k - 1)
    out_shape = data.shape[:-1] + shape
    samples = index.astype(dtype).reshape(out_shape)
    if not get_prob:
        return samples, lambda dy: (None,)
    row_of = xp.arange(rows.shape[0])[:, None]
    picked = rows[row_of, index]
    log_prob = xp.log(picked).reshape(out_shape)

    def backward(dys):
        g = xp.zeros(rows.shape, data.dtype)
        grad = (dys[1].reshape(index.shape) / picked).astype(data.dtype)
        scatter_add(g, (xp.broadcast_to(row_of, index.shape), index), grad)
        return (g.reshape(data.shape),)
    return (samples, log_prob), backward
