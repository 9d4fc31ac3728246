"""``mx.sym.linalg``: MXNet 1.x's linear algebra operators as graph nodes (``_linalg_gemm``
...), named after the function (``gemm0``) as MXNet names them."""
from ..ndarray.linalg import NAMES
from .op_specs import spec_of
from .symbol import make_function

__all__ = list(NAMES)

for _name in NAMES:
    globals()[_name] = make_function(_name, spec_of('_linalg_' + _name))
