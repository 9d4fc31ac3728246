"""2-bit gradient compression with error feedback, as MXNet's.

Each value is sent as one of {-threshold, 0, +threshold}: what is left over stays in
a residual added to the next gradient, so nothing is lost over time. Sixteen codes
pack into one 32-bit word. Workers quantise and servers dequantise with these same
pure functions.
"""
import numpy as np

from ..base import MXNetError

_ZERO, _POS, _NEG = 0, 3, 2  # 2-bit codes (MXNet uses 11 for +, 10 for -)


def parse_params(compression_params):
    """Validate ``{'type': '2bit', 'threshold': t}``; returns (type, threshold)."""
    if not isinstance(compression_params, dict):
        raise MXNetError("gradient compression params must be a dict like "
                         "{'type': '2bit', 'threshold': 0.5}, got %r" % (compression_params,))
    kind = compression_params.get('type')
    if kind != '2bit':
        raise MXNetError("unsupported gradient compression type %r; only '2bit' exists" % (kind,))
    threshold = float(compression_params.get('threshold', 0.5))
    if not threshold > 0:
        raise MXNetError('2bit compression threshold must be positive, got %r' % threshold)
    return kind, threshold


def quantize_2bit(xp, grad, residual, threshold):
    """Add ``grad`` to ``residual`` and take ±threshold out where it reaches it.

    Returns the packed codes: uint32 words, 16 values each (first value in the
    lowest bits). ``residual`` is updated in place.
    """
    residual += grad
    flat = residual.reshape(-1)
    pos = flat >= threshold
    neg = flat <= -threshold
    flat[pos] -= threshold
    flat[neg] += threshold
    codes = xp.zeros(flat.size + (-flat.size) % 16, dtype=np.uint32)
    codes[:flat.size][pos] = _POS
    codes[:flat.size][neg] = _NEG
    shifts = (xp.arange(16, dtype=np.uint32) * 2)
    return (codes.reshape(-1, 16) << shifts).sum(axis=1, dtype=np.uint64).astype(np.uint32)


def dequantize_2bit(xp, packed, size, threshold, dtype=np.float32):
    """Values ``(size,)`` from packed codes: +threshold, -threshold or 0."""
    if packed.dtype != np.uint32 or packed.size * 16 < size:
        raise MXNetError('2bit payload of %d words cannot hold %d values' % (packed.size, size))
    shifts = (xp.arange(16, dtype=np.uint32) * 2)
    codes = ((packed.reshape(-1, 1) >> shifts) & 3).reshape(-1)[:size]
    out = xp.zeros(size, dtype=dtype)
    out[codes == _POS] = threshold
    out[codes == _NEG] = -threshold
    return out


class PushCompressor:
    """A worker's 2-bit compression of its pushes, with each key's residual kept here."""

    def __init__(self, compression_params):
        _, self.threshold = parse_params(compression_params)
        self._residuals = {}

    def encode(self, key, flat, start, stop):
        """Packed codes for ``flat[start:stop]`` of ``key``, and the message body that
        tells the server how to decode them."""
        residual = self._residuals.get(key)
        if residual is None:
            residual = self._residuals[key] = np.zeros(flat.size, flat.dtype)
        packed = quantize_2bit(np, flat[start:stop], residual[start:stop], self.threshold)
        return packed, {'2bit': self.threshold}
