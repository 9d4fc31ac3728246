"""Layer ops: FullyConnected, Activation, LeakyReLU family, Dropout, Embedding."""
import math

import numpy as np

from .. import tape
from ...backend import scatter_add
from ...base import MXNetError
from ..accumulate import sum_over
from ..generator import uniform01
from ..registry import register, shape_rule
from . import elemwise, host_threads


@register('FullyConnected', num_inputs=3, takes_needs_grad=True)
def fully_connected(xp, data, weight, bias=None, num_hidden=None, no_bias=False, flatten=True,
                    *, needs_grad=(True, True, True)):
    """``data @ weight.T + bias`` with weight ``(num_hidden, in_units)``.

    ``flatten=True`` first collapses all axes after the first; otherwise the product
    applies to the last axis. Backward computes only the gradients in ``needs_grad``
    (a first layer's data gradient is one GEMM of three).
    """
    num_hidden = weight.shape[0] if num_hidden is None else num_hidden
    x = data.reshape(data.shape[0], -1) if flatten else data.reshape(-1, data.shape[-1])
    if weight.shape != (num_hidden, x.shape[1]):
        raise MXNetError('FullyConnected: weight shape %s does not fit data %s (expected (%d, %d))'
                         % (weight.shape, data.shape, num_hidden, x.shape[1]))
    product = host_threads.matmul if xp is np else xp.matmul
    out = product(x, weight.T)
    use_bias = bias is not None and not no_bias
    if use_bias:
        out += bias
    out_shape = (data.shape[0], num_hidden) if flatten else data.shape[:-1] + (num_hidden,)

    def backward(dy):
        dy2 = dy.reshape(-1, num_hidden)
        return (product(dy2, weight).reshape(data.shape) if needs_grad[0] else None,
                product(dy2.T, x) if needs_grad[1] else None,
                sum_over(xp, dy2, (0,)) if use_bias and needs_grad[2] else None)
    return out.reshape(out_shape), backward


@shape_rule('FullyConnected')
def _fully_connected_shapes(data, weight, bias=None, num_hidden=None, no_bias=False,
                            flatten=True, out_shapes=None, **_):
    """weight ``(num_hidden, in_units)``, bias ``(num_hidden,)``; data's leading sizes from
    the output's."""
    out = out_shapes[0] if out_shapes else None
    if out and data and len(out) == (2 if flatten else len(data)):
        lead = 1 if flatten else len(data) - 1
        data = tuple(out[i] or d if i < lead else d for i, d in enumerate(data))
    num_hidden = num_hidden or weight[0]
    in_units = math.prod(data[1:]) if flatten else data[-1]
    return data, (num_hidden, in_units), None if bias is None else (num_hidden,)


_ACTIVATIONS = {
    'relu': elemwise._relu, 'sigmoid': elemwise._sigmoid, 'tanh': elemwise._tanh,
    'softrelu': elemwise._softrelu, 'softsign': elemwise._softsign,
}


