"""``mx.nd``: NDArray, creation functions and one function per op in the table."""
from . import image, random
from .. import backend as _backend
from ..base import MXNetError
from .creation import arange, array, empty, eye, full, linspace, ones, zeros
from .dispatch import invoke as _invoke
from .dtypes import SUPPORTED_DTYPES
from .ndarray import NDArray, _params
from .registry import all_ops as _all_ops
from .serialization import load, save


def _make_function(op):
    n = op.num_inputs

    def function(*args, out=None, **kwargs):
        if n is None:
            inputs, params = args, kwargs
        else:
            inputs, rest = args[:n], args[n:]
            if len(inputs) < n:  # inputs given by keyword, e.g. nd.softmax(data=x)
                names = op.input_names
                absent = [m for m in names[len(inputs):op.num_required_inputs] if m not in kwargs]
                if absent:
                    raise MXNetError('nd.%s: missing input(s) %s' % (op.name, ', '.join(absent)))
                inputs = inputs + tuple(kwargs.pop(m, None) for m in names[len(inputs):])
            params = _params(op, rest, kwargs)
        result = _invoke(op, inputs, params)
        if out is None:
            return result
        out[:] = result
        return out
    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = op.doc
    return function


for _name, _op in _all_ops().items():
    if not _name.startswith('_'):
        globals()[_name] = _make_function(_op)

# MXNet's other spellings of the same ops.
for _alias, _target in [('broadcast_add', 'add'), ('elemwise_add', 'add'), ('plus', 'add'),
                        ('broadcast_sub', 'subtract'), ('elemwise_sub', 'subtract'),
                        ('minus', 'subtract'), ('broadcast_minus', 'subtract'),
                        ('broadcast_mul', 'multiply'), ('elemwise_mul', 'multiply'),
                        ('broadcast_div', 'divide'), ('elemwise_div', 'divide'),
                        ('true_divide', 'divide'), ('broadcast_mod', 'mod'),
                        ('broadcast_power', 'power'), ('broadcast_maximum', 'maximum'),
                        ('broadcast_minimum', 'minimum'), ('broadcast_equal', 'equal'),
                        ('broadcast_not_equal', 'not_equal'), ('broadcast_greater', 'greater'),
                        ('broadcast_greater_equal', 'greater_equal'),
                        ('broadcast_lesser', 'lesser'), ('broadcast_lesser_equal', 'lesser_equal'),
                        ('broadcast_hypot', 'hypot'), ('Flatten', 'flatten'),
                        ('Concat', 'concat'), ('SliceChannel', 'split'),
                        ('broadcast_axis', 'broadcast_to'), ('Pad', 'pad'),
                        ('ctc_loss', 'CTCLoss')]:
    globals()[_alias] = globals()[_target]


def add_n(*args, out=None):
    """Elementwise sum of any number of arrays of the same shape."""
    if not args:
        raise MXNetError('add_n needs at least one array')
    total = args[0]
    for a in args[1:]:
        total = total + a
    if out is not None:
        out[:] = total
        return out
    return total if len(args) > 1 else total.copy()


ElementWiseSum = add_n


def moveaxis(tensor, source, destination):
    """Move axis ``source`` to position ``destination``."""
    axes = list(range(tensor.ndim))
    axes.insert(destination % tensor.ndim, axes.pop(source % tensor.ndim))
    return tensor.transpose(axes)


def waitall():
    """Wait for all pending device work (a no-op on numpy; synchronises CuPy)."""
    _backend.synchronize()


random_uniform = random.uniform
random_normal = random.normal
random_randint = random.randint
