"""MXNet's ``linalg`` operators (``_linalg_gemm``, ``_linalg_potrf``, ...): BLAS and LAPACK
style products, factorizations and matrix helpers, each on the last two axes of its
inputs and batched over the leading ones.

As in MXNet, an operator that takes a triangular or symmetric matrix reads only the
triangle it is told (``lower``) and its gradient is zero on the other one; potrf and
syevd read the lower (potrf: the chosen) triangle as a symmetric matrix, so their
gradient is the symmetric one. Only float32 and float64 are supported, as in MXNet.
"""
import numpy as np

from ...base import MXNetError
from ..registry import register

_LinAlgError = np.linalg.LinAlgError  # CuPy raises numpy's class too


# ---- helpers on batches of matrices (the last two axes) ----

def _t(x):
    """The batch of transposed matrices."""
    return x.swapaxes(-1, -2)


def _tri(xp, a, lower):
    """The lower (or upper) triangle of each matrix, the other one zeroed."""
    return xp.tril(a) if lower else xp.triu(a)


def _symmetric_from(xp, a, lower):
    """The symmetric matrices whose lower (or upper) triangle is ``a``'s."""
    if lower:
        return xp.tril(a) + _t(xp.tril(a, -1))
    return xp.triu(a) + _t(xp.triu(a, 1))


def _copy_lower_to_upper(xp, m):
    """``m`` with its strict upper triangle replaced by the mirrored lower one."""
    return xp.tril(m) + _t(xp.tril(m, -1))


def _diag_embed(xp, v):
    """Square matrices with the last axis of ``v`` on their diagonals."""
    n = v.shape[-1]
    out = xp.zeros(v.shape + (n,), dtype=v.dtype)
    i = xp.arange(n)
    out[..., i, i] = v
    return out


def _tri_solve(xp, t, b, lower):
    """``t^-1 b`` for triangular ``t``. A zero on ``t``'s diagonal gives inf/nan where
    BLAS's trsm gives them (forward or back substitution), rather than an error."""
    try:
        return xp.linalg.solve(t, b)
    except _LinAlgError:
        pass
    x = xp.zeros(b.shape, dtype=b.dtype)
    with np.errstate(divide='ignore', invalid='ignore'):
        for i in (range(t.shape[-1]) if lower else range(t.shape[-1] - 1, -1, -1)):
            known = xp.matmul(t[..., i:i + 1, :], x)[..., 0, :]  # rows not solved yet are 0
            x[..., i, :] = (b[..., i, :] - known) / t[..., i, i][..., None]
    return x


def _check_float(what, *arrays):
    for a in arrays:
        if a.dtype not in (np.float32, np.float64):
            raise MXNetError('%s supports float32 and float64 only, got %s; cast the input '
                             'with .astype(\'float32\')' % (what, a.dtype))


def _check_matrices(what, a, square=False):
    if a.ndim < 2:
        raise MXNetError('%s needs a tensor of matrices (at least 2-D), got shape %s'
                         % (what, a.shape))
    if square and a.shape[-1] != a.shape[-2]:
        raise MXNetError('%s needs square matrices on the last two axes, got shape %s'
                         % (what, a.shape))


def _check_batch(what, *arrays):
    """Every input has the same leading (batch) axes, as MXNet requires (no broadcasting)."""
    shapes = [a.shape for a in arrays]
    if any(len(s) != len(shapes[0]) or s[:-2] != shapes[0][:-2] for s in shapes):
        raise MXNetError('%s: the inputs must have the same number of axes and the same '
                         'leading (batch) axes, got shapes %s' % (what, shapes))


def _check_same_ndim(what, *arrays):
    _check_matrices(what, arrays[0])
    if any(a.ndim != arrays[0].ndim for a in arrays):
        raise MXNetError('%s: the inputs must have the same number of axes, got shapes %s'
                         % (what, [a.shape for a in arrays]))


def _per_matrix_shape(batch_shape, ndim):
    """The shape of a result with one number per matrix: MXNet keeps ``(1,)`` for one
    matrix."""
    return (1,) if ndim == 2 else batch_shape


# ---- gemm and gemm2 ----

def _row_axis_swap(what, ndim, axis):
    """A function moving the row axis ``axis`` to the second last place (and back)."""
    row = axis + ndim if axis < 0 else axis
    if not 0 <= row < ndim - 1:
        raise MXNetError('%s: axis=%d is not a row axis of %d-D inputs (it must be below '
                         'the last axis)' % (what, axis, ndim))
    if row == ndim - 2:
        return lambda x: x
    return lambda x: x.swapaxes(row, -2)


