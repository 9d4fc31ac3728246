"""MXNet's ``mx.util`` switches for NumPy semantics.

MXNet 1.6+ can run Gluon with ``mx.np`` arrays (``npx.set_np()``). minigluon has only
the classic NDArray semantics, so the array switches report "off" and refuse to turn
it on. The shape switch (``np_shape``) is kept as MXNet keeps it, per thread: NDArrays
hold scalars and zero-size arrays either way, and what it changes is how graphs spell
an unknown shape (``None`` and -1 for an unknown dimension, instead of ``()`` and 0)
and the ``is_np_shape`` attribute of a saved graph.
"""
import functools
import threading

from .base import MXNetError

_NP_REFUSAL = ('NumPy semantics (mx.np, npx.set_np, use_np) are not part of minigluon; '
               'use mx.nd arrays, which behave as in MXNet 1.x')


def is_np_array():
    """False: arrays are always classic NDArrays."""
    return False


_STATE = threading.local()


def is_np_shape():
    """True inside ``np_shape(True)`` (or after ``set_np_shape(True)``) on this thread.

    Returns
    -------
    bool
    """
    return getattr(_STATE, 'np_shape', False)


def set_np_shape(active):
    """Turn NumPy shape semantics on or off for this thread.

    Parameters
    ----------
    active : bool

    Returns
    -------
    bool
        The previous state.
    """
    prev = is_np_shape()
    _STATE.np_shape = bool(active)
    return prev


class _NumpyShapeScope:
    """The ``with`` scope of ``np_shape``: sets the state and restores the previous one."""

    def __init__(self, active):
        self._active = active
        self._prev = None

    def __enter__(self):
        if self._active is not None:
            self._prev = set_np_shape(self._active)
        return self

    def __exit__(self, *exc):
        if self._active is not None:
            set_np_shape(self._prev)


def np_shape(active=True):
    """A ``with`` scope with NumPy shape semantics on (or off with ``active=False``).

    Inside it, graph shape inference spells an unknown dimension -1 and an unknown
    shape ``None`` (outside: 0 and ``()``), and 0 is a dimension of size zero.

    Parameters
    ----------
    active : bool, default True

    Returns
    -------
    context manager
    """
    return _NumpyShapeScope(active)


def use_np_shape(func):
    """Decorator running ``func`` inside ``np_shape(True)``.

    Parameters
    ----------
    func : callable

    Returns
    -------
    callable
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with np_shape(True):
            return func(*args, **kwargs)
    return wrapper


def set_np(shape=True, array=True):
    """Turn NumPy semantics on, as MXNet's ``npx.set_np``: ``mx.np`` arrays are refused,
    since minigluon has none; the shape semantics alone (``array=False``) is
    ``set_np_shape(shape)``.

    Parameters
    ----------
    shape : bool, default True
        Ask for NumPy shape semantics.
    array : bool, default True
        Ask for ``mx.np`` arrays.

    Raises
    ------
    MXNetError
        If ``array`` is True.
    """
    if array:
        raise MXNetError(_NP_REFUSAL)
    set_np_shape(shape)


def reset_np():
    """Turn NumPy shape semantics off (array semantics are never on)."""
    set_np_shape(False)


def use_np(func):
    """Decorator of MXNet's that runs ``func`` under NumPy semantics: refused when called.

    Decorating a function succeeds (so modules that use it still import) and calling
    it raises; decorating a class (a Block) raises at once.

    Parameters
    ----------
    func : callable or type

    Returns
    -------
    callable
        A function that raises MXNetError explaining that NumPy semantics are absent.
    """
    if isinstance(func, type):
        raise MXNetError(_NP_REFUSAL)

    @functools.wraps(func)
    def refuse(*args, **kwargs):
        raise MXNetError(_NP_REFUSAL)
    return refuse
