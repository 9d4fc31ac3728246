"""Broadcasting binary arithmetic and comparisons (inputs: NDArrays or scalars)."""
import numpy as np

from ..registry import fill_from, register, shape_of, shape_rule, unbroadcast
from . import host_threads


def _result_dtype(lhs, rhs):
    """MXNet's rule: an array op a scalar keeps the array's dtype; equal dtypes stay."""
    ldt, rdt = getattr(lhs, 'dtype', None), getattr(rhs, 'dtype', None)
    if ldt is None:
        return rdt
    if rdt is None or ldt == rdt:
        return ldt
    return np.result_type(ldt, rdt)


def _keep(out, lhs, rhs):
    dt = _result_dtype(lhs, rhs)
    if out.dtype != dt and dt != np.bool_:
        out = out.astype(dt)
    return out


def _grads(xp, lhs, rhs, dl, dr):
    return _shape_grads(xp, lhs, rhs)(dl, dr)


def _shape_grads(xp, lhs, rhs):
    """``backward(dl, dr)`` of a sum or difference, holding the inputs' shapes only (not
    the arrays: a residual connection's inputs are freed after the forward)."""
    lshape, rshape = shape_of(lhs), shape_of(rhs)
    return lambda dl, dr: (unbroadcast(xp, dl, lshape), unbroadcast(xp, dr, rshape))


@register('add', num_inputs=2)
def add(xp, lhs, rhs):
    """Elementwise ``lhs + rhs`` with broadcasting."""
    if xp is np and isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray) and \
            lhs.shape == rhs.shape and lhs.dtype == rhs.dtype:
        # a residual connection: its rows split over the host threads
        out = host_threads.apply_rows(np.add, np.empty_like(lhs), lhs, rhs)
    else:
        out = _keep(xp.add(lhs, rhs), lhs, rhs)
    grads = _shape_grads(xp, lhs, rhs)
    return out, lambda dy: grads(dy, dy)


@register('subtract', num_inputs=2)
def subtract(xp, lhs, rhs):
    """Elementwise ``lhs - rhs`` with broadcasting."""
    out = _keep(xp.subtract(lhs, rhs), lhs, rhs)
    grads, scalar_rhs = _shape_grads(xp, lhs, rhs), shape_of(rhs) is None
    return out, lambda dy: grads(dy, None if scalar_rhs else -dy)


@register('multiply', num_inputs=2)
def multiply(xp, lhs, rhs):
    """Elementwise ``lhs * rhs`` with broadcasting."""
    out = _keep(xp.multiply(lhs, rhs), lhs, rhs)

    def backward(dy):
        return _grads(xp, lhs, rhs,
                      None if shape_of(lhs) is None else dy * rhs,
                      None if shape_of(rhs) is None else dy * lhs)
    return out, backward


@register('divide', num_inputs=2)
def divide(xp, lhs, rhs):
    """Elementwise ``lhs / rhs`` with broadcasting (integer arrays stay integer)."""
    out = _keep(xp.true_divide(lhs, rhs), lhs, rhs)

    def backward(dy):
        dl = None if shape_of(lhs) is None else dy / rhs
        dr = None if shape_of(rhs) is None else -dy * out / rhs
        return _grads(xp, lhs, rhs, dl, dr)
    return out, backward


@register('mod', num_inputs=2)
def mod(xp, lhs, rhs):
    """Elementwise remainder with the sign of ``rhs`` (Python's ``%``). As in MXNet, the
    gradients of an integer remainder are zeros."""
    out = _keep(xp.mod(lhs, rhs), lhs, rhs)

    def backward(dy):
        if out.dtype.kind != 'f':
            dy = xp.zeros_like(dy)
            return _grads(xp, lhs, rhs, dy, None if shape_of(rhs) is None else dy)
        dr = None if shape_of(rhs) is None else -dy * xp.floor_divide(lhs, rhs)
        return _grads(xp, lhs, rhs, dy, dr)
    return out, backward


@register('power', num_inputs=2)
def power(xp, base, exp):
    """Elementwise ``base ** exp`` with broadcasting."""
    out = _keep(xp.power(base, exp), base, exp)

    def backward(dy):
        db = None if shape_of(base) is None else dy * exp * xp.power(base, exp - 1)
        de = None if shape_of(exp) is None else dy * out * xp.log(base)
        return _grads(xp, base, exp, db, de)
    return out, backward


@register('maximum', num_inputs=2)
def maximum(xp, lhs, rhs):
    """Elementwise maximum; the gradient goes to the larger input (``lhs`` on ties)."""
    out = _keep(xp.maximum(lhs, rhs), lhs, rhs)

    def backward(dy):
        mask = lhs >= rhs
        return _grads(xp, lhs, rhs, dy * mask, dy * ~mask)
    return out, backward


@register('minimum', num_inputs=2)
def minimum(xp, lhs, rhs):
    """Elementwise minimum; the gradient goes to the smaller input (``lhs`` on ties)."""
    out = _keep(xp.minimum(lhs, rhs), lhs, rhs)

    def backward(dy):
        mask = lhs <= rhs
        return _grads(xp, lhs, rhs, dy * mask, dy * ~mask)
    return out, backward


@register('hypot', num_inputs=2)
def hypot(xp, lhs, rhs):
    """Elementwise ``sqrt(lhs**2 + rhs**2)``."""
    out = _keep(xp.hypot(lhs, rhs), lhs, rhs)

    def backward(dy):
        return _grads(xp, lhs, rhs, dy * lhs / out, dy * rhs / out)
    return out, backward


def _comparison(name, ufunc_name, doc):
    def forward(xp, lhs, rhs):
        out = getattr(xp, ufunc_name)(lhs, rhs)
        dt = _result_dtype(lhs, rhs)
        return out.astype(dt) if dt is not None and dt != np.bool_ else out
    forward.__doc__ = doc + ' As in MXNet the result is 0/1 in the inputs\' dtype.'
    forward.__name__ = name
    register(name, num_inputs=2, differentiable=False)(forward)


for _name, _ufunc, _sym in [('equal', 'equal', '=='), ('not_equal', 'not_equal', '!='),
                            ('greater', 'greater', '>'), ('greater_equal', 'greater_equal', '>='),
                            ('lesser', 'less', '<'), ('lesser_equal', 'less_equal', '<='),
                            ('logical_and', 'logical_and', 'and'),
                            ('logical_or', 'logical_or', 'or'),
                            ('logical_xor', 'logical_xor', 'xor')]:
    _comparison(_name, _ufunc, 'Elementwise ``lhs %s rhs`` with broadcasting.' % _sym)


@shape_rule('add', 'subtract', 'multiply', 'divide', 'mod', 'power', 'maximum', 'minimum',
            'hypot', 'equal', 'not_equal', 'greater', 'greater_equal', 'lesser',
            'lesser_equal', 'logical_and', 'logical_or', 'logical_xor')
def _broadcast_shapes(lhs, rhs, **_):
    """An unknown dimension has the size of the other operand's (aligned on the last axes)."""
    if lhs is None or rhs is None:
        return lhs, rhs
    return fill_from(lhs, rhs), fill_from(rhs, lhs)