def _product(what, xp, a, b, transpose_a, transpose_b, alpha):
    """``alpha * op(a) @ op(b)`` and its backward ``dy -> (da, db)``."""
    op_a = _t(a) if transpose_a else a
    op_b = _t(b) if transpose_b else b
    if op_a.shape[:-2] != op_b.shape[:-2] or op_a.shape[-1] != op_b.shape[-2]:
        raise MXNetError('%s: shapes %s and %s (transpose_a=%s, transpose_b=%s) cannot be '
                         'multiplied' % (what, a.shape, b.shape, transpose_a, transpose_b))
    out = alpha * xp.matmul(op_a, op_b)

    def backward(dy):
        d_op_a = alpha * xp.matmul(dy, _t(op_b))
        d_op_b = alpha * xp.matmul(_t(op_a), dy)
        return (_t(d_op_a) if transpose_a else d_op_a), (_t(d_op_b) if transpose_b else d_op_b)
    return out, backward


@register('_linalg_gemm', num_inputs=3)
def linalg_gemm(xp, A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0,
                axis=-2):
    """``alpha * op(A) @ op(B) + beta * C`` for each matrix of a batch, ``op`` transposing
    where ``transpose_a``/``transpose_b`` say. The matrices' rows are on ``axis`` and their
    columns on the last axis; the other axes are the batch."""
    what = 'linalg.gemm'
    _check_float(what, A, B, C)
    _check_same_ndim(what, A, B, C)
    swap = _row_axis_swap(what, A.ndim, axis)
    product, product_backward = _product(what, xp, swap(A), swap(B), transpose_a,
                                         transpose_b, alpha)
    if swap(C).shape != product.shape:
        raise MXNetError('%s: C has shape %s, the product has %s' % (what, C.shape,
                                                                        swap(product).shape))
    out = xp.ascontiguousarray(swap(product + beta * swap(C)))

    def backward(dy):
        da, db = product_backward(swap(dy))
        return swap(da), swap(db), beta * dy
    return out, backward


@register('_linalg_gemm2', num_inputs=2)
def linalg_gemm2(xp, A, B, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2):
    """``alpha * op(A) @ op(B)`` for each matrix of a batch (see ``linalg.gemm``)."""
    what = 'linalg.gemm2'
    _check_float(what, A, B)
    _check_same_ndim(what, A, B)
    swap = _row_axis_swap(what, A.ndim, axis)
    product, product_backward = _product(what, xp, swap(A), swap(B), transpose_a,
                                         transpose_b, alpha)

    def backward(dy):
        da, db = product_backward(swap(dy))
        return swap(da), swap(db)
    return xp.ascontiguousarray(swap(product)), backward


# ---- Cholesky: potrf, potri ----

@register('_linalg_potrf')
def linalg_potrf(xp, A, lower=True):
    """The Cholesky factor of symmetric positive definite matrices: lower triangular ``L``
    with ``A = L @ L.T`` (``lower``), or upper ``U`` with ``A = U.T @ U``. Only that
    triangle of ``A`` is read."""
    _check_float('linalg.potrf', A)
    _check_matrices('linalg.potrf', A, square=True)
    try:
        low = xp.linalg.cholesky(_symmetric_from(xp, A, lower))
    except _LinAlgError:
        raise MXNetError('linalg.potrf: a matrix is not symmetric positive definite, so it '
                         'has no Cholesky factor') from None
    out = low if lower else _t(low)

    def backward(dy):
        # symmetric gradient: 0.5 * L^-T copy_lower_to_upper(L^T dL) L^-1
        m = _copy_lower_to_upper(xp, xp.matmul(_t(low), dy if lower else _t(dy)))
        left = _tri_solve(xp, _t(low), m, lower=False)
        return 0.5 * _t(_tri_solve(xp, _t(low), _t(left), lower=False))
    return xp.ascontiguousarray(out), backward


@register('_linalg_potri')
def linalg_potri(xp, A, lower=True):
    """The inverse of ``B`` from its Cholesky factor ``A`` (``linalg.potrf``):
    ``A^-T A^-1`` (``lower``) or ``A^-1 A^-T``. Only that triangle of ``A`` is read."""
    _check_float('linalg.potri', A)
    _check_matrices('linalg.potri', A, square=True)
    try:
        inv = xp.linalg.inv(_tri(xp, A, lower))
    except _LinAlgError:
        raise MXNetError('linalg.potri: a triangular factor has a zero on its diagonal, '
                         'so it is singular') from None
    out = xp.matmul(_t(inv), inv) if lower else xp.matmul(inv, _t(inv))

    def backward(dy):
        both = dy + _t(dy)
        if lower:
            grad = xp.matmul(xp.matmul(out, both), _t(inv))
        else:
            grad = xp.matmul(_t(inv), xp.matmul(both, out))
        return -_tri(xp, grad, lower)
    return out, backward


