"""The one door to CuPy: its guarded import and every question that depends on whether
an array lives on a GPU.

Everything else asks a Context for its array module (``ctx.xp``) and comes here for
the rest: which module an array belongs to, copies to the host and to a device, the
device made current for CuPy, and the few calls numpy and CuPy spell differently.
"""
import contextlib

import numpy

try:  # CuPy is optional: without it every cpu context still works.
    import cupy
    import cupyx
    IMPORT_ERROR = None
except Exception as exc:  # ImportError, or a broken CUDA install raising at import
    cupy = cupyx = None
    IMPORT_ERROR = exc

NO_DEVICE = contextlib.nullcontext()  # what device_scope gives a CPU


def num_gpus():
    """Number of GPUs CuPy can see (0 when CuPy or a driver is missing)."""
    if cupy is None:
        return 0
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def gpu_unavailable_reason(device_id):
    """Why GPU ``device_id`` cannot be used, or None when it can."""
    if cupy is None:
        return ('CuPy is not importable (%s: %s); install the CuPy wheel '
                "for your CUDA: `pip install 'minigluon[gpu]'` (CUDA 12) or `pip install "
                "'minigluon[gpu-cuda13]'` (CUDA 13)"
                % (type(IMPORT_ERROR).__name__, IMPORT_ERROR))
    count = num_gpus()
    if count == 0:
        return ('CuPy is installed but no CUDA GPU is visible (check the driver and '
                'CUDA_VISIBLE_DEVICES)')
    if device_id >= count:
        return 'only %d GPU(s) are visible (ids 0..%d)' % (count, count - 1)
    return None


def array_module(device_type):
    """numpy for 'cpu', cupy for 'gpu' (check ``gpu_unavailable_reason`` first)."""
    return cupy if device_type == 'gpu' else numpy


def is_host_array(a):
    """True for a numpy array: an array in host memory (numpy scalars are not arrays)."""
    return isinstance(a, numpy.ndarray)


def is_device_array(a):
    """True for a CuPy array: an array in a GPU's memory."""
    return cupy is not None and isinstance(a, cupy.ndarray)


def get_array_module(*arrays):
    """cupy when any of ``arrays`` is a CuPy array, else numpy."""
    return cupy if any(is_device_array(a) for a in arrays) else numpy


def to_host(a):
    """``a`` as a numpy array: itself when it already is one, else a copy from the GPU."""
    return a.get() if is_device_array(a) else numpy.asarray(a)


def host_copy(a, dtype=None, order='K'):
    """A fresh numpy copy of host or device array ``a``, cast to ``dtype``, in memory
    ``order`` (numpy's: 'K' keeps the source's layout, 'C' is row-major)."""
    if is_device_array(a):
        a = a.get()  # row-major
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return numpy.array(a, dtype=dtype, copy=True, order=order)


def to_device(a, device_id, dtype=None):
    """A fresh CuPy copy of host or device array ``a`` on GPU ``device_id``."""
    with cupy.cuda.Device(device_id):
        return cupy.array(a, dtype=dtype, copy=True)


def device_scope(device_type, device_id):
    """A ``with`` guard making the GPU current for CuPy; does nothing for CPUs."""
    return cupy.cuda.Device(device_id) if device_type == 'gpu' else NO_DEVICE


def synchronize(device_id=None):
    """Wait for the work queued on GPU ``device_id`` (every GPU when None)."""
    if cupy is None:
        return
    for i in range(num_gpus()) if device_id is None else [device_id]:
        with cupy.cuda.Device(i):
            cupy.cuda.get_current_stream().synchronize()


def seed_device(device_id, seed):
    """Seed CuPy's generator on GPU ``device_id`` (every visible GPU when None)."""
    if cupy is None:
        return
    for i in range(num_gpus()) if device_id is None else [device_id]:
        with cupy.cuda.Device(i):
            cupy.random.seed(seed)


def scatter_add(target, index, values):
    """``target[index] += values`` with repeated indices adding up (numpy's ``add.at``)."""
    if is_device_array(target):
        cupyx.scatter_add(target, index, values)
    else:
        numpy.add.at(target, index, values)


def pinned_host_array(shape, dtype):
    """A numpy array in page-locked memory when a GPU is there to use it, else plain."""
    if cupy is None or num_gpus() == 0:
        return None
    memory = cupy.cuda.alloc_pinned_memory(max(int(numpy.prod(shape)) * dtype.itemsize, 1))
    return numpy.ndarray(shape, dtype, buffer=memory)  # what cupyx.empty_pinned does


def free_cached_memory(device_id):
    """Return CuPy's cached blocks to the driver."""
    if cupy is not None:
        with cupy.cuda.Device(device_id):
            cupy.get_default_memory_pool().free_all_blocks()


def memory_info(device_id):
    """(free, total) bytes on GPU ``device_id``."""
    with cupy.cuda.Device(device_id):
        return cupy.cuda.runtime.memGetInfo()
