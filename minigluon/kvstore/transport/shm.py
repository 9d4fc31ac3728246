"""Shared memory between two processes of one host: array payloads without the socket.

A sender whose peer may be on the same host offers it a ring: a memfd of the
sender's own, which the peer opens through ``/proc/<pid>/fd/<fd>`` and checks
against a random nonce written at its start. Another host, another pid namespace or
a /proc the peer may not read all fail that check, and the pair keeps the socket.
Nothing is named in a file system, so nothing is left behind when a process is
killed: the kernel frees a memfd with its last mapping.

Arrays then go into the ring and their messages carry only ``[offset, generation]``
(authenticated with the rest of the header). Every region starts with the
generation the sender gave it and the generation the receiver last released there;
the receiver releases a region when the last numpy view of its payload is garbage
(``weakref.finalize``), and the sender reuses regions in order once released. A
stale release (a duplicate message's views) names an old generation and changes
nothing. When the ring has no room an array goes over the socket as before: nothing
ever waits for room.

A server also keeps the values it answers pulls with in a ``Store``: one more memfd,
mapped by every worker that took its ring, where a round's sum is written once and
then sent to each worker by reference instead of copied into each ring. A store
region is reused once the server dropped the value and every worker it went to has
let go of it: each worker publishes, in a board at the start of the store, the
sequence number up to which every message of the server that named the store has no
live view left.

Who may use it is ``MINIGLUON_PS_TRANSPORT`` (config.py): ``auto`` offers a ring to
every peer and accepts one from a peer with the same boot and the same network
namespace (two network namespaces stand for two hosts, even when they share memory);
``shm`` accepts any ring it can open; ``tcp`` neither offers nor accepts.
"""
import collections
import ctypes
import mmap
import os
import secrets
import threading
import weakref

import numpy as np

NAME = 'minigluon-ps-ring'
HEADER = 64             # the ring's first bytes: the nonce
REGION = 64             # each region's header: generation (8 bytes), released (8 bytes)
MIN_BYTES = 64 * 1024   # smaller arrays stay in the message: a region is not worth it
# a region released and reused since: only a re-sent copy of a message received already
STALE = 'was reused (a stale message)'
_GEN = np.dtype('<u8')


def host_identity():
    """What two processes that may share memory have in common: the same boot of the
    same kernel, and the same network namespace."""
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            boot = f.read().strip()
        net = os.stat('/proc/self/ns/net')
    except OSError:
        return None
    return '%s/%d:%d' % (boot, net.st_dev, net.st_ino)


def available():
    """Whether this platform has what a ring needs (Linux: memfd and /proc)."""
    return hasattr(os, 'memfd_create') and host_identity() is not None


def _align(n):
    return (n + 63) & ~63


def _memfd(size):
    """A sparse memfd of ``size`` bytes, mapped, with a random nonce at its start."""
    fd = os.memfd_create(NAME, os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)   # sparse: pages are allocated when first written
        mapped = mmap.mmap(fd, size)
    except OSError:
        os.close(fd)
        raise
    nonce = secrets.token_bytes(16)
    mapped[:16] = nonce
    return fd, mapped, nonce


