"""Host ops split over the cores by images, each thread with a one-threaded BLAS.

numpy's BLAS spreads each GEMM over its threads, but a convolution's GEMMs are thin
(a 64-channel 3x3 layer at 56x56 ran no faster on 2 BLAS threads than on one) and the
work around them (Winograd's transforms, im2col) runs on one core. So a layer's blocks
of images are split into one contiguous chunk per thread, and each thread runs its
chunk whole, transforms and GEMMs, with a one-threaded BLAS.

The BLAS stays one-threaded from the first split on (a process that never splits
keeps it as it was). Switching it back and forth around each layer does not work:
OpenBLAS's idle threads spin for about 0.1 s after each multi-threaded call, on the
cores the split needs (ResNet-18 at 224 px on 2 cores: 2.5 s per step unsplit, 2.8
switched, 2.2 split with the BLAS left at one thread). Work whose parts depend on each
other (the time steps of stacked recurrent layers, ``RNN``) runs as tasks that wait for
the ones they need (``run_tasks``).

The thread count is the BLAS's own when first asked (``OMP_NUM_THREADS`` or
``OPENBLAS_NUM_THREADS`` as the process was started with), or
``MINIGLUON_HOST_THREADS``. With one thread, or a BLAS whose thread count cannot be
changed at run time (only OpenBLAS's can), chunks run in order on the calling thread
and the BLAS is left alone. A chunk that splits again (an op inside an op) runs on the
thread it is on.
"""
import ctypes
import glob
import heapq
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...base import MXNetError

VARIABLE = 'MINIGLUON_HOST_THREADS'


class _Blas:
    """numpy's OpenBLAS thread count: ``get()`` and ``set(n)``, or None when not found."""

    def __init__(self, get, set_):
        self.get, self.set = get, set_

    @staticmethod
    def find():
        for path in _openblas_paths():
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix in ('scipy_openblas', 'openblas'):
                for suffix in ('64_', ''):
                    get = getattr(lib, '%s_get_num_threads%s' % (prefix, suffix), None)
                    set_ = getattr(lib, '%s_set_num_threads%s' % (prefix, suffix), None)
                    if get is not None and set_ is not None:
                        get.restype = ctypes.c_int
                        set_.argtypes = [ctypes.c_int]
                        return _Blas(get, set_)
        return None


def _openblas_paths():
    """OpenBLAS libraries numpy may use: its wheel's own first (a SciPy loaded beside it
    brings another), then any this process has loaded (a system numpy's)."""
    here = os.path.dirname(np.__file__)
    paths = []
    for folder in (os.path.join(here, '..', 'numpy.libs'), os.path.join(here, '.dylibs')):
        paths += sorted(glob.glob(os.path.join(folder, '*openblas*')))
    try:
        with open('/proc/self/maps') as maps:
            paths += sorted({line.split()[-1] for line in maps
                             if 'openblas' in line.lower() and '/' in line})
    except OSError:
        pass
    return paths


class _State:
    def __init__(self):
        self.decided = False
        self.blas = None
        self.threads = 1
        self.pool = None
        self.lock = threading.Lock()
        self.lowered = False  # the BLAS made one-threaded (at the first split)


_state = _State()
_local = threading.local()


def _decide():
    blas = _Blas.find()
    given = os.environ.get(VARIABLE, '').strip()
    if given:
        try:
            threads = int(given)
        except ValueError:
            threads = 0
        if threads < 1:
            raise MXNetError('%s=%r: give a positive number of threads'
                             % (VARIABLE, os.environ[VARIABLE]))
    else:
        threads = blas.get() if blas is not None else 1
    _state.blas = blas
    _state.threads = max(1, threads) if blas is not None else 1
    _state.decided = True


def _lower_blas():
    state = _state
    with state.lock:
        if not state.lowered:
            state.lowered = True
            state.blas.set(1)


def threads():
    """How many threads host ops split their images over (1: they do not)."""
    if not _state.decided:
        _decide()
    return _state.threads


