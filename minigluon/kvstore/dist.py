"""The worker's side of the distributed store: ``mx.kv.create('dist_sync')`` and friends.

Same API as the local store. Values pushed for a key are first summed over this
worker's devices (on the devices for the ``*_device`` types, on the host otherwise),
then cut into parts (placement.py) and sent to the servers; pulls gather the parts
back. Every call is a ticket of the worker's Customer (customer.py), so all the parts
of all the keys in one call travel at once; the node (worker.py) keeps the worker in
the job.

Every push of a key is numbered (0, 1, 2, ... per key and worker), and every pull
says how many pushes its worker has made, so the servers know which round each
belongs to; barriers are numbered too. A worker that replaces a dead one
(``is_recovery``, when the job allows it: PS_WORKER_RECOVERY_TIMEOUT) starts from
its predecessor's counts as the servers and the scheduler hold them
(``num_pushes``, ``num_barriers``); ``resume`` moves a key's count back to where
the program resumes, so that pushes the predecessor made are dropped, not counted
twice.
"""
import atexit
import json
import sys
from collections import namedtuple

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray.dispatch import check_inplace_target
from ..ndarray.ndarray import NDArray
from ..optimizer import Optimizer
from . import compression, states_file
from .base import KVStoreBase, check_key, check_shapes, exactly, pair_up
from .config import Config
from .local import sum_on
from .node import ClusterError
from .placement import plan
from .wire import Message, encode_key
from .worker import WorkerNode

_KeyMeta = namedtuple('_KeyMeta', 'shape dtype parts')


