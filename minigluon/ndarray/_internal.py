"""``mx.nd._internal``: the ops MXNet keeps out of ``nd`` (names starting with ``_``),
such as ``_slice_assign`` behind ``NDArray.slice_assign``."""
from .ndarray import op_function
from .random import unique_zipfian
from .registry import all_ops

for _name, _op in all_ops().items():
    if _name.startswith('_'):
        globals()[_name] = op_function(_op)

# MXNet's older names for the same ops
_crop_assign = globals()['_slice_assign']
_crop_assign_scalar = globals()['_slice_assign_scalar']


def _sample_unique_zipfian(range_max, shape):
    """Distinct log-uniform classes per row and the draws each row took (see
    ``nd.random.unique_zipfian``)."""
    return list(unique_zipfian(range_max, shape))
