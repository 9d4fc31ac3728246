"""``mx.name``: automatic names from per-hint counters, as in MXNet 1.x.

A Block made outside any parent's ``name_scope()`` takes its prefix from the current
``NameManager``: the first ``Dense`` is ``dense0_``, the next ``dense1_``. Counters are
per thread; ``with NameManager():`` (or ``Prefix``) starts fresh ones for its body.
"""
import threading

__all__ = ['NameManager', 'Prefix', 'current']


class NameManager:
    """Hands out ``hint`` + counter names (``dense0``, ``dense1``, ``conv0`` ...).

    Used as a context manager it becomes the current manager of this thread until
    the ``with`` block ends, so the names made inside count from 0 again.
    """
    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """``name`` when given, else ``hint`` followed by the next count for that hint."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return '%s%d' % (hint, count)

    def __enter__(self):
        self._old_manager = current()
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        NameManager._current.value = self._old_manager
        return False


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` in front of every name it hands out."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """This thread's current NameManager (each thread starts with its own)."""
    manager = getattr(NameManager._current, 'value', None)
    if manager is None:
        manager = NameManager._current.value = NameManager()
    return manager
