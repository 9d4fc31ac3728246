"""The worker's side of the distributed store: ``mx.kv.create('dist_sync')`` and friends.

Same API as the local store. Values pushed for a key are first summed over this
worker's devices (on the devices for the ``*_device`` types, on the host otherwise),
then cut into parts (see placement.py) and sent to the servers; pulls gather the
parts back. Requests carry ids and are answered asynchronously, so all the parts of
all the keys in one call travel at once. Every wait is bounded and says what it
waited for; a failure anywhere in the job wakes every wait with the error.
"""
import atexit
import itertools
import json
import os
import sys
import threading
import time
import zipfile
from collections import namedtuple

import numpy as np

from .. import autograd
from ..base import MXNetError
from ..context import cpu
from ..ndarray.ndarray import NDArray
from ..ndarray.serialization import atomic_write
from ..optimizer import Optimizer
from . import compression
from .base import KVStoreBase, check_shapes, pair_up
from .config import Config
from .local import sum_on
from .node import ClusterError, Node
from .placement import plan
from .wire import Message, encode_key

_KeyMeta = namedtuple('_KeyMeta', 'shape dtype parts')
_STATES_FORMAT = 'minigluon.dist-optimizer-states'
# After a fatal cluster error, how long the process may take to stop on its own.
_EXIT_GRACE_S = 3.0


class _Pending:
    __slots__ = ('event', 'msg', 'what', 'dest')

    def __init__(self, what, dest):
        self.event = threading.Event()
        self.msg = None
        self.what = what
        self.dest = dest


