"""DataLoader worker processes: indices go out over pipes, batches come back in shared memory.

::

    main process                                   worker k (forked, or spawned)
      submit(i, indices) --task pipe k, JSON------>  samples = [dataset[j] for j in indices]
        with a free block of the ring                batch = batchify_fn(samples)
                                                     arrays -> that block (or a new one)
      get(i) <--result pipe k, JSON---------------  {"i", "block", "spec", "leaves"}
        copy the arrays out, the block is free again

Only small JSON messages travel through the pipes; nothing is pickled after start-up
(the spawn start method pickles the data set once to start a worker).

The main process owns a ring of equal shared-memory blocks, one per batch in flight,
and reuses them, so a batch costs one copy in and one copy out, with no shared-memory
system call and no page fault once the ring is warm. Its first batch, and any batch bigger than
a ring block, goes through a one-off block that the worker creates under a name the
main process chose; the ring grows to fit, and a one-off block of the ring's size joins
it (others are unlinked after reading). Because the
main process knows every block name, shutting down frees all of them, even when a
worker was killed halfway through writing one.

Workers ignore SIGINT (the main process handles Ctrl-C and stops them), leave when
told to, when their pipe closes or when their parent is gone, and are daemonic, so
an exiting interpreter ends them too.
"""
import builtins
import itertools
import json
import multiprocessing
import numbers
import os
import random
import secrets
import signal
import sys
import time
import traceback
import zlib
from multiprocessing import connection, resource_tracker
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from ...base import MXNetError
from ...context import Context
from ...ndarray import NDArray
from ...ndarray.ops import host_threads

_ALIGN = 64                 # byte alignment of each array inside a block
_PARENT_CHECK_S = 1.0       # how often an idle worker checks that its parent lives
_STOP_GRACE_S = 0.5         # how long stopping workers may finish their current batch


def start_method():
    """'fork' on Linux (fast, nothing pickled), else the platform default; an env override."""
    forced = os.environ.get('MINIGLUON_DATALOADER_START_METHOD')
    if forced:
        return forced
    return 'fork' if sys.platform.startswith('linux') else None


# ---- batches <-> shared memory -------------------------------------------------------------
def _flatten(obj, leaves):
    """A JSON spec of ``obj`` with its arrays appended to ``leaves``."""
    if isinstance(obj, NDArray):
        ctx = obj.context
        if ctx.device_type == 'gpu':
            raise MXNetError('a DataLoader worker produced an NDArray on %s; with num_workers>0 '
                             'batches must be built in host memory: move them to the GPU in '
                             'the training loop (split_and_load or as_in_context)' % ctx)
        leaves.append(obj.handle)  # the numpy array itself: no copy
        return ['nd', len(leaves) - 1, ctx.device_type, ctx.device_id]
    if isinstance(obj, np.ndarray):
        leaves.append(obj)
        return ['np', len(leaves) - 1]
    if isinstance(obj, np.generic):
        leaves.append(np.asarray(obj))
        return ['scalar', len(leaves) - 1]
    if isinstance(obj, (list, tuple)):
        return ['tuple' if isinstance(obj, tuple) else 'list', [_flatten(o, leaves) for o in obj]]
    if isinstance(obj, dict):
        for k in obj:
            if not (k is None or isinstance(k, (bool, int, float, str))):
                raise MXNetError('a DataLoader worker can send dicts with str, int, float or bool '
                                 'keys only, got a %s key' % type(k).__name__)
        return ['dict', [[k, _flatten(v, leaves)] for k, v in obj.items()]]
    if obj is None or isinstance(obj, (bool, numbers.Integral, float, str)):
        return ['value', obj]
    raise MXNetError('a DataLoader worker cannot send a %s back to the main process: a batch '
                     'must be made of NDArrays, numpy arrays, numbers, strings and '
                     'lists/tuples/dicts of them' % type(obj).__name__)


def _unflatten(spec, arrays):
    kind = spec[0]
    if kind == 'nd':
        return NDArray(arrays[spec[1]], Context(spec[2], spec[3]))
    if kind == 'np':
        return arrays[spec[1]]
    if kind == 'scalar':
        return arrays[spec[1]][()]
    if kind == 'list':
        return [_unflatten(s, arrays) for s in spec[1]]
    if kind == 'tuple':
        return tuple(_unflatten(s, arrays) for s in spec[1])
    if kind == 'dict':
        return {k: _unflatten(s, arrays) for k, s in spec[1]}
    return spec[1]


