"""Helpers of ``NDArrayIter`` (MXNet's ``mx.io.utils``): the inputs in canonical form,
a sorted list of ``(name, NDArray)``."""
from collections import OrderedDict

import numpy as np

from ..ndarray import NDArray
from ..ndarray.creation import array

__all__ = []


def _is_sparse(value):
    """Whether ``value`` is a sparse matrix (scipy's, or an array with a sparse ``stype``)."""
    if type(value).__module__.startswith('scipy.sparse'):
        return True
    return getattr(value, 'stype', 'default') not in ('default', None)


def _init_data(data, allow_empty, default_name):
    """``data`` (an array, a list of arrays or a dict name -> array) as a list of
    ``(name, NDArray)`` sorted by name, as MXNet orders them.

    One array is named ``default_name``; the arrays of a longer list ``_0_<default_name>``,
    ``_1_<default_name>``... Arrays that are not NDArrays become float32 NDArrays
    (``mx.nd.array``'s rule).
    """
    if data is None:
        if not allow_empty:
            raise ValueError('NDArrayIter: data must be given (an array, a list of arrays or '
                             'a dict of them), got None')
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or _is_sparse(data):
        data = [data]
    if isinstance(data, list):
        if not data and not allow_empty:
            raise ValueError('NDArrayIter: data must hold at least one array, got an empty '
                             'list')
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict(('_%d_%s' % (i, default_name), d) for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError('NDArrayIter: the input must be an NDArray, a numpy.ndarray, a list of '
                        'them or a dict with them as values, got %s' % type(data).__name__)
    converted = {}
    for name, value in data.items():
        if _is_sparse(value):
            raise NotImplementedError(
                'NDArrayIter: %r is a sparse (%s) matrix; minigluon does not support sparse '
                'storage. Convert it to a dense array first (.toarray() for scipy, '
                ".tostype('default') for MXNet arrays)" % (name, type(value).__name__))
        if not isinstance(value, NDArray):
            try:
                value = array(value)
            except (TypeError, ValueError) as exc:
                raise TypeError('NDArrayIter: invalid type %s for %r (%s); give an NDArray or '
                                'a numpy.ndarray' % (type(value).__name__, name, exc)) from None
        converted[name] = value
    return sorted(converted.items())


def _has_instance(data, dtype):
    """Whether any array of ``data`` (a list of ``(name, array)``) is a ``dtype``."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data, idx):
    """``data`` (a list of ``(name, NDArray)``) with its examples in the order ``idx``;
    the arrays become float32, as ``mx.nd.array`` of a numpy array makes them (MXNet
    does the same)."""
    return [(name, array(value.asnumpy()[idx], value.context)) for name, value in data]


def _slice_along_batch_axis(data, s, batch_axis):
    """``data[s]`` along ``batch_axis``."""
    return data.slice_axis(axis=batch_axis, begin=s.start, end=s.stop)