class DistKVStore(KVStoreBase):
    """A worker of a distributed job (types dist_sync, dist_async and *_device)."""

    def __init__(self, kv_type):
        KVStoreBase.__init__(self, 'dist_sync' if kv_type == 'dist' else kv_type)
        cfg = Config.from_env()
        if cfg.role != 'worker':
            raise MXNetError('kv.create(%r) belongs in worker processes, but DMLC_ROLE=%s'
                             % (kv_type, cfg.role))
        self._sync = 'async' not in kv_type
        self._on_device = kv_type.endswith('_device')
        self._keys = {}
        self._pushes = {}             # key -> how many pushes of it this rank has made
        self._compressor = None
        self._optimizer = None
        self._closed = False
        self._node = WorkerNode(cfg)
        self._customer = self._node.customer
        self._barriers = self._node.book.get('barriers', 0)  # how many this rank has entered
        atexit.register(self.close)

    # ---- identity ----------------------------------------------------------------------
    @property
    def rank(self):
        """This worker's rank (``0..num_workers-1``), assigned by the scheduler."""
        return self._node.my_rank

    @property
    def num_workers(self):
        """The job's number of workers (``DMLC_NUM_WORKER``)."""
        return self._node.book['num_workers']

    @property
    def book(self):
        """The job's address book (servers, counts) as the scheduler sent it."""
        return self._node.book

    def num_dead_node(self, node_id=None, timeout=None):
        return self._node.dead_nodes

    @property
    def is_recovery(self):
        return bool(self._node.book.get('recovery'))

    @property
    def restarts_allowed(self):
        return self._node.cfg.recovery_timeout > 0  # PS_WORKER_RECOVERY_TIMEOUT

    # ---- where this rank is in the job (a replacement resumes from there) -----------------
    def num_pushes(self, key):
        """How many pushes of ``key`` this rank has made; in a replacement, first its
        predecessor's, as the servers hold them (the fewest over the key's parts)."""
        self._meta(key)
        return self._pushes[key]

    def resume(self, key, pushes):
        """Continue ``key`` as a worker that has pushed it ``pushes`` times: its next push
        is push number ``pushes`` (the servers acknowledge and drop one they already
        hold from this rank), and a pull before that gets the value after ``pushes``
        rounds (dist_sync). May come before ``init``, whose count it then replaces."""
        if isinstance(pushes, bool) or not isinstance(pushes, int) or pushes < 0:
            raise MXNetError('kvstore.resume: pushes must be a count >= 0, got %r' % (pushes,))
        self._pushes[check_key(key)] = pushes

    def num_barriers(self):
        """How many barriers this rank has entered; in a replacement, first its
        predecessor's, counting the one it died waiting in."""
        return self._barriers

    # ---- helpers -------------------------------------------------------------------------
    def _check_usable(self):
        if self._closed:
            raise MXNetError('this kvstore was closed')
        if self._node.failure:
            raise ClusterError(self._node.failure)

    def _meta(self, key):
        meta = self._keys.get(key)
        if meta is None:
            raise MXNetError('kvstore: key %r has not been initialised; call init(%r, value) '
                             'first' % (key, key))
        return meta

    def _to_every_server(self, make_message, what):
        """Send one message to each server and wait for their responses."""
        servers = self._node.servers
        ticket = self._customer.new_request(
            [('server:%d' % r, make_message(r)) for r in servers], what)
        return dict(zip(servers, self._customer.wait(ticket)))

    # ---- the API -------------------------------------------------------------------------
    def init(self, key, value):
        """Initialise keys: worker 0's values win; every worker waits until they are set."""
        self._init(key, value, plain=False)

    def _init(self, key, value, plain):
        self._check_usable()
        cfg = self._node.cfg
        requests, new = [], []
        recovery = self.is_recovery
        for k, values in pair_up(key, value):
            if k in self._keys:
                raise MXNetError('kvstore: key %r is already initialised' % (k,))
            data = values[0].asnumpy()
            parts = plan(k, data.size, data.itemsize, len(self._node.servers),
                         cfg.bigarray_bound, cfg.chunk_bytes)
            self._keys[k] = _KeyMeta(data.shape, data.dtype, parts)
            new.append(k)
            flat = data.reshape(-1)
            body = {'shape': list(data.shape), 'dtype': data.dtype.name, 'sync': self._sync,
                    'plain': plain, 'recovery': recovery}
            for part in parts:
                arrays = [flat[part.start:part.stop]] if self.rank == 0 else []
                requests.append(('server:%d' % part.server,
                                 Message('init', '', key=k, part=part.index, body=body,
                                         arrays=arrays)))
        what = 'init of key %s' % ', '.join(repr(k) for k in new)
        try:
            replies = self._customer.wait(self._customer.new_request(requests, what),
                                          cfg.wait_timeout)
        except MXNetError:
            for k in new:
                self._keys.pop(k, None)
            raise
        held = {}
        for (_, msg), reply in zip(requests, replies):
            count = (reply.body or {}).get('pushes', 0)
            held[msg.key] = min(held.get(msg.key, count), count)
        for k in new:
            self._pushes.setdefault(k, held[k])  # (unless resume() placed it already)

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
        self._customer.raise_detached_errors()
        requests, keys = [], []
        for k, values in pair_up(key, value):
            meta = self._meta(k)
            check_shapes(k, values, meta.shape, 'push')
            flat = exactly(k, self._merged_host_value(values), meta.dtype).reshape(-1)
            keys.append(k)
            number = self._pushes[k] + keys.count(k) - 1  # (a key twice in one call)
            for part in meta.parts:
                data, body = flat[part.start:part.stop], {}
                if self._compressor is not None:
                    data, body = self._compressor.encode(k, flat, part.start, part.stop)
                requests.append(('server:%d' % part.server,
                                 Message('push', '', key=k, part=part.index,
                                         body=dict(body, n=number), arrays=[data])))
        for k in keys:
            self._pushes[k] += 1
        self._customer.new_request(requests, 'push of key %s' % ', '.join(map(repr, keys)),
                                   detached=True)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Fetch each key's value (after this worker's pushes are applied) into ``out``."""
        self._check_usable()
        if out is None:
            raise MXNetError('kvstore.pull needs out=NDArray (or a list of them)')
        jobs = []
        for k, outs in pair_up(key, out, what='out'):
            meta = self._meta(k)
            check_shapes(k, outs, meta.shape, 'pull')
            body = {'n': self._pushes[k]}  # the value after that many rounds
            ticket = self._customer.new_request(
                [('server:%d' % part.server, Message('pull', '', key=k, part=part.index,
                                                     body=body))
                 for part in meta.parts], 'pull of key %r' % (k,))
            jobs.append((k, meta, outs, ticket))
        for k, meta, outs, ticket in jobs:  # each key is written out as soon as it is here
            self._write_pulled(k, meta, outs, self._customer.wait(ticket))

    @staticmethod
    def _write_pulled(k, meta, outs, replies):
        for part, reply in zip(meta.parts, replies):
            if len(reply.arrays) != 1 or reply.arrays[0].size != part.stop - part.start:
                raise MXNetError('kvstore: malformed pull reply for key %r part %d'
                                 % (k, part.index))
        # the parts go straight into the first output when it is a host array
        # (one copy of the whole gradient set per round instead of two)
        first = outs[0]._data
        direct = (isinstance(first, np.ndarray) and first.dtype == meta.dtype and
                  first.flags.c_contiguous)
        if direct:
            check_inplace_target(outs[0])
        flat = first.reshape(-1) if direct else \
            np.empty(int(np.prod(meta.shape, dtype=np.int64)), meta.dtype)
        for part, reply in zip(meta.parts, replies):
            flat[part.start:part.stop] = reply.arrays[0].reshape(-1)
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
        self._to_every_server(lambda _: Message('set_optimizer', '', body=body), 'set_optimizer')

    def set_gradient_compression(self, compression_params):
        """2-bit compression of pushes, with the residual kept on this worker."""
        self._compressor = compression.PushCompressor(compression_params)

    def barrier(self):
        """Wait until every worker reaches its barrier, its pushes before it received by the
        servers (and applied, in dist_async): a pull after the barrier sees all of them."""
        self._check_usable()
        self._customer.wait_detached()
        body = {'group': 'worker', 'n': self._barriers}
        self._barriers += 1
        ticket = self._customer.new_request(
            [('scheduler', Message('barrier', '', body=body))], 'barrier')
        self._customer.wait(ticket, self._node.cfg.wait_timeout + 30)

    _barrier = barrier

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Gather every server's optimizer states into one file (never a pickle)."""
        self._check_usable()
        replies = self._to_every_server(lambda _: Message('save_states', ''), 'save_states')
        states_file.save(fname, {rank: reply.arrays[0] for rank, reply in replies.items()})

    def get_optimizer(self):
        """The optimizer the servers run, as they hold it now (a replacement worker's
        Trainer takes it: hyper-parameters may have changed since the job started);
        None until every server has one."""
        self._check_usable()
        replies = self._to_every_server(lambda _: Message('get_optimizer', ''),
                                        'get_optimizer')
        configs = [(reply.body or {}).get('config') for reply in replies.values()]
        return None if None in configs else Optimizer.from_config(configs[0])

    def load_optimizer_states(self, fname):
        """Send each server its part of what ``save_optimizer_states`` wrote."""
        self._check_usable()
        blobs = states_file.load(fname, self._node.servers)
        self._to_every_server(lambda rank: Message('load_states', '', arrays=[blobs[rank]]),
                              'load_states')

    def close(self):
        """Leave the job: wait for outstanding pushes, tell the scheduler, stop."""
        if self._closed:
            return
        self._closed = True
        # A process dying of an uncaught exception has not finished its work: it stops
        # without saying so, and the scheduler sees it die (and may have it replaced).
        crashed = getattr(sys, 'last_value', None) is not None
        if not self._node.failure and not crashed:
            try:
                self._customer.wait_detached()
                ticket = self._customer.new_request([('scheduler', Message('finish', ''))],
                                                    'finish')
                self._customer.wait(ticket, 30)
            except MXNetError as exc:
                sys.stderr.write('minigluon kvstore: while closing: %s\n' % exc)
        self._node.van.stop()
