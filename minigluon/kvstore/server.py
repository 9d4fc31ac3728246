"""A parameter server: holds parts of keys, aggregates pushes, applies updates.

``dist_sync``: for each part, one push from every worker makes a round; the server
sums them, applies the optimizer (or stores the sum when there is none), and only
then answers the pulls of workers that pushed in that round. A worker that pushes
twice before a round completes has its second push counted in the next round.
``dist_async``: every push is applied on arrival (one key part at a time, so the
update is atomic) and pulls are answered at once; an optimizer is required.
The optimizer arrives as a registry name + JSON hyper-parameters and runs the same
update functions as a single process does.
"""
import threading
import time

import numpy as np

from ..context import cpu
from ..ndarray.ndarray import NDArray
from ..optimizer import SGD, Optimizer, Updater
from . import compression
from .node import Node
from .van import log
from .wire import Message


def _index(key, part):
    """The optimizer's index for a key part: its step counts and states are per part."""
    return '%r/%d' % (key, part)


class _Slot:
    """One part of one key held by this server."""
    __slots__ = ('stored', 'shape', 'merged', 'pushed', 'round', 'queued', 'pulls',
                 'worker_round', 'waiting_inits', 'round_started', 'plain')

    def __init__(self, stored, shape, plain=False):
        self.plain = plain            # sum only, never the optimizer (kv.allreduce keys)
        self.stored = stored          # the value (weights when an optimizer is set)
        self.shape = shape            # the whole key's shape and dtype, for checks
        self.merged = None            # sum of this round's pushes
        self.pushed = set()           # workers counted in this round
        self.round = 0                # completed rounds
        self.queued = []              # (rank, value, req) pushed early for later rounds
        self.pulls = []               # (src, req, round needed)
        self.worker_round = {}        # rank -> round its latest push belongs to
        self.waiting_inits = []
        self.round_started = None


