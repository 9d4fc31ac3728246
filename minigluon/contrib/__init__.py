"""``mx.contrib``: MXNet's contributed extras that minigluon has: ``mx.contrib.io``
(a Gluon DataLoader as a DataIter, and the reverse)."""
from . import io

__all__ = ['io']
