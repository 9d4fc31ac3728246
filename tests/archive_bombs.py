"""Zip archives that expand far beyond their own size, written without expanding them.

A member is ``head`` (e.g. a ``.npy`` header) followed by ``zeros`` zero bytes, deflated.
One compressed MiB of zeros (about 1 KiB, independent of what came before it after a
full flush) is repeated, so a member of 1 GiB costs the writer about 1 MB of memory and
the time of its CRC. Imported by tests anywhere under tests/ (tests/ is on sys.path).
"""
import io
import json
import struct
import tracemalloc
import zlib

import numpy as np

from minigluon.optimizer.updater import FORMAT as STATES_FORMAT

MIB = 1 << 20
GIB = 1 << 30
_ZEROS = bytes(MIB)


def npy_header(nbytes):
    """The ``.npy`` header of a uint8 array of ``nbytes`` elements."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {'descr': '|u1', 'fortran_order': False, 'shape': (nbytes,)})
    return buf.getvalue()


def npy_json(doc):
    """A whole ``.npy`` file holding ``doc`` as JSON bytes (how minigluon stores metadata)."""
    buf = io.BytesIO()
    raw = np.frombuffer(json.dumps(doc).encode('utf-8'), dtype=np.uint8)
    np.lib.format.write_array(buf, raw, allow_pickle=False)
    return buf.getvalue()


def npy_zeros(nbytes):
    """``(head, zeros)`` of a member holding a uint8 array of ``nbytes`` zeros."""
    return npy_header(nbytes), nbytes


def array_file(member):
    """The bytes of a zip array file of earlier minigluon versions holding one array."""
    meta = {'format': 'minigluon.ndarray', 'kind': 'list', 'names': None, 'count': 1}
    return zip_bytes({'__meta__.npy': (npy_json(meta), 0), 'arr_0.npy': member})


def optimizer_states(member):
    """The bytes of ``Updater.get_states`` holding one array (and no state entries)."""
    header = {'format': STATES_FORMAT, 'version': 1, 'entries': [], 'index_update_count': [],
              'num_update': 0, 'optimizer': None}
    return zip_bytes({'__header__.npy': (npy_json(header), 0), 'arr_0.npy': member})


def peak_memory(fn, *args):
    """``(what fn(*args) returned or raised, the most bytes that Python and numpy allocated
    at once while it ran)``, over every thread of the process."""
    tracemalloc.start()
    try:
        try:
            result = fn(*args)
        except Exception as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _deflate(head, zeros):
    """(raw deflate stream, CRC-32, length) of ``head`` + ``zeros`` zero bytes."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [comp.compress(head) + comp.flush(zlib.Z_FULL_FLUSH)]
    crc = zlib.crc32(head)
    whole, rest = divmod(zeros, MIB)
    if whole:
        block = comp.compress(_ZEROS) + comp.flush(zlib.Z_FULL_FLUSH)
        parts += [block] * whole
        for _ in range(whole):
            crc = zlib.crc32(_ZEROS, crc)
    parts.append(comp.compress(bytes(rest)) + comp.flush())
    crc = zlib.crc32(bytes(rest), crc)
    return b''.join(parts), crc, len(head) + zeros


def zip_bytes(members):
    """A zip archive of deflated ``members``: ``{name: (head, zeros)}`` or
    ``{name: (head, zeros, declared)}``, where ``declared`` is the uncompressed size the
    headers state instead of the true one (a lying header)."""
    out, central = io.BytesIO(), []
    for name, spec in members.items():
        head, zeros = spec[:2]
        data, crc, size = _deflate(head, zeros)
        size = spec[2] if len(spec) > 2 else size
        assert size < 1 << 32, 'no zip64 here'
        raw = name.encode('utf-8')
        offset = out.tell()
        # version 20, no flags, method 8 (deflate), 1980-01-01 00:00
        fields = (20, 0, 8, 0, 0x21, crc, len(data), size, len(raw))
        out.write(struct.pack('<4s5H3L2H', b'PK\x03\x04', *fields, 0) + raw + data)
        central.append(struct.pack('<4sH5H3L5H2L', b'PK\x01\x02', 20, *fields, 0, 0, 0, 0, 0,
                                   offset) + raw)
    start = out.tell()
    out.write(b''.join(central))
    out.write(struct.pack('<4s4H2LH', b'PK\x05\x06', 0, 0, len(central), len(central),
                          out.tell() - start, start, 0))
    return out.getvalue()
