"""Testing helpers with MXNet's names: comparisons, numeric gradients, random data."""
import contextlib
import functools
import math
import numbers
import os
import platform
import sys
import time
import zipfile

import numpy as np

from . import autograd, backend
from .base import MXNetError
from .context import Context, cpu
from .gluon.utils import download as _gluon_download
from .io.data_iter import DataIter
from .ndarray import NDArray
from .ndarray import random as _random
from .ndarray.creation import array
from .util import use_np  # noqa: F401  (MXNet's test_utils exports it)

_default_ctx = [None]

# Tolerances by dtype, loose enough for float16 arithmetic and tight for float64.
_RTOL = {np.dtype('float16'): 1e-2, np.dtype('float32'): 1e-4, np.dtype('float64'): 1e-7}
_ATOL = {np.dtype('float16'): 1e-2, np.dtype('float32'): 1e-5, np.dtype('float64'): 1e-9}


def default_context():
    """The context tests run on (``set_default_context`` changes it; cpu(0) otherwise)."""
    return _default_ctx[0] or cpu(0)


def is_aarch64_run():
    """True on a 64-bit ARM machine (MXNet's tests skip a few cases there)."""
    return platform.machine() == 'aarch64'


def set_default_context(ctx):
    """Set the context ``default_context()`` returns.

    Parameters
    ----------
    ctx : Context or str
        The device tests should run on, e.g. ``mx.gpu(0)``.
    """
    _default_ctx[0] = Context(ctx)


def _as_numpy(a):
    if isinstance(a, NDArray):
        return a.asnumpy()
    return backend.to_host(a)


def _tolerances(a, b, rtol, atol):
    """Float tolerances for comparing ``a`` and ``b``; ``rtol``/``atol`` may be a float,
    None (this module's defaults by dtype) or a dict dtype -> float as MXNet allows.
    As in MXNet, the looser of the two dtypes' tolerances applies (a float64 reference
    against a float32 result is compared at float32's)."""
    dtypes = [d for d in (a.dtype, b.dtype) if d in _RTOL] or [np.dtype('float64')]

    def pick(tol, defaults):
        if not isinstance(tol, (dict, type(None))):
            return tol
        given = {np.dtype(k): v for k, v in (tol or {}).items()}
        return max(given.get(d, defaults[d]) for d in dtypes)

    return pick(rtol, _RTOL), pick(atol, _ATOL)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False):
    """True when ``a`` and ``b`` (NDArrays, numpy arrays or scalars) agree elementwise.

    Parameters
    ----------
    a, b : NDArray, numpy.ndarray or scalar
        The values to compare; arrays of different shapes but equal size are compared
        after reshaping ``a`` to ``b``'s shape.
    rtol, atol : float, optional
        Relative and absolute tolerances, ``|a - b| <= atol + rtol * |b|``; by default
        from the dtype (float16 1e-2/1e-2, float32 1e-4/1e-5, float64 1e-7/1e-9).
    equal_nan : bool, default False
        Whether NaNs in the same places count as equal.

    Returns
    -------
    bool
    """
    a, b = _as_numpy(a), _as_numpy(b)
    if a.shape != b.shape and a.size != b.size:
        return False
    rtol, atol = _tolerances(a, b, rtol, atol)
    return bool(np.allclose(a.reshape(b.shape) if a.size == b.size else a, b,
                            rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False,
                        use_broadcast=True):
    """Raise AssertionError naming the worst element when ``a`` and ``b`` differ.

    Parameters
    ----------
    a, b : NDArray, numpy.ndarray or scalar
        The values to compare.
    rtol, atol : float, optional
        Relative and absolute tolerances, ``|a - b| <= atol + rtol * |b|``; by default
        from the dtype (float16 1e-2/1e-2, float32 1e-4/1e-5, float64 1e-7/1e-9).
    names : tuple of two str, default ('a', 'b')
        How the message names ``a`` and ``b``.
    equal_nan : bool, default False
        Whether NaNs in the same places count as equal.
    use_broadcast : bool, default True
        As in MXNet: shapes that broadcast against each other are compared after
        broadcasting; with False the shapes must be equal.

    Raises
    ------
    AssertionError
        On a shape mismatch, or giving the index and values of the element that
        exceeds the tolerance most.
    """
    a, b = _as_numpy(a), _as_numpy(b)
    if a.shape != b.shape and use_broadcast:
        try:
            a, b = np.broadcast_arrays(a, b)
        except ValueError:
            pass
    if a.shape != b.shape:
        raise AssertionError('shape mismatch: %s %s vs %s %s' % (names[0], a.shape, names[1],
                                                                 b.shape))
    rtol, atol = _tolerances(a, b, rtol, atol)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    err = np.abs(a64 - b64) - (atol + rtol * np.abs(b64))
    err = np.where(np.isnan(err), np.inf, err)
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(err), err.shape)) if err.ndim else ()
    raise AssertionError(
        'arrays differ (rtol=%g, atol=%g): worst at index %s: %s=%s, %s=%s\n%s:\n%s\n%s:\n%s'
        % (rtol, atol, idx, names[0], a[idx], names[1], b[idx], names[0], a, names[1], b))


def effective_dtype(dat):
    """The dtype whose precision sets the tolerance of comparisons of ``dat``: its own
    (MXNet answers float16 for float32 data on GPUs computing in TF32; CuPy here computes
    float32 in float32)."""
    return np.dtype(dat.dtype)


def same(a, b):
    """True when ``a`` and ``b`` are exactly equal (shape and values)."""
    a, b = _as_numpy(a), _as_numpy(b)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def rand_shape_nd(num_dim, dim=10):
    """A random shape with ``num_dim`` dimensions, each in ``[1, dim]``."""
    return tuple(np.random.randint(1, dim + 1, size=num_dim).tolist())


def rand_shape_2d(dim0=10, dim1=10):
    """A random 2-D shape ``(d0, d1)`` with ``1 <= d0 <= dim0`` and ``1 <= d1 <= dim1``.

    Parameters
    ----------
    dim0, dim1 : int, default 10
        The largest size of each axis.

    Returns
    -------
    tuple of int
    """
    return (np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1))


