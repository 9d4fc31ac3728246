"""The one error class and small helpers shared by every layer."""
import numbers
import os


class MXNetError(RuntimeError):
    """Error raised by minigluon for bad input or misuse.

    The name matches MXNet's so existing ``except mx.base.MXNetError`` code keeps
    working; ``MinigluonError`` is the same class.
    """


MinigluonError = MXNetError


# Where MXNet raises Python's ValueError, TypeError or IndexError (its C++ errors that
# start "ValueError: ..." included), minigluon raises these: both the builtin type and
# MXNetError, so either ``except`` clause catches them.
class MXNetValueError(MXNetError, ValueError):
    """A bad value: MXNetError and ValueError."""


class MXNetTypeError(MXNetError, TypeError):
    """A bad type: MXNetError and TypeError."""


class MXNetIndexError(MXNetError, IndexError):
    """An index out of range: MXNetError and IndexError."""

# MXNet's names for the Python types its API accepts.
string_types = (str,)
integer_types = (int, numbers.Integral)
numeric_types = (float, int, numbers.Number)


def py_str(value):
    """Bytes from a C string -> str (MXNet's helper; minigluon strings are already str)."""
    return value.decode('utf-8') if isinstance(value, bytes) else str(value)


def shape_str(shape):
    """``(2, 3)`` -> ``'2x3'``, the way MXNet prints shapes in reprs."""
    return 'x'.join(str(d) for d in shape)


def data_dir():
    """Where downloaded data sets and models live: ``$MINIGLUON_HOME``, else ``~/.minigluon``."""
    return os.path.expanduser(os.environ.get('MINIGLUON_HOME') or os.path.join('~', '.minigluon'))
