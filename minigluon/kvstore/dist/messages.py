"""How the dist store's calls become messages and replies become values.

The parts of the keys of one call that go to one server share a message while they fit
(``batched``); pushes queued for the I/O thread leave merged per server
(``merge_pushes``); pull replies are written into the caller's arrays part by part
(``PullTarget``); a ``ReadAhead`` holds a key's value asked for before its pull.
"""
import numpy as np

from ... import backend
from ...base import MXNetError
from ...context import cpu
from ...ndarray.dispatch import check_inplace_target
from ...ndarray.ndarray import NDArray
from ..transport.wire import Message, encode_key

_BATCH_HEADER_BYTES = 32 * 1024  # (what the keys of a batch may add to its header, roughly)


def batched(cmd, items, limit):
    """Messages for ``items`` = [(part, key, body, array or None, bytes, ...)]:
    consecutive items for one server share a message while their arrays (or the
    arrays of the reply) fit in ``limit(server)`` bytes; a bigger part goes alone. Returns
    [(destination, Message, items of it)] in order for every server."""
    open_batches, out = {}, []

    def flush(server):
        batch = open_batches.pop(server)
        group = batch[0]
        if len(group) == 1:
            part, key, body, array = group[0][:4]
            msg = Message(cmd, '', key=key, part=part.index, body=body,
                          arrays=[] if array is None else [array])
        else:
            msg = Message(cmd, '', body={'items': [[encode_key(i[1]), i[0].index, i[2]]
                                                   for i in group]},
                          arrays=[i[3] for i in group if i[3] is not None])
        out[batch[3]] = ('server:%d' % server, msg, group)

    for item in items:
        part, key, nbytes = item[0], item[1], item[4]
        header = len(key) + 64 if isinstance(key, str) else 64
        batch = open_batches.get(part.server)
        if batch is not None and (batch[1] + nbytes > limit(part.server) or
                                  batch[2] + header > _BATCH_HEADER_BYTES):
            flush(part.server)
            batch = None
        if batch is None:
            batch = open_batches[part.server] = [[], 0, 0, len(out)]
            out.append(None)
        batch[0].append(item)
        batch[1] += nbytes
        batch[2] += header
    for server in list(open_batches):
        flush(server)
    return out


def merge_pushes(messages, limit):
    """Push messages for one server (each of one item or a batch, see ``batched``) as
    fewer, in order: ``[(message, the messages it carries)]``, each carrying arrays of at
    most ``limit`` bytes unless one alone is bigger. Their arrays may already be in
    shared memory (``Message.shm``), where they stay."""
    out, group, size, header = [], [], 0, 0
    for msg in messages:
        nbytes = sum(a.nbytes for a in msg.arrays)
        more = 64 * len(msg.body['items']) if msg.key is None else 64
        if group and (size + nbytes > limit or header + more > _BATCH_HEADER_BYTES):
            out.append(_joined(group))
            group, size, header = [], 0, 0
        group.append(msg)
        size += nbytes
        header += more + (len(msg.key) if isinstance(msg.key, str) else 0)
    if group:
        out.append(_joined(group))
    return out


def _joined(group):
    if len(group) == 1:
        return group[0], group
    items, arrays, refs = [], [], []
    for msg in group:
        if msg.key is None:
            items += msg.body['items']
        else:
            items.append([encode_key(msg.key), msg.part, msg.body])
        arrays += msg.arrays
        refs += msg.shm or [None] * len(msg.arrays)
    return Message('push', '', body={'items': items}, arrays=arrays,
                   shm=refs if any(refs) else None), group


def pull_what(items):
    """What a pull of ``items`` is, for errors."""
    return 'pull of key %s' % ', '.join(sorted(set(repr(i[1]) for i in items)))


def pull_traffic(items, batches):
    """The profiler's arguments of a pull of ``items`` sent as ``batches``."""
    keys = []
    for item in items:
        if item[1] not in keys:
            keys.append(item[1])
    return {'keys': keys, 'bytes': sum(item[4] for item in items), 'messages': len(batches)}


def write_parts(items, reply):
    """Write the arrays of a pull's ``reply`` to where its ``items`` go."""
    if len(reply.arrays) != len(items):
        raise MXNetError('kvstore: malformed pull reply (%d arrays for %d parts)'
                         % (len(reply.arrays), len(items)))
    for item, array in zip(items, reply.arrays):
        item[5].write(item[0], array)


class PullTarget:
    """Where the parts of one pulled key go: straight into the first output when it is a
    host array (one copy of the whole gradient set per round instead of two)."""

    def __init__(self, key, meta, outs):
        self.key, self.meta, self.outs = key, meta, outs
        first = outs[0]._data
        self.direct = (backend.is_host_array(first) and first.dtype == meta.dtype and
                       first.flags.c_contiguous)
        if self.direct:
            check_inplace_target(outs[0])
        self.flat = first.reshape(-1) if self.direct else \
            np.empty(int(np.prod(meta.shape, dtype=np.int64)), meta.dtype)

    def write(self, part, array):
        """Copy one part of the value into place."""
        if array.size != part.stop - part.start:
            raise MXNetError('kvstore: malformed pull reply for key %r part %d'
                             % (self.key, part.index))
        self.flat[part.start:part.stop] = array.reshape(-1)

    def finish(self):
        """Every part is in: fill the other outputs."""
        value = self.outs[0] if self.direct else \
            NDArray(self.flat.reshape(self.meta.shape), cpu(0))
        for o in self.outs[1:] if self.direct else self.outs:
            value.copyto(o)


class ReadAhead:
    """The value of one key after ``rounds`` rounds, asked for before a pull of it."""
    __slots__ = ('rounds', 'parts')

    def __init__(self, rounds):
        self.rounds = rounds
        self.parts = []               # (part, ticket, index of the part in its reply)

    def ready(self):
        """Whether every part arrived, with no error."""
        for _, ticket, index in self.parts:
            if not ticket.done.is_set() or ticket.first_error() is not None:
                return False
            reply = ticket.responses[0]
            if reply is None or len(reply.arrays) <= index:
                return False
        return bool(self.parts)

    def value(self, part):
        """The array of ``part`` (``ready()`` said it is here)."""
        for each, ticket, index in self.parts:
            if each.index == part.index:
                return ticket.responses[0].arrays[index]
        raise MXNetError('kvstore: part %d was not read ahead' % part.index)
