"""A parameter server: holds parts of keys, aggregates pushes, applies updates.

``dist_sync``: every worker numbers its pushes of a key part 0, 1, 2, ...; round
``r`` is push ``r`` of every worker. When it is complete the server sums it (in
rank order), applies the optimizer (or stores the sum when there is none), and then
answers the pulls waiting for it: a pull carries how many pushes its worker has
made, and gets the value after that many rounds. A worker that pushes twice before
a round completes has its second push counted in the next round.
``dist_async``: every push is applied on arrival (one key part at a time, so the
update is atomic) and pulls are answered at once; an optimizer is required.
Allreduce keys (plain: summed, never optimised) run in rounds in both modes.
The optimizer arrives as a registry name + JSON hyper-parameters and runs the same
update functions as a single process does.

A worker sends the small parts it pushes or pulls from one server together, in one
message of several items (``body['items']``); each item is handled as a message of its
own would be, and the batch is answered once, when every item has its answer.

When the job allows a dead worker to be replaced (``PS_WORKER_RECOVERY_TIMEOUT``),
its replacement is the same rank under a new name ('worker:1.1'). The first message
from it drops what the dead one left unfinished (its pushes to open rounds, its
waiting pulls); the open rounds stay open until the replacement pushes. A push
numbered below what the server holds from that rank is its predecessor's, already
counted: it is acknowledged and dropped, and a pull one round back gets the value
before the last round, so a replacement can resume exactly where the job is.
"""
import threading
import time

import numpy as np

from ... import profiler
from ...context import cpu
from ...ndarray.ndarray import NDArray
from ...optimizer import Optimizer, Updater
from .. import compression
from .node import Node, node_name, parse_name
from .replica import KeyRange, Replication
from ..transport.van import log
from ..transport.wire import Message, WireError, decode_key


# requests only a worker of the job may make
_WORKER_REQUESTS = frozenset(['init', 'push', 'pull', 'set_optimizer', 'get_optimizer',
                              'save_states', 'load_states'])


def _keys_of(msg):
    """The keys a request (or a batch of them) is about, for the profiler."""
    items = (msg.body or {}).get('items') if msg.key is None else None
    if not isinstance(items, list):
        return [msg.key]
    return [item[0][1] for item in items if isinstance(item, list) and item and
            isinstance(item[0], list) and len(item[0]) == 2]


def _index(key, part):
    """The optimizer's index for a key part: its step counts and states are per part."""
    return '%r/%d' % (key, part)


class _Slot:
    """One part of one key held by this server."""
    __slots__ = ('stored', 'previous', 'shape', 'plain', 'round', 'contributions',
                 'received', 'pulls', 'early_acks', 'round_started', 'held', 'released',
                 'released_by', 'range', 'durable')

    def __init__(self, stored, shape, plain, key_range):
        self.range = key_range        # the replica.KeyRange it belongs to (its optimizer)
        self.plain = plain            # sum only, never the optimizer (kv.allreduce keys)
        self.stored = stored          # the value (weights when an optimizer is set)
        self.previous = None          # the value before the last round (when kept)
        self.shape = shape            # the whole key's shape and dtype, for checks
        self.round = 0                # completed rounds
        self.durable = 0              # rounds the backup holds too (pulls wait for them)
        self.contributions = {}       # round -> {rank: pushed value}, rounds not complete
        self.received = {}            # rank -> pushes held from it (the next one's number)
        self.pulls = []               # (src, req, rounds it waits for)
        self.early_acks = []          # (round, src, req) of pushes ahead of the open round
        self.round_started = None     # when the open round's first push arrived
        self.held = set()             # rounds with a push made during backward (``hold``)
        self.released = 0             # rounds below this may be applied (every worker's word)
        self.released_by = {}         # rank -> the pushes it had made at its last release


class _Batch:
    """The answers to a message of several items, sent together when all are in."""
    __slots__ = ('src', 'req', 'err', 'arrays', 'left')

    def __init__(self, src, req, count):
        self.src, self.req, self.err = src, req, None
        self.arrays, self.left = [None] * count, count


class _Item:
    """The request id of one item of a batch: where its answer goes."""
    __slots__ = ('batch', 'index', 'answered')

    def __init__(self, batch, index):
        self.batch, self.index, self.answered = batch, index, False


