"""Softmax, log-softmax and softmin along an axis, stable for large inputs."""
from ..registry import register


def _scaled(data, temperature):
    return data if temperature is None or temperature == 1 else data / temperature


@register('softmax')
def softmax(xp, data, axis=-1, temperature=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (optionally ``x / temperature``)."""
    x = _scaled(data, temperature)
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)

    def backward(dy):
        g = y * (dy - (dy * y).sum(axis=axis, keepdims=True))
        return (g if temperature is None or temperature == 1 else g / temperature,)
    return y, backward


@register('log_softmax')
def log_softmax(xp, data, axis=-1, temperature=None):
    """``log(softmax(x))`` along ``axis``, computed as ``x - logsumexp(x)``."""
    x = _scaled(data, temperature)
    shifted = x - x.max(axis=axis, keepdims=True)
    y = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))

    def backward(dy):
        g = dy - xp.exp(y) * dy.sum(axis=axis, keepdims=True)
        return (g if temperature is None or temperature == 1 else g / temperature,)
    return y, backward


@register('softmin')
def softmin(xp, data, axis=-1, temperature=None):
    """``softmax(-x)`` along ``axis``: the largest weight on the smallest value."""
    y, softmax_backward = softmax(xp, -data, axis, temperature)
    return y, lambda dy: (-softmax_backward(dy)[0],)