@register('Activation', choices={'act_type': tuple(_ACTIVATIONS)})
def activation(xp, data, act_type):
    """Apply ``act_type``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""
    fn = _ACTIVATIONS.get(act_type)
    if fn is None:
        raise MXNetError('Activation: unknown act_type %r; choose one of %s'
                         % (act_type, ', '.join(sorted(_ACTIVATIONS))))
    out, grad = fn(xp, data)
    return out, lambda dy: (grad(dy),)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def erf(xp, x):
    """Error function to about 1e-7 (Abramowitz & Stegun 7.1.26); numpy has none."""
    sign = xp.sign(x)
    a = xp.abs(x)
    t = 1 / (1 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                         + t * 1.061405429))))
    return sign * (1 - poly * xp.exp(-a * a))


@register('LeakyReLU', num_inputs=2)
def leaky_relu(xp, data, gamma=None, act_type='leaky', slope=0.25, lower_bound=None,
               upper_bound=None):
    """Leaky family: 'leaky' (``slope``), 'prelu' (learned ``gamma`` per channel),
    'elu' (``slope`` is alpha), 'selu' and 'gelu'."""
    if act_type == 'leaky':
        neg = data < 0
        out = xp.where(neg, data * slope, data)
        return out, lambda dy: (xp.where(neg, dy * slope, dy), None)
    if act_type == 'prelu':
        if gamma is None:
            raise MXNetError("LeakyReLU(act_type='prelu') needs the gamma input")
        g = gamma.reshape(_prelu_gamma_shape(gamma.shape, data.shape))
        neg = data < 0
        out = xp.where(neg, data * g, data)

        def backward(dy):
            dg_full = xp.where(neg, dy * data, 0)
            summed = tuple(i for i, n in enumerate(g.shape) if n == 1 and data.shape[i] != 1)
            dg = dg_full.sum(axis=summed).reshape(gamma.shape)
            return xp.where(neg, dy * g, dy), dg.astype(gamma.dtype, copy=False)
        return out, backward
    if act_type in ('elu', 'selu'):
        alpha, scale = (slope, 1.0) if act_type == 'elu' else (_SELU_ALPHA, _SELU_LAMBDA)
        neg = data < 0
        expm1 = xp.expm1(xp.minimum(data, 0))
        out = scale * xp.where(neg, alpha * expm1, data)
        return out.astype(data.dtype, copy=False), \
            lambda dy: ((scale * xp.where(neg, dy * alpha * (expm1 + 1), dy)).astype(dy.dtype),
                        None)
    if act_type == 'gelu':
        # float16 is computed in float32 and rounded once, as MXNet's kernel does
        x = data.astype(np.float32) if data.dtype == np.float16 else data
        cdf = 0.5 * (1 + erf(xp, x / math.sqrt(2)))
        out = x * cdf
        pdf = xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return out.astype(data.dtype, copy=False), \
            lambda dy: ((dy * (cdf + x * pdf)).astype(dy.dtype), None)
    raise MXNetError("LeakyReLU: unknown act_type %r; choose 'leaky', 'prelu', 'elu', 'selu' "
                     "or 'gelu'" % (act_type,))


def _prelu_gamma_shape(gamma_shape, data_shape):
    """``gamma_shape`` aligned on the batch and channel axes of ``data_shape`` (MXNet's
    rule): ``(C,)`` slopes per channel, ``(N, C)`` per sample and channel, ``(1,)`` one."""
    out = [1] * len(data_shape)
    s = len(gamma_shape) - 1
    for i in range(len(data_shape) - 1, -1, -1):
        if s >= 0 and i <= 1 and gamma_shape[s] in (data_shape[i], 1):
            out[i] = gamma_shape[s]
            s -= 1
    if s != -1:
        raise MXNetError('LeakyReLU(prelu): cannot broadcast gamma of shape %s to data of shape '
                         '%s; give gamma (C,), (N, C) or (1,)'
                         % (tuple(gamma_shape), tuple(data_shape)))
    return tuple(out)


@shape_rule('LeakyReLU')
def _leaky_relu_shapes(data, gamma=None, **_):
    """prelu's gamma: one slope per channel (axis 1)."""
    if gamma is None or len(gamma) != 1 or gamma[0] > 0 or len(data) < 2:
        return data, gamma
    return data, (data[1],)


@register('Dropout')
def dropout(xp, data, p=0.5, axes=(), mode='training', training=None, cudnn_off=None):
    """Zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Active only in training mode (``autograd.is_training()``) unless ``mode='always'``.
    ``axes`` share one mask along those axes (e.g. whole channels). ``p=1`` gives NaN
    everywhere, as MXNet's zeros times ``1 / (1 - p)`` do.
    """
    if not 0 <= p <= 1:
        raise MXNetError('Dropout: p must be in [0, 1], got %r' % (p,))
    if training is None:
        training = tape.is_training()
    if p == 0 or not (training or mode == 'always'):
        return data, lambda dy: (dy,)
    mask_shape = tuple(1 if i in [a % data.ndim for a in axes] else n
                       for i, n in enumerate(data.shape))
    if p == 1:
        mask = xp.full(mask_shape, xp.nan, data.dtype if data.dtype.kind == 'f' else 'float32')
    else:
        keep = uniform01(xp, mask_shape) >= p
        scale = data.dtype.type(1 / (1 - p)) if data.dtype.kind == 'f' else 1 / (1 - p)
        mask = keep * scale
    return (data * mask).astype(data.dtype, copy=False), \
        lambda dy: ((dy * mask).astype(dy.dtype, copy=False),)


@register('Embedding', num_inputs=2)
def embedding(xp, data, weight, input_dim=None, output_dim=None, dtype=None, sparse_grad=False):
    """Rows of ``weight`` (``(input_dim, output_dim)``) picked by integer ``data``."""
    if input_dim is not None and weight.shape[0] != input_dim or \
            output_dim is not None and weight.shape[1] != output_dim:
        raise MXNetError('Embedding: weight shape %s differs from (input_dim, output_dim) = '
                         '(%s, %s)' % (weight.shape, input_dim, output_dim))
    idx = xp.clip(data.astype('int64'), 0, weight.shape[0] - 1)
    out = weight[idx]

    def backward(dy):
        grad = xp.zeros_like(weight)
        scatter_add(grad, idx.reshape(-1), dy.reshape(-1, weight.shape[1]))
        return None, grad
    return out, backward


@shape_rule('Embedding')
def _embedding_shapes(data, weight, input_dim=None, output_dim=None, **_):
    return data, (input_dim or weight[0], output_dim or weight[1])
