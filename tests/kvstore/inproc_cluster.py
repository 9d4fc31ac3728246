"""A distributed job as threads of the test process, over the in-process transport.

The scheduler, the servers and the workers are the real nodes (ps/scheduler.py,
ps/server.py, dist/) on one ``inproc.Hub`` instead of ZeroMQ: a job forms, runs
and ends in milliseconds. A worker is a function ``fn(store)`` run on its own thread
with its ``DistKVStore``; what it returns (or raises) comes back to the test.

    with InprocJob(num_workers=2, num_servers=2) as job:
        results = job.run(lambda store: ...)

What needs processes (sockets, the gate, shared memory, kill -9, launchers) is tested
with ``cluster.Cluster``.
"""
import dataclasses
import logging
import threading
import time

from minigluon.kvstore.dist import DistKVStore
from minigluon.kvstore.ps.config import Config
from minigluon.kvstore.ps.scheduler import Scheduler
from minigluon.kvstore.ps.server import Server
from minigluon.kvstore.transport.inproc import Hub

# short enough that a silent node is noticed within a test, long enough for a loaded machine
SETTINGS = {'heartbeat_interval': 0.05, 'heartbeat_timeout': 2.0, 'connect_timeout': 10.0,
            'wait_timeout': 20.0}


class WorkerFailed(Exception):
    """What a worker function raised, with its rank."""


class InprocJob:
    """A scheduler and ``num_servers`` servers, started at once; workers come with ``run``.

    ``settings`` override Config fields for every node (``server_settings`` per server
    rank): e.g. ``bigarray_bound=1000``, ``recovery_timeout=5``.
    """

    def __init__(self, num_workers=2, num_servers=1, server_settings=None, **settings):
        self.hub = Hub()
        fields = dict(SETTINGS, **settings)
        self.cfg = Config(role='scheduler', root_uri=Hub.host, root_port=1,
                          num_server=num_servers, num_worker=num_workers,
                          secret=b'in-process job secret', hub=self.hub, **fields)
        self.num_workers, self.num_servers = num_workers, num_servers
        self.scheduler = Scheduler(self.cfg)
        self.servers = [Server(dataclasses.replace(
            self.cfg, role='server', server_id=s, **(server_settings or {}).get(s, {})))
            for s in range(num_servers)]
        self.codes = {}
        self._threads = [self._thread('scheduler', self.scheduler.run)]
        self._threads += [self._thread('server:%d' % s, server.run)
                          for s, server in enumerate(self.servers)]
        self.stores = {}

    def _thread(self, name, fn):
        def main():
            self.codes[name] = fn()
        thread = threading.Thread(target=main, name='inproc-' + name, daemon=True)
        thread.start()
        return thread

    def worker_config(self, rank, **settings):
        """The Config of worker ``rank`` (with ``settings`` changed)."""
        return dataclasses.replace(self.cfg, role='worker', worker_id=rank, **settings)

    def start_workers(self, fn, kind='dist_sync', ranks=None, close=True, settings=None):
        """Start ``fn(store)`` on a thread per worker rank; returns a handle whose
        ``results()`` waits for them. ``close``: close each store after ``fn``."""
        ranks = range(self.num_workers) if ranks is None else ranks
        return _Workers(self, fn, kind, ranks, close, settings or {})

    def run(self, fn, kind='dist_sync', ranks=None, timeout=60, **settings):
        """Run ``fn(store)`` on every worker (or those of ``ranks``) and return what each
        returned, by rank order; re-raises the first error a worker raised."""
        return self.start_workers(fn, kind, ranks, settings=settings).results(timeout)

    def wait(self, timeout=10):
        """Exit codes of the scheduler and the servers once they end (None: still running)."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return {name: self.codes.get(name) for name in
                ['scheduler'] + ['server:%d' % s for s in range(self.num_servers)]}

    def kill(self, name):
        """Stop node ``name`` ('server:1', 'worker:0', ...) at once, as kill -9 would."""
        self.hub.kill(name)
        # (what a process would not do any more: wait; its threads are the test's to end)
        if name == 'scheduler':
            self.scheduler.exit_code = -9
            self.scheduler.done.set()
        elif name.startswith('server:'):
            server = self.servers[int(name.split(':')[1])]
            server.exit_code = -9
            server.done.set()
        else:
            store = next(s for s in self.stores.values() if name in s._node.van.names)
            store._node.failure = 'killed by the test'
            store._node.customer.wake_all()

    def restart_scheduler(self):
        """Start a new scheduler at the address of the one killed (``kill('scheduler')``):
        the live nodes register with it again and it rebuilds the job."""
        self.scheduler = Scheduler(self.cfg)
        self._threads.append(self._thread('scheduler', self.scheduler.run))
        return self.scheduler

    def close(self):
        """End whatever still runs; fail if a thread of the job is left behind."""
        self.scheduler.exit_code = self.scheduler.exit_code or 0
        self.scheduler.done.set()
        for server in self.servers:
            server.done.set()
        self.hub.close()
        for thread in self._threads:
            thread.join(10)
        left = [t.name for t in threading.enumerate()
                if t.name.startswith(('inproc-', 'kvstore-inproc-')) and t.is_alive()]
        assert not left, 'threads outlived the job: %s' % left

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Workers:
    def __init__(self, job, fn, kind, ranks, close, settings):
        self.results_by_rank, self.errors = {}, {}
        self.threads = []
        for rank in ranks:
            cfg = job.worker_config(rank, **settings)
            thread = threading.Thread(target=self._main, args=(job, fn, kind, rank, cfg, close),
                                      name='inproc-worker:%d' % rank, daemon=True)
            thread.start()
            job._threads.append(thread)
            self.threads.append((rank, thread))

    def _main(self, job, fn, kind, rank, cfg, close):
        try:
            store = DistKVStore(kind, cfg)
            job.stores[rank] = store
            try:
                self.results_by_rank[rank] = fn(store)
            finally:
                if close:
                    store.close()
        except BaseException as exc:  # (handed to the test)
            self.errors[rank] = exc

    def results(self, timeout=60):
        """What each worker's function returned, in rank order."""
        deadline = time.monotonic() + timeout
        for rank, thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                raise WorkerFailed('worker %d still runs after %g s' % (rank, timeout))
        for rank, _ in self.threads:
            if rank in self.errors:
                raise WorkerFailed('worker %d: %s: %s' % (rank, type(self.errors[rank]).__name__,
                                                          self.errors[rank])) \
                    from self.errors[rank]
        return [self.results_by_rank[rank] for rank, _ in self.threads]

    def errors_by_rank(self, timeout=60):
        """What each worker raised (None: nothing), once all have ended."""
        deadline = time.monotonic() + timeout
        for _, thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [self.errors.get(rank) for rank, _ in self.threads]


