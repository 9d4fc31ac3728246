"""Testing helpers with MXNet's names: comparisons, numeric gradients, random data."""
import contextlib
import os
import sys

import numpy as np

from . import autograd, backend
from .base import MXNetError
from .context import Context, cpu
from .gluon.utils import download as _gluon_download
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


def set_default_context(ctx):
    _default_ctx[0] = Context(ctx)


def _as_numpy(a):
    if isinstance(a, NDArray):
        return a.asnumpy()
    return backend.to_host(a)


def _tolerances(a, b, rtol, atol):
    dt = a.dtype if a.dtype in _RTOL else (b.dtype if b.dtype in _RTOL else np.dtype('float64'))
    return (_RTOL.get(dt, 1e-7) if rtol is None else rtol,
            _ATOL.get(dt, 1e-9) if atol is None else atol)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False):
    """True when ``a`` and ``b`` (NDArrays, numpy arrays or scalars) agree elementwise."""
    a, b = _as_numpy(a), _as_numpy(b)
    if a.shape != b.shape and a.size != b.size:
        return False
    rtol, atol = _tolerances(a, b, rtol, atol)
    return bool(np.allclose(a.reshape(b.shape) if a.size == b.size else a, b,
                            rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False):
    """Raise AssertionError naming the worst element when ``a`` and ``b`` differ."""
    a, b = _as_numpy(a), _as_numpy(b)
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


def same(a, b):
    """True when ``a`` and ``b`` are exactly equal (shape and values)."""
    a, b = _as_numpy(a), _as_numpy(b)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def rand_shape_nd(num_dim, dim=10):
    """A random shape with ``num_dim`` dimensions, each in ``[1, dim]``."""
    return tuple(np.random.randint(1, dim + 1, size=num_dim).tolist())


def rand_shape_2d(dim0=10, dim1=10):
    return (np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1))


def rand_ndarray(shape, stype='default', density=None, dtype=None, ctx=None):
    """An NDArray of uniform random values in [0, 1) (dense storage only)."""
    if stype != 'default':
        raise MXNetError("rand_ndarray: only stype='default' is supported, got %r" % stype)
    return _random.uniform(0, 1, shape=shape, dtype=dtype or 'float32',
                           ctx=ctx or default_context())


def numeric_grad(fn, inputs, eps=1e-4, which=None):
    """Central-difference gradients of scalar ``fn(list of numpy arrays)``.

    One gradient per input, or per input listed in ``which``.
    """
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


def check_numeric_gradient(fn, location, numeric_eps=1e-4, rtol=1e-2, atol=None,
                           grad_nodes=None, ctx=None, dtype=np.float64, head_grad=None):
    """Compare autograd gradients of ``fn`` with central differences.

    Parameters
    ----------
    fn : callable
        Takes NDArrays (one per entry of ``location``) and returns an NDArray or a list of
        NDArrays. Differentiated is ``sum(out * head_grad)`` with a fixed random head.
    location : list or dict of array-like
        Where to evaluate; values are converted to ``dtype`` (float64 by default).
    grad_nodes : list of int or str, optional
        Which inputs to check (all by default).
    """
    ctx = Context(ctx) if ctx is not None else default_context()
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

    numeric = numeric_grad(scalar, values, eps=numeric_eps, which=check)
    for k, i in enumerate(check):
        label = names[i] if names else 'input %d' % i
        assert_almost_equal(analytic[k], numeric[k], rtol=rtol,
                            atol=atol if atol is not None else 1e-4,
                            names=('autograd grad of %s' % label, 'numeric grad of %s' % label))


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