# ---- triangular products and solves: trmm, trsm ----

def _triangular_operand(what, xp, A, B, transpose, rightside, lower):
    """``(op(tri(A)), whether it is lower triangular)`` after checking the shapes."""
    _check_float(what, A, B)
    _check_matrices(what, A, square=True)
    _check_batch(what, A, B)
    inner = B.shape[-1] if rightside else B.shape[-2]
    if inner != A.shape[-1]:
        raise MXNetError('%s: A of shape %s cannot multiply B of shape %s from the %s'
                         % (what, A.shape, B.shape, 'right' if rightside else 'left'))
    tri = _tri(xp, A, lower)
    return (_t(tri) if transpose else tri), lower != transpose


def _triangular_grad(xp, d_op, transpose, lower):
    """The gradient of ``A`` from that of ``op(tri(A))``."""
    return _tri(xp, _t(d_op) if transpose else d_op, lower)


@register('_linalg_trmm', num_inputs=2)
def linalg_trmm(xp, A, B, transpose=False, rightside=False, lower=True, alpha=1.0):
    """``alpha * op(A) @ B`` (or ``alpha * B @ op(A)`` with ``rightside``) for triangular
    ``A``, of which only the ``lower`` (or upper) triangle is read; ``op`` transposes
    where ``transpose`` says."""
    m, _ = _triangular_operand('linalg.trmm', xp, A, B, transpose, rightside, lower)
    out = alpha * (xp.matmul(B, m) if rightside else xp.matmul(m, B))

    def backward(dy):
        if rightside:
            d_m, db = alpha * xp.matmul(_t(B), dy), alpha * xp.matmul(dy, _t(m))
        else:
            d_m, db = alpha * xp.matmul(dy, _t(B)), alpha * xp.matmul(_t(m), dy)
        return _triangular_grad(xp, d_m, transpose, lower), db
    return out, backward


@register('_linalg_trsm', num_inputs=2)
def linalg_trsm(xp, A, B, transpose=False, rightside=False, lower=True, alpha=1.0):
    """The solution ``X`` of ``op(A) @ X = alpha * B`` (or ``X @ op(A) = alpha * B`` with
    ``rightside``) for triangular ``A``, of which only the ``lower`` (or upper) triangle
    is read; ``op`` transposes where ``transpose`` says."""
    m, m_lower = _triangular_operand('linalg.trsm', xp, A, B, transpose, rightside, lower)
    if rightside:  # X = B M^-1 = (M^-T B^T)^T
        out = alpha * _t(_tri_solve(xp, _t(m), _t(B), not m_lower))
    else:
        out = alpha * _tri_solve(xp, m, B, m_lower)
    out = xp.ascontiguousarray(out)

    def backward(dy):
        if rightside:
            solved = _t(_tri_solve(xp, m, _t(dy), m_lower))  # dy M^-T
            d_m = -xp.matmul(_t(out), solved)
        else:
            solved = _tri_solve(xp, _t(m), dy, not m_lower)  # M^-T dy
            d_m = -xp.matmul(solved, _t(out))
        return _triangular_grad(xp, d_m, transpose, lower), alpha * solved
    return out, backward


@register('_linalg_syrk')
def linalg_syrk(xp, A, transpose=False, alpha=1.0):
    """``alpha * A @ A.T`` (or ``alpha * A.T @ A`` with ``transpose``)."""
    _check_float('linalg.syrk', A)
    _check_matrices('linalg.syrk', A)
    out = alpha * (xp.matmul(_t(A), A) if transpose else xp.matmul(A, _t(A)))

    def backward(dy):
        both = dy + _t(dy)
        return alpha * (xp.matmul(A, both) if transpose else xp.matmul(both, A))
    return out, backward


# ---- factorizations: gelqf, syevd ----