class CapturedLog(logging.Handler):
    """The kvstore's log lines while in a ``with`` block (``text``: all of them)."""

    def __init__(self):
        logging.Handler.__init__(self, logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    @property
    def text(self):
        return '\n'.join(self.lines)

    def __enter__(self):
        logger = logging.getLogger('minigluon.kvstore')
        logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger('minigluon.kvstore').removeHandler(self)


class Points:
    """Places in worker functions where a test can hold a worker and see it arrive.

    A worker calls ``at(rank, incarnation, name, step)``; while (rank, name, step) is
    held it waits there, and the test sees ('HOLDING', ...) then ('AT', ...) in ``seen``.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self.held = set()
        self.seen = set()

    def at(self, rank, incarnation, name, step):
        with self._cond:
            if (rank, name, step) in self.held:
                self.seen.add(('HOLDING', rank, incarnation, name, step))
                self._cond.notify_all()
                self._cond.wait_for(lambda: (rank, name, step) not in self.held)
            self.seen.add(('AT', rank, incarnation, name, step))
            self._cond.notify_all()

    def note(self, *event):
        with self._cond:
            self.seen.add(event)
            self._cond.notify_all()

    def hold(self, rank, name, step):
        with self._cond:
            self.held.add((rank, name, step))

    def release(self, rank, name, step):
        with self._cond:
            self.held.discard((rank, name, step))
            self._cond.notify_all()

    def wait_for(self, *event, timeout=30):
        with self._cond:
            if not self._cond.wait_for(lambda: event in self.seen, timeout):
                self.held.clear()  # (so that the job can end)
                self._cond.notify_all()
                raise AssertionError('no %s within %g s (seen: %s)'
                                     % (event, timeout, sorted(self.seen, key=str)))