def _sum_by_rank(values, alloc):
    """The sum of {rank: array}, in rank order (the same bits whatever the arrival order),
    in a fresh array from ``alloc(shape, dtype)`` (a pushed one may be a view of a
    sender's shared memory)."""
    arrays = [values[rank] for rank in sorted(values)]
    total = alloc(arrays[0].shape, arrays[0].dtype)
    if len(arrays) == 1:
        np.copyto(total, arrays[0])
    else:
        np.add(arrays[0], arrays[1], out=total)
    for value in arrays[2:]:
        total += value
    return total


class Server(Replication, Node):
    role = 'server'

    def __init__(self, cfg):
        super().__init__(cfg, listen=True)
        self.slots = {}               # (key, part) -> _Slot, of every range served here
        self.pending_inits = {}       # (key, part) -> [(src, req, decl)] before rank 0's init
        self.sync = True
        self.incarnations = {}        # worker rank -> its process: 0, then 1, 2, ...
        self.awaited = {}             # rank -> since when others waited for its replacement
        self.keep_previous = cfg.recovery_timeout > 0
        self.done = threading.Event()
        self.exit_code = None
        self.van.share_values()   # the values workers pull: written once, read by each
        self.van.both_ways = ('server:',)  # (a server and its backup may be each other's)
        self._handlers.update({'init': self._on_init, 'push': self._on_push,
                               'pull': self._on_pull, 'release': self._on_release,
                               'set_optimizer': self._on_set_optimizer,
                               'get_optimizer': self._on_get_optimizer,
                               'save_states': self._on_save_states,
                               'load_states': self._on_load_states,
                               'terminate': self._on_terminate})
        self._init_replication()

    def run(self):
        """Serve until the scheduler ends the job; returns the exit status."""
        try:
            self.join()
        except Exception:
            return 1
        profiler.set_process_name('server %d' % self.my_rank)
        self.van.every(1.0, self._check_waits)
        self.done.wait()
        self.van.settle(0.1)
        self.van.stop()
        return self.exit_code

    def on_failure(self):
        self.exit_code = 1
        self.done.set()

    def _on_book(self, msg):
        body = msg.body or {}
        for rank in body.get('serves', [body.get('rank')]):  # (before the messages that
            self.ranges.setdefault(rank, KeyRange(rank))      # waited for the book)
        super()._on_book(msg)
        # (once named and bound to the job: a copy of what came meanwhile goes too)
        self._attach_backup(body.get('backup'))

    def _on_terminate(self, msg):
        if self.cfg.verbose:
            log.info('%s: the job ended; exiting', self.van.name)
        self.exit_code = 0
        self.done.set()

    def on_job_end(self):
        log.warning('%s: the scheduler fell silent after every worker had finished: the job '
                    'ended (its last message was lost); exiting', self.van.name)
        self.exit_code = 0
        self.done.set()

    # ---- helpers -----------------------------------------------------------------------
    def _reply(self, msg, err=None, arrays=(), body=None):
        self._answer(msg.src, msg.req, msg.key, msg.part, err, arrays, body)

    def _answer(self, src, req, key, part, err=None, arrays=(), body=None):
        """Answer a request, or one item of a batch (sent once every item is answered)."""
        if not isinstance(req, _Item):
            self.van.send(src, Message('reply', '', req=req, key=key, part=part, err=err,
                                       arrays=arrays, body=body))
            return
        if req.answered:
            return
        req.answered = True
        batch = req.batch
        batch.err = batch.err or err
        batch.arrays[req.index] = arrays[0] if arrays else None
        batch.left -= 1
        if not batch.left:
            arrays = [] if batch.err or any(a is None for a in batch.arrays) else batch.arrays
            self.van.send(batch.src, Message('reply', '', req=batch.req, err=batch.err,
                                             arrays=arrays))

    def _on_batch(self, msg, handle):
        """Hand each item of a batch to ``handle`` as a message of its own."""
        items = (msg.body or {}).get('items')
        arrays = msg.cmd == 'push'
        if not isinstance(items, list) or not items or \
                len(msg.arrays) != (len(items) if arrays else 0):
            self._reply(msg, err='malformed batch of %s from %s' % (msg.cmd, msg.src))
            return
        batch, parts = _Batch(msg.src, msg.req, len(items)), []
        try:
            for i, item in enumerate(items):
                if not (isinstance(item, list) and len(item) == 3 and
                        type(item[1]) is int and isinstance(item[2], dict)):
                    raise WireError('bad item %r' % (item,))
                parts.append(Message(msg.cmd, msg.src, msg.seq, _Item(batch, i),
                                     decode_key(item[0]), item[1], item[2],
                                     arrays=[msg.arrays[i]] if arrays else []))
        except WireError as exc:
            self._reply(msg, err='malformed batch of %s from %s: %s' % (msg.cmd, msg.src, exc))
            return
        del msg  # (its arrays live as long as the items that hold them)
        for part in parts:
            handle(part)

    @staticmethod
    def _rank(msg):
        ident = parse_name(msg.src)
        return ident[1] if ident is not None and ident[0] == 'worker' else None

    def _range(self, msg):
        """The KeyRange a request names (``body['range']``: the server rank the worker
        placed it on), which must be served here."""
        rank = (msg.body or {}).get('range', self.my_rank)
        key_range = self.ranges.get(rank)
        if key_range is None:
            raise ValueError('%s does not serve the keys of server rank %r' % (self.van.name,
                                                                               rank))
        return key_range

    def _new_slot(self, stored, decl, plain, key_range):
        return _Slot(stored, decl, plain, key_range)

    def _slot(self, msg):
        slot = self.slots.get((msg.key, msg.part))
        if slot is None:
            self._reply(msg, err='key %r (part %s) has not been initialised on this server; '
                                 'call kv.init first' % (msg.key, msg.part))
        return slot

    @staticmethod
    def _number(msg, default):
        number = (msg.body or {}).get('n', default)
        if type(number) is not int or number < 0:
            raise ValueError('bad push count %r' % (number,))
        return number

    # ---- replaced workers ----------------------------------------------------------------
    def _dispatch(self, msg):
        ident = parse_name(msg.src)
        if msg.cmd in _WORKER_REQUESTS and self.book is not None and \
                (ident is None or ident[0] != 'worker' or ident[1] >= self.book['num_workers']):
            raise ValueError('%s is no worker of this job (worker:0 to worker:%d)'
                             % (msg.src, self.book['num_workers'] - 1))
        if ident is not None and ident[0] == 'worker' and self.book is not None:
            _, rank, incarnation = ident
            current = self.incarnations.get(rank, 0)
            if incarnation < current:
                if self.cfg.verbose:
                    log.info('%s: dropped %s from %s, which was replaced', self.van.name,
                             msg.cmd, msg.src)
                return
            if incarnation > current:
                self._replace(rank, incarnation)
        start = profiler.now_if_recording() if msg.cmd in _WORKER_REQUESTS else None
        super()._dispatch(msg)
        if start is not None:
            profiler.record_range(start, 'kvstore', 'server ' + msg.cmd, {
                'from': msg.src, 'keys': _keys_of(msg),
                'bytes': sum(a.nbytes for a in msg.arrays)})

    def _stale(self, src):
        ident = parse_name(src)
        return (ident is not None and ident[0] == 'worker' and
                ident[2] < self.incarnations.get(ident[1], 0))

    def _replace(self, rank, incarnation):
        """Worker ``rank`` has a new process: forget what the old one left unfinished."""
        old = node_name('worker', rank, self.incarnations.get(rank, 0))
        self.incarnations[rank] = incarnation
        self.van.forget(old)
        dropped, waiting_since = 0, None
        for slot in self.slots.values():
            for number in list(slot.contributions):
                if slot.contributions[number].pop(rank, None) is not None:
                    dropped += 1
                if not slot.contributions[number]:
                    del slot.contributions[number]
            if self.sync or slot.plain:
                slot.received[rank] = slot.round
            slot.pulls = [p for p in slot.pulls if not self._stale(p[0])]
            slot.early_acks = [a for a in slot.early_acks if not self._stale(a[1])]
            if slot.round not in slot.contributions:
                slot.round_started = None
            elif waiting_since is None or slot.round_started < waiting_since:
                waiting_since = slot.round_started
        for where, waiting in list(self.pending_inits.items()):
            self.pending_inits[where] = [w for w in waiting if not self._stale(w[0])]
        if waiting_since is not None:
            self.awaited[rank] = waiting_since
        log.warning('%s: worker %d has a new process (%s); dropped the %d push(es) the old one '
                    'had made to rounds still open', self.van.name, rank,
                    node_name('worker', rank, incarnation), dropped)

    def _note_resumed(self):
        """A round completed: every replacement awaited has pushed."""
        for rank, since in self.awaited.items():
            log.warning("%s: worker %d's new process pushed to the rounds the old one left "
                        'open, and the job goes on; the other workers waited %.1f s for it',
                        self.van.name, rank, time.monotonic() - since)
        self.awaited = {}

    # ---- init --------------------------------------------------------------------------
    def _on_init(self, msg):
        rank = self._rank(msg)
        body = msg.body or {}
        decl = (tuple(body.get('shape', ())), body.get('dtype'), rank)
        self.sync = body.get('sync', True)
        where = (msg.key, msg.part)
        slot = self.slots.get(where)
        if slot is None and where not in self.pending_inits and \
                len(self.slots) + len(self.pending_inits) >= self.cfg.max_keys:
            self._reply(msg, err='%s holds %d key parts, the most MINIGLUON_PS_MAX_KEYS=%d '
                                 'allows, so key %r is refused: use fewer keys (one per '
                                 'parameter, not per element), more servers, or raise '
                                 'MINIGLUON_PS_MAX_KEYS' % (self.van.name, len(self.slots) +
                                                            len(self.pending_inits),
                                                            self.cfg.max_keys, msg.key))
            return
        if slot is not None and (rank != 0 or body.get('recovery')):
            # (a replacement of worker 0 finds its key here: what the servers hold stays)
            self._answer_init(msg.src, msg.req, msg.key, msg.part, slot, decl)
        elif rank == 0:
            if slot is not None:
                self._reply(msg, err='key %r is already initialised' % (msg.key,))
                return
            if len(msg.arrays) != 1:
                self._reply(msg, err='init from worker 0 must carry the value')
                return
            key_range = self._range(msg)
            slot = self._new_slot(np.array(msg.arrays[0]), decl, bool(body.get('plain')),
                                  key_range)
            self.slots[where] = key_range.slots[where] = slot
            self._replicate_init(msg.key, msg.part, slot)
            self._answer_init(msg.src, msg.req, msg.key, msg.part, slot, decl)
            for src, req, other in self.pending_inits.pop(where, []):
                self._answer_init(src, req, msg.key, msg.part, slot, other)
        else:
            self.pending_inits.setdefault(where, []).append((msg.src, msg.req, decl))

    def _answer_init(self, src, req, key, part, slot, decl):
        """Check the declared shape; tell how many of the worker's pushes are held."""
        err = None
        if decl[:2] != slot.shape[:2]:
            err = ('key %r: worker %s declared shape %s %s, but worker 0 initialised it as %s %s'
                   % (key, decl[2], decl[0], decl[1], slot.shape[0], slot.shape[1]))
        self.van.send(src, Message('reply', '', req=req, key=key, part=part, err=err,
                                   body={'pushes': slot.received.get(decl[2], 0)}))

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
        if data.dtype != slot.stored.dtype:  # (workers convert, exactly, before sending)
            raise ValueError('pushed %s values to key %r part %d, which holds %s'
                             % (data.dtype, msg.key, msg.part, slot.stored.dtype))
        return data.reshape(slot.stored.shape)

    def _on_push(self, msg):
        if msg.key is None and msg.body and 'items' in msg.body:
            self._on_batch(msg, self._on_push)
            return
        slot = self._slot(msg)
        if slot is None:
            return
        rank = self._rank(msg)
        held = slot.received.get(rank, 0)
        try:
            number = self._number(msg, held)
            if number > held:
                raise ValueError('push %d of key %r (part %d) from worker %s, but the servers '
                                 'hold %d of its pushes: the next one is push %d'
                                 % (number, msg.key, msg.part, rank, held, held))
            if number < held:  # its predecessor's push, counted already
                self._reply(msg)
                return
            value = self._decode_value(msg, slot)
        except ValueError as exc:
            self._reply(msg, err=str(exc))
            return
        if not (self.sync or slot.plain):
            if slot.range.updater is None:
                self._reply(msg, err="dist_async applies every push as it arrives and needs an "
                                     "optimizer: call kv.set_optimizer(...) or train through a "
                                     "gluon.Trainer with update_on_kvstore=True")
                return
            self._apply(msg.key, msg.part, slot, value)
            slot.received[rank] = number + 1
            self._replicate_push(msg.key, msg.part, slot, rank, number, value,
                                 lambda: self._reply(msg))
            return
        slot.received[rank] = number + 1
        if (msg.body or {}).get('hold'):
            slot.held.add(number)
        slot.contributions.setdefault(number, {})[rank] = value
        if number > slot.round:  # acknowledged when its round opens
            slot.early_acks.append((number, msg.src, msg.req))
            return
        if slot.round_started is None:
            slot.round_started = time.monotonic()
        self._reply(msg)
        self._complete_rounds(msg.key, msg.part, slot)

    def _complete_rounds(self, key, part, slot):
        while len(slot.contributions.get(slot.round, ())) == self.cfg.num_worker:
            if slot.round in slot.held and slot.round >= slot.released:
                return  # pushed during backward: its update waits for every worker's step
            slot.held.discard(slot.round)
            values = slot.contributions.pop(slot.round)
            if self.awaited:
                self._note_resumed()
            before = slot.stored
            total = _sum_by_rank(values, self._new_value)
            self._replicate_round(key, part, slot, total)
            self._apply(key, part, slot, total)
            if self.keep_previous:
                slot.previous = before
            slot.round += 1
            slot.round_started = time.monotonic() if slot.round in slot.contributions else None
            self._answer_pulls(key, part, slot)
            opened = [a for a in slot.early_acks if a[0] == slot.round]
            slot.early_acks = [a for a in slot.early_acks if a[0] != slot.round]
            for _, src, req in opened:
                self._answer(src, req, key, part)

    def _answer_pulls(self, key, part, slot):
        """Answer the pulls waiting for rounds that are complete, once the backup (if any)
        holds every round before (see ``_ready``)."""
        ready, waiting = [], []
        for pull in slot.pulls:
            (ready if self._ready(slot, pull[2]) else waiting).append(pull)
        slot.pulls = waiting
        for src, req, number in ready:
            self._send_value(src, req, key, part, slot, number)

    def _on_release(self, msg):
        """A worker is in ``Trainer.step`` and its pushes have all arrived (worker 0's
        optimizer, sent before, is the one for the rounds of its pushes): once every
        worker has said so, those rounds may be applied. Slots are visited in the order
        their keys were initialised, so the pulls of the first layers are answered first."""
        rank = self._rank(msg)
        if rank is not None:
            workers = range(self.cfg.num_worker)
            for (key, part), slot in self.slots.items():
                slot.released_by[rank] = max(slot.released_by.get(rank, 0),
                                             slot.received.get(rank, 0))
                slot.released = max(slot.released,
                                    min(slot.released_by.get(r, 0) for r in workers))
                self._complete_rounds(key, part, slot)
        self._reply(msg)

    def _apply(self, key, part, slot, value):
        """The round's result becomes a new stored array, never written afterwards, so
        replies send it without copying. A sum ``value`` is handed over for good."""
        updater = slot.range.updater
        if updater is None or slot.plain:
            slot.stored = value
            return
        index = _index(key, part)
        opt = updater.optimizer
        if index not in opt.lr_mult:  # per-parameter multipliers, shipped by set_optimizer
            opt.lr_mult[index], opt.wd_mult[index] = slot.range.mults.get(key, (1.0, 1.0))
        ctx = cpu(0)
        weight = self._new_value(slot.stored.shape, slot.stored.dtype)
        weight[...] = slot.stored
        updater(index, NDArray(np.asarray(value), ctx), NDArray(weight, ctx))
        slot.stored = weight

    def _new_value(self, shape, dtype):
        """An array for a new stored value: in the store the workers read, when there is room."""
        value = self.van.shared_array(shape, dtype)
        return np.empty(shape, dtype) if value is None else value

    def _on_pull(self, msg):
        if msg.key is None and msg.body and 'items' in msg.body:
            self._on_batch(msg, self._on_pull)
            return
        slot = self._slot(msg)
        if slot is None:
            return
        try:
            number = self._number(msg, 0)
        except ValueError as exc:
            self._reply(msg, err=str(exc))
            return
        if (self.sync or slot.plain) and not self._ready(slot, number):
            slot.pulls.append((msg.src, msg.req, number))
            return
        self._send_value(msg.src, msg.req, msg.key, msg.part, slot, number)

    @staticmethod
    def _ready(slot, rounds):
        """Whether a pull of the value after ``rounds`` rounds may be answered: they are
        complete, and the backup holds all but the last (a worker keeps its last two
        pushes until a pull says so, so the one the backup may lack is never lost;
        waiting for that one too would put the copy on the path of every pull)."""
        return slot.round >= rounds and slot.durable >= rounds - 1

    def _send_value(self, src, req, key, part, slot, rounds):
        """The value after ``rounds`` rounds: the stored one, or (a replacement resuming
        one round back) the one before it."""
        value = slot.stored
        if slot.round == rounds + 1 and slot.previous is not None:
            value = slot.previous
        # no copy: a stored array is replaced, never changed (see _apply)
        self._answer(src, req, key, part, arrays=[value])

    def _check_waits(self):
        """Pulls cannot wait forever: report which workers never pushed."""
        now = time.monotonic()
        for (key, part), slot in self.slots.items():
            if slot.pulls and slot.round_started and \
                    now - slot.round_started > self.cfg.wait_timeout:
                pushed = slot.contributions.get(slot.round, {})
                workers = range(self.cfg.num_worker)
                missing = sorted(set(workers) - set(pushed))
                silent = [r for r in workers if slot.released_by.get(r, 0) <= slot.round]
                what = ('pushes from worker(s) %s' % ', '.join(map(str, missing)) if missing else
                        'the Trainer.step of worker(s) %s (the pushes were made during '
                        'backward; every worker must run the Trainer with the same overlap '
                        'setting)' % ', '.join(map(str, silent)))
                err = ('%s: round %d of key %r (part %d) waited %.0f s for %s'
                       % (self.van.name, slot.round, key, part, now - slot.round_started, what))
                for src, req, _ in slot.pulls:
                    self._answer(src, req, key, part, err=err)
                slot.pulls = []

    # ---- optimizer and its states --------------------------------------------------------
    def _on_set_optimizer(self, msg):
        body = msg.body or {}
        key_range = self._range(msg)
        try:
            self._set_optimizer(key_range, body.get('config'), body.get('mults', []))
        except Exception as exc:  # a bad config is the sender's error, not a crash
            self._reply(msg, err='set_optimizer: %s' % exc)
            return
        self._replicate_optimizer(key_range)
        self._reply(msg)

    @staticmethod
    def _set_optimizer(key_range, config, mults_list):
        """Install (or replace, keeping states and step counts) a range's optimizer."""
        optimizer = Optimizer.from_config(config)
        mults = {}
        for key, lr_mult, wd_mult in mults_list:
            key = key[1] if isinstance(key, list) and len(key) == 2 else key
            mults[key] = (float(lr_mult), float(wd_mult))
        if key_range.updater is None:
            key_range.updater = Updater(optimizer)
        else:
            key_range.updater.replace_optimizer(optimizer)
        key_range.mults = mults

    def _on_get_optimizer(self, msg):
        updater = self._range(msg).updater
        config = updater.optimizer.to_config() if updater is not None else None
        self._reply(msg, body={'config': config})

    def _on_save_states(self, msg):
        updater = self._range(msg).updater
        if updater is None:
            self._reply(msg, err='no optimizer is set on the servers, so there are no states')
            return
        blob = updater.get_states(dump_optimizer=True)
        self._reply(msg, arrays=[np.frombuffer(blob, dtype=np.uint8)])

    def _on_load_states(self, msg):
        key_range = self._range(msg)
        if len(msg.arrays) != 1:
            self._reply(msg, err='load_states needs one byte array')
            return
        if key_range.updater is None:
            # (states alone must never install an update rule: pulls would silently turn
            # from sums into updated weights)
            self._reply(msg, err='load_states: no optimizer is set on %s, so it holds no '
                                 'states to load into; call set_optimizer first (a Trainer '
                                 'with update_on_kvstore=True does)' % self.van.name)
            return
        blob = msg.arrays[0].tobytes()
        try:
            key_range.updater.set_states(blob)
        except Exception as exc:
            self._reply(msg, err='load_states: %s' % exc)
            return
        self._replicate_states(key_range, blob)
        self._reply(msg)