def rand_ndarray(shape, stype='default', density=None, dtype=None, ctx=None):
    """An NDArray of uniform random values in [0, 1) (dense storage only).

    Parameters
    ----------
    shape : int or tuple of int
    stype : str, default 'default'
        Storage type; only ``'default'`` (dense) is supported.
    density : float, optional
        Accepted for MXNet compatibility; ignored for dense storage.
    dtype : str, optional
        The element type, float32 by default.
    ctx : Context, optional
        The device, ``default_context()`` by default.

    Returns
    -------
    NDArray
    """
    if stype != 'default':
        raise MXNetError("rand_ndarray: only stype='default' is supported, got %r" % stype)
    return _random.uniform(0, 1, shape=shape, dtype=dtype or 'float32',
                           ctx=ctx or default_context())


def _central_differences(fn, inputs, eps, which):
    """Central-difference gradients of scalar ``fn(inputs)`` for the inputs ``which``."""
    grads = []
    for k in (range(len(inputs)) if which is None else which):
        arr = inputs[k]
        g = np.zeros_like(arr, dtype=np.float64)
        flat, gflat = arr.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            plus = fn(inputs)
            flat[i] = old - eps
            minus = fn(inputs)
            flat[i] = old
            gflat[i] = (plus - minus) / (2 * eps)
        grads.append(g)
    return grads


def _executor_differences(executor, location, aux_states, eps, use_forward_train, dtype,
                          names=None):
    """Finite differences of ``sum(executor.outputs[0])`` by each element of the arguments
    ``names`` (all of ``location`` by default), MXNet's way: steps of ``eps / 2`` either
    side, the auxiliary states reset before every forward."""
    location = {k: np.array(_as_numpy(v), order='C') for k, v in location.items()}
    aux_states = {k: _as_numpy(v) for k, v in (aux_states or {}).items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = v

    def total():
        for key, val in aux_states.items():
            executor.aux_dict[key][:] = val
        executor.forward(is_train=use_forward_train)
        return _as_numpy(executor.outputs[0]).astype(np.float64)

    grads = {}
    for k in (list(location) if names is None else names):
        v = location[k]
        grads[k] = grad = np.zeros(v.shape, dtype=dtype)
        if v.dtype.kind != 'f':  # integer arguments (indices, labels) have no gradient
            continue
        flat, gflat, target = v.reshape(-1), grad.reshape(-1), executor.arg_dict[k]
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            target[:] = v
            plus = total()
            flat[i] = old - eps / 2.0
            target[:] = v
            minus = total()
            flat[i] = old
            gflat[i] = (plus - minus).sum() / eps
        target[:] = v
    return grads


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float32, which=None):
    """Finite-difference gradients, of an executor's first output (MXNet's form) or of a
    Python function of numpy arrays.

    Parameters
    ----------
    executor : Executor or callable
        An Executor: differentiated is the sum of ``outputs[0]``, with steps of
        ``eps / 2`` either side of each element, as MXNet does. A callable: it takes the
        list ``location`` and returns a scalar, differentiated with steps of ``eps``
        either side (each element is perturbed in place and restored).
    location : dict of str to array (Executor) or list of numpy.ndarray (callable)
        The point to differentiate at (with a callable, float64 arrays give accuracy).
    aux_states : dict of str to array, optional
        An executor's auxiliary states, written back before every forward.
    eps : float, default 1e-4
        The step.
    use_forward_train : bool, default True
        Whether the executor runs in training mode.
    dtype : numpy dtype, default float32
        The dtype of the executor's gradients.
    which : list of int, optional
        With a callable: differentiate only these inputs (all by default).

    Returns
    -------
    dict of str to numpy.ndarray (Executor) or list of float64 numpy.ndarray (callable)
    """
    from .symbol.executor import Executor
    if isinstance(executor, Executor):
        return _executor_differences(executor, location, aux_states, eps, use_forward_train,
                                     dtype)
    if not callable(executor):
        raise TypeError('numeric_grad takes an Executor or a function, got %s'
                        % type(executor).__name__)
    return _central_differences(executor, location, eps, which)


# ---- MXNet's tolerances and the checks of symbols --------------------------------------
# When a test gives no tolerance, the checks of symbols take MXNet's defaults (these
# tables), which MXNet's tests were tuned against; assert_almost_equal keeps its own.

_EXACT_DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32,
                                        np.int64, np.uint64)]


def _dtype_table(float16, float32, float64):
    table = {np.dtype(np.float16): float16, np.dtype(np.float32): float32,
             np.dtype(np.float64): float64}
    table.update((dt, 0) for dt in _EXACT_DTYPES)
    return table


def default_rtols():
    """MXNet's default relative tolerance per dtype (0 for integer and bool types)."""
    return _dtype_table(1e-2, 1e-4, 1e-5)


def default_atols():
    """MXNet's default absolute tolerance per dtype (0 for integer and bool types)."""
    return _dtype_table(1e-1, 1e-3, 1e-20)


