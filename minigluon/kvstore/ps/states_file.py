"""The file of a distributed job's optimizer states: each server's blob plus JSON.

An ``.npz`` archive holding ``server_<rank>`` (the bytes of that server's
``Updater.get_states``) and ``__meta__`` (JSON: format and number of servers), so
it is only loaded back into a job with as many servers.
"""
import json
import os
import zipfile

import numpy as np

from ...base import MXNetError
from ...ndarray.serialization import atomic_write
from ...ndarray.zip_format import read_member

_FORMAT = 'minigluon.dist-optimizer-states'


def save(fname, blobs):
    """Write ``{server rank: uint8 array}`` to ``fname`` (atomically)."""
    payload = {'server_%d' % rank: blob for rank, blob in blobs.items()}
    meta = json.dumps({'format': _FORMAT, 'num_servers': len(blobs)})
    payload['__meta__'] = np.frombuffer(meta.encode('utf-8'), dtype=np.uint8)
    atomic_write(fname, lambda f: np.savez(f, **payload))


def load(fname, servers):
    """``{server rank: uint8 array}`` from ``fname``, for a job with ``servers``."""
    try:
        size = os.path.getsize(fname)
        with np.load(fname, allow_pickle=False) as archive:
            meta = json.loads(bytes(read_member(archive, '__meta__', size)).decode('utf-8'))
            blobs = {n: read_member(archive, n, size) for n in archive.files
                     if n.startswith('server_')}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError, NotImplementedError,
            RuntimeError) as exc:
        raise MXNetError('load_optimizer_states: %s is not a distributed optimizer state '
                         'file: %s' % (fname, exc)) from None
    if meta.get('format') != _FORMAT or meta.get('num_servers') != len(servers):
        raise MXNetError('load_optimizer_states: %s was saved by a job with %s servers; this '
                         'job has %d' % (fname, meta.get('num_servers'), len(servers)))
    return {rank: blobs['server_%d' % rank] for rank in servers}