class Ring:
    """The sending side: a memfd of ``size`` bytes cut into regions, reused in order.

    ``place`` may be called from any thread (the caller copies while the I/O thread
    sends); it returns ``None`` when there is no room.
    """

    def __init__(self, size):
        self.size = size
        self.fd, self._map, self.nonce = _memfd(size)
        self._buf = np.frombuffer(self._map, np.uint8)
        self._regions = collections.deque()   # (start, generation), oldest first
        self._head = HEADER
        self._generation = 0
        self._lock = threading.Lock()
        self.ready = False                    # set once the peer has mapped it
        self.batch_bytes = 0                  # the most one message may carry (both ends agree)
        self.store_ok = False                 # the peer also mapped our Store

    def offer(self):
        """The body of the offer that lets the peer open this ring."""
        return {'pid': os.getpid(), 'fd': self.fd, 'size': self.size,
                'nonce': self.nonce.hex(), 'host': host_identity()}

    def close_fd(self):
        """The peer has its own mapping (or refused): the descriptor is not needed."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _released(self, start, generation):
        return self._buf[start + 8:start + 16].view(_GEN)[0] == generation

    def _find(self, need):
        while self._regions and self._released(*self._regions[0]):
            self._regions.popleft()
        if not self._regions:
            self._head = HEADER           # empty: start over, so few pages are ever touched
            return HEADER if HEADER + need <= self.size else None
        tail = self._regions[0][0]
        if tail <= self._regions[-1][0]:  # in use: [tail, head)
            if self._head + need <= self.size:
                return self._head
            return HEADER if HEADER + need <= tail else None
        # wrapped, in use: [tail, size) and [HEADER, head)
        return self._head if self._head + need <= tail else None

    def place(self, array):
        """Copy ``array`` into a free region; ``(view, [offset, generation])`` or None."""
        need = REGION + _align(array.nbytes)
        with self._lock:
            start = self._find(need)
            if start is None:
                return None
            self._generation += 1
            generation = self._generation
            self._regions.append((start, generation))
            self._head = start + need
            self._buf[start:start + 8].view(_GEN)[0] = generation
        data = start + REGION
        view = self._buf[data:data + array.nbytes].view(array.dtype).reshape(array.shape)
        np.copyto(view, array, casting='no')
        return view, [start, generation]


class Mapping:
    """The receiving side of a peer's ring: views of its regions, released when unused."""

    def __init__(self, offer, accept_other_hosts):
        """Open the ring that ``offer`` (a Ring's ``offer()``) describes; OSError if this
        process cannot see it (another host), ValueError if the offer is malformed."""
        pid, fd, size = offer.get('pid'), offer.get('fd'), offer.get('size')
        nonce = offer.get('nonce')
        if not all(type(v) is int and v > 0 for v in (pid, size)) or type(fd) is not int or \
                not isinstance(nonce, str) or len(nonce) != 32:
            raise ValueError('malformed shared-memory offer')
        if not accept_other_hosts and offer.get('host') != host_identity():
            raise OSError('another host or network namespace')
        path = '/proc/%d/fd/%d' % (pid, fd)
        # only a ring: an offer must not make this process write into any other file
        if os.readlink(path) != '/memfd:%s (deleted)' % NAME:
            raise OSError('the offered descriptor is not a ring')
        own = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            if os.fstat(own).st_size != size:
                raise OSError('the shared memory has another size than offered')
            self._map = mmap.mmap(own, size)
        finally:
            os.close(own)
        if self._map[:16] != bytes.fromhex(nonce):
            self._map.close()
            raise OSError('the shared memory does not hold the offered nonce')
        self._buf = np.frombuffer(self._map, np.uint8)
        self.size = size

    def view(self, ref, dtype, shape, nbytes, seq=0):
        """The payload at ``ref`` = [offset, generation] as an array; released to the
        sender when the last view of it is gone. ValueError if ``ref`` is not a live
        region of this ring."""
        start, generation = self._check(ref, nbytes, HEADER)
        holder = self._holder(start, nbytes)
        weakref.finalize(holder, _release, self._buf, start, generation)
        return np.frombuffer(holder, dtype, count=nbytes // dtype.itemsize).reshape(shape)

    def _check(self, ref, nbytes, lowest):
        if not (isinstance(ref, list) and len(ref) == 2 and all(type(v) is int for v in ref)):
            raise ValueError('bad shared-memory reference %r' % (ref,))
        start, generation = ref
        if start < lowest or start % 64 or start + REGION + nbytes > self.size:
            raise ValueError('shared-memory region %d+%d outside the ring' % (start, nbytes))
        if self._buf[start:start + 8].view(_GEN)[0] != generation:
            raise ValueError('shared-memory region %d %s' % (start, STALE))
        return start, generation

    def _holder(self, start, nbytes):
        # a ctypes object owns the views: numpy's bases of every view made from this one
        # lead to it, so its finalizer runs when the last of them is gone
        return (ctypes.c_char * max(nbytes, 1)).from_buffer(self._map, start + REGION)


def _release(buf, start, generation):
    buf[start + 8:start + 16].view(_GEN)[0] = generation


BOARD = 4096                   # a store's first bytes: nonce, then each reader's board
MAX_READERS = BOARD // 8 - 8   # (the first 64 bytes hold the nonce)


class Store:
    """The serving side of values several peers read: written once, sent by reference.

    ``alloc`` gives an array in the store (None when full); ``ref`` tells whether an
    array is one, ``sent`` records a message that named it. Used on the I/O thread.
    """

    def __init__(self, size):
        self.size = size
        self.fd, self._map, self.nonce = _memfd(size)
        self._buf = np.frombuffer(self._map, np.uint8)
        self._board = self._buf[64:BOARD].view(_GEN)
        self._regions = {}       # start -> [end, generation, held, {reader: last seq}]
        self._arrays = {}        # id(array) -> (weakref to it, start)
        self._readers = {}       # peer -> its index on the board
        self._generation = 0

    def offer(self, peer):
        """The body of the offer that lets ``peer`` map the store (None: no board slot)."""
        index = self._readers.get(peer)
        if index is None:
            taken = set(self._readers.values())
            index = next((i for i in range(MAX_READERS) if i not in taken), None)
            if index is None:
                return None
            self._readers[peer] = index
            self._board[index] = 0
        return {'pid': os.getpid(), 'fd': self.fd, 'size': self.size,
                'nonce': self.nonce.hex(), 'host': host_identity(), 'reader': index}

    def forget(self, peer):
        """``peer`` is gone: what it was sent no longer waits for it."""
        index = self._readers.pop(peer, None)
        for region in self._regions.values():
            region[3].pop(index, None)

    def _free(self, region):
        return not region[2] and all(self._board[i] >= seq for i, seq in region[3].items())

    def alloc(self, shape, dtype):
        """A new array in the store, or None when there is no room."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        need = REGION + _align(nbytes)
        for start in [s for s, r in self._regions.items() if self._free(r)]:
            del self._regions[start]
        start = BOARD
        for begin in sorted(self._regions):
            if begin - start >= need:
                break
            start = self._regions[begin][0]
        if start + need > self.size:
            return None
        self._generation += 1
        self._regions[start] = [start + need, self._generation, True, {}]
        self._buf[start:start + 8].view(_GEN)[0] = self._generation
        holder = (ctypes.c_char * max(nbytes, 1)).from_buffer(self._map, start + REGION)
        weakref.finalize(holder, self._dropped, start, self._generation)
        array = np.frombuffer(holder, dtype, count=nbytes // dtype.itemsize).reshape(shape)
        self._arrays[id(array)] = (weakref.ref(array), start)
        return array

    def _dropped(self, start, generation):
        region = self._regions.get(start)
        if region is not None and region[1] == generation:
            region[2] = False
        self._arrays = {k: v for k, v in self._arrays.items() if v[0]() is not None}

    def ref(self, array, peer):
        """``[offset, generation, 1]`` if ``array`` is an array of the store that
        ``peer`` can read, else None."""
        entry = self._arrays.get(id(array))
        if entry is None or entry[0]() is not array or peer not in self._readers:
            return None
        start = entry[1]
        return [start, self._regions[start][1], 1]

    def sent(self, ref, peer, seq):
        """A message numbered ``seq`` to ``peer`` names the region of ``ref``."""
        self._regions[ref[0]][3][self._readers[peer]] = seq


class StoreMapping(Mapping):
    """A peer's store as this process reads it: views, and the board entry it keeps up
    to date (every message up to that number has been delivered and has no live view
    of the store left; ``delivered`` is told each message's number, in order)."""

    def __init__(self, offer, accept_other_hosts):
        Mapping.__init__(self, offer, accept_other_hosts)
        index = offer.get('reader')
        if type(index) is not int or not 0 <= index < MAX_READERS:
            raise ValueError('malformed shared-memory offer')
        self._slot = self._buf[64 + 8 * index:64 + 8 * index + 8].view(_GEN)
        self._live = {}          # message seq -> live views
        self._in_order = 0       # every message up to this one was delivered
        self._lock = threading.Lock()

    def view(self, ref, dtype, shape, nbytes, seq=0):
        """The value at ``ref`` = [offset, generation, 1] in a message numbered ``seq``."""
        if not (isinstance(ref, list) and len(ref) == 3 and ref[2] == 1):
            raise ValueError('bad shared-memory reference %r' % (ref,))
        start, _ = self._check(ref[:2], nbytes, BOARD)
        holder = self._holder(start, nbytes)
        with self._lock:
            self._live[seq] = self._live.get(seq, 0) + 1
        weakref.finalize(holder, self._done, seq)
        return np.frombuffer(holder, dtype, count=nbytes // dtype.itemsize).reshape(shape)

    def delivered(self, seq):
        """The peer's message ``seq`` was delivered (and every one before it)."""
        with self._lock:
            self._in_order = max(self._in_order, seq)
            self._publish()

    def _done(self, seq):
        with self._lock:
            self._live[seq] -= 1
            if not self._live[seq]:
                del self._live[seq]
            self._publish()

    def _publish(self):
        # (a message re-sent after a loss may still come: never past what was delivered)
        through = min(self._in_order, min(self._live) - 1 if self._live else self._in_order)
        if through > self._slot[0]:
            self._slot[0] = through
