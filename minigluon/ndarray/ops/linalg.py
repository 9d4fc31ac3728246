"""Matrix products: dot and batch_dot."""
from ...base import MXNetError
from ..registry import register, shape_rule


@register('dot', num_inputs=2)
def dot(xp, lhs, rhs, transpose_a=False, transpose_b=False):
    """MXNet's dot: contract the last axis of ``lhs`` with the first axis of ``rhs``.

    For 2-D inputs this is the matrix product. As in MXNet, ``transpose_a`` contracts
    the *first* axis of ``lhs`` (output axes ``lhs.shape[1:]``, in order) and
    ``transpose_b`` the *last* axis of ``rhs`` (output axes ``rhs.shape[:-1]``): an
    N-D input is viewed as 2-D and that matrix is transposed.
    """
    a = xp.moveaxis(lhs, 0, -1) if transpose_a else lhs
    b = xp.moveaxis(rhs, -1, 0) if transpose_b else rhs
    if a.shape[-1] != b.shape[0]:
        raise MXNetError('dot: shapes %s and %s (after transpose_a=%s, transpose_b=%s) do not '
                         'match: %d != %d' % (lhs.shape, rhs.shape, transpose_a, transpose_b,
                                              a.shape[-1], b.shape[0]))
    out = xp.tensordot(a, b, axes=1) if a.ndim > 2 or b.ndim > 2 else xp.dot(a, b)

    def backward(dy):
        dy = dy.reshape(a.shape[:-1] + b.shape[1:])
        na, nb = a.ndim - 1, b.ndim - 1
        # d a = dy . b^T over b's trailing axes; d b = a^T . dy over a's leading axes
        da = xp.tensordot(dy, b, axes=(tuple(range(na, na + nb)), tuple(range(1, nb + 1))))
        db = xp.tensordot(a, dy, axes=(tuple(range(na)), tuple(range(na))))
        return (xp.moveaxis(da, -1, 0) if transpose_a else da), \
            (xp.moveaxis(db, 0, -1) if transpose_b else db)
    return out, backward


@shape_rule('dot')
def _dot_shapes(lhs, rhs, transpose_a=False, transpose_b=False, **_):
    """The contracted axes have one size; the free axes cannot be inferred."""
    i = 0 if transpose_a else len(lhs) - 1
    j = len(rhs) - 1 if transpose_b else 0
    size = lhs[i] or rhs[j]
    return lhs[:i] + (size,) + lhs[i + 1:], rhs[:j] + (size,) + rhs[j + 1:]


@register('batch_dot', num_inputs=2)
def batch_dot(xp, lhs, rhs, transpose_a=False, transpose_b=False):
    """Batched matrix product of ``(B, n, m)`` and ``(B, m, k)`` arrays."""
    if lhs.ndim != 3 or rhs.ndim != 3:
        raise MXNetError('batch_dot needs 3-D inputs, got shapes %s and %s'
                         % (lhs.shape, rhs.shape))
    a = lhs.transpose(0, 2, 1) if transpose_a else lhs
    b = rhs.transpose(0, 2, 1) if transpose_b else rhs
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise MXNetError('batch_dot: shapes %s and %s (transpose_a=%s, transpose_b=%s) do not '
                         'match' % (lhs.shape, rhs.shape, transpose_a, transpose_b))
    out = xp.matmul(a, b)

    def backward(dy):
        da = xp.matmul(dy, b.transpose(0, 2, 1))
        db = xp.matmul(a.transpose(0, 2, 1), dy)
        return (da.transpose(0, 2, 1) if transpose_a else da,
                db.transpose(0, 2, 1) if transpose_b else db)
    return out, backward


@shape_rule('batch_dot')
def _batch_dot_shapes(lhs, rhs, transpose_a=False, transpose_b=False, **_):
    """The batch axes have one size, and so have the contracted axes."""
    if len(lhs) != 3 or len(rhs) != 3:
        return lhs, rhs
    i, j = (1 if transpose_a else 2), (2 if transpose_b else 1)
    batch, size = lhs[0] or rhs[0], lhs[i] or rhs[j]
    lhs = (batch,) + tuple(size if k == i else lhs[k] for k in (1, 2))
    rhs = (batch,) + tuple(size if k == j else rhs[k] for k in (1, 2))
    return lhs, rhs