@register('_linalg_gelqf')
def linalg_gelqf(xp, A):
    """The LQ factorization ``A = L @ Q`` of matrices with no more rows than columns:
    ``Q`` has orthonormal rows (the shape of ``A``) and ``L`` is lower triangular (square).
    The signs are LAPACK's (Householder reflections), as in MXNet."""
    _check_float('linalg.gelqf', A)
    _check_matrices('linalg.gelqf', A)
    if A.shape[-2] > A.shape[-1]:
        raise MXNetError('linalg.gelqf needs matrices with no more rows than columns, got '
                         'shape %s' % (A.shape,))
    q, r = xp.linalg.qr(_t(A))  # A^T = q r, so A = r^T q^T
    Q, L = xp.ascontiguousarray(_t(q)), xp.ascontiguousarray(_t(r))

    def backward(dys):
        dq, dl = dys
        m = xp.matmul(_t(L), dl) - xp.matmul(dq, _t(Q))
        grad = dq + xp.matmul(_copy_lower_to_upper(xp, m), Q)
        return _tri_solve(xp, _t(L), grad, lower=False)  # L^-T grad
    return (Q, L), backward


@register('_linalg_syevd')
def linalg_syevd(xp, A):
    """The eigendecomposition ``A = U.T @ diag(L) @ U`` of symmetric matrices (only the
    lower triangle is read): the eigenvalues ``L`` ascending, the eigenvectors in the rows
    of ``U``, each signed so that its largest entry in magnitude (the first of equals) is
    positive."""
    _check_float('linalg.syevd', A)
    _check_matrices('linalg.syevd', A, square=True)
    w, v = xp.linalg.eigh(_symmetric_from(xp, A, True))
    u = _t(v)
    biggest = xp.argmax(xp.abs(u), axis=-1)[..., None]
    u = xp.ascontiguousarray(u * xp.sign(xp.take_along_axis(u, biggest, axis=-1)))

    def backward(dys):
        du, dw = dys
        x = xp.matmul(du, _t(u))
        n = w.shape[-1]
        below = xp.tril(xp.ones((n, n), dtype=bool), -1)
        # as MXNet: the gap L_i - L_j (i > j) is kept above a tiny eps
        eps = 1e-30 if w.dtype == np.float32 else 1e-100
        gap = xp.where(below, w[..., :, None] - w[..., None, :], 1)
        f = xp.where(below, (x - _t(x)) / (2 * xp.maximum(gap, eps)), 0)
        y = f + _t(f) + _diag_embed(xp, dw)
        return xp.matmul(xp.matmul(_t(u), y), u)
    return (u, w), backward


# ---- inverse and determinants ----

@register('_linalg_inverse')
def linalg_inverse(xp, A):
    """The inverse of each square matrix."""
    _check_float('linalg.inverse', A)
    _check_matrices('linalg.inverse', A, square=True)
    try:
        out = xp.linalg.inv(A)
    except _LinAlgError:
        raise MXNetError('linalg.inverse: a matrix is singular') from None
    return out, lambda dy: -xp.matmul(xp.matmul(_t(out), dy), _t(out))


def _inverse_transposed_or_zero(xp, A, singular):
    """``inv(A)^T``, and zeros for the singular matrices (which get no gradient in
    MXNet)."""
    n = A.shape[-1]
    flag = singular[..., None, None]
    inv = xp.linalg.inv(xp.where(flag, xp.eye(n, dtype=A.dtype), A))
    return xp.where(flag, 0, _t(inv))


@register('_linalg_det')
def linalg_det(xp, A):
    """The determinant of each square matrix (shape ``(1,)`` for a single matrix)."""
    _check_float('linalg.det', A)
    _check_matrices('linalg.det', A, square=True)
    det = xp.asarray(xp.linalg.det(A), dtype=A.dtype)

    def backward(dy):
        scale = dy.reshape(det.shape) * det
        return scale[..., None, None] * _inverse_transposed_or_zero(xp, A, det == 0)
    return det.reshape(_per_matrix_shape(det.shape, A.ndim)), backward


@register('_linalg_slogdet')
def linalg_slogdet(xp, A):
    """The sign and the log of the absolute value of each matrix's determinant (shapes
    ``(1,)`` for a single matrix). The sign gets no gradient."""
    _check_float('linalg.slogdet', A)
    _check_matrices('linalg.slogdet', A, square=True)
    sign, logabs = xp.linalg.slogdet(A)
    sign, logabs = xp.asarray(sign, dtype=A.dtype), xp.asarray(logabs, dtype=A.dtype)
    shape = _per_matrix_shape(sign.shape, A.ndim)

    def backward(dys):
        scale = dys[1].reshape(logabs.shape)
        singular = xp.isneginf(logabs)
        return scale[..., None, None] * _inverse_transposed_or_zero(xp, A, singular)
    return (sign.reshape(shape), logabs.reshape(shape)), backward


