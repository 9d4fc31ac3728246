"""``mx.nd.linalg``: MXNet 1.x's linear algebra operators on batches of matrices.

Each function runs the op table's ``_linalg_<name>`` op; ``mx.nd`` also has them as
``linalg_<name>`` (but ``syevd``, which MXNet keeps here only).
"""
from .ndarray import op_function
from .registry import get_op

NAMES = ('gemm', 'gemm2', 'potrf', 'potri', 'trsm', 'trmm', 'syrk', 'gelqf', 'syevd',
         'sumlogdiag', 'extractdiag', 'makediag', 'extracttrian', 'maketrian', 'inverse',
         'det', 'slogdet')
__all__ = list(NAMES)


def _function(name, op_name):
    function = op_function(get_op(op_name))
    function.__name__ = function.__qualname__ = name
    return function


for _name in NAMES:
    globals()[_name] = _function(_name, '_linalg_' + _name)

# The ``mx.nd.linalg_<name>`` spellings.
TOP_LEVEL = {'linalg_' + _name: _function('linalg_' + _name, '_linalg_' + _name)
             for _name in NAMES if _name != 'syevd'}
