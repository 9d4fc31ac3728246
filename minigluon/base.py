"""The one error class and small helpers shared by every layer."""
import numbers
import os

import numpy as np


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

class NotImplementedForSymbol(MXNetError):
    """A function that exists for NDArrays only was called on a Symbol (MXNet's error,
    e.g. ``bool(symbol)``: a symbol holds no value until its graph runs)."""

    def __init__(self, function, alias=None, *args):
        super().__init__()
        self.function = getattr(function, '__name__', str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = 'Function %s' % self.function
        if self.alias:
            msg += ' (namely operator "%s")' % self.alias
        if self.args:
            msg += ' with arguments (%s)' % ', '.join(self.args)
        return msg + ' is not implemented for Symbol and only available in NDArray.'


# MXNet's names for the Python types its API accepts.
string_types = (str,)
integer_types = (int, numbers.Integral)
numeric_types = (float, int, numbers.Number)
mx_real_t = np.float32  # the default dtype of arrays and graph variables


def py_str(value):
    """Bytes from a C string -> str (MXNet's helper; minigluon strings are already str)."""
    return value.decode('utf-8') if isinstance(value, bytes) else str(value)


def _as_list(obj):
    """``obj`` itself when it is a list or tuple, else ``[obj]`` (MXNet's helper)."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


def shape_str(shape):
    """``(2, 3)`` -> ``'2x3'``, the way MXNet prints shapes in reprs."""
    return 'x'.join(str(d) for d in shape)


def data_dir():
    """Where downloaded data sets and models live: ``$MINIGLUON_HOME``, else ``~/.minigluon``."""
    return os.path.expanduser(os.environ.get('MINIGLUON_HOME') or os.path.join('~', '.minigluon'))


class MXNetUsageError(MXNetError, AssertionError):
    """An API called in a state where it cannot work, which MXNet checks with ``assert``
    (e.g. ``Trainer.update()`` when the kvstore applies the updates): MXNetError and
    AssertionError, so code written for either keeps catching it."""


class MXNetAttributeError(MXNetError, AttributeError):
    """A name of MXNet 1.x that minigluon leaves out (``mx.engine``, ...): the message says
    what minigluon offers instead; an AttributeError, so ``hasattr`` stays False."""
