"""``mx.contrib``: MXNet's contributed extras that minigluon has: ``mx.contrib.io``
(a Gluon DataLoader as a DataIter, and the reverse), and ``mx.contrib.nd`` /
``mx.contrib.sym``, the same modules as ``mx.nd.contrib`` / ``mx.sym.contrib``."""
from . import io
from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol

nd = ndarray
sym = symbol

__all__ = ['io', 'ndarray', 'nd', 'symbol', 'sym']


def __getattr__(name):
    from .._missing import CONTRIB, missing
    raise missing('minigluon.contrib', CONTRIB, name)
