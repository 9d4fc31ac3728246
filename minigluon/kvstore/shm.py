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


class Ring:
    """The sending side: a memfd of ``size`` bytes cut into regions, reused in order.

    ``place`` may be called from any thread (the caller copies while the I/O thread
    sends); it returns ``None`` when there is no room.
    """

    def __init__(self, size):
        self.size = size
        self.fd = os.memfd_create(NAME, os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, size)   # sparse: pages are allocated when first written
            self._map = mmap.mmap(self.fd, size)
        except OSError:
            os.close(self.fd)
            raise
        self._buf = np.frombuffer(self._map, np.uint8)
        self.nonce = secrets.token_bytes(16)
        self._buf[:16] = np.frombuffer(self.nonce, np.uint8)
        self._regions = collections.deque()   # (start, generation), oldest first
        self._head = HEADER
        self._generation = 0
        self._lock = threading.Lock()
        self.ready = False                    # set once the peer has mapped it
        self.batch_bytes = 0                  # the most one message may carry (both ends agree)

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

    def view(self, ref, dtype, shape, nbytes):
        """The payload at ``ref`` = [offset, generation] as an array; released to the
        sender when the last view of it is gone. ValueError if ``ref`` is not a live
        region of this ring."""
        if not (isinstance(ref, list) and len(ref) == 2 and all(type(v) is int for v in ref)):
            raise ValueError('bad shared-memory reference %r' % (ref,))
        start, generation = ref
        if start < HEADER or start % 64 or start + REGION + nbytes > self.size:
            raise ValueError('shared-memory region %d+%d outside the ring' % (start, nbytes))
        if self._buf[start:start + 8].view(_GEN)[0] != generation:
            raise ValueError('shared-memory region %d was reused (a stale message)' % start)
        # a ctypes object owns the views: numpy's bases of every view made from this one
        # lead to it, so its finalizer runs when the last of them is gone
        holder = (ctypes.c_char * max(nbytes, 1)).from_buffer(self._map, start + REGION)
        weakref.finalize(holder, _release, self._buf, start, generation)
        return np.frombuffer(holder, dtype, count=nbytes // dtype.itemsize).reshape(shape)


def _release(buf, start, generation):
    buf[start + 8:start + 16].view(_GEN)[0] = generation