@register('_linalg_sumlogdiag')
def linalg_sumlogdiag(xp, A):
    """The sum of the logarithms of each square matrix's diagonal (shape ``(1,)`` for a
    single matrix)."""
    _check_float('linalg.sumlogdiag', A)
    _check_matrices('linalg.sumlogdiag', A, square=True)
    diag = xp.diagonal(A, axis1=-2, axis2=-1)
    with np.errstate(divide='ignore', invalid='ignore'):  # MXNet gives -inf/nan silently
        total = xp.log(diag).sum(axis=-1)

    def backward(dy):
        return _diag_embed(xp, dy.reshape(total.shape)[..., None] / diag)
    return total.reshape(_per_matrix_shape(total.shape, A.ndim)), backward


# ---- diagonals and triangles to and from vectors ----

def _diagonal_index(xp, n, offset):
    """Rows and columns of diagonal ``offset`` of an ``n x n`` matrix."""
    i = xp.arange(n - abs(offset))
    return i + max(-offset, 0), i + max(offset, 0)


def _triangle_index(xp, n, offset, lower):
    """Rows and columns of the triangle MXNet packs: for ``offset < 0`` (or 0 and
    ``lower``) the entries on and below diagonal ``offset`` row by row, otherwise those on
    and above it column by column."""
    size = n - abs(offset)
    i, j = np.tril_indices(size)
    i, j = xp.asarray(i), xp.asarray(j)
    if offset < 0 or (offset == 0 and lower):
        return i + abs(offset), j
    return j, i + abs(offset)


def _check_offset(what, n, offset):
    if n - abs(offset) <= 0:
        raise MXNetError('%s: offset=%d leaves nothing of a %dx%d matrix'
                         % (what, offset, n, n))


def _gather(xp, A, rows, cols):
    """``A[..., rows, cols]`` and its backward."""
    shape, dtype = A.shape, A.dtype

    def backward(dy):
        grad = xp.zeros(shape, dtype=dtype)
        grad[..., rows, cols] = dy
        return grad
    return A[..., rows, cols], backward


def _scatter(xp, A, n, rows, cols):
    """Zero ``n x n`` matrices with ``A``'s last axis at ``rows, cols``, and the backward."""
    out = xp.zeros(A.shape[:-1] + (n, n), dtype=A.dtype)
    out[..., rows, cols] = A
    return out, lambda dy: dy[..., rows, cols]


@register('_linalg_extractdiag')
def linalg_extractdiag(xp, A, offset=0):
    """Diagonal ``offset`` of each square matrix (above the main one for ``offset > 0``)."""
    _check_float('linalg.extractdiag', A)
    _check_matrices('linalg.extractdiag', A, square=True)
    _check_offset('linalg.extractdiag', A.shape[-1], offset)
    return _gather(xp, A, *_diagonal_index(xp, A.shape[-1], offset))


@register('_linalg_makediag')
def linalg_makediag(xp, A, offset=0):
    """Square matrices, zero but for diagonal ``offset`` holding ``A``'s last axis."""
    _check_float('linalg.makediag', A)
    if A.ndim < 1:
        raise MXNetError('linalg.makediag needs at least a 1-D input')
    n = A.shape[-1] + abs(offset)
    return _scatter(xp, A, n, *_diagonal_index(xp, n, offset))


@register('_linalg_extracttrian')
def linalg_extracttrian(xp, A, offset=0, lower=True):
    """The triangle of each square matrix on and below (``offset < 0``, or 0 and
    ``lower``) or on and above diagonal ``offset``, as a vector: the lower triangle row
    by row, the upper column by column."""
    _check_float('linalg.extracttrian', A)
    _check_matrices('linalg.extracttrian', A, square=True)
    _check_offset('linalg.extracttrian', A.shape[-1], offset)
    return _gather(xp, A, *_triangle_index(xp, A.shape[-1], offset, lower))


@register('_linalg_maketrian')
def linalg_maketrian(xp, A, offset=0, lower=True):
    """Square matrices, zero but for the triangle ``linalg.extracttrian`` reads, filled
    from ``A``'s last axis (of length ``m * (m + 1) / 2``; the matrices are
    ``m + |offset|`` square)."""
    _check_float('linalg.maketrian', A)
    if A.ndim < 1:
        raise MXNetError('linalg.maketrian needs at least a 1-D input')
    count = A.shape[-1]
    m = int(round((np.sqrt(8 * count + 1) - 1) / 2))
    if m * (m + 1) // 2 != count:
        raise MXNetError('linalg.maketrian: the last axis has %d entries, which is no '
                         'triangle\'s (m * (m + 1) / 2)' % count)
    n = m + abs(offset)
    return _scatter(xp, A, n, *_triangle_index(xp, n, offset, lower))
