"""``nd`` functions composed of ops of the table: add_n, concatenate, moveaxis, ..."""
from ..base import MXNetError, MXNetValueError
from .dispatch import invoke
from .registry import get_op


def add_n(*args, out=None):
    """Elementwise sum of any number of arrays of the same shape.

    Parameters
    ----------
    *args : NDArray
        One or more arrays of one shape and context.
    out : NDArray, optional
        Write the sum into this array instead.

    Returns
    -------
    NDArray
        A new array (a copy for a single input), or ``out``.
    """
    if not args:
        raise MXNetError('add_n needs at least one array')
    total = args[0]
    for a in args[1:]:
        total = total + a
    if out is not None:
        out[:] = total
        return out
    return total if len(args) > 1 else total.copy()


def concatenate(arrays, axis=0, always_copy=True):
    """Join a list of arrays along ``axis``.

    Parameters
    ----------
    arrays : list of NDArray
        At least one array; their shapes agree except on ``axis``.
    axis : int, default 0
        The axis to join on.
    always_copy : bool, default True
        When False, a single array is returned as it is rather than copied.

    Returns
    -------
    NDArray
    """
    arrays = list(arrays)
    if not arrays:
        raise MXNetError('concatenate needs at least one array')
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return invoke(get_op('concat'), arrays, {'dim': axis})


def _axes(axes, ndim, what):
    axes = [axes] if isinstance(axes, int) else list(axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise MXNetValueError('moveaxis: %s axis %d is out of range for an array of %d '
                                  'dimensions' % (what, a, ndim))
    axes = [a % ndim for a in axes]
    if len(set(axes)) != len(axes):
        raise MXNetValueError('moveaxis: repeated axis in %s %s' % (what, axes))
    return axes


def moveaxis(tensor, source, destination):
    """Move axes ``source`` to positions ``destination``, the other axes keeping their
    order.

    Parameters
    ----------
    tensor : NDArray
    source : int or sequence of int
        The axes to move (negative counts from the end).
    destination : int or sequence of int
        Their new positions, as many as ``source``.

    Returns
    -------
    NDArray
        The transposed array.
    """
    source = _axes(source, tensor.ndim, 'source')
    destination = _axes(destination, tensor.ndim, 'destination')
    if len(source) != len(destination):
        raise MXNetValueError('moveaxis: source %s and destination %s must have the same '
                              'number of elements' % (source, destination))
    order = [n for n in range(tensor.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return tensor.transpose(order)


def onehot_encode(indices, out):
    """Write the one-hot encoding of ``indices`` into ``out``.

    Parameters
    ----------
    indices : NDArray
        ``(N,)`` class indices.
    out : NDArray
        ``(N, depth)``; its second dimension gives the number of classes and its dtype
        the encoding's.

    Returns
    -------
    NDArray
        ``out``.
    """
    out[:] = invoke(get_op('one_hot'), (indices,), {'depth': out.shape[1], 'dtype': out.dtype})
    return out


def reset_arrays(*arrays, num_arrays=None):
    """Set every array to zero, in place.

    Parameters
    ----------
    *arrays : NDArray
        The arrays to zero.
    num_arrays : int, optional
        If given, must equal the number of arrays (MXNet's operator takes it).
    """
    if num_arrays is not None and num_arrays != len(arrays):
        raise MXNetValueError('reset_arrays: num_arrays=%d but %d arrays were given'
                              % (num_arrays, len(arrays)))
    for a in arrays:
        a[:] = 0


def histogram(a, bins=10, range=None):  # pylint: disable=redefined-builtin
    """Counts of the flattened ``a`` in bins, and the bins' edges: ``[counts, edges]``.

    Parameters
    ----------
    a : NDArray
        The data.
    bins : int or NDArray
        A number of equal bins over ``range``, or the edges (1-d, increasing; the last
        bin includes its right edge).
    range : (float, float), optional
        The span of the equal bins; by default the data's minimum and maximum, in which
        case (as in MXNet, which hands the data to numpy then) both results are float32.

    Returns
    -------
    list of NDArray
        int64 counts and the edges in ``a``'s dtype (float32 both without ``range``).
    """
    op = get_op('_histogram')
    if hasattr(bins, 'context'):
        return invoke(op, (a, bins), {})
    if not isinstance(bins, int) or isinstance(bins, bool):
        raise MXNetValueError('histogram: bins must be an int or an NDArray of edges, got %r'
                              % (bins,))
    if range is not None:
        return invoke(op, (a, None), {'bin_cnt': bins, 'range': range})
    low, high = float(a.min().asscalar()), float(a.max().asscalar())
    counts, edges = invoke(op, (a, None), {'bin_cnt': bins, 'range': (low, high)})
    return [counts.astype('float32'), edges.astype('float32')]


def all_finite(data, init_output=True, out=None):
    """1.0 (float32, shape (1,)) if every value of ``data`` is finite, else 0.0.

    Parameters
    ----------
    data : NDArray
        Floating-point data; values are read as float32 (a float64 beyond float32's
        range counts as infinite, as in MXNet).
    init_output : bool, default True
        False: with ``out``, a finite ``data`` leaves ``out`` as it was and a non-finite
        one sets it to 0, so calls over several arrays share one flag.
    out : NDArray, optional
        Write the flag into this array.
    """
    flag = invoke(get_op('all_finite'), (data,), {'init_output': init_output})
    return _flag_into(flag, init_output, out)


def multi_all_finite(*arrays, num_arrays=1, init_output=True, out=None):
    """``all_finite`` over all ``num_arrays`` arrays: 1.0 if every value of every one is
    finite, else 0.0 (see ``all_finite`` for ``init_output`` and ``out``)."""
    flag = invoke(get_op('multi_all_finite'), arrays,
                  {'num_arrays': num_arrays, 'init_output': init_output})
    return _flag_into(flag, init_output, out)


def _flag_into(flag, init_output, out):
    if out is None:
        return flag
    # MXNet only ever writes 0 into an output it was told not to initialise
    out[:] = flag if init_output else invoke(get_op('where'), (flag, out, flag), {})
    return out
