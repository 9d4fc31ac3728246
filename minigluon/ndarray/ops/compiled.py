"""The one door to numba, the compiler of minigluon's fused CPU kernels.

numpy runs a chain of elementwise steps as one pass over memory per step; a kernel
compiled by numba does the chain in one pass, which is what the Winograd transforms
(conv_winograd_cpu.py), BatchNorm (normalization_cpu.py), max pooling
(pooling_cpu.py), the SGD update (updates_cpu.py) and the LSTM's gates (rnn_cpu.py)
need to stop being memory-bound. numba is a dependency of minigluon; where it does not import (a numba built for
another numpy), every operator keeps its numpy path.

``MINIGLUON_CPU_KERNELS`` chooses, read once per process:

- ``auto`` (default): the compiled kernels when numba imports, numpy otherwise;
- ``numba``: the compiled kernels, and an error naming the fix when numba is missing;
- ``numpy``: never the compiled kernels.

Kernels are compiled on first use and cached on disk next to their source (numba's
``cache=True``; a user-wide cache when that directory is read-only), so a process
after the first loads them in milliseconds. They release the GIL, so a parameter
server's I/O thread keeps running while one computes.
"""
import os

import numpy as np

from ...base import MXNetError

VARIABLE = 'MINIGLUON_CPU_KERNELS'
MODES = ('auto', 'numba', 'numpy')

_numba = None
_decided = False


def _decide():
    mode = os.environ.get(VARIABLE, 'auto').strip().lower() or 'auto'
    if mode not in MODES:
        raise MXNetError('%s=%r is not one of %s' % (VARIABLE, os.environ[VARIABLE],
                                                    ', '.join(MODES)))
    if mode == 'numpy':
        return None
    try:
        import numba
    except Exception as exc:  # ImportError, or a numba built for another numpy
        if mode == 'numba':
            raise MXNetError("%s=numba but numba does not import (%s: %s); install it with "
                             "`pip install numba`, or set %s=auto to run "
                             "on numpy" % (VARIABLE, type(exc).__name__, exc, VARIABLE))
        return None
    return numba


def numba_module():
    """numba when the compiled CPU kernels are on in this process, else None."""
    global _numba, _decided
    if not _decided:
        _numba, _decided = _decide(), True
    return _numba


def enabled():
    """True when operators should call their compiled CPU kernels."""
    return numba_module() is not None


def applies(xp, *arrays):
    """True when compiled kernels may take ``arrays``: host arrays of float32 or float64
    (the dtypes they are compiled for) with the kernels on."""
    return (xp is np and all(a.dtype in (np.float32, np.float64) for a in arrays)
            and enabled())


def reset():
    """Read ``MINIGLUON_CPU_KERNELS`` again at the next question (for tests)."""
    global _numba, _decided
    _numba, _decided = None, False


def kernel(fn):
    """``fn`` compiled by numba without the GIL, cached on disk, bounds unchecked
    (callers pass arrays of the shapes the kernel's loops assume)."""
    return numba_module().njit(cache=True, nogil=True, boundscheck=False)(fn)


def lazy_kernel(fn):
    """``kernel(fn)`` made at its first call, so that importing the module defining it
    imports no numba (see ``updates_cpu.py``)."""
    compiled_fn = []

    def call(*args):
        if not compiled_fn:
            compiled_fn.append(kernel(fn))
        return compiled_fn[0](*args)
    call.__name__, call.__doc__, call.__wrapped__ = fn.__name__, fn.__doc__, fn
    call.compiled = compiled_fn  # (empty until the first call)
    return call