def use_one_thread():
    """This process splits nothing and its BLAS runs one thread: for a DataLoader's
    worker processes, several of which share the cores with the training process (as
    PyTorch's workers run one thread each)."""
    global _state  # pylint: disable=global-statement
    _state = _State()
    _state.decided = True
    blas = _Blas.find()
    if blas is not None:
        blas.set(1)


def _reset():
    """Decide again at the next question, with no pool (for tests, and in a forked child,
    which has the parent's pool object but none of its threads)."""
    global _state  # pylint: disable=global-statement
    _state = _State()


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_reset)


def _enter_worker():
    _local.inside = True


def _pool():
    if _state.pool is None:
        _state.pool = ThreadPoolExecutor(_state.threads, thread_name_prefix='minigluon-host',
                                         initializer=_enter_worker)
    return _state.pool


def chunks(items, count):
    """``items`` as ``count`` (or fewer) contiguous runs of nearly equal length."""
    count = max(1, min(count, len(items)))
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


# Arrays of fewer elements are not split by ``row_runs``: handing a chunk to another
# thread costs 50-100 us on a 2-core VM, as long as a ReLU over 2^18 floats (an MLP's
# 256x256 weights split for their SGD update made its step 2x slower)
SPLIT_ELEMENTS = 1 << 19


def row_runs(rows, elements):
    """``[(lo, hi)]``: ``rows`` (of an array of ``elements`` in all) in one contiguous run
    per thread, or one run when the array is small."""
    count = threads() if elements >= SPLIT_ELEMENTS else 1
    return [(chunk[0], chunk[-1] + 1) for chunk in chunks(range(rows), count) if len(chunk)]


def each_run(fn, rows, elements):
    """``[fn(lo, hi) for (lo, hi) in row_runs(rows, elements)]``, the runs at once on the
    host threads (compiled kernels and numpy's ufuncs let go of the GIL); results in
    row order."""
    if elements < SPLIT_ELEMENTS:  # one run (row_runs' answer) without the pool's path
        return [fn(0, rows)] if rows else []
    return [result for chunk in map_chunks(lambda runs: [fn(lo, hi) for lo, hi in runs],
                                           row_runs(rows, elements))
            for result in chunk]


def apply_rows(fn, out, *inputs):
    """``fn(*inputs, out)`` for a host array ``out`` and arrays of its shape (or
    scalars), in runs of rows split over the host threads. Returns ``out``."""
    if out.ndim == 0 or out.size < SPLIT_ELEMENTS:  # one run: no slicing, no pool
        fn(*inputs, out)
        return out
    each_run(lambda lo, hi: fn(*[a[lo:hi] if isinstance(a, np.ndarray) else a
                                 for a in inputs], out[lo:hi]),
             out.shape[0], out.size)
    return out


