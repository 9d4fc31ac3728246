"""Tables of things chosen by name (optimizers, initializers, kvstore types, ...).

Every such table in minigluon is a ``Registry``, so they share one duplicate policy:
registering a name again with the same object is harmless (a module imported twice,
a decorator stacked with an alias), but with a different object it is an error that
names both, because silently replacing one would change what every later
``create(name)`` builds. This module imports nothing from minigluon but ``base``, so
any layer can use it without an import cycle.
"""
from .base import MXNetError


def _describe(obj):
    module = getattr(obj, '__module__', None)
    name = getattr(obj, '__qualname__', None) or repr(obj)
    return '%s.%s' % (module, name) if module else name


class Registry:
    """Names to objects, for one ``kind`` of thing (used in error messages).

    Parameters
    ----------
    kind : str
        What the table holds, e.g. ``'optimizer'``.
    case_sensitive : bool, default False
        When False, names are stored and looked up lower-cased.
    """

    def __init__(self, kind, case_sensitive=False):
        self.kind = kind
        self._case_sensitive = case_sensitive
        self._entries = {}

    def _key(self, name):
        if not isinstance(name, str):
            raise MXNetError('%s names must be strings, got %r' % (self.kind, name))
        return name if self._case_sensitive else name.lower()

    def add(self, name, obj):
        """Register ``obj`` as ``name``.

        Parameters
        ----------
        name : str
            The name (lower-cased unless the registry is case-sensitive).
        obj : object
            What ``get(name)`` returns from now on.

        Returns
        -------
        object
            ``obj``, so that ``add`` can end a decorator.

        Raises
        ------
        MXNetError
            If ``name`` is not a string, or already names a different object.
        """
        key = self._key(name)
        old = self._entries.get(key)
        if old is not None and old is not obj:
            raise MXNetError('%s %r is already registered as %s; cannot register %s under the '
                             'same name (choose another name)'
                             % (self.kind, name, _describe(old), _describe(obj)))
        self._entries[key] = obj
        return obj

    def register(self, obj, *names):
        """Register ``obj`` under each of ``names`` (default: its ``__name__``).

        Parameters
        ----------
        obj : object
            A class or function, usually.
        *names : str
            The names to register it as; ``obj.__name__`` when none are given.

        Returns
        -------
        object
            ``obj``, so that ``register`` works as a decorator.
        """
        for name in names or (obj.__name__,):
            self.add(name, obj)
        return obj

    def get(self, name, default=None):
        """The object registered as ``name``, or ``default``.

        Parameters
        ----------
        name : str
            The name to look up; anything but a string finds nothing.
        default : object, optional
            What to return when nothing is registered as ``name``.
        """
        if not isinstance(name, str):
            return default
        return self._entries.get(self._key(name), default)

    def find(self, name):
        """The object registered as ``name``.

        Raises
        ------
        MXNetError
            When there is none; the message lists the registered names.
        """
        obj = self.get(name)
        if obj is None:
            raise MXNetError('unknown %s %r; registered: %s'
                             % (self.kind, name, ', '.join(self.names())))
        return obj

    def names(self):
        """The registered names (as stored, so lower-cased unless case-sensitive), sorted.

        Returns
        -------
        list of str
        """
        return sorted(self._entries)

    def items(self):
        """The ``(name, object)`` pairs, in registration order.

        Returns
        -------
        list of tuple
        """
        return list(self._entries.items())

    def __iter__(self):
        return iter(self.names())

    def __contains__(self, name):
        return self.get(name) is not None

    def __delitem__(self, name):
        del self._entries[self._key(name)]

    def __repr__(self):
        return '<Registry of %ss: %s>' % (self.kind, ', '.join(self.names()))