class DistKVStore(Node, KVStoreBase):
    """A worker of a distributed job (types dist_sync, dist_async and *_device)."""
    role = 'worker'

    def __init__(self, kv_type):
        KVStoreBase.__init__(self, 'dist_sync' if kv_type == 'dist' else kv_type)
        cfg = Config.from_env()
        if cfg.role != 'worker':
            raise MXNetError('kv.create(%r) belongs in worker processes, but DMLC_ROLE=%s'
                             % (kv_type, cfg.role))
        Node.__init__(self, cfg)
        self._sync = 'async' not in kv_type
        self._on_device = kv_type.endswith('_device')
        self._requests = itertools.count(1)
        self._waiting = {}
        self._pushes = {}          # request id -> _Pending of pushes not yet acknowledged
        self._deferred = []        # errors servers reported for pushes
        self._keys = {}
        self._residuals = {}
        self._compression = None
        self._optimizer = None
        self._closed = False
        self._dead = 0
        self._handlers.update({'reply': self._on_reply, 'barrier_done': self._on_reply})
        self.join()
        for rank, host, port in self.book['servers']:
            self.van.connect('server:%d' % rank, host, port)
        atexit.register(self.close)

    # ---- identity ----------------------------------------------------------------------
    @property
    def rank(self):
        return self.my_rank

    @property
    def num_workers(self):
        return self.book['num_workers']

    def num_dead_node(self, node_id=None, timeout=None):
        return self._dead

    # ---- requests and waits ------------------------------------------------------------
    def _request(self, dest, msg, what):
        pending = _Pending(what, dest)
        msg.req = next(self._requests)
        (self._pushes if msg.cmd == 'push' else self._waiting)[msg.req] = pending
        self.van.send(dest, msg)
        return pending

    def _on_reply(self, msg):
        pending = self._waiting.pop(msg.req, None)
        if pending is None:
            pending = self._pushes.pop(msg.req, None)
            if pending is not None and msg.err:
                self._deferred.append(msg.err)
        if pending is not None:
            pending.msg = msg
            pending.event.set()

    def _on_dead(self, msg):
        self._dead += 1
        super()._on_dead(msg)

    def on_failure(self):
        for pending in list(self._waiting.values()) + list(self._pushes.values()):
            pending.event.set()
        timer = threading.Timer(_EXIT_GRACE_S, self._hard_exit)
        timer.daemon = True
        timer.start()

    def _hard_exit(self):
        sys.stderr.write('minigluon kvstore: %s\nminigluon kvstore: stopping this worker\n'
                         % self.failure)
        sys.stderr.flush()
        os._exit(1)

    def _wait(self, pendings, timeout=None):
        """Wait for replies; raise on a cluster failure, a timeout or a reported error."""
        deadline = time.monotonic() + (timeout or self.cfg.wait_timeout)
        for pending in pendings:
            while not pending.event.wait(0.05):
                if self.failure:
                    break
                if time.monotonic() > deadline:
                    raise ClusterError('%s: %s got no answer from %s within %.0f s'
                                       % (self.van.name, pending.what, pending.dest,
                                          timeout or self.cfg.wait_timeout))
            if self.failure:
                raise ClusterError(self.failure)
            if pending.msg.err:
                raise MXNetError(pending.msg.err)
        self._raise_deferred()

    def _raise_deferred(self):
        if self._deferred:
            errors, self._deferred = self._deferred, []
            raise MXNetError('; '.join(errors))

    def _check_usable(self):
        if self._closed:
            raise MXNetError('this kvstore was closed')
        if self.failure:
            raise ClusterError(self.failure)

    def _meta(self, key):
        meta = self._keys.get(key)
        if meta is None:
            raise MXNetError('kvstore: key %r has not been initialised; call init(%r, value) '
                             'first' % (key, key))
        return meta

    # ---- the API -------------------------------------------------------------------------
    def init(self, key, value):
        """Initialise keys: worker 0's values win; every worker waits until they are set."""
        self._init(key, value, plain=False)

    def _init(self, key, value, plain):
        self._check_usable()
        pendings, new = [], []
        for k, values in pair_up(key, value):
            if k in self._keys:
                raise MXNetError('kvstore: key %r is already initialised' % (k,))
            data = values[0].asnumpy()
            parts = plan(k, data.size, data.itemsize, len(self.book['servers']),
                         self.cfg.bigarray_bound, self.cfg.chunk_bytes)
            self._keys[k] = _KeyMeta(data.shape, data.dtype, parts)
            new.append(k)
            flat = data.reshape(-1)
            body = {'shape': list(data.shape), 'dtype': data.dtype.name, 'sync': self._sync,
                    'plain': plain}
            for part in parts:
                arrays = [flat[part.start:part.stop]] if self.rank == 0 else []
                pendings.append(self._request(
                    'server:%d' % part.server,
                    Message('init', '', key=k, part=part.index, body=body, arrays=arrays),
                    'init of key %r' % (k,)))
        try:
            self._wait(pendings, self.cfg.wait_timeout)
        except MXNetError:
            for k in new:
                self._keys.pop(k, None)
            raise

    def _merged_host_value(self, values):
        """Sum this worker's per-device values into a fresh host array."""
        if self._on_device and len(values) > 1:
            return sum_on(values, values[0].context).asnumpy()
        total = values[0].asnumpy()
        for v in values[1:]:
            total += v.asnumpy()
        return total

    def push(self, key, value, priority=0):
        """Send each key's summed values to its servers (returns without waiting)."""
        self._check_usable()
        self._raise_deferred()
        for k, values in pair_up(key, value):
            meta = self._meta(k)
            check_shapes(k, values, meta.shape, 'push')
            flat = self._merged_host_value(values).astype(meta.dtype, copy=False).reshape(-1)
            for part in meta.parts:
                data, body = flat[part.start:part.stop], None
                if self._compression is not None:
                    residual = self._residuals.get(k)
                    if residual is None:
                        residual = self._residuals[k] = np.zeros(flat.size, meta.dtype)
                    threshold = self._compression[1]
                    data = compression.quantize_2bit(np, data, residual[part.start:part.stop],
                                                     threshold)
                    body = {'2bit': threshold}
                self._request('server:%d' % part.server,
                              Message('push', '', key=k, part=part.index, body=body,
                                      arrays=[data]), 'push of key %r' % (k,))

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Fetch each key's value (after this worker's pushes are applied) into ``out``."""
        self._check_usable()
        if out is None:
            raise MXNetError('kvstore.pull needs out=NDArray (or a list of them)')
        jobs = []
        for k, outs in pair_up(key, out, what='out'):
            meta = self._meta(k)
            check_shapes(k, outs, meta.shape, 'pull')
            pendings = [self._request('server:%d' % part.server,
                                      Message('pull', '', key=k, part=part.index),
                                      'pull of key %r' % (k,)) for part in meta.parts]
            jobs.append((k, meta, outs, pendings))
        for k, meta, outs, pendings in jobs:
            self._wait(pendings)
            for part, pending in zip(meta.parts, pendings):
                arrays = pending.msg.arrays
                if len(arrays) != 1 or arrays[0].size != part.stop - part.start:
                    raise MXNetError('kvstore: malformed pull reply for key %r part %d'
                                     % (k, part.index))
            # the parts go straight into the first output when it is a host array
            # (one copy of the whole gradient set per round instead of two)
            first = outs[0]._data
            direct = (isinstance(first, np.ndarray) and first.dtype == meta.dtype and
                      first.flags.c_contiguous)
            if direct:
                autograd._check_inplace_target(outs[0])
            flat = first.reshape(-1) if direct else \
                np.empty(int(np.prod(meta.shape, dtype=np.int64)), meta.dtype)
            for part, pending in zip(meta.parts, pendings):
                flat[part.start:part.stop] = pending.msg.arrays[0].reshape(-1)
            value = outs[0] if direct else NDArray(flat.reshape(meta.shape), cpu(0))
            for o in outs[1:] if direct else outs:
                value.copyto(o)

    def allreduce(self, key, value, out=None, average=False):
        """Sum ``value`` over every device of every worker into ``out`` (minigluon extension).

        The key is created on first use and is never touched by the optimizer, so it
        serves for statistics (e.g. BatchNorm running means) beside the weights.
        """
        values = value if isinstance(value, (list, tuple)) else [value]
        if key not in self._keys:
            self._init(key, values[0], plain=True)
        self.push(key, values)
        out = values if out is None else out
        self.pull(key, out)
        if average:
            for o in (out if isinstance(out, (list, tuple)) else [out]):
                o[:] = o / self.num_workers

    def set_optimizer(self, optimizer):
        """Ship the optimizer to the servers (from worker 0) as its name + JSON parameters."""
        self._check_usable()
        if not isinstance(optimizer, Optimizer):
            raise MXNetError('set_optimizer needs an Optimizer, got %s'
                             % type(optimizer).__name__)
        self._optimizer = optimizer
        if self.rank != 0:
            return
        config = optimizer.to_config()
        try:
            json.dumps(config)
        except TypeError as exc:
            raise MXNetError('the optimizer cannot be sent to the servers: %s' % exc) from None
        mults = {}
        for table, slot in ((optimizer.lr_mult, 0), (optimizer.wd_mult, 1)):
            for k, m in table.items():
                mults.setdefault(k, [1.0, 1.0])[slot] = float(m)
        for k, param in optimizer.param_dict.items():
            mults[k] = [float(param.lr_mult), float(param.wd_mult)]
        body = {'config': config,
                'mults': [[encode_key(k), lr, wd] for k, (lr, wd) in mults.items()
                          if isinstance(k, (int, str))]}
        self._wait([self._request('server:%d' % rank, Message('set_optimizer', '', body=body),
                                  'set_optimizer') for rank, _, _ in self.book['servers']])

    def set_gradient_compression(self, compression_params):
        """2-bit compression of pushes, with the residual kept on this worker."""
        self._compression = compression.parse_params(compression_params)

    def barrier(self):
        """Wait until every worker reaches its barrier, its pushes before it received by the
        servers (and applied, in dist_async): a pull after the barrier sees all of them."""
        self._check_usable()
        self._wait(list(self._pushes.values()))
        self._wait([self._request('scheduler', Message('barrier', '', body={'group': 'worker'}),
                                  'barrier')], self.cfg.wait_timeout + 30)

    _barrier = barrier

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Gather every server's optimizer states into one file (never a pickle)."""
        self._check_usable()
        servers = [rank for rank, _, _ in self.book['servers']]
        pendings = [self._request('server:%d' % r, Message('save_states', ''), 'save_states')
                    for r in servers]
        self._wait(pendings)
        payload = {'server_%d' % r: p.msg.arrays[0] for r, p in zip(servers, pendings)}
        meta = json.dumps({'format': _STATES_FORMAT, 'num_servers': len(servers)})
        payload['__meta__'] = np.frombuffer(meta.encode('utf-8'), dtype=np.uint8)
        atomic_write(fname, lambda f: np.savez(f, **payload))

    def load_optimizer_states(self, fname):
        """Send each server its part of what ``save_optimizer_states`` wrote."""
        self._check_usable()
        try:
            with np.load(fname, allow_pickle=False) as archive:
                meta = json.loads(bytes(archive['__meta__']).decode('utf-8'))
                blobs = {n: archive[n] for n in archive.files if n.startswith('server_')}
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise MXNetError('load_optimizer_states: %s is not a distributed optimizer state '
                             'file: %s' % (fname, exc)) from None
        servers = [rank for rank, _, _ in self.book['servers']]
        if meta.get('format') != _STATES_FORMAT or meta.get('num_servers') != len(servers):
            raise MXNetError('load_optimizer_states: %s was saved by a job with %s servers; this '
                             'job has %d' % (fname, meta.get('num_servers'), len(servers)))
        self._wait([self._request('server:%d' % r,
                                  Message('load_states', '', arrays=[blobs['server_%d' % r]]),
                                  'load_states') for r in servers])

    def close(self):
        """Leave the job: wait for outstanding pushes, tell the scheduler, stop."""
        if self._closed:
            return
        self._closed = True
        if not self.failure:
            try:
                self._wait(list(self._pushes.values()))
                self._wait([self._request('scheduler', Message('finish', ''), 'finish')], 30)
            except MXNetError as exc:
                sys.stderr.write('minigluon kvstore: while closing: %s\n' % exc)
        self.van.stop()
