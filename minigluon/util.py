"""MXNet's ``mx.util`` switches for NumPy semantics, which minigluon does not have.

MXNet 1.6+ can run Gluon with ``mx.np`` arrays (``npx.set_np()``). minigluon has only
the classic NDArray semantics, so these report "off" and refuse to turn it on.
"""
import functools

from .base import MXNetError

_NP_REFUSAL = ('NumPy semantics (mx.np, npx.set_np, use_np) are not part of minigluon; '
               'use mx.nd arrays, which behave as in MXNet 1.x')


def is_np_array():
    """False: arrays are always classic NDArrays."""
    return False


def is_np_shape():
    """False: shapes follow MXNet 1.x rules (no zero-size or scalar np shapes)."""
    return False


def set_np(shape=True, array=True):
    """Turn NumPy semantics on, as MXNet's ``npx.set_np``: refused, since minigluon has none.

    ``set_np(shape=False, array=False)`` (asking for them off) is accepted and does
    nothing, so code that switches them off explicitly still runs.

    Parameters
    ----------
    shape : bool, default True
        Ask for NumPy shape semantics.
    array : bool, default True
        Ask for ``mx.np`` arrays.

    Raises
    ------
    MXNetError
        If either is True.
    """
    if shape or array:
        raise MXNetError(_NP_REFUSAL)


def reset_np():
    """Nothing to reset: NumPy semantics are never on."""


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