class Server(Node):
    role = 'server'

    def __init__(self, cfg):
        super().__init__(cfg, listen=True)
        self.slots = {}
        self.pending_inits = {}       # (key, part) -> [(src, req, decl)] before rank 0's init
        self.updater = None
        self.mults = {}               # key -> (lr_mult, wd_mult)
        self.sync = True
        self.done = threading.Event()
        self.exit_code = None
        self._handlers.update({'init': self._on_init, 'push': self._on_push,
                               'pull': self._on_pull, 'set_optimizer': self._on_set_optimizer,
                               'save_states': self._on_save_states,
                               'load_states': self._on_load_states,
                               'terminate': self._on_terminate})

    def run(self):
        """Serve until the scheduler ends the job; returns the exit status."""
        try:
            self.join()
        except Exception:
            return 1
        self.van.every(1.0, self._check_waits)
        self.done.wait()
        time.sleep(0.1)
        self.van.stop()
        return self.exit_code

    def on_failure(self):
        self.exit_code = 1
        self.done.set()

    def _on_terminate(self, msg):
        if self.cfg.verbose:
            log.info('%s: the job ended; exiting', self.van.name)
        self.exit_code = 0
        self.done.set()

    # ---- helpers -----------------------------------------------------------------------
    def _reply(self, msg, err=None, arrays=(), body=None):
        self.van.send(msg.src, Message('reply', '', req=msg.req, key=msg.key, part=msg.part,
                                           err=err, arrays=arrays, body=body))

    @staticmethod
    def _rank(msg):
        role, _, rank = msg.src.partition(':')
        return int(rank) if role == 'worker' and rank.isdigit() else None

    def _slot(self, msg):
        slot = self.slots.get((msg.key, msg.part))
        if slot is None:
            self._reply(msg, err='key %r (part %s) has not been initialised on this server; '
                                 'call kv.init first' % (msg.key, msg.part))
        return slot

    # ---- init --------------------------------------------------------------------------
    def _on_init(self, msg):
        rank = self._rank(msg)
        body = msg.body or {}
        decl = (tuple(body.get('shape', ())), body.get('dtype'), rank)
        self.sync = body.get('sync', True)
        where = (msg.key, msg.part)
        slot = self.slots.get(where)
        if rank == 0:
            if slot is not None:
                self._reply(msg, err='key %r is already initialised' % (msg.key,))
                return
            if len(msg.arrays) != 1:
                self._reply(msg, err='init from worker 0 must carry the value')
                return
            slot = self.slots[where] = _Slot(np.array(msg.arrays[0]), decl,
                                             plain=bool(body.get('plain')))
            self._reply(msg)
            for src, req, other in self.pending_inits.pop(where, []):
                self._answer_init(src, req, msg.key, msg.part, slot, other)
        elif slot is None:
            self.pending_inits.setdefault(where, []).append((msg.src, msg.req, decl))
        else:
            self._answer_init(msg.src, msg.req, msg.key, msg.part, slot, decl)

    def _answer_init(self, src, req, key, part, slot, decl):
        err = None
        if decl[:2] != slot.shape[:2]:
            err = ('key %r: worker %s declared shape %s %s, but worker 0 initialised it as %s %s'
                   % (key, decl[2], decl[0], decl[1], slot.shape[0], slot.shape[1]))
        self.van.send(src, Message('reply', '', req=req, key=key, part=part, err=err))

    # ---- push and pull -----------------------------------------------------------------
    def _decode_value(self, msg, slot):
        body = msg.body or {}
        if len(msg.arrays) != 1:
            raise ValueError('a push must carry exactly one array')
        data = msg.arrays[0]
        if '2bit' in body:
            data = compression.dequantize_2bit(np, data, slot.stored.size, float(body['2bit']),
                                               slot.stored.dtype)
        if data.size != slot.stored.size:
            raise ValueError('pushed %d values to key %r part %d, which holds %d'
                             % (data.size, msg.key, msg.part, slot.stored.size))
        return data.reshape(slot.stored.shape).astype(slot.stored.dtype, copy=False)

    def _on_push(self, msg):
        slot = self._slot(msg)
        if slot is None:
            return
        rank = self._rank(msg)
        try:
            value = self._decode_value(msg, slot)
        except ValueError as exc:
            self._reply(msg, err=str(exc))
            return
        if not self.sync and not slot.plain:
            if self.updater is None:
                self._reply(msg, err="dist_async applies every push as it arrives and needs an "
                                     "optimizer: call kv.set_optimizer(...) or train through a "
                                     "gluon.Trainer with update_on_kvstore=True")
                return
            self._apply(msg.key, msg.part, slot, value)
            self._reply(msg)
            return
        if rank in slot.pushed:
            slot.queued.append((rank, np.array(value), msg.req, msg.src))
        else:
            self._count(slot, rank, value)
            self._reply(msg)
            self._maybe_complete(msg.key, msg.part, slot)

    def _count(self, slot, rank, value):
        if slot.merged is None:
            slot.merged = value  # the received data itself, never written: no copy
            slot.round_started = time.monotonic()
        elif len(slot.pushed) == 1:
            slot.merged = slot.merged + value  # the slot's own array from here on
        else:
            slot.merged += value
        slot.pushed.add(rank)
        slot.worker_round[rank] = slot.round

    def _maybe_complete(self, key, part, slot):
        while len(slot.pushed) == self.cfg.num_worker:
            self._apply(key, part, slot, slot.merged)
            slot.merged, slot.pushed = None, set()
            slot.round += 1
            ready = [p for p in slot.pulls if p[2] < slot.round]
            slot.pulls = [p for p in slot.pulls if p[2] >= slot.round]
            for src, req, _ in ready:
                self._send_value(src, req, key, part, slot)
            queued, slot.queued = slot.queued, []
            for rank, value, req, src in queued:
                if rank in slot.pushed:
                    slot.queued.append((rank, value, req, src))
                else:
                    self._count(slot, rank, value)
                    self.van.send(src, Message('reply', '', req=req, key=key, part=part))

    def _apply(self, key, part, slot, value):
        """The round's result becomes a new stored array, never written afterwards, so
        replies send it without copying. A sum ``value`` is handed over for good."""
        if self.updater is None or slot.plain:
            slot.stored = value
            return
        index = _index(key, part)
        opt = self.updater.optimizer
        if index not in opt.lr_mult:  # per-parameter multipliers, shipped by set_optimizer
            opt.lr_mult[index], opt.wd_mult[index] = self.mults.get(key, (1.0, 1.0))
        ctx = cpu(0)
        weight = slot.stored.copy()
        self.updater(index, NDArray(np.asarray(value), ctx), NDArray(weight, ctx))
        slot.stored = weight

    def _on_pull(self, msg):
        slot = self._slot(msg)
        if slot is None:
            return
        rank = self._rank(msg)
        pushed_round = slot.worker_round.get(rank)
        rounds = self.sync or slot.plain  # allreduce keys sum in rounds under dist_async too
        if rounds and pushed_round is not None and slot.round <= pushed_round:
            slot.pulls.append((msg.src, msg.req, pushed_round))
            return
        self._send_value(msg.src, msg.req, msg.key, msg.part, slot)

    def _send_value(self, src, req, key, part, slot):
        # no copy: a stored array is replaced, never changed (see _apply)
        self.van.send(src, Message('reply', '', req=req, key=key, part=part,
                                       arrays=[slot.stored]))

    def _check_waits(self):
        """Pulls cannot wait forever: report which workers never pushed."""
        now = time.monotonic()
        for (key, part), slot in self.slots.items():
            if slot.pulls and slot.round_started and \
                    now - slot.round_started > self.cfg.wait_timeout:
                missing = sorted(set(range(self.cfg.num_worker)) - slot.pushed)
                err = ('%s: round %d of key %r (part %d) waited %.0f s for pushes from worker(s) '
                       '%s' % (self.van.name, slot.round, key, part, now - slot.round_started,
                               ', '.join(map(str, missing))))
                for src, req, _ in slot.pulls:
                    self.van.send(src, Message('reply', '', req=req, key=key, part=part,
                                                   err=err))
                slot.pulls = []

    # ---- optimizer and its states --------------------------------------------------------
    def _on_set_optimizer(self, msg):
        body = msg.body or {}
        try:
            optimizer = Optimizer.from_config(body.get('config'))
            mults = {}
            for key, lr_mult, wd_mult in body.get('mults', []):
                key = key[1] if isinstance(key, list) and len(key) == 2 else key
                mults[key] = (float(lr_mult), float(wd_mult))
        except Exception as exc:  # a bad config is the sender's error, not a crash
            self._reply(msg, err='set_optimizer: %s' % exc)
            return
        if self.updater is None:
            self.updater = Updater(optimizer)
        else:
            self.updater.replace_optimizer(optimizer)
        self.mults = mults
        self._reply(msg)

    def _on_save_states(self, msg):
        if self.updater is None:
            self._reply(msg, err='no optimizer is set on the servers, so there are no states')
            return
        blob = self.updater.get_states(dump_optimizer=True)
        self._reply(msg, arrays=[np.frombuffer(blob, dtype=np.uint8)])

    def _on_load_states(self, msg):
        if len(msg.arrays) != 1:
            self._reply(msg, err='load_states needs one byte array')
            return
        updater = self.updater or Updater(SGD())
        try:
            updater.set_states(msg.arrays[0].tobytes())
        except Exception as exc:
            self._reply(msg, err='load_states: %s' % exc)
            return
        self.updater = updater
        self._reply(msg)
