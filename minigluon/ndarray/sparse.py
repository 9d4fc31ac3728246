"""``mx.nd.sparse``: MXNet's sparse storage (CSR, row-sparse), which minigluon leaves out.

Every NDArray in minigluon is dense (``stype == 'default'``). The module exists so that
scripts importing it load; using any of its names raises an error that says what to
use instead.
"""
from .._missing import refuse_every_name

__getattr__ = refuse_every_name(
    'mx.nd.sparse', 'sparse storage (csr, row_sparse) is not part of minigluon; every array '
    'is dense: use mx.nd.array / mx.nd.zeros, and scipy.sparse matrices through '
    '.toarray()')
