"""MXNet's interleaved attention matmuls (``contrib.interleaved_matmul_*``), the batched
products of multi-head attention read straight from one projection's output.

The projections are sequence-major, ``(length, batch, units)``, and interleaved per
head: self-attention's ``queries_keys_values`` holds, for each head, its query, key and
value (``head_dim`` units each) side by side, so it is ``(length, batch, heads, 3,
head_dim)``; encoder-decoder attention's ``keys_values`` is ``(length, batch, heads, 2,
head_dim)`` beside plain ``queries`` ``(length, batch, heads, head_dim)``. Attention
maps are ``(batch * heads, query length, key length)``, batch major; scores are scaled
by ``1 / sqrt(head_dim)``.
"""
import math

from ...base import MXNetError
from ..registry import register


def _split(x, heads, parts, what, op):
    """``x`` (length, batch, heads * parts * head_dim) as (length, batch, heads, parts,
    head_dim)."""
    if x.ndim != 3:
        raise MXNetError('%s: %s must be 3-d (length, batch, units), got shape %s'
                         % (op, what, x.shape))
    heads = int(heads)
    if heads < 1 or x.shape[2] % (heads * parts):
        raise MXNetError('%s: the %d units of %s do not split into heads=%d heads of %d '
                         'parts' % (op, x.shape[2], what, heads, parts))
    return x.reshape(x.shape[:2] + (heads, parts, x.shape[2] // (heads * parts)))


def _per_head(split, part):
    """Part ``part`` of each head as (batch * heads, length, head_dim)."""
    length, batch, heads, _, dim = split.shape
    return split[:, :, :, part].transpose(1, 2, 0, 3).reshape(batch * heads, length, dim)


def _interleave(xp, grads, split_shape, dtype):
    """Gradients (batch * heads, length, head_dim) of the parts (None: zero) laid back
    out as the interleaved input (length, batch, heads * parts * head_dim)."""
    length, batch, heads, parts, dim = split_shape
    out = xp.zeros(split_shape, dtype)
    for part, grad in enumerate(grads):
        if grad is not None:
            out[:, :, :, part] = grad.reshape(batch, heads, length, dim).transpose(2, 0, 1, 3)
    return out.reshape(length, batch, heads * parts * dim)


def _merge_heads(x, batch):
    """(batch * heads, length, head_dim) as (length, batch, heads * head_dim)."""
    bh, length, dim = x.shape
    return x.reshape(batch, bh // batch, length, dim).transpose(2, 0, 1, 3).reshape(
        length, batch, -1)


def _split_heads(x, heads):
    """(length, batch, heads * head_dim) as (batch * heads, length, head_dim)."""
    length, batch, units = x.shape
    return x.reshape(length, batch, heads, units // heads).transpose(1, 2, 0, 3).reshape(
        batch * heads, length, units // heads)


def _check_attention(attention, rows, cols, batch_heads, op):
    if attention.shape != (batch_heads, rows, cols):
        raise MXNetError('%s: attention must have shape (batch * heads, query length, key '
                         'length) = %s, got %s' % (op, (batch_heads, rows, cols),
                                                   attention.shape))


def _scale(dim, dtype):
    return dtype.type(1.0 / math.sqrt(dim))


@register('_contrib_interleaved_matmul_selfatt_qk')
def selfatt_qk(xp, queries_keys_values, heads=1):
    """Self-attention scores ``q k^T / sqrt(head_dim)`` of every head: (batch * heads,
    length, length) from the interleaved projection ``queries_keys_values``."""
    split = _split(queries_keys_values, heads, 3, 'queries_keys_values',
                   'interleaved_matmul_selfatt_qk')
    q, k = _per_head(split, 0), _per_head(split, 1)
    scale = _scale(split.shape[-1], queries_keys_values.dtype)
    out = xp.matmul(q, k.transpose(0, 2, 1)) * scale

    def backward(dy):
        dy = dy * scale
        return (_interleave(xp, [xp.matmul(dy, k), xp.matmul(dy.transpose(0, 2, 1), q)],
                            split.shape, queries_keys_values.dtype),)
    return out, backward


@register('_contrib_interleaved_matmul_selfatt_valatt', num_inputs=2)
def selfatt_valatt(xp, queries_keys_values, attention, heads=1):
    """Attention applied to the values: ``attention @ v`` of every head, the heads joined
    again as (length, batch, heads * head_dim)."""
    split = _split(queries_keys_values, heads, 3, 'queries_keys_values',
                   'interleaved_matmul_selfatt_valatt')
    length, batch = split.shape[:2]
    _check_attention(attention, length, length, batch * split.shape[2],
                     'interleaved_matmul_selfatt_valatt')
    v = _per_head(split, 2)
    out = _merge_heads(xp.matmul(attention, v), batch)

    def backward(dy):
        dy = _split_heads(dy, split.shape[2])
        dv = xp.matmul(attention.transpose(0, 2, 1), dy)
        return (_interleave(xp, [None, None, dv], split.shape, queries_keys_values.dtype),
                xp.matmul(dy, v.transpose(0, 2, 1)))
    return out, backward


@register('_contrib_interleaved_matmul_encdec_qk', num_inputs=2)
def encdec_qk(xp, queries, keys_values, heads=1):
    """Encoder-decoder attention scores ``q k^T / sqrt(head_dim)`` of every head:
    (batch * heads, query length, key length)."""
    op = 'interleaved_matmul_encdec_qk'
    split = _split(keys_values, heads, 2, 'keys_values', op)
    q_split = _split(queries, heads, 1, 'queries', op)
    if q_split.shape[1:3] + q_split.shape[4:] != split.shape[1:3] + split.shape[4:]:
        raise MXNetError('%s: queries (length, batch, units) need the batch of keys_values '
                         'and half its units, got shapes %s and %s'
                         % (op, queries.shape, keys_values.shape))
    q, k = _per_head(q_split, 0), _per_head(split, 0)
    scale = _scale(split.shape[-1], queries.dtype)
    out = xp.matmul(q, k.transpose(0, 2, 1)) * scale

    def backward(dy):
        dy = dy * scale
        dq = _interleave(xp, [xp.matmul(dy, k)], q_split.shape, queries.dtype)
        dk = xp.matmul(dy.transpose(0, 2, 1), q)
        return dq, _interleave(xp, [dk, None], split.shape, keys_values.dtype)
    return out, backward


@register('_contrib_interleaved_matmul_encdec_valatt', num_inputs=2)
def encdec_valatt(xp, keys_values, attention, heads=1):
    """Encoder-decoder attention applied to the values: ``attention @ v`` of every head,
    the heads joined again as (query length, batch, heads * head_dim)."""
    op = 'interleaved_matmul_encdec_valatt'
    split = _split(keys_values, heads, 2, 'keys_values', op)
    length, batch, n_heads = split.shape[:3]
    if attention.ndim != 3:
        raise MXNetError('%s: attention must be 3-d (batch * heads, query length, key '
                         'length), got shape %s' % (op, attention.shape))
    _check_attention(attention, attention.shape[1], length, batch * n_heads, op)
    v = _per_head(split, 1)
    out = _merge_heads(xp.matmul(attention, v), batch)

    def backward(dy):
        dy = _split_heads(dy, n_heads)
        dv = xp.matmul(attention.transpose(0, 2, 1), dy)
        return (_interleave(xp, [None, dv], split.shape, keys_values.dtype),
                xp.matmul(dy, v.transpose(0, 2, 1)))
    return out, backward
