"""Devices: ``cpu(i)`` runs on numpy, ``gpu(i)`` on CuPy.

Code that computes asks a Context for its array module (``ctx.xp``); CuPy itself is
imported only by ``backend.py``.
"""
import threading
import warnings

from . import backend
from .base import MXNetError

num_gpus = backend.num_gpus


class _ContextType(type):
    """Gives the class MXNet's deprecated ``Context.default_ctx`` property."""

    @property
    def default_ctx(cls):
        warnings.warn('Context.default_ctx is deprecated: use mx.current_context() or '
                      '`with ctx:` instead', DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        warnings.warn('Context.default_ctx is deprecated: use `with ctx:` instead',
                      DeprecationWarning, stacklevel=2)
        _thread_default.base = ctx


class Context(metaclass=_ContextType):
    """A device: ``Context('cpu', 0)`` or ``Context('gpu', 1)``.

    Contexts compare by (device_type, device_id), so ``cpu(0)`` and ``cpu(1)`` are
    distinct devices even though both keep their arrays in host memory. Used in a
    ``with`` block it becomes the default context of the current thread.
    """
    __slots__ = ('device_type', 'device_id', '_xp', '_scope', '_old')
    _cache = {}
    # cpu_pinned: page-locked host memory (for copies to a GPU); cpu_shared: host memory
    # shared between processes (what DataLoader workers hand over). Both hold numpy arrays.
    devtype2str = {1: 'cpu', 2: 'gpu', 3: 'cpu_pinned', 5: 'cpu_shared'}
    devstr2type = {'cpu': 1, 'gpu': 2, 'cpu_pinned': 3, 'cpu_shared': 5}

    def __new__(cls, device_type, device_id=0):
        if isinstance(device_type, Context):
            return device_type
        if isinstance(device_type, int):
            device_type = cls.devtype2str.get(device_type, device_type)
        if device_type not in cls.devstr2type:
            raise MXNetError("unknown device type %r: use 'cpu' or 'gpu' (or 'cpu_pinned', "
                             "'cpu_shared')" % (device_type,))
        if not isinstance(device_id, int) or device_id < 0:
            raise MXNetError('device id must be a non-negative int, got %r' % (device_id,))
        key = (device_type, device_id)
        ctx = cls._cache.get(key)
        if ctx is None:
            ctx = object.__new__(cls)
            ctx.device_type, ctx.device_id = key
            ctx._xp = None
            ctx._scope = None
            ctx._old = []
            cls._cache[key] = ctx
        return ctx

    def __getnewargs__(self):
        return (self.device_type, self.device_id)

    # one object per device: copies are the device itself (a deep copy of a Parameter
    # keeps its contexts)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    @property
    def device_typeid(self):
        """MXNet's integer code for the device type: 1 cpu, 2 gpu, 3 cpu_pinned.

        It is the number MXNet's file formats store (see ``devstr2type``).
        """
        return self.devstr2type[self.device_type]

    @property
    def xp(self):
        """The array module for this device: numpy, or cupy for a usable GPU."""
        xp = self._xp
        if xp is None:
            reason = self.is_gpu and backend.gpu_unavailable_reason(self.device_id)
            if reason:
                raise MXNetError('cannot use %s: %s' % (self, reason))
            xp = self._xp = backend.array_module(self.device_type)
        return xp

    @property
    def is_gpu(self):
        """Whether this is a GPU context, whose arrays live in CuPy device memory."""
        return self.device_type == 'gpu'

    def device(self):
        """A ``with`` guard making this GPU current for CuPy (doing nothing for CPUs)."""
        scope = self._scope
        if scope is None:
            self.xp  # raises the clear error when the GPU is unusable
            scope = self._scope = backend.device_scope(self.device_type, self.device_id)
        return scope

    def put(self, data, dtype=None):
        """A fresh copy of host or device array ``data`` on this device.

        Parameters
        ----------
        data : numpy.ndarray or cupy.ndarray
            The array to copy, from any device.
        dtype : str or numpy.dtype, optional
            The copy's dtype; ``data``'s own when None.

        Returns
        -------
        numpy.ndarray or cupy.ndarray
            An array of this device's module (``xp``), never ``data`` itself.
        """
        if self.is_gpu:
            self.xp  # the clear error when the GPU is unusable
            return backend.to_device(data, self.device_id, dtype)
        return backend.host_copy(data, dtype)

    def empty_cache(self):
        """Give the memory CuPy's pool keeps cached on this GPU back to the driver.

        Arrays still alive are untouched; only freed blocks kept for reuse go, so that
        other processes (or ``gpu_memory_info``) see them as free. Does nothing on a CPU.
        """
        if self.is_gpu:
            backend.free_cached_memory(self.device_id)

    def __eq__(self, other):
        return isinstance(other, Context) and self.device_type == other.device_type \
            and self.device_id == other.device_id

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return '%s(%d)' % (self.device_type, self.device_id)

    __str__ = __repr__

    def __enter__(self):
        stack = _default_stack()
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _default_stack().pop()


class _ThreadDefault(threading.local):
    def __init__(self):
        self.stack = []
        self.base = None  # set through Context.default_ctx; cpu(0) when None


_thread_default = _ThreadDefault()


def _default_stack():
    return _thread_default.stack


def cpu(device_id=0):
    """The CPU context ``device_id``, whose arrays are numpy arrays.

    Parameters
    ----------
    device_id : int, default 0
        Different ids are distinct logical devices sharing host memory (useful to
        test multi-device code on one machine).

    Returns
    -------
    Context
    """
    return Context('cpu', device_id)


def cpu_pinned(device_id=0):
    """The pinned-CPU context ``device_id``: host arrays meant for copies to GPU ``device_id``.

    Its arrays are numpy arrays; the DataLoader (``pin_memory=True``) places them in
    page-locked memory when CuPy sees a GPU, which speeds copies to the device.

    Parameters
    ----------
    device_id : int, default 0
        The GPU the arrays are meant for.

    Returns
    -------
    Context
    """
    return Context('cpu_pinned', device_id)


def gpu(device_id=0):
    """The GPU context ``device_id``; arrays are allocated there through CuPy.

    Creating it needs no GPU: an unusable one is reported, with the reason, when an
    array is first placed on it.

    Parameters
    ----------
    device_id : int, default 0
        The CUDA device ordinal.

    Returns
    -------
    Context
    """
    return Context('gpu', device_id)


def current_context():
    """The innermost ``with ctx:`` context of this thread, else ``cpu(0)``."""
    stack = _thread_default.stack
    if stack:
        return stack[-1]
    return _thread_default.base or cpu(0)


def gpu_memory_info(device_id=0):
    """The free and total memory of GPU ``device_id``, as the driver reports them.

    Parameters
    ----------
    device_id : int, default 0
        The CUDA device ordinal.

    Returns
    -------
    tuple of int
        ``(free, total)`` in bytes. Blocks cached by CuPy's pool count as used
        (see ``Context.empty_cache``).
    """
    gpu(device_id).xp
    return backend.memory_info(device_id)
