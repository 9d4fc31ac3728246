"""Server replication: every key range on a primary server and a backup server.

Workers place each key part on a server rank (placement.py); the parts of one rank
are a ``KeyRange``, with its own optimizer (its step counts and states). With
``PS_REPLICATION=1`` the scheduler gives each server a backup (the next server, 0's
is 1 and the last's is 0), and the primary sends it, in order on one connection,
everything that changes a range: new keys, the sum of every completed round
(``dist_sync``) or every push it applied (``dist_async``), the optimizer and its
states. The backup applies them with the same update functions to a copy of its
own (a mirror), so its weights and optimizer states are the primary's, bit for bit.
The backup acknowledges a copy as it arrives; the primary answers a pull once the
round is complete and the backup holds every round before it, and a worker keeps
its pushes of a key until a pull shows them held twice (its last two, then), so
the one round the backup may lack is pushed again if the primary dies. (Waiting
for that round too would put the copy on the path of every pull.)

When a server dies, the scheduler tells its backup to take its ranges over
(``adopt``): the mirrors become ranges it serves, with their open rounds empty,
and every worker redirects the dead server's name there and sends again what that
server had not made durable (the pushes of rounds it had not answered, kept by the
worker until then; the pulls and other requests still unanswered). A push the
backup already holds is acknowledged and dropped by its number, so each counts
once. A replacement server started by the launcher registers as a new backup and
receives a copy (``backup``) of every range whose backup is gone.
"""
import numpy as np

from .node import parse_name
from ..transport.van import log
from ..transport.wire import Message, encode_key


class KeyRange:
    """The key parts placed on one server rank, and their optimizer."""
    __slots__ = ('rank', 'slots', 'updater', 'mults')

    def __init__(self, rank):
        self.rank = rank
        self.slots = {}               # (key, part) -> the server's _Slot
        self.updater = None           # optimizer.Updater, once set_optimizer came
        self.mults = {}               # key -> (lr_mult, wd_mult)


