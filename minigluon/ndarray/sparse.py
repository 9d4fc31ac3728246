"""``mx.nd.sparse``: MXNet's sparse storage (CSR, row-sparse), which minigluon leaves out.

Every NDArray in minigluon is dense (``stype == 'default'``). The module exists so that
scripts importing it load; using any of its names raises an error that says what to
use instead.
"""
from ..base import MXNetError


def __getattr__(name):
    if name.startswith('__'):
        raise AttributeError(name)
    raise MXNetError('mx.nd.sparse.%s: sparse storage (csr, row_sparse) is not part of '
                     'minigluon; every array is dense: use mx.nd.array / mx.nd.zeros, and '
                     'scipy.sparse matrices through .toarray()' % name)