def _layout(batch):
    """The batch's spec, its arrays, their [offset, dtype, shape] in a block, and its size."""
    leaves = []
    spec = _flatten(batch, leaves)
    layout, size = [], 0
    for leaf in leaves:
        if leaf.dtype.hasobject:
            raise MXNetError('a DataLoader worker cannot send an array of Python objects')
        size = -(-size // _ALIGN) * _ALIGN
        layout.append([size, leaf.dtype.str, list(leaf.shape)])
        size += leaf.nbytes
    return spec, leaves, layout, max(size, 1)


def _write(block, leaves, layout):
    for leaf, (offset, _, _) in zip(leaves, layout):
        np.copyto(np.ndarray(leaf.shape, leaf.dtype, block.buf, offset), leaf)


def _read(block, message):
    arrays = [np.ndarray(tuple(shape), np.dtype(dtype), block.buf, offset).copy()
              for offset, dtype, shape in message['leaves']]
    return _unflatten(message['spec'], arrays)


class _AttachedBlocks:
    """The ring blocks a worker has mapped, by name (at most ``limit``, oldest dropped)."""

    def __init__(self, limit=64):
        self._blocks, self._limit = {}, limit

    def get(self, name):
        block = self._blocks.get(name)
        if block is None:
            if len(self._blocks) >= self._limit:
                self._blocks.pop(next(iter(self._blocks))).close()
            block = self._blocks[name] = SharedMemory(name)
        return block


def write_batch(batch, ring_name, ring_size, spill_name, attached):
    """Put ``batch`` in ring block ``ring_name`` if it fits, else in a new block ``spill_name``.

    Returns the reply describing where the arrays are.
    """
    spec, leaves, layout, size = _layout(batch)
    reply = {'spec': spec, 'leaves': layout, 'size': size}
    if ring_name is not None and size <= ring_size:
        _write(attached.get(ring_name), leaves, layout)
        reply['block'] = ring_name
        return reply
    try:
        block = SharedMemory(spill_name, create=True, size=size)
    except FileExistsError:  # left by a killed run that drew the same name
        _unlink_quietly(spill_name)
        block = SharedMemory(spill_name, create=True, size=size)
    try:
        _write(block, leaves, layout)
    finally:
        block.close()
    reply['block'] = spill_name
    reply['spill'] = True
    return reply


def _unlink_quietly(name):
    try:
        block = SharedMemory(name)
    except FileNotFoundError:
        return
    block.close()
    block.unlink()


# ---- the worker side -----------------------------------------------------------------------
def _worker_loop(dataset, batchify_fn, tasks, results, parent_ends, seed, parent_pid):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for end in parent_ends:  # else the pipe never reports EOF when the parent dies
        end.close()
    np.random.seed(seed)
    random.seed(seed)
    host_threads.use_one_thread()  # the workers and the training process share the cores
    attached = _AttachedBlocks()
    try:
        while True:
            while not tasks.poll(_PARENT_CHECK_S):
                if os.getppid() != parent_pid:
                    return
            task = json.loads(tasks.recv_bytes())
            if task is None:
                return
            i, indices, ring_name, ring_size, spill_name = task
            try:
                batch = batchify_fn([dataset[j] for j in indices])
                reply = write_batch(batch, ring_name, ring_size, spill_name, attached)
            except Exception as exc:
                reply = {'error': traceback.format_exc(), 'type': type(exc).__name__}
            reply['i'] = i
            results.send_bytes(json.dumps(reply).encode())
    except (EOFError, OSError):  # the main process went away
        return


def _seed_base():
    """A seed from numpy's global state that does not advance it.

    ``np.random.seed(s)`` thus makes the workers' random augmentations reproducible
    while the sampler draws exactly what it would with ``num_workers=0``.
    """
    _, keys, pos = np.random.get_state()[:3]
    return zlib.crc32(keys.tobytes() + int(pos).to_bytes(4, 'little'))


def _exception_type(name):
    exc_type = getattr(builtins, name, None)
    if isinstance(exc_type, type) and issubclass(exc_type, Exception):
        return exc_type
    return MXNetError


class _KeyErrorMessage(str):
    """KeyError prints repr(message); this keeps a multi-line message readable."""

    def __repr__(self):
        return str(self)


# ---- the main side -------------------------------------------------------------------------
class WorkerPool:
    """``num_workers`` processes that turn lists of indices into batches.

    ``submit(i, indices)`` hands batch ``i`` to the least busy worker; ``get(i)``
    returns it once it arrived (batches may finish in any order). ``shutdown()`` is
    idempotent and safe to call from a finalizer.
    """

    def __init__(self, dataset, batchify_fn, num_workers):
        self._owner = os.getpid()
        self._prefix = 'mg%x_%s_' % (self._owner, secrets.token_hex(3))
        self._pending = {}   # batch index -> (worker id, ring block name or None)
        self._ready = {}     # batch index -> batch, or a _WorkerFailure
        self._busy = [0] * num_workers
        self._ring = {}      # ring block name -> SharedMemory, all of self._ring_size bytes
        self._free = []      # names of ring blocks not lent to a batch
        self._ring_size = 0  # unknown until the first batch arrives
        self._block_ids = itertools.count()
        self._closed = False
        self._processes, self._tasks, self._results = [], [], []
        mp = multiprocessing.get_context(start_method())
        resource_tracker.ensure_running()  # one tracker for all, started before any fork
        seed = _seed_base()
        try:
            for k in range(num_workers):
                task_r, task_w = mp.Pipe(duplex=False)
                result_r, result_w = mp.Pipe(duplex=False)
                process = mp.Process(
                    target=_worker_loop, name='DataLoaderWorker-%d' % k, daemon=True,
                    args=(dataset, batchify_fn, task_r, result_w, (task_w, result_r),
                          (seed + k) % 2 ** 32, self._owner))
                self._processes.append(process)
                self._tasks.append(task_w)
                self._results.append(result_r)
                try:
                    process.start()
                except Exception as exc:
                    method = mp.get_start_method()
                    hint = '' if method == 'fork' else (
                        '. This start method pickles the data set and batchify_fn: use '
                        'module-level functions (no lambdas or closures) and numpy arrays, '
                        'or pass thread_pool=True')
                    raise MXNetError('could not start DataLoader worker %d with the %r start '
                                     'method: %s: %s%s' % (k, method, type(exc).__name__, exc,
                                                           hint)) from exc
                finally:
                    task_r.close()
                    result_w.close()
        except BaseException:
            self.shutdown()
            raise
        self.pids = [p.pid for p in self._processes]

    def submit(self, i, indices):
        """Queue batch ``i`` on the worker with the fewest batches in flight.

        The indices travel to the worker as JSON, together with a shared-memory ring
        block (when one is known to fit) for the worker to write the batch into; collect
        the batch with ``get(i)``.

        Parameters
        ----------
        i : int
            The batch's number, unique among the batches in flight.
        indices : list of int or str
            The sample indices the worker reads from the data set and batchifies.

        Raises
        ------
        MXNetError
            If an index is neither an integer nor a string.
        """
        if not all(type(j) is int for j in indices):
            indices = [int(j) if isinstance(j, numbers.Integral) else j for j in indices]
        ring_name = self._lend_block()
        try:
            task = json.dumps([i, indices, ring_name, self._ring_size,
                               self._spill_name(i)]).encode()
        except TypeError:
            self._return_block(ring_name)
            raise MXNetError('DataLoader with num_workers>0 sends sample indices to its workers '
                             'as JSON; the sampler yielded an index that is not an int or a '
                             'string: %r' % (indices,)) from None
        k = self._busy.index(min(self._busy))
        try:
            self._tasks[k].send_bytes(task)
        except (BrokenPipeError, ConnectionResetError):  # it died since the last batch
            self._return_block(ring_name)
            self._worker_died(k)
        self._busy[k] += 1
        self._pending[i] = (k, ring_name)

    def _spill_name(self, i):
        return '%ss%d' % (self._prefix, i)

    def _lend_block(self):
        if not self._ring_size:
            return None
        if not self._free:
            name = '%sr%d' % (self._prefix, next(self._block_ids))
            self._ring[name] = SharedMemory(name, create=True, size=self._ring_size)
            return name
        return self._free.pop()

    def _grow_ring(self, size):
        """Make future ring blocks ``size`` bytes; free blocks that are smaller go now."""
        self._ring_size = size
        for name in self._free:
            self._ring.pop(name).unlink()
        self._free = []

    def _return_block(self, name):
        block = self._ring.get(name)
        if block is None:
            return
        if block.size < self._ring_size:  # lent before the ring grew
            self._ring.pop(name).unlink()
        else:
            self._free.append(name)

    def get(self, i, timeout):
        """Batch ``i``; raises the worker's error, or after ``timeout`` seconds of waiting."""
        deadline = time.monotonic() + timeout
        while i not in self._ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MXNetError(
                    'DataLoader timed out: batch %d did not arrive from the %d worker processes '
                    'within timeout=%g s. A transform may be very slow or stuck; pass a larger '
                    'DataLoader(timeout=...), or debug with num_workers=0, where errors and '
                    'hangs show directly' % (i, len(self._processes), timeout))
            for ready in connection.wait(self._results + [p.sentinel for p in self._processes],
                                         remaining):
                if isinstance(ready, int):
                    self._worker_died(self._sentinel_owner(ready))
                else:
                    self._receive(ready)
        batch = self._ready.pop(i)
        if isinstance(batch, _WorkerFailure):
            raise batch.exception()
        return batch

    def _sentinel_owner(self, sentinel):
        return next(k for k, p in enumerate(self._processes) if p.sentinel == sentinel)

    def _receive(self, conn):
        try:
            message = json.loads(conn.recv_bytes())
        except EOFError:
            self._worker_died(self._results.index(conn))
        k, ring_name = self._pending.pop(message['i'])
        self._busy[k] -= 1
        if 'error' in message:
            self._ready[message['i']] = _WorkerFailure(k, self._processes[k].pid, message)
        elif message.get('spill'):
            block = SharedMemory(message['block'])
            try:
                self._ready[message['i']] = _read(block, message)
            except BaseException:
                block.close()
                block.unlink()
                raise
            if message['size'] > self._ring_size:
                self._grow_ring(message['size'])
            if message['size'] == self._ring_size:
                # A one-off block of the ring's size joins the ring: its pages are already
                # in memory, where a new block would fault them in again (a third of a
                # 38 MB batch's cost at the start of every epoch).
                self._ring[message['block']] = block
                self._free.append(message['block'])
            else:
                block.close()
                block.unlink()
        else:
            self._ready[message['i']] = _read(self._ring[ring_name], message)
        if ring_name is not None:
            self._return_block(ring_name)

    def _worker_died(self, k):
        process = self._processes[k]
        process.join(1.0)
        code = process.exitcode
        how = ('killed by signal %s' % signal.Signals(-code).name
               if code is not None and code < 0 else 'exit code %s' % code)
        raise MXNetError('DataLoader worker %d (pid %d) exited unexpectedly (%s)%s. Check '
                         'memory limits and the data set code, or debug with num_workers=0'
                         % (k, process.pid, how, '; it may have been killed for using too much '
                            'memory' if code == -signal.SIGKILL else ''))

    def shutdown(self):
        """Stop the workers (killing those that do not stop) and free every block."""
        if self._closed or os.getpid() != self._owner:
            return
        self._closed = True
        for conn in self._tasks:
            try:
                conn.send_bytes(b'null')
            except OSError:
                pass
        deadline = time.monotonic() + _STOP_GRACE_S
        for process in self._processes:
            if process.pid is not None:
                process.join(max(0.0, deadline - time.monotonic()))
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                process.join(2.0)
            if process.is_alive():
                process.kill()
                process.join()
        # Every block a batch was, or may have been, written to: the ring, and the one-off
        # block of each batch asked for and not collected (maybe half-written by a killed
        # worker).
        for i in self._pending:
            _unlink_quietly(self._spill_name(i))
        for block in self._ring.values():
            block.close()
            block.unlink()
        self._ring.clear()
        self._pending.clear()
        self._ready.clear()
        for conn in self._tasks + self._results:
            conn.close()


class _WorkerFailure:
    """An exception raised in a worker, re-raised in the main process with its traceback."""

    def __init__(self, worker, pid, message):
        self.worker, self.pid, self.message = worker, pid, message

    def exception(self):
        text = ('DataLoader worker %d (pid %d) raised %s while loading a batch.\n\n'
                'Worker traceback (most recent call last):\n%s'
                % (self.worker, self.pid, self.message['type'],
                   self.message['error'].split('\n', 1)[1].rstrip()))
        exc_type = _exception_type(self.message['type'])
        if exc_type is KeyError:
            text = _KeyErrorMessage(text)
        try:
            return exc_type(text)
        except Exception:
            return MXNetError(text)
