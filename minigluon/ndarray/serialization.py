"""``nd.save``/``nd.load``: lists or dicts of arrays in a zip of ``.npy`` files.

The file is a numpy ``.npz`` archive that never contains pickles: one entry per
array (``arr_0``, ``arr_1``, ...) plus ``__meta__``, a JSON document giving the kind
(list or dict) and the names. Writes are atomic: a temporary file in the same folder
is renamed over the destination.
"""
import json
import os
import tempfile
import zipfile

import numpy as np

from ..base import MXNetError
from ..context import Context, current_context
from .dtypes import SUPPORTED_DTYPES
from .ndarray import NDArray

FORMAT = 'minigluon.ndarray'
VERSION = 1


def atomic_write(path, write):
    """Call ``write(file)`` on a temporary file, then rename it to ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, 'wb') as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict of name -> NDArray to ``fname``."""
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names = list(data.keys())
        arrays = list(data.values())
        if not all(isinstance(n, str) for n in names):
            raise MXNetError('nd.save: dict keys must be strings')
        kind = 'dict'
    elif isinstance(data, (list, tuple)):
        names, arrays, kind = None, list(data), 'list'
    else:
        raise MXNetError('nd.save: data must be an NDArray, a list or a dict of NDArrays, got %s'
                         % type(data).__name__)
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise MXNetError('nd.save: item %s is a %s, not an NDArray'
                             % (names[i] if names else i, type(a).__name__))
    meta = json.dumps({'format': FORMAT, 'version': VERSION, 'kind': kind, 'names': names,
                       'count': len(arrays)})
    entries = {'__meta__': np.frombuffer(meta.encode('utf-8'), dtype=np.uint8)}
    for i, a in enumerate(arrays):
        entries['arr_%d' % i] = a.asnumpy()
    atomic_write(fname, lambda f: np.savez(f, **entries))


def _bad(fname, why):
    return MXNetError('nd.load: %s is not a valid minigluon array file (%s); it must be '
                      'written by nd.save or save_parameters' % (fname, why))


def load(fname, ctx=None):
    """Load what ``save`` wrote: a list or a dict of NDArrays (on ``ctx``, default cpu)."""
    ctx = current_context() if ctx is None else Context(ctx)
    try:
        archive = np.load(fname, allow_pickle=False)
    except FileNotFoundError:
        raise MXNetError('nd.load: no such file %s' % (fname,)) from None
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError,
            RuntimeError) as exc:  # zipfile: unsupported method/version, 'encrypted'
        raise _bad(fname, exc) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise _bad(fname, 'a single .npy array, not an archive')
    with archive:
        try:
            meta = json.loads(bytes(archive['__meta__']).decode('utf-8'))
            kind, names, count = meta['kind'], meta['names'], int(meta['count'])
            if meta.get('format') != FORMAT or kind not in ('list', 'dict'):
                raise ValueError('unknown format %r/%r' % (meta.get('format'), kind))
            arrays = []
            for i in range(count):
                a = archive['arr_%d' % i]
                if str(a.dtype) not in SUPPORTED_DTYPES:
                    raise ValueError('entry %d has unsupported dtype %s' % (i, a.dtype))
                arrays.append(a)
        except (KeyError, ValueError, TypeError, OSError, zipfile.BadZipFile, EOFError,
                NotImplementedError, RuntimeError) as exc:
            raise _bad(fname, exc) from None
    out = [NDArray(ctx.put(a), ctx) for a in arrays]
    if kind == 'dict':
        if not isinstance(names, list) or len(names) != count:
            raise _bad(fname, 'names do not match the arrays')
        return dict(zip(names, out))
    return out
