"""The distributed store a worker holds: ``mx.kv.create('dist_sync')`` and friends.

Same API as the local store. Values pushed for a key are first summed over this
worker's devices (on the devices for the ``*_device`` types, on the host otherwise),
then cut into parts (../ps/placement.py) and sent to the servers; pulls gather the parts
back. Every call is a ticket of the worker's Customer (../ps/customer.py), so all the parts
of all the keys in one call travel at once; the node (../ps/worker.py) keeps the worker in
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
import threading
import time
from collections import namedtuple

import numpy as np

from ... import backend, profiler
from ...base import MXNetError
from ...optimizer import Optimizer
from .. import compression
from ..base import KVStoreBase, Pending, check_key, check_shapes, exactly, pair_up
from ..local import sum_on
from ..ps import states_file
from ..ps.config import Config
from ..ps.node import ClusterError
from ..ps.placement import plan
from ..ps.worker import WorkerNode
from ..transport.wire import Message, encode_key
from .messages import (PullTarget, ReadAhead, batched, merge_pushes, pull_traffic,
                       pull_what, write_parts)

_KeyMeta = namedtuple('_KeyMeta', 'shape dtype parts')
# How many pushes of one key are kept at most for a fail-over (see ``_keep``).
_KEPT_PUSHES = 8


def _pull_parts(key, meta, body, target):
    """The items (see ``batched``) asking for every part of ``key`` for ``target``."""
    return [(part, key, body, None, (part.stop - part.start) * meta.dtype.itemsize, target)
            for part in meta.parts]


class DistKVStore(KVStoreBase):
    """A worker of a distributed job (types dist_sync, dist_async and *_device)."""

    is_distributed = True

    def __init__(self, kv_type, config=None):
        """``config``: the worker's Config (tests of nodes in one process); the
        environment's (DMLC_*, PS_*) by default."""
        KVStoreBase.__init__(self, 'dist_sync' if kv_type == 'dist' else kv_type)
        cfg = Config.from_env() if config is None else config
        if cfg.role != 'worker':
            raise MXNetError('kv.create(%r) belongs in worker processes, but DMLC_ROLE=%s'
                             % (kv_type, cfg.role))
        self._sync = 'async' not in kv_type
        self.is_async = not self._sync
        self._on_device = kv_type.endswith('_device')
        self._keys = {}
        self._pushes = {}             # key -> how many pushes of it this rank has made
        self._unread = {}             # keys pushed since this rank last pulled them (in order)
        self._ahead = {}              # key -> ReadAhead of its value (see ``pull``)
        self._not_ahead = set()       # keys whose value read ahead went unused: never again
        self._compressor = None
        self._optimizer = None
        self._closed = False
        self._node = WorkerNode(cfg)
        self._customer = self._node.customer
        # with replication (ps/replica.py): the pushes of each key that no server may have
        # made durable yet, sent again if their server dies: {key: {number: [item]}}
        self._kept = {} if cfg.replication else None
        self._kept_lock = threading.Lock()
        self._released = False        # a release was sent after the last held push
        self._node.on_reroute = self._reroute
        self._barriers = self._node.book.get('barriers', 0)  # how many this rank has entered
        profiler.set_process_name('worker %d' % self.rank)
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
        self._ahead.pop(key, None)

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

    def _batch_bytes(self, server):
        return self._node.van.batch_bytes('server:%d' % server)

    def _merge_pushes(self, dest, messages):
        return merge_pushes(messages, self._node.van.batch_bytes(dest))

    def _to_every_server(self, make_message, what):
        """Send one message to each server and wait for their responses."""
        servers = self._node.servers
        requests = []
        for r in servers:
            msg = make_message(r)
            msg.body = dict(msg.body or {}, range=r)  # (one server may serve several ranks)
            requests.append(('server:%d' % r, msg))
        ticket = self._customer.new_request(requests, what)
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
                                 Message('init', '', key=k, part=part.index,
                                         body=dict(body, range=part.server), arrays=arrays)))
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
        """Sum this worker's per-device values on the host: a fresh array, or the value's
        own memory when it is a single host array (the van copies what it sends)."""
        if self._on_device and len(values) > 1:
            return sum_on(values, values[0].context).asnumpy()
        if len(values) == 1 and backend.is_host_array(values[0]._data):
            return values[0]._data
        total = values[0].asnumpy()
        for v in values[1:]:
            total += v.asnumpy()
        return total

    def push(self, key, value, priority=0):
        """Send each key's summed values to its servers (returns without waiting)."""
        self._push(key, value, hold=False)

    @property
    def holds_pushes(self):
        """dist_sync holds pushes until ``release``; dist_async applies each at once."""
        return self._sync

    def push_held(self, key, value, priority=0):
        """``push`` whose round the servers update only after every worker's ``release``
        (dist_sync; dist_async applies each push at once): the optimizer worker 0 sends
        in ``Trainer.step`` (a new batch size or learning rate) is the one the round uses."""
        self._push(key, value, hold=self._sync)

    def _push(self, key, value, hold):
        self._check_usable()
        self._customer.raise_detached_errors()
        start = profiler.now_if_recording()
        items, keys, borrowed = [], [], False
        for k, values in pair_up(key, value):
            meta = self._meta(k)
            check_shapes(k, values, meta.shape, 'push')
            flat = exactly(k, self._merged_host_value(values), meta.dtype).reshape(-1)
            # the caller may change its arrays as soon as push returns
            borrowed = borrowed or (backend.is_host_array(values[0]._data)
                                    and np.may_share_memory(flat, values[0]._data))
            keys.append(k)
            number = self._pushes[k] + keys.count(k) - 1  # (a key twice in one call)
            for part in meta.parts:
                data, body = flat[part.start:part.stop], {}
                if self._compressor is not None:
                    data, body = self._compressor.encode(k, flat, part.start, part.stop)
                if hold:
                    body = dict(body, hold=True)
                items.append((part, k, dict(body, n=number), data, data.nbytes))
        if hold:
            self._released = False
        on_done = self._keep(items, borrowed)
        for k in keys:
            self._pushes[k] += 1
            ahead = self._ahead.pop(k, None)
            if ahead is not None and ahead.ready():  # (fetched, never used)
                self._not_ahead.add(k)
            self._unread.pop(k, None)
            self._unread[k] = None
        requests = [(dest, msg) for dest, msg, _ in batched('push', items, self._batch_bytes)]
        # (pushes waiting while the I/O thread is busy leave together: see ps/customer.py)
        self._customer.new_request(requests, 'push of key %s' % ', '.join(map(repr, keys)),
                                   detached=True, copy_arrays=borrowed,
                                   merge=self._merge_pushes, on_done=on_done)
        if start is not None:
            profiler.record_range(start, 'kvstore', 'push', {
                'keys': keys, 'bytes': sum(item[4] for item in items), 'messages': len(requests)})

    def release(self):
        """From every worker's ``Trainer.step``, after its pushes (and worker 0's optimizer):
        the rounds of its pushes so far may be applied once every worker has said so (see
        ``push_held``). Returns without waiting; the word goes to the servers when every
        push made so far has been acknowledged.

        Why only then: until a worker's pushes to the other hosts have left, the weights
        the servers would send back share the links with them, and over a slow link the
        workers then fall out of step for good (one worker's pulls always queued behind
        the other's pushes: each direction busy only half the time). Released after
        delivery, every server answers once the pushes are in, in key order, so the next
        forward starts with the first layers while the rest still arrive."""
        self._check_usable()
        if not self._sync:
            return  # dist_async holds nothing

        def send():  # (on the I/O thread, or here when nothing is in flight)
            requests = [('server:%d' % r, Message('release', '')) for r in self._node.servers]
            self._released = True
            self._customer.new_request(requests, 'release of the step', detached=True)
        self._customer.after_detached(send)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Fetch each key's value (after this worker's pushes are applied) into ``out``.

        Read-ahead (dist_sync): code that pushes keys one by one and then pulls them one
        by one would wait for one answer per key in turn. So the first pull after such
        pushes also asks, in one message per server, for the values of the other keys
        pushed since their last pull; a later pull of one of them that finds its value
        arrived copies it out without a message. A pull never waits for a value read
        ahead: one still under way is asked for again. The value after n rounds of a
        key is the same whenever it is asked for (no round n + 1 before this worker's
        next push, which drops what was read ahead), so the result is the same.
        """
        self._check_usable()
        if out is None:
            raise MXNetError('kvstore.pull needs out=NDArray (or a list of them)')
        start = profiler.now_if_recording()
        items, targets = self._pull_items(key, out)
        asked = self._rounds_asked(targets)
        items = [item for item in items if not self._read_out(item)]
        # items for one server share messages (their replies come as one)
        batches = batched('pull', items, self._batch_bytes)
        tickets = [(group, self._customer.new_request([(dest, msg)], pull_what(group)))
                   for dest, msg, group in batches]
        self._read_ahead()
        for group, ticket in tickets:  # each part is written out as soon as it is here
            write_parts(group, self._customer.wait(ticket)[0])
        for target in targets:
            target.finish()
        self._durable(asked)
        if start is not None:
            profiler.record_range(start, 'kvstore', 'pull', pull_traffic(items, batches))

    def _read_ahead(self):
        """Ask for the values of the keys pushed since they were last pulled (see pull)."""
        keys = [k for k in self._unread if k not in self._not_ahead]
        self._unread.clear()
        if not self._sync or not keys:
            return
        items = []
        for k in keys:
            ahead = self._ahead[k] = ReadAhead(self._pushes[k])
            items += _pull_parts(k, self._keys[k], {'n': ahead.rounds}, ahead)
        for dest, msg, group in batched('pull', items, self._batch_bytes):
            ticket = self._customer.new_request([(dest, msg)], pull_what(group))
            for index, item in enumerate(group):
                item[5].parts.append((item[0], ticket, index))

    def _read_out(self, item):
        """Write one part of a pull from the value read ahead, if it is here (a key's
        first part takes the key's read-ahead: its other parts come from it or not at all)."""
        part, k, body, _, _, target = item
        ahead = self._ahead.get(k)
        if ahead is None:
            return False
        if part.index == 0 and not (ahead.rounds == body['n'] and ahead.ready()):
            del self._ahead[k]  # (still under way, or stale: this pull asks for it)
            return False
        if part.index == len(self._keys[k].parts) - 1:
            del self._ahead[k]
        target.write(part, ahead.value(part))
        return True

    def _pull_items(self, key, out):
        """The items of a pull of ``key`` into ``out`` (see ``batched``), and their targets."""
        items, targets = [], []
        for k, outs in pair_up(key, out, what='out'):
            self._unread.pop(k, None)
            meta = self._meta(k)
            check_shapes(k, outs, meta.shape, 'pull')
            target = PullTarget(k, meta, outs)
            targets.append(target)
            # the value after that many rounds
            items += _pull_parts(k, meta, {'n': self._pushes[k]}, target)
        return items, targets

    def pull_async(self, key, out, priority=0):
        """Start pulling ``key`` into ``out``; the I/O thread writes the value out as it
        arrives, and the returned ``Pending``'s ``wait()`` returns once it has (raising
        what went wrong). ``out`` must not be used until then."""
        self._check_usable()
        start = profiler.now_if_recording()
        items, targets = self._pull_items(key, out)
        asked = self._rounds_asked(targets)
        batches = batched('pull', items, self._batch_bytes)
        pending = _PendingPull(self._customer)

        def write(ticket):  # on the I/O thread, which must survive whatever happens here
            try:
                if start is not None:  # from the request until the value is here
                    profiler.record_async(start, 'kvstore', 'pull',
                                          pull_traffic(items, batches))
                if ticket.first_error() is None:
                    for (_, _, group), reply in zip(batches, ticket.responses):
                        write_parts(group, reply)
                    for target in targets:
                        target.finish()
                    self._durable(asked)
            except Exception as exc:  # pylint: disable=broad-except
                pending.error = exc
            for reply in ticket.responses:  # (views of shared memory: let them go)
                if reply is not None:
                    reply.arrays = []
        pending.ticket = self._customer.new_request(
            [(dest, msg) for dest, msg, _ in batches], pull_what(items), on_done=write)
        if start is not None:
            profiler.record_range(start, 'kvstore', 'pull request',
                                  pull_traffic(items, batches))
        return pending

    # ---- a dead server's keys served by its backup (ps/replica.py) ------------------------
    def _keep(self, items, borrowed):
        """Keep the push ``items`` until no server can lose them; returns the push's
        ``on_done`` (dist_async: a push acknowledged is held by the backup too)."""
        if self._kept is None:
            return None
        if borrowed:  # (the caller may change its arrays as soon as push returns)
            items = [item[:3] + (item[3].copy(),) + item[4:] for item in items]
        done = []
        with self._kept_lock:
            for item in items:
                numbers = self._kept.setdefault(item[1], {})
                numbers.setdefault(item[2]['n'], []).append(item)
                done.append((item[1], item[2]['n']))
                while len(numbers) > _KEPT_PUSHES:  # (a key pushed again and again unpulled)
                    del numbers[min(numbers)]
        if self._sync:
            return None  # (kept until a pull shows its round durable: see _durable)

        def acknowledged(ticket):
            with self._kept_lock:
                for key, number in done:
                    self._kept.get(key, {}).pop(number, None)
        return acknowledged

    def _rounds_asked(self, targets):
        """{key: the rounds a pull of it asks for} (see ``_durable``)."""
        return None if self._kept is None else {t.key: self._pushes[t.key] for t in targets}

    def _durable(self, asked):
        """A pull got the values after ``asked`` = {key: rounds}: the servers hold all but
        the last of those rounds twice (dist_sync answers a pull only then: ps/server.py
        ``_ready``), so the pushes before the last may go."""
        if self._kept is None or not self._sync:
            return
        with self._kept_lock:
            for key, rounds in asked.items():
                numbers = self._kept.get(key)
                for number in [n for n in numbers or () if n < rounds - 1]:
                    del numbers[number]

    def _reroute(self, rank):
        """Server rank ``rank``'s keys moved to another server (on the I/O thread): send it
        the pushes kept for them, then again every request the dead one left unanswered,
        and this worker's release if one was made since its last held push."""
        dest = 'server:%d' % rank
        with self._kept_lock:
            items = [item for key in self._kept for number in sorted(self._kept[key])
                     for item in self._kept[key][number] if item[0].server == rank]
        if items:  # (not merged: nothing queued may overtake them)
            requests = [(d, msg) for d, msg, _ in batched('push', items, self._batch_bytes)]
            self._customer.new_request(requests, 'push again of key %s' % ', '.join(
                sorted(set(repr(item[1]) for item in items))), detached=True)
        self._customer.resend(dest, drop=lambda msg: msg.cmd in ('push', 'release'))
        if self._released:
            self._customer.new_request([(dest, Message('release', ''))],
                                       'release of the step', detached=True)

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
        """Ship the optimizer to the servers (from worker 0) as its name + JSON parameters.
        Every worker returns once every server holds an optimizer (as in MXNet), so a push
        right after it never reaches a server before the optimizer."""
        self._check_usable()
        if not isinstance(optimizer, Optimizer):
            raise MXNetError('set_optimizer needs an Optimizer, got %s'
                             % type(optimizer).__name__)
        self._optimizer = optimizer
        if self.rank != 0:
            self._wait_for_optimizer()
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

    def _wait_for_optimizer(self):
        """Return once every server holds an optimizer (worker 0's set_optimizer sends it),
        asking them again after a growing pause; bounded by MINIGLUON_PS_WAIT_TIMEOUT."""
        timeout = self._node.cfg.wait_timeout
        deadline = time.monotonic() + timeout
        pause = 0.002
        while True:
            replies = self._to_every_server(lambda _: Message('get_optimizer', ''),
                                            'set_optimizer')
            without = [r for r, reply in replies.items()
                       if (reply.body or {}).get('config') is None]
            if not without:
                return
            if time.monotonic() > deadline:
                raise MXNetError('set_optimizer on worker %d: server %s got no optimizer from '
                                 'worker 0 within %g s (MINIGLUON_PS_WAIT_TIMEOUT); worker 0 '
                                 'sends it, so it must call set_optimizer too (every worker '
                                 'does, as in MXNet) and not wait for this worker first'
                                 % (self.rank, ', '.join(map(str, without)), timeout))
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

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


class _PendingPull(Pending):
    """A pull under way (``DistKVStore.pull_async``)."""

    def __init__(self, customer):
        self._customer = customer
        self.ticket = None
        self.error = None

    def wait(self):
        """Block until the value is written out; raise the job's or the reply's error."""
        self._customer.wait(self.ticket)
        if self.error is not None:
            raise MXNetError('kvstore: %s' % self.error)