def matmul(a, b):
    """``a @ b`` for 2-D host arrays. Once the BLAS is one-threaded (after the first
    split), runs of ``a``'s rows go to the host threads, so a layer's large GEMM (a
    language model's decoder) still uses every core; before, the BLAS's own threads do."""
    if not _state.lowered or a.ndim != 2 or b.ndim != 2:
        return np.matmul(a, b)
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    # weighed as 128 multiply-adds to an element pass: products of 64 million
    # multiply-adds (a millisecond) and up split; an MLP's 64x256x256 ran slower split
    each_run(lambda lo, hi: np.matmul(a[lo:hi], b, out=out[lo:hi]), a.shape[0],
             out.size * a.shape[1] // 128)
    return out


def add_in_order(parts):
    """The sum of per-chunk (or per-run) partial sums, first to last, into the first: it
    does not depend on which thread computed which part."""
    total = parts[0]
    for part in parts[1:]:
        total += part
    return total


def map_chunks(fn, items):
    """``[fn(chunk) for chunk in chunks(items, threads())]``, the chunks run at once on
    the pool's threads; results in chunk order, so a sum of them in that order does not
    depend on which thread ran what."""
    count = threads()
    if count <= 1 or len(items) < 2 or getattr(_local, 'inside', False):
        return [fn(items)]
    if not _state.lowered:
        _lower_blas()
    first, *rest = chunks(items, count)
    futures = [_pool().submit(fn, chunk) for chunk in rest]
    return [_as_worker(fn, first)] + [future.result() for future in futures]


def _as_worker(fn, *args):
    """``fn(*args)`` on the calling thread as one of the pool's: it takes a share of the
    work instead of waiting (one thread fewer to wake, and its core does not sit idle),
    and what it calls does not split again."""
    _local.inside = True
    try:
        return fn(*args)
    finally:
        _local.inside = False


class _TaskGraph:
    """The state of ``run_tasks``: what each task waits for, the ready tasks by
    priority, and the first error raised."""

    def __init__(self, tasks):
        self.fns = [task[0] for task in tasks]
        self.waiting = [0] * len(tasks)
        self.after = [[] for _ in tasks]
        for i, (_, deps, _) in enumerate(tasks):
            for dep in set(deps):
                self.waiting[i] += 1
                self.after[dep].append(i)
        self.priority = [task[2] for task in tasks]
        self.ready = [(self.priority[i], i) for i, w in enumerate(self.waiting) if w == 0]
        heapq.heapify(self.ready)
        self.left = len(tasks)
        self.running = 0
        self.cond = threading.Condition()
        self.error = None

    def _done(self, i):
        self.left -= 1
        for j in self.after[i]:
            self.waiting[j] -= 1
            if self.waiting[j] == 0:
                heapq.heappush(self.ready, (self.priority[j], j))

    def run_here(self):
        """Every task on the calling thread, in an order its dependencies allow."""
        while self.ready:
            _, i = heapq.heappop(self.ready)
            self.fns[i]()
            self._done(i)
        self.finish()

    def finish(self):
        """Raise the first error a task raised, or that some tasks never became ready."""
        if self.error is not None:
            raise self.error
        if self.left:
            raise MXNetError('run_tasks: the tasks\' dependencies form a cycle')

    def work(self):
        """One thread's loop: take the ready task of lowest priority value, run it."""
        cond = self.cond
        while True:
            with cond:
                # (none ready, none running, some left: a cycle, which must not hang)
                while not self.ready and self.left and self.running and self.error is None:
                    cond.wait()
                if not self.ready or self.error is not None:
                    cond.notify_all()
                    return
                _, i = heapq.heappop(self.ready)
                self.running += 1
            try:
                self.fns[i]()
            except BaseException as exc:  # pylint: disable=broad-except
                with cond:
                    self.running -= 1
                    self.error = self.error or exc
                    cond.notify_all()
                return
            with cond:
                self.running -= 1
                self._done(i)
                cond.notify_all()


def run_tasks(tasks, here=False):
    """Run ``tasks``, a list of ``(fn, deps, priority)``, on the host threads at once
    (``here``: one after another on the calling thread, for work on a GPU, whose
    device and stream are the calling thread's):
    each ``fn()`` once, after the tasks whose indices are in ``deps`` have finished;
    among the tasks ready to run, the lowest ``priority`` (then the lowest index) first.
    For work whose parts depend on each other, such as the time steps of stacked
    recurrent layers. Each task must write places of its own: which thread runs which
    task, and when, varies. The first error a task raises is raised here, once the
    tasks already running have ended."""
    if not tasks:
        return
    graph = _TaskGraph(tasks)
    count = 1 if here else threads()
    if count <= 1 or len(tasks) < 2 or getattr(_local, 'inside', False):
        graph.run_here()
        return
    if not _state.lowered:
        _lower_blas()
    futures = [_pool().submit(graph.work) for _ in range(count - 1)]
    _as_worker(graph.work)
    for future in futures:
        future.result()
    graph.finish()