def default_numeric_eps():
    """MXNet's default finite-difference step per float dtype (powers of two, which add
    to an input without rounding away bits of the step)."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def get_tolerance(dat, tol, default_tol):
    """The tolerance for comparisons of ``dat``: ``tol`` when it is a number, else its
    entry (a dict dtype -> float) or ``default_tol``'s for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat if hasattr(dat, 'dtype') else np.asarray(dat))
    tol = {} if tol is None else {np.dtype(k): v for k, v in tol.items()}
    return tol.get(dtype, default_tol.get(dtype, 0))


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` with ``y``: the looser of the two dtypes'."""
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol``, or MXNet's default absolute tolerance for ``dtype``."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol``, or MXNet's default relative tolerance for ``dtype``."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``assert_almost_equal`` with numpy's ``assert_allclose`` defaults (as MXNet's)."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _without_nans(a, b):
    a = np.array(_as_numpy(a), dtype=np.float64)
    b = np.array(_as_numpy(b), dtype=np.float64)
    a, b = np.broadcast_arrays(a, b) if a.shape != b.shape else (a, b)
    a, b = a.copy(), b.copy()
    nan = np.isnan(a) | np.isnan(b)
    a[nan] = 0
    b[nan] = 0
    return a, b


def almost_equal_ignore_nan(a, b, rtol=None, atol=None):
    """``almost_equal`` leaving out the places where either array is NaN."""
    return almost_equal(*_without_nans(a, b), rtol=rtol, atol=atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=('a', 'b')):
    """``assert_almost_equal`` leaving out the places where either array is NaN."""
    a, b = _without_nans(a, b)
    assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names)


def _assert_close(a, b, rtol, atol, names, equal_nan=False):
    """``assert_almost_equal`` with MXNet's default tolerances for the dtypes of a and b."""
    a, b = _as_numpy(a), _as_numpy(b)
    rtol, atol = get_tols(a, b, rtol, atol)
    assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)


def _checked_dtype(dtype, allow_asnumpy=True):
    if allow_asnumpy and isinstance(dtype, str) and dtype == 'asnumpy':
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError('dtype must be float16, float32 or float64%s, got %r'
                         % (" or 'asnumpy'" if allow_asnumpy else '', dtype))
    return dt


def _as_input(value, ctx, dtype):
    """``value`` as an NDArray on ``ctx``: numpy-like values in ``dtype`` (their own with
    'asnumpy'); NDArrays keep their dtype, as MXNet keeps them."""
    if isinstance(value, NDArray):
        return value.as_in_context(ctx)
    value = np.asarray(_as_numpy(value))
    return array(value, ctx=ctx, dtype=value.dtype if dtype == 'asnumpy' else dtype)


def _named(values, names, what):
    """A list (in ``names`` order; extra entries are ignored, as MXNet ignores them) or a
    dict of all ``names`` as a dict."""
    if isinstance(values, dict):
        if set(values) != set(names):
            raise ValueError('%s names %s, but the symbol has %s %s; give a value for each '
                             'of them' % (what, sorted(values), what, names))
        return dict(values)
    if not isinstance(values, (list, tuple)):
        raise TypeError('%s must be a list (in the order of %s) or a dict by name, got %s'
                        % (what, names, type(values).__name__))
    if len(values) < len(names):
        raise ValueError('%s gives %d arrays but the symbol has %d: %s'
                         % (what, len(values), len(names), names))
    return dict(zip(names, values))


def _parse_location(sym, location, ctx, dtype=np.float32):
    """``location`` (a list in ``sym.list_arguments()`` order or a dict by name) as a dict
    of NDArrays on ``ctx``."""
    dtype = _checked_dtype(dtype)
    named = _named(location, sym.list_arguments(), 'location')
    return {k: _as_input(v, ctx, dtype) for k, v in named.items()}


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32):
    """``aux_states`` (list or dict, as ``location``) as a dict of NDArrays, or None when
    the symbol has no auxiliary states."""
    dtype = _checked_dtype(dtype)
    names = sym.list_auxiliary_states()
    if aux_states is None:
        if names:
            raise ValueError('the symbol has auxiliary states %s: pass their values as '
                             'aux_states' % (names,))
        return None
    named = _named(aux_states, names, 'aux_states')
    return {k: _as_input(v, ctx, dtype) for k, v in named.items()}


def _context_of(ctx):
    return default_context() if ctx is None else Context(ctx)


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Run ``sym`` once on numpy inputs given by argument name; return the output as a
    numpy array (a list of them when the symbol has several outputs)."""
    ctx = _context_of(ctx)
    exe = sym.bind(ctx, args={k: array(v, ctx=ctx) for k, v in inputs.items()},
                   grad_req='null')
    exe.forward(is_train=is_train)
    outputs = [out.asnumpy() for out in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Assert that ``sym``'s forward pass (inference mode) gives ``expected``.

    Parameters
    ----------
    sym : Symbol
    location : list or dict of array-like
        The arguments' values, in ``sym.list_arguments()`` order or by name (all of them).
    expected : list or dict of array-like
        The outputs, in ``sym.list_outputs()`` order or by output name; a shorter list
        checks the first outputs only.
    rtol, atol : float or dict of dtype to float, optional
        MXNet's defaults by dtype when omitted (float32: 1e-4 and 1e-3).
    aux_states : list or dict of array-like, optional
        Needed when the symbol has auxiliary states (BatchNorm's moving statistics).
    ctx : Context, optional
        ``default_context()`` by default.
    equal_nan : bool, default False
    dtype : numpy float dtype or 'asnumpy', default float32
        The dtype the numpy inputs are converted to ('asnumpy' keeps theirs).

    Returns
    -------
    list of NDArray
        The outputs.
    """
    ctx = _context_of(ctx)
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    names = sym.list_outputs()
    if isinstance(expected, dict):
        expected = [expected[k] for k in names]
    exe = sym.bind(ctx, args=args, aux_states=aux, grad_req='null')
    exe.forward(is_train=False)
    for name, want, got in zip(names, expected, exe.outputs):
        _assert_close(want, got, rtol, atol, ('EXPECTED_%s' % name, 'FORWARD_%s' % name),
                      equal_nan)
    return exe.outputs


def _grad_req_by_name(grad_req, names):
    if isinstance(grad_req, str):
        return {k: grad_req for k in names}
    if isinstance(grad_req, (list, tuple)):
        return dict(zip(names, grad_req))
    return dict(grad_req)


def _dense_gradients_only(stypes, what):
    for name, stype in (stypes or {}).items():
        if stype not in (None, 'default'):
            raise MXNetError('%s: %r asks for %r storage; minigluon has dense storage only '
                             "('default')" % (what, name, stype))


def _compare_gradient(name, req, want, got, start, rtol, atol, names, equal_nan=False):
    """Check one gradient per its ``grad_req``: 'write' gives ``want``, 'add' adds
    ``want`` to ``start``, 'null' leaves ``start``."""
    got = _as_numpy(got)
    if req == 'write':
        _assert_close(want, got, rtol, atol, names, equal_nan)
    elif req == 'add':
        _assert_close(want, got - start, rtol, atol, names, equal_nan)
    elif req == 'null':
        _assert_close(start, got, rtol, atol, names, equal_nan)
    else:
        raise ValueError("grad_req of %r must be 'write', 'add' or 'null', got %r"
                         % (name, req))


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Assert that ``sym``'s backward pass gives the gradients ``expected``.

    Parameters
    ----------
    sym : Symbol
    location : list or dict of array-like
        The arguments' values (all), in ``sym.list_arguments()`` order or by name.
    out_grads : list or dict of array-like, or None
        The gradients of the outputs (ones when None).
    expected : list or dict of array-like
        The arguments' gradients, in ``list_arguments()`` order or by name; only the
        arguments listed are checked.
    rtol, atol : float or dict of dtype to float, optional
        MXNet's defaults by dtype when omitted.
    aux_states : list or dict of array-like, optional
    grad_req : str, list or dict, default 'write'
        'write', 'add' (checked against random initial gradients plus ``expected``) or
        'null' (the initial gradients must stay).
    ctx : Context, optional
    grad_stypes : dict of str to str, optional
        Only 'default' (dense) storage exists in minigluon.
    equal_nan : bool, default False
    dtype : numpy float dtype or 'asnumpy', default float32

    Returns
    -------
    dict of str to NDArray
        The gradient arrays.
    """
    ctx = _context_of(ctx)
    _dense_gradients_only(grad_stypes, 'check_symbolic_backward: grad_stypes')
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    arg_names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(arg_names, expected))
    # the gradient arrays start random, so that 'add' and 'null' are checked
    start = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    grads = {k: array(v, ctx=ctx, dtype=np.asarray(_as_numpy(expected[k])).dtype
                      if dtype == 'asnumpy' else dtype) for k, v in start.items()}
    reqs = _grad_req_by_name(grad_req, arg_names)
    exe = sym.bind(ctx, args=args, args_grad=grads, aux_states=aux, grad_req=reqs)
    exe.forward(is_train=True)
    exe.backward(_as_out_grads(out_grads, sym.list_outputs(), ctx, dtype))
    for name in expected:
        _compare_gradient(name, reqs.get(name, 'null'), expected[name], grads[name],
                          start[name], rtol, atol, ('EXPECTED_%s' % name, 'BACKWARD_%s' % name),
                          equal_nan)
    return grads


def _as_out_grads(out_grads, names, ctx, dtype):
    """Head gradients as a list of NDArrays (None stays None: ones)."""
    if out_grads is None:
        return None
    if isinstance(out_grads, dict):
        out_grads = [out_grads.get(k) for k in names]
    elif not isinstance(out_grads, (list, tuple)):
        out_grads = [out_grads]
    return [None if g is None else _as_input(g, ctx, dtype) for g in out_grads]


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ='whole', **kwargs):
    """Seconds per run of ``sym``, averaged over ``N`` runs after one warm-up.

    Parameters
    ----------
    sym : Symbol
    location : dict of str to numpy.ndarray, optional
        The inputs; random normal ones of the shapes in ``kwargs`` when omitted.
    ctx : Context, optional
    N : int, default 20
    grad_req : str, list or dict, optional
        'write' by default.
    typ : {'whole', 'forward'}
        Time forward and backward, or forward alone.
    **kwargs
        Argument shapes for ``simple_bind`` when ``location`` is omitted.
    """
    if typ not in ('whole', 'forward'):
        raise ValueError("check_speed: typ must be 'whole' or 'forward', got %r" % (typ,))
    ctx = _context_of(ctx)
    grad_req = 'write' if grad_req is None else grad_req
    if location is None:
        exe = sym.simple_bind(ctx, grad_req=grad_req, **kwargs)
        location = {k: np.random.normal(size=arr.shape) for k, arr in exe.arg_dict.items()}
    else:
        if not isinstance(location, dict):
            raise TypeError('check_speed: location must be a dict of argument name to array, '
                            'got %s' % type(location).__name__)
        exe = sym.simple_bind(ctx, grad_req=grad_req,
                              **{k: np.shape(v) for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = np.asarray(_as_numpy(value)).astype(exe.arg_dict[name].dtype)
    train = typ == 'whole'

    def run():
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)
        for out in exe.outputs:
            out.wait_to_read()

    run()
    tic = time.time()
    for _ in range(N):
        run()
    return (time.time() - tic) / N


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=None, head_grad=None):
    """Compare the backward pass of a Symbol, or autograd's gradients of a function, with
    finite differences.

    Parameters
    ----------
    sym : Symbol or callable
        A Symbol with one output, checked as MXNet does: differentiated is
        ``sum(sym * P)`` for a fixed random ``P`` in [0.1, 1.1), its backward run through
        ``bind``, the differences through the executor with steps of ``numeric_eps / 2``
        either side. Or a function of NDArrays (one per entry of ``location``) returning
        an NDArray or a list of them: differentiated is ``sum(out * head_grad)`` with a
        fixed random head, the gradients by autograd.
    location : list or dict of array-like
        The point: a value for every argument, in ``sym.list_arguments()`` order (the
        function's parameter order) or by name.
    aux_states : list or dict of array-like, optional
        A Symbol's auxiliary states (reset before every forward of the differences).
    numeric_eps : float or dict of dtype to float, optional
        The step: for a Symbol MXNet's default by the output's dtype (float32 2**-9,
        float64 2**-14); for a function 1e-4 (steps of ``eps`` either side).
    rtol, atol : float or dict of dtype to float, optional
        For a Symbol MXNet's defaults by dtype (float32: 1e-4 and 1e-3); for a function
        1e-2 and 1e-4.
    grad_nodes : list of str (or int for a function), or dict of str to str, optional
        The arguments to check (all by default); a dict gives each one's grad_req
        ('write', 'add' or 'null'), checked as ``check_symbolic_backward`` does.
    use_forward_train : bool, default True
        Whether the differences run the Symbol in training mode.
    ctx : Context, optional
        ``default_context()`` by default.
    grad_stype_dict : dict of str to str, optional
        Only 'default' (dense) storage exists in minigluon.
    dtype : numpy float dtype, optional
        The dtype of the computation: float32 for a Symbol, float64 for a function.
    head_grad : list of NDArray, optional
        A function's output gradients (random by default).

    Raises
    ------
    AssertionError
        Naming the argument whose gradient differs, and where.
    """
    from .symbol import Symbol
    if isinstance(sym, Symbol):
        if head_grad is not None:
            raise ValueError('check_numeric_gradient: head_grad is for functions; a Symbol '
                             'is differentiated against a random projection of its output')
        _check_symbol_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                               use_forward_train, _context_of(ctx), grad_stype_dict,
                               _checked_dtype(np.float32 if dtype is None else dtype,
                                              allow_asnumpy=False))
    elif callable(sym):
        if aux_states is not None:
            raise ValueError('check_numeric_gradient: aux_states is for Symbols, not functions')
        _check_function_gradient(sym, location, 1e-4 if numeric_eps is None else numeric_eps,
                                 1e-2 if rtol is None else rtol, 1e-4 if atol is None else atol,
                                 grad_nodes, ctx, np.float64 if dtype is None else dtype,
                                 head_grad)
    else:
        raise TypeError('check_numeric_gradient takes a Symbol or a function of NDArrays, '
                        'got %s' % type(sym).__name__)


def _check_symbol_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                           use_forward_train, ctx, grad_stype_dict, dtype):
    from . import symbol
    _dense_gradients_only(grad_stype_dict, 'check_numeric_gradient: grad_stype_dict')
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if grad_nodes is None:
        reqs = {k: 'write' for k in sym.list_arguments()}
    elif isinstance(grad_nodes, dict):
        reqs = dict(grad_nodes)
    elif isinstance(grad_nodes, (list, tuple)):
        reqs = {k: 'write' for k in grad_nodes}
    else:
        raise TypeError('grad_nodes must be a list of argument names or a dict name -> '
                        'grad_req, got %s' % type(grad_nodes).__name__)
    unknown = sorted(set(reqs) - set(args))
    if unknown:
        raise ValueError('grad_nodes names %s, which are not arguments of the symbol %s'
                         % (unknown, sym.list_arguments()))
    outputs = sym.list_outputs()
    if len(outputs) != 1:
        raise ValueError('check_numeric_gradient needs a symbol with one output, got %d %s; '
                         'check one at a time (sym[i])' % (len(outputs), outputs))
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in args.items()})
    if not out_shapes or out_shapes[0] is None:
        raise ValueError('check_numeric_gradient: the output shape of the symbol cannot be '
                         'inferred from the argument shapes %s'
                         % {k: v.shape for k, v in args.items()})
    out_shape = tuple(out_shapes[0])
    # Differentiated is sum(out * P): P's elements are kept away from 0, which would lose
    # the precision of the differences.
    proj_name = '__random_proj'
    proj = np.random.rand(*out_shape) + 0.1
    loss = symbol.make_loss(sym * symbol.Variable(proj_name))
    start = {k: np.random.normal(0, 0.01, size=args[k].shape) for k in reqs}
    np.random.normal(0, 0.01, size=out_shape)  # MXNet's draw for P's gradient: same stream
    grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in start.items()}
    values = {k: v.asnumpy() for k, v in args.items()}
    aux_values = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    args[proj_name] = array(proj, ctx=ctx, dtype=dtype)
    exe = loss.bind(ctx, args=args, args_grad=grads, grad_req=reqs, aux_states=aux)
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if not eps > 0:
        raise ValueError('check_numeric_gradient: no numeric_eps for outputs of dtype %s; '
                         'pass one' % exe.outputs[0].dtype)
    if dtype in (np.dtype(np.float16), np.dtype(np.float32)) and eps < 1e-5:
        raise ValueError('check_numeric_gradient: numeric_eps=%g is too small for %s '
                         'differences; use at least 1e-5 or dtype=np.float64' % (eps, dtype))
    exe.backward()
    # the differences run a second executor of their own, recording nothing
    fd_exe = loss.bind(ctx, args={k: v.copy() for k, v in args.items()}, grad_req='null',
                       aux_states=None if aux is None else {k: array(v, ctx=ctx, dtype=v.dtype)
                                                            for k, v in aux_values.items()})
    numeric = _executor_differences(fd_exe, values, aux_values, eps, use_forward_train, dtype,
                                    names=list(reqs))
    for name, req in reqs.items():
        _compare_gradient(name, req, numeric[name], grads[name], start[name], rtol, atol,
                          ('NUMERICAL_%s' % name, 'BACKWARD_%s' % name))


def _check_function_gradient(fn, location, numeric_eps, rtol, atol, grad_nodes, ctx, dtype,
                             head_grad):
    """check_numeric_gradient of a function of NDArrays, by autograd."""
    ctx = _context_of(ctx)
    names = list(location.keys()) if isinstance(location, dict) else None
    values = list(location.values()) if names else list(location)
    values = [np.array(_as_numpy(v), dtype=dtype) for v in values]
    if grad_nodes is None:
        check = list(range(len(values)))
    else:
        check = [names.index(g) if isinstance(g, str) else g for g in grad_nodes]
    rng = np.random.RandomState(1234)

    def outputs_of(arrays):
        out = fn(*arrays)
        return out if isinstance(out, (list, tuple)) else [out]

    # analytic gradients
    inputs = [array(v, ctx=ctx, dtype=v.dtype) for v in values]
    for i in check:
        inputs[i].attach_grad()
    with autograd.record():
        outs = outputs_of(inputs)
    heads = head_grad or [array(rng.normal(size=o.shape), ctx=o.context, dtype=o.dtype)
                          for o in outs]
    autograd.backward(outs, heads)
    analytic = [inputs[i].grad.asnumpy() for i in check]
    head_np = [_as_numpy(h).astype(np.float64) for h in heads]

    def scalar(arrays):
        with autograd.pause():
            outs_ = outputs_of([array(a, ctx=ctx, dtype=a.dtype) for a in arrays])
        return sum(float((_as_numpy(o).astype(np.float64) * h).sum())
                   for o, h in zip(outs_, head_np))

    numeric = _central_differences(scalar, values, numeric_eps, check)
    for k, i in enumerate(check):
        label = names[i] if names else 'input %d' % i
        assert_almost_equal(analytic[k], numeric[k], rtol=rtol, atol=atol,
                            names=('autograd grad of %s' % label, 'numeric grad of %s' % label))


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Check that symbols (or one symbol) give the same outputs and gradients under each
    entry of ``ctx_list``, as MXNet's helper does.

    Parameters
    ----------
    sym : Symbol or list of Symbol
        One symbol for every entry, or one per entry (with the same arguments and outputs).
    ctx_list : list of dict
        ``simple_bind`` arguments per run: ``ctx``, argument shapes and ``type_dict``.
    scale : float, default 1.0
        The spread of the random inputs (normal, or uniform with ``use_uniform``).
    grad_req : str, list or dict, default 'write'
        'null' compares the forward pass only.
    arg_params, aux_params : dict of str to array, optional
        Inputs to use instead of random ones (auxiliary states default to 0).
    rtol, atol : float, optional
    raise_on_err : bool, default True
    ground_truth : dict of str to array, optional
        Expected outputs and gradients, instead of the run of highest precision.
    equal_nan : bool, default False

    Returns
    -------
    dict of str to NDArray
        The outputs and gradients compared against.
    """
    if len(ctx_list) < 2:
        raise MXNetError('check_consistency needs at least two runs in ctx_list')
    syms = sym if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    if len(syms) != len(ctx_list):
        raise MXNetError('check_consistency: %d symbols for %d runs' % (len(syms), len(ctx_list)))
    output_names = syms[0].list_outputs()
    arg_names = syms[0].list_arguments()
    exes = []
    for s, ctx in zip(syms, ctx_list):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise AssertionError('check_consistency: the symbols differ in arguments or '
                                 'outputs: %s %s vs %s %s' % (s.list_arguments(),
                                                              s.list_outputs(), arg_names,
                                                              output_names))
        exes.append(s.simple_bind(grad_req=grad_req, **ctx))
    arg_params = {} if arg_params is None else dict(arg_params)
    aux_params = {} if aux_params is None else dict(aux_params)
    for name, arr in sorted(exes[0].arg_dict.items()):  # a fixed order of random draws
        if name not in arg_params:
            draw = np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape) \
                if use_uniform else np.random.normal(size=arr.shape, scale=scale)
            arg_params[name] = draw.astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == 'add':
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    gt = ground_truth
    if gt is None:  # the arrays themselves: each forward and backward updates them
        gt = dict(exes[gt_idx].output_dict)
        if grad_req != 'null':
            gt.update(exes[gt_idx].grad_dict)

    def compare(arr, expected, what, i):
        try:
            assert_almost_equal(arr, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                                names=('run %d' % i, 'run %d' % gt_idx))
        except AssertionError:
            if raise_on_err:
                raise AssertionError('check_consistency: %s differs' % what) from None

    for exe in exes:
        exe.forward(is_train=False)
    for i, exe in enumerate(exes):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                compare(arr, gt[name], 'output %s' % name, i)
    if grad_req == 'null':
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    least = [min((np.dtype(e.outputs[k].dtype) for e in exes), key=lambda d: d.itemsize)
             for k in range(len(output_names))]
    heads = [out.asnumpy().astype(dt) for out, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([array(h, ctx=exe.outputs[k].context, dtype=exe.outputs[k].dtype)
                      for k, h in enumerate(heads)])
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays):
            if gt.get(name) is None:
                if arr is not None:
                    raise AssertionError('check_consistency: %s has a gradient in run %d '
                                         'only' % (name, i))
                continue
            compare(arr, gt[name], 'output or gradient %s' % name, i)
    return gt


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for the body of a ``with`` block, then restore them.

    Takes a dict ``{name: value}`` or one ``name, value`` pair; a value of None unsets
    the variable inside the block.
    """
    if len(args) == 2:
        changes = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        changes = dict(args[0])
    else:
        raise ValueError('environment() takes a dict or a (name, value) pair, got %r' % (args,))
    saved = {name: os.environ.get(name) for name in changes}

    def apply(values):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)

    apply(changes)
    try:
        yield
    finally:
        apply(saved)


# ---- MXNet's helpers for optimizer comparisons, downloads and the environment ----


def default_dtype():
    """The dtype MXNet's tests create their data in: float32."""
    return np.float32


def get_etol(etol=None):
    """The share of elements allowed to differ: ``etol``, else 0."""
    return 0 if etol is None else etol


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=('a', 'b'),
                                 equal_nan=False):
    """Like ``assert_almost_equal``, but up to a share ``etol`` of elements may differ.

    Meant for results that are right almost everywhere by construction (e.g. values
    rounded at a boundary); with ``etol`` 0 or None every element must agree.
    """
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    a, b = _as_numpy(a), _as_numpy(b)
    rtol, atol = _tolerances(a, b, rtol, atol)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    share = 1.0 - np.count_nonzero(close) / max(close.size, 1)
    if share > etol:
        idx = tuple(int(i) for i in np.argwhere(~close)[0])
        raise AssertionError(
            '%.4g%% of the elements differ (rtol=%g, atol=%g), more than the %.4g%% allowed '
            '(etol=%g); first at index %s: %s=%s, %s=%s'
            % (100 * share, rtol, atol, 100 * etol, etol, idx, names[0], a[idx], names[1],
               b[idx]))


def set_env_var(key, val, default_val=''):
    """Set environment variable ``key`` to ``val``; return its previous value.

    ``default_val`` is returned when it was unset. ``environment()`` restores the old
    value by itself and is the better choice in new code.
    """
    prev_val = os.environ.get(key, default_val)
    os.environ[key] = val
    return prev_val


# ---- helpers MXNet's own tests of arrays, autograd and samplers use ---------------------
# MXNet's test_utils does ``import mxnet as mx``, so ``from mxnet.test_utils import *`` gives
# tests ``mx``. Taken from sys.modules rather than imported: the package imports this module.
mx = sys.modules[__name__.rpartition('.')[0]]


def random_arrays(*shapes):
    """Standard-normal float32 numpy arrays, one per shape (a single array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    """Numpy arrays uniform on ``[low, high)``, one per shape."""
    return [np.random.uniform(low, high, size=s).astype(dtype or default_dtype())
            for s in shapes]


def random_sample(population, k):
    """``k`` distinct elements of the list ``population`` in random order."""
    if not 0 <= k <= len(population):
        raise ValueError('random_sample: k=%d is not in [0, %d]' % (k, len(population)))
    population = list(population)
    np.random.shuffle(population)
    return population[:k]


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape, each dimension in ``[1, dim]`` (``[0, dim]`` with zero sizes)."""
    low = 0 if allow_zero_size else 1
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point of ``[x_low, x_high) x [y_low, y_high)``."""
    return np.random.randint(x_low, x_high), np.random.randint(y_low, y_high)


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` over ``axis`` (None, an int or several) one axis at a time with
    ``numpy_reduce_func`` (``np.sum``, ``np.argmax``, ...), keeping dims if asked."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else range(len(dat.shape))
    ret = dat
    for i in reversed(sorted(axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        kept = list(dat.shape)
        for i in axis:
            kept[i] = 1
        ret = ret.reshape(tuple(kept))
    return ret


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError('%s did not raise %s' % (getattr(f, '__name__', f),
                                                  exception_type.__name__))


def retry(n):
    """Decorator: run a stochastic test up to ``n`` times until it passes."""
    if n <= 0:
        raise ValueError('retry(n) needs n > 0, got %r' % (n,))

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if i == n - 1:
                        raise
        return wrapper
    return decorate


@contextlib.contextmanager
def discard_stderr():
    """Discard everything written to standard error in the block.

    Both ``sys.stderr`` and file descriptor 2 go to the null device, so messages of
    native code and child processes are discarded too; both are restored afterwards.
    """
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass
    saved = os.dup(2)
    try:
        with open(os.devnull, 'w') as bit_bucket:
            os.dup2(bit_bucket.fileno(), 2)
            try:
                with contextlib.redirect_stderr(bit_bucket):
                    yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Download ``url`` and return the file's path (MXNet's ``test_utils.download``).

    Parameters
    ----------
    url : str
    fname : str, optional
        File name; the last part of the URL by default.
    dirname : str, optional
        Folder for ``fname`` (created when missing); ``fname``'s own folder otherwise.
    overwrite : bool, default False
        Download even when the file exists.
    retries : int, default 5
        Attempts after the first one when the network fails.

    The transfer is ``gluon.utils.download``'s (atomic write, retries with back-off);
    pass a ``sha1_hash`` there to verify the content.
    """
    if not isinstance(retries, int) or retries < 0:
        raise ValueError('download: retries must be an int >= 0, got %r' % (retries,))
    if fname is None:
        fname = url.split('/')[-1]
    if dirname is not None:
        fname = os.path.join(dirname, fname)
    if not fname or fname.endswith(os.sep):
        raise ValueError('download: cannot derive a file name from the URL %r; pass fname=' % url)
    return _gluon_download(url, path=fname, overwrite=overwrite, retries=retries)


CIFAR10_REC_URL = 'http://data.mxnet.io/mxnet/data/cifar10.zip'
# Where get_mnist and get_mnist_ubyte download from: data.mxnet.io, or a mirror of its
# layout named by this variable (an HTTP server of one's own, e.g. in tests).
TEST_DATA_URL_VARIABLE = 'MINIGLUON_TEST_DATA_URL'
_TEST_DATA_URL = 'http://data.mxnet.io/'


def _test_data_url(path):
    root = os.environ.get(TEST_DATA_URL_VARIABLE) or _TEST_DATA_URL
    return root.rstrip('/') + '/' + path


def _extract_zip(archive, folder):
    """Unpack ``archive`` into ``folder``, refusing entries that would land outside it."""
    try:
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                if name.startswith('/') or '..' in name.replace('\\', '/').split('/'):
                    raise MXNetError('%s: refusing to extract the unsafe entry %r'
                                     % (archive, name))
            zf.extractall(folder)
    except zipfile.BadZipFile as exc:
        raise MXNetError('cannot unpack %s: %s; delete it and download it again'
                         % (archive, exc)) from None


def _download_test_data(path, what, **kwargs):
    url = _test_data_url(path)
    try:
        return download(url, **kwargs)
    except MXNetError as exc:
        raise MXNetError('cannot download %s: %s. Without network access, put the files in '
                         'place by hand, or set %s to a server with the layout of '
                         'http://data.mxnet.io/' % (what, exc, TEST_DATA_URL_VARIABLE)) from None


def get_cifar10():
    """CIFAR-10 as MXNet's RecordIO files in ``data/cifar`` under the current folder
    (``train.rec``, ``test.rec`` and their ``.lst``), downloaded from ``CIFAR10_REC_URL``
    and unpacked unless they are already there (MXNet's ``test_utils.get_cifar10``)."""
    wanted = ['data/cifar/%s' % name for name in ('train.rec', 'test.rec', 'train.lst',
                                                   'test.lst')]
    if all(os.path.exists(path) for path in wanted):
        return
    os.makedirs('data', exist_ok=True)
    _extract_zip(download(CIFAR10_REC_URL, dirname='data'), 'data')


_MNIST_UBYTE = ['train-images-idx3-ubyte', 'train-labels-idx1-ubyte', 't10k-images-idx3-ubyte',
                't10k-labels-idx1-ubyte']


def get_mnist_ubyte():
    """MNIST's four IDX files (``train-images-idx3-ubyte``...) in ``data/`` under the
    current folder, downloaded as ``mnist.zip`` and unpacked unless they are there
    (MXNet's ``test_utils.get_mnist_ubyte``).

    The URL is ``http://data.mxnet.io/mxnet/data/mnist.zip``; the environment variable
    ``MINIGLUON_TEST_DATA_URL`` replaces ``http://data.mxnet.io/``.
    """
    if all(os.path.exists(os.path.join('data', name)) for name in _MNIST_UBYTE):
        return
    os.makedirs('data', exist_ok=True)
    archive = _download_test_data('mxnet/data/mnist.zip', 'MNIST', dirname='data')
    _extract_zip(archive, 'data')
    missing = [name for name in _MNIST_UBYTE if not os.path.exists(os.path.join('data', name))]
    if missing:
        raise MXNetError('%s lacks %s; delete it and download it again'
                         % (archive, ', '.join(missing)))


def get_mnist():
    """MNIST as numpy arrays (MXNet's ``test_utils.get_mnist``): a dict with
    ``train_data``, ``test_data`` (float32, (N, 1, 28, 28), pixels / 255) and
    ``train_label``, ``test_label`` (int8).

    The four ``.gz`` files are downloaded into the current folder unless they are there,
    from ``http://data.mxnet.io/data/mnist/`` (``MINIGLUON_TEST_DATA_URL`` replaces
    ``http://data.mxnet.io/``).
    """
    from .gluon.data.vision.datasets import read_idx

    def read(prefix):
        labels = read_idx(_download_test_data('data/mnist/%s-labels-idx1-ubyte.gz' % prefix,
                                              'MNIST'), 1)
        images = read_idx(_download_test_data('data/mnist/%s-images-idx3-ubyte.gz' % prefix,
                                              'MNIST'), 3)
        if len(images) != len(labels):
            raise MXNetError('MNIST %s files disagree: %d images, %d labels; delete them and '
                             'download them again' % (prefix, len(images), len(labels)))
        images = images.reshape(len(images), 1, images.shape[1], images.shape[2])
        return labels.view(np.int8), images.astype(np.float32) / 255

    train_label, train_data = read('train')
    test_label, test_data = read('t10k')
    return {'train_data': train_data, 'train_label': train_label,
            'test_data': test_data, 'test_label': test_label}


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """``(train, val)`` ``mx.io.MNISTIter``s over ``get_mnist_ubyte()``'s files (MXNet's
    ``test_utils.get_mnist_iterator``), both shuffled once with seed 0 (MNISTIter's
    default); flat batches (batch, 784) unless ``input_shape`` has three dimensions (then
    (batch, 1, 28, 28))."""
    from .io import MNISTIter
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    train = MNISTIter(image='data/train-images-idx3-ubyte', label='data/train-labels-idx1-ubyte',
                      batch_size=batch_size, shuffle=True, flat=flat, num_parts=num_parts,
                      part_index=part_index)
    val = MNISTIter(image='data/t10k-images-idx3-ubyte', label='data/t10k-labels-idx1-ubyte',
                    batch_size=batch_size, flat=flat, num_parts=num_parts,
                    part_index=part_index)
    return train, val


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """Assert that two optimizer states (NDArrays, nested tuples of them, or None) agree.

    A None on either side is not compared, as in MXNet.
    """
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def _dense_only(stype, what):
    if stype != 'default':
        raise MXNetError('compare_optimizer: %s=%r needs sparse storage, which minigluon does '
                         "not have; use 'default'" % (what, stype))


def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default', g_stype='default',
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Run one update of ``opt1`` and ``opt2`` on the same random weight and gradient and
    assert that states and weights agree.

    Parameters
    ----------
    opt1, opt2 : Optimizer
        Typically a reference implementation and the optimizer under test.
    shape : tuple or list of tuples
        One weight's shape; a list compares ``opt1`` updating each weight alone with
        ``opt2`` updating all ``ntensors`` of them in one call (list indices).
    dtype : numpy dtype
    w_stype, g_stype : str
        Storage types; only 'default' (dense) exists in minigluon.
    """
    _dense_only(w_stype, 'w_stype')
    _dense_only(g_stype, 'g_stype')
    ctx = default_context()
    if not isinstance(shape, list):
        assert ntensors == 1, 'one shape means one tensor'
        w2 = _random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        w1 = w2.copyto(ctx)
        g2 = _random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        g1 = g2.copyto(ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(_random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2 = tuple(w.copy() for w in w1)
    g2 = tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_array(array1, array2):
    """True when the two NDArrays share memory (a write into one shows in the other)."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def collapse_sum_like(a, shape):
    """Sum numpy ``a`` down to ``shape`` (which broadcasts to ``a.shape``)."""
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    extra = a.ndim - len(shape)
    axes = list(range(extra)) + [extra + i for i, s in enumerate(shape)
                                 if s != a.shape[extra + i]]
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def _regularized_gamma_q(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a), the upper regularized incomplete gamma function
    (series below ``a + 1``, Lentz's continued fraction above, as in Numerical Recipes)."""
    if x <= 0:
        return 1.0
    log_prefix = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(10000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_prefix) * h)


def chi_square_p_value(obs_freq, expected_freq):
    """p-value of Pearson's chi-square test of observed against expected counts
    (``len - 1`` degrees of freedom), as ``scipy.stats.chisquare`` gives it."""
    obs = np.asarray(obs_freq, dtype=np.float64)
    exp = np.asarray(expected_freq, dtype=np.float64)
    stat = float(((obs - exp) ** 2 / exp).sum())
    return _regularized_gamma_q((obs.size - 1) / 2.0, stat / 2.0)


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` of a distribution
    given by its quantile function ``ppf``, and their probabilities (all ``1/n``)."""
    if nbuckets <= 0:
        raise ValueError('gen_buckets_probs_with_ppf: nbuckets must be positive, got %r'
                         % (nbuckets,))
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """True when the mean of ``generator(nsamples)`` lies within 3 standard errors of ``mu``."""
    mean = np.array(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """True when the sample variance of ``generator(nsamples)`` is within 3 standard
    errors of ``sigma ** 2``."""
    var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of ``generator(nsamples)`` against bucket probabilities.

    Parameters
    ----------
    generator : callable
        ``generator(n)`` returns ``n`` i.i.d. samples.
    buckets : list
        Ascending, disjoint ``(low, high)`` ranges for a continuous distribution, or the
        possible values of a discrete one.
    probs : list of float
        The probability of each bucket.

    Returns
    -------
    (p, obs_freq, expected_freq) : the p-value, observed and expected bucket counts.
    """
    if not isinstance(buckets, list) or len(probs) != len(buckets):
        raise ValueError('chi_square_check: buckets must be a list as long as probs')
    samples = np.asarray(generator(nsamples)).reshape(-1)
    continuous = isinstance(buckets[0], (list, tuple))
    expected_freq = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    obs_freq = np.zeros(len(buckets), dtype=np.int64)
    if continuous:
        edges = np.zeros(len(buckets) * 2, dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            if low > high or (i + 1 < len(buckets) and high > buckets[i + 1][0]):
                raise ValueError('chi_square_check: buckets must be ascending and disjoint, '
                                 'got %r' % (buckets,))
            edges[2 * i], edges[2 * i + 1] = low, high
        # As MXNet counts (searchsorted into the edges, halved): bucket i takes the samples
        # in [high of bucket i-1, high of bucket i); counting below each high is faster.
        below = [np.count_nonzero(samples < high) for high in edges[1::2]]
        obs_freq[:] = np.diff([0] + below)
    else:
        for i, value in enumerate(buckets):
            obs_freq[i] = (samples == value).sum()
    return chi_square_p_value(obs_freq, expected_freq), obs_freq, expected_freq


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Run ``chi_square_check`` ``nrepeat`` times; fail unless at least ``success_rate`` of
    the runs have a p-value above ``alpha``. Returns the p-values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    if (np.array(p_values) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError('Generator test fails, Chi-square p=%s, obs_freq=%s, '
                             'expected_freq=%s.\nbuckets=%s, probs=%s'
                             % (p_values, [r[1] for r in results], [r[2] for r in results],
                                buckets, probs))
    return p_values


class DummyIter(DataIter):
    """An iterator that gives the first batch of ``real_iter`` again and again, without
    end (for timing a model on data of the real shapes).

    Parameters
    ----------
    real_iter : DataIter
        The iterator whose first batch is repeated.
    """

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def next(self):
        """The first batch of the real iterator; never raises ``StopIteration``."""
        return self.the_batch
