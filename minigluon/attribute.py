"""``mx.attribute``: ``AttrScope``, attributes given to every symbol made inside a ``with``
block (``with mx.AttrScope(ctx_group='dev1'):``), as in MXNet 1.x."""
import threading
from collections import defaultdict

from .base import MXNetValueError

__all__ = ['AttrScope', 'current']


class AttrScope:
    """Attributes (str -> str) for every symbol created in the scope; an inner scope adds
    to the outer one's, and attributes given to a symbol itself win.

    Parameters
    ----------
    **kwargs : str
        The attributes.
    """
    _current = threading.local()
    # how many subgraphs of each name control flow has made (``foreach0``, ``foreach1``)
    _subgraph_names = defaultdict(int)

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise MXNetValueError('AttrScope: attribute %r must be a string, got %r'
                                      % (key, value))
        self._attr = kwargs
        self._old_scope = None

    def get(self, attr):
        """The scope's attributes updated with ``attr`` (a dict or None)."""
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        self._old_scope = current()
        self._attr = dict(self._old_scope._attr, **self._attr)
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old_scope
        return False


def current():
    """This thread's current AttrScope (an empty one outside any ``with``)."""
    scope = getattr(AttrScope._current, 'value', None)
    if scope is None:
        scope = AttrScope._current.value = AttrScope()
    return scope
