"""``mx.sym``: symbolic graphs in MXNet 1.x's format, run by the op table's kernels."""
from .executor import Executor
from .op_specs import functions as _functions
from .symbol import Group, Symbol, Variable, fromjson, load, load_json, var
from . import symbol as _symbol
from . import _internal
from . import contrib
from . import image
from .custom import Custom
from . import linalg

for _fname in _functions():
    globals()[_fname] = _symbol._FUNCTIONS[_fname]  # pylint: disable=protected-access


def zeros(shape, dtype=None, **kwargs):
    """A graph node making zeros of ``shape``."""
    return _symbol.create_source('_zeros', dict(kwargs, shape=shape, dtype=dtype))


def ones(shape, dtype=None, **kwargs):
    """A graph node making ones of ``shape``."""
    return _symbol.create_source('_ones', dict(kwargs, shape=shape, dtype=dtype))


def full(shape, val, dtype=None, **kwargs):
    """A graph node making an array of ``shape`` filled with ``val``."""
    return _symbol.create_source('_full', dict(kwargs, shape=shape, value=val, dtype=dtype))


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """A graph node making evenly spaced values."""
    return _symbol.create_source('_arange', dict(start=start, stop=stop, step=step,
                                                 repeat=repeat, infer_range=infer_range,
                                                 dtype=dtype, name=name))


def eye(N, M=0, k=0, dtype=None, **kwargs):  # pylint: disable=invalid-name
    """A graph node making a 2-D array with ones on diagonal ``k``."""
    return _symbol.create_source('_eye', dict(kwargs, N=N, M=M, k=k, dtype=dtype))


def histogram(a, bins=10, range=None, **kwargs):  # pylint: disable=redefined-builtin
    """A ``_histogram`` node: counts and edges of ``a`` in ``bins`` (a Symbol of edges, or
    a number of equal bins over ``range``, which a graph needs given)."""
    if isinstance(bins, Symbol):
        return _internal._histogram(a, bins, **kwargs)  # pylint: disable=protected-access
    if range is None:
        raise ValueError('histogram: a graph needs range=(low, high) with a number of bins')
    return _internal._histogram(a, bin_cnt=bins, range=range,  # pylint: disable=W0212
                                **kwargs)