class Replication:
    """The server's half of replication (mixed into ``Server``): sending what changes a
    range to the backup, and holding and applying what a primary sends."""

    def _init_replication(self):
        self.ranges = {}              # rank -> KeyRange served here (its own, then adopted)
        self.mirrors = {}             # rank -> KeyRange held for its primary (backup)
        self.backup = None            # the server holding copies of what this one serves
        self._acks = {}               # replication request id -> called with the reply
        self._replication_ids = 0
        self._handlers.update({'replicate': self._on_replicate, 'adopt': self._on_adopt,
                               'backup': self._on_backup, 'reply': self._on_replica_reply,
                               'reroute': self._note_reroute})

    # ---- the primary's side ------------------------------------------------------------
    def _attach_backup(self, where):
        """Make ``where`` ([name, host, port], or None) this server's backup; a new one
        first gets a copy of every range served here. (What waited for the old one is
        answered: it died, or there was none.)"""
        if self.backup is not None:
            self.van.forget(self.backup)
        if self.book is not None:  # (kept current for a restarted scheduler)
            self.book['backup'] = where
        waiting, self._acks = list(self._acks.values()), {}
        self.backup = None
        for done in waiting:  # (what the old backup will never confirm)
            if done is not None:
                done()
        self._durable_now({at: slot.round for at, slot in self.slots.items()})
        if where is None:
            return
        name, host, port = where
        self.van.connect(name, host, port)
        # (on the delivery thread after the connection is made: connect is done in order)
        self.van.call_soon(lambda: self._send_copy(name))

    def _send_copy(self, name):
        """Send new backup ``name`` everything served here; it is the backup from now on."""
        self.backup = name
        rounds = {where: slot.round for where, slot in self.slots.items()}
        for rank, key_range in sorted(self.ranges.items()):
            if key_range.updater is not None:
                self._replicate_optimizer(key_range)
                self._replicate_states(key_range,
                                       key_range.updater.get_states(dump_optimizer=False))
            for (key, part), slot in key_range.slots.items():
                arrays = [slot.stored] + ([slot.previous] if slot.previous is not None else [])
                self._replicate(Message('replicate', '', key=key, part=part, body={
                    'op': 'slot', 'range': rank, 'round': slot.round, 'plain': slot.plain,
                    'shape': [list(slot.shape[0]), slot.shape[1]],
                    'received': [[r, n] for r, n in sorted(slot.received.items())],
                    'previous': slot.previous is not None}, arrays=arrays))
        # (the rounds in the copy are durable once the backup has all of it)
        self._replicate(Message('replicate', '', body={'op': 'copied', 'range': -1}),
                        lambda: self._durable_now(rounds))
        if self.slots or self.cfg.verbose:  # (not at the start, when there is nothing yet)
            log.warning('%s: %s is now the backup of the keys served here; sent it a copy of '
                        '%d key parts', self.van.name, name, len(self.slots))

    def _durable_now(self, rounds):
        """The rounds {(key, part): count} are held by the backup (or need not be)."""
        for where, number in rounds.items():
            slot = self.slots.get(where)
            if slot is not None:
                slot.durable = max(slot.durable, number)
                self._answer_pulls(where[0], where[1], slot)

    def _replicate(self, msg, done=None, copy=False):
        """Send ``msg`` to the backup; ``done()`` once it holds what the message says."""
        self._replication_ids += 1
        msg.req = self._replication_ids
        self._acks[msg.req] = done
        self.van.send(self.backup, msg, copy_arrays=copy)

    def _on_replica_reply(self, msg):
        if msg.src != self.backup or msg.req not in self._acks:
            return  # (from a backup that was replaced meanwhile)
        done = self._acks.pop(msg.req)
        if msg.err:
            log.error('%s: the backup %s refused a copy: %s', self.van.name, msg.src, msg.err)
        if done is not None:
            done()

    def _replicate_init(self, key, part, slot):
        if self.backup is not None:
            self._replicate(Message('replicate', '', key=key, part=part, body={
                'op': 'init', 'range': slot.range.rank, 'plain': slot.plain,
                'shape': [list(slot.shape[0]), slot.shape[1]]}, arrays=[slot.stored]))

    def _replicate_round(self, key, part, slot, value):
        """Round ``slot.round`` of the slot is ``value`` (a sum): the backup applies it too
        (the pulls of the round after it wait until the backup holds it: ``Server._ready``)."""
        if self.backup is None:
            slot.durable = slot.round + 1
            return
        number = slot.round

        def durable():
            slot.durable = max(slot.durable, number + 1)
            self._answer_pulls(key, part, slot)
        # (copied: the optimizer may change the gradient it is given)
        self._replicate(Message('replicate', '', key=key, part=part, body={
            'op': 'round', 'range': slot.range.rank, 'round': number}, arrays=[value]),
            durable, copy=True)

    def _replicate_push(self, key, part, slot, rank, number, value, acknowledge):
        """A dist_async push applied here: the backup applies it too, then the worker
        hears that it is done."""
        if self.backup is None:
            acknowledge()
            return
        self._replicate(Message('replicate', '', key=key, part=part, body={
            'op': 'push', 'range': slot.range.rank, 'rank': rank, 'n': number},
            arrays=[value]), acknowledge, copy=True)

    def _replicate_optimizer(self, key_range):
        if self.backup is not None:
            self._replicate(Message('replicate', '', body={
                'op': 'optimizer', 'range': key_range.rank,
                'config': key_range.updater.optimizer.to_config(),
                'mults': _mults_list(key_range.mults)}))

    def _replicate_states(self, key_range, blob):
        if self.backup is not None:
            self._replicate(Message('replicate', '', body={'op': 'states',
                                                           'range': key_range.rank},
                                    arrays=[_bytes_array(blob)]))

    # ---- the backup's side -------------------------------------------------------------
    def _on_replicate(self, msg):
        ident = parse_name(msg.src)
        if ident is None or ident[0] != 'server':
            raise ValueError('only a server sends replicate, not %s' % msg.src)
        body = msg.body or {}
        rank = body.get('range')
        if body.get('op') == 'copied':  # (the end of a copy: only its answer matters)
            self._reply(msg)
            return
        if type(rank) is not int or rank in self.ranges:
            raise ValueError('replicate for range %r, which this server serves' % (rank,))
        key_range = self.mirrors.get(rank)
        if key_range is None:
            key_range = self.mirrors[rank] = KeyRange(rank)
        handler = {'init': self._mirror_init, 'slot': self._mirror_slot,
                   'round': self._mirror_round, 'push': self._mirror_push,
                   'optimizer': self._mirror_optimizer,
                   'states': self._mirror_states}.get(body.get('op'))
        if handler is None:
            raise ValueError('replicate: unknown op %r' % (body.get('op'),))
        # held from now on: answered before the update runs, which is then off the path of
        # the pulls waiting at the primary (what arrives next is applied after it)
        self._reply(msg)
        handler(msg, key_range, body)

    def _mirror_init(self, msg, key_range, body):
        self._mirror_slot(msg, key_range, dict(body, round=0, received=[], previous=False))

    def _mirror_slot(self, msg, key_range, body):
        shape, dtype = body['shape']
        slot = self._new_slot(msg.arrays[0].copy(), (tuple(shape), dtype, 0),
                              bool(body.get('plain')), key_range)
        if body.get('previous'):
            slot.previous = msg.arrays[1].copy()
        slot.round = slot.durable = int(body['round'])
        slot.received = {int(r): int(n) for r, n in body['received']}
        key_range.slots[msg.key, msg.part] = slot

    def _mirror_slot_of(self, msg, key_range):
        slot = key_range.slots.get((msg.key, msg.part))
        if slot is None:
            raise ValueError('replicate: key %r part %s is not held here' % (msg.key, msg.part))
        return slot

    def _mirror_round(self, msg, key_range, body):
        slot = self._mirror_slot_of(msg, key_range)
        if body.get('round') != slot.round:
            raise ValueError('replicate: round %r of key %r part %s, but the copy has %d'
                             % (body.get('round'), msg.key, msg.part, slot.round))
        before = slot.stored
        self._apply(msg.key, msg.part, slot, msg.arrays[0].copy())
        if self.keep_previous:
            slot.previous = before
        slot.round = slot.durable = slot.round + 1

    def _mirror_push(self, msg, key_range, body):
        slot = self._mirror_slot_of(msg, key_range)
        self._apply(msg.key, msg.part, slot, msg.arrays[0].copy())
        slot.received[int(body['rank'])] = int(body['n']) + 1

    def _mirror_optimizer(self, msg, key_range, body):
        self._set_optimizer(key_range, body.get('config'), body.get('mults', []))

    def _mirror_states(self, msg, key_range, body):
        if key_range.updater is None:
            raise ValueError('replicate: optimizer states before an optimizer')
        key_range.updater.set_states(msg.arrays[0].tobytes())

    # ---- fail-over -----------------------------------------------------------------------
    def _on_adopt(self, msg):
        """From the scheduler: a primary died; serve the ranges held for it."""
        if msg.src != 'scheduler':
            raise ValueError('only the scheduler sends adopt')
        body = msg.body or {}
        taken = []
        for rank in body.get('ranges', []):
            key_range = self.mirrors.pop(rank, None) or KeyRange(rank)
            for where, slot in key_range.slots.items():
                if self.sync or slot.plain:
                    # the open rounds died with the primary: the workers push them again
                    slot.received = {r: slot.round for r in range(self.cfg.num_worker)}
                slot.released = slot.round
                slot.released_by = {}
                self.slots[where] = slot
            self.ranges[rank] = key_range
            self.book['serves'] = sorted(self.ranges)
            taken.append('%d (%d key parts)' % (rank, len(key_range.slots)))
        if 'backup' in body:
            self._attach_backup(body['backup'])
        log.warning('%s: serves the keys of server rank %s from now on, in place of a dead '
                    'server', self.van.name, ', '.join(taken))
        self._reply(msg)

    def _on_backup(self, msg):
        """From the scheduler: the backup of what this server serves changed."""
        if msg.src != 'scheduler':
            raise ValueError('only the scheduler sends backup')
        self._attach_backup((msg.body or {}).get('backup'))


def _mults_list(mults):
    return [[encode_key(k), lr, wd] for k, (lr, wd) in mults.items()]


def _bytes_array(blob):
    return np.frombuffer(blob, dtype=np.uint8)
