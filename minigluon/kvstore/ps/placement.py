"""Where each key lives: which servers hold which contiguous part of it.

Arrays under ``MXNET_KVSTORE_BIGARRAY_BOUND`` elements (config.BIGARRAY_BOUND by
default) go whole to one server chosen
by a stable hash of the key (never Python's salted ``hash``), so every process picks
the same one; bigger arrays are cut into contiguous slices over all servers. Each
slice is further cut into messages of at most ``chunk_bytes``, so no single message
is large and sending overlaps with the servers' work.
"""
import hashlib
from collections import namedtuple

Part = namedtuple('Part', 'index server start stop')


def stable_hash(key):
    """A hash of ``key`` that is the same in every process (Python's ``hash`` of a str is not),
    so every worker places a key on the same server.
    """
    tag = ('i:%d' % key) if isinstance(key, int) else ('s:' + key)
    return int.from_bytes(hashlib.sha1(tag.encode('utf-8')).digest()[:8], 'little')


def _chunks(start, stop, chunk):
    while start < stop:
        yield start, min(stop, start + chunk)
        start += chunk


def plan(key, size, itemsize, num_servers, bound, chunk_bytes):
    """The parts of a flattened array of ``size`` elements, in order."""
    chunk = max(1, chunk_bytes // itemsize)
    if size < bound or num_servers == 1:
        server = stable_hash(key) % num_servers
        slices = [(server, 0, size)]
    else:
        base, extra = divmod(size, num_servers)
        slices, start = [], 0
        for server in range(num_servers):
            stop = start + base + (1 if server < extra else 0)
            slices.append((server, start, stop))
            start = stop
    parts = []
    for server, start, stop in slices:
        for a, b in _chunks(start, stop, chunk):
            parts.append(Part(len(parts), server, a, b))
    if not parts:  # an empty array still needs one (empty) part to exist
        parts.append(Part(0, stable_hash(key) % num_servers, 0, 0))
    return parts
