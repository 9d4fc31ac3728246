"""Devices: ``cpu(i)`` runs on numpy, ``gpu(i)`` on CuPy.

Code that computes asks a Context for its array module (``ctx.xp``); CuPy itself is
imported only by ``backend.py``.
"""
import threading

from . import backend
from .base import MXNetError

num_gpus = backend.num_gpus


class Context:
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

    @property
    def device_typeid(self):
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
        return self.device_type == 'gpu'

    def device(self):
        """A ``with`` guard making this GPU current for CuPy (doing nothing for CPUs)."""
        scope = self._scope
        if scope is None:
            self.xp  # raises the clear error when the GPU is unusable
            scope = self._scope = backend.device_scope(self.device_type, self.device_id)
        return scope

    def put(self, data, dtype=None):
        """A fresh copy of host or device array ``data`` on this device, cast to ``dtype``."""
        if self.is_gpu:
            self.xp  # the clear error when the GPU is unusable
            return backend.to_device(data, self.device_id, dtype)
        return backend.host_copy(data, dtype)

    def empty_cache(self):
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


_thread_default = _ThreadDefault()


def _default_stack():
    return _thread_default.stack


def cpu(device_id=0):
    """CPU context ``device_id``; different ids are distinct logical devices."""
    return Context('cpu', device_id)


def cpu_pinned(device_id=0):
    """Page-locked host memory, for fast copies to GPU ``device_id``."""
    return Context('cpu_pinned', device_id)


def gpu(device_id=0):
    """GPU context ``device_id``; arrays are allocated there through CuPy."""
    return Context('gpu', device_id)


def current_context():
    """The innermost ``with ctx:`` context of this thread, else ``cpu(0)``."""
    stack = _thread_default.stack
    return stack[-1] if stack else cpu(0)


def gpu_memory_info(device_id=0):
    """(free, total) bytes on GPU ``device_id``."""
    gpu(device_id).xp
    return backend.memory_info(device_id)
