"""Reading the array files of earlier minigluon versions: a zip of ``.npy`` files + JSON.

Such a file is a numpy ``.npz`` archive without pickles: one entry per array
(``arr_0``, ``arr_1``, ...) plus ``__meta__``, a JSON document giving the kind (list
or dict) and the names. ``nd.save`` now writes MXNet's format (``mxnet_format.py``);
these files stay readable.
"""
import io
import json
import zipfile

import numpy as np

from .dtypes import SUPPORTED_DTYPES

FORMAT = 'minigluon.ndarray'
# Local file header, and the end record that is all an empty archive holds.
ZIP_MAGICS = (b'PK\x03\x04', b'PK\x05\x06')


class FormatError(ValueError):
    """The bytes are not a valid minigluon zip array file; the message says why."""


def is_zip(head):
    """Whether the bytes ``head`` (at least the first four of a file) start a zip archive,
    as an ``.npz`` file does.
    """
    return head[:4] in ZIP_MAGICS


def read_member(archive, name, size):
    """Entry ``name`` of the open ``.npz`` ``archive`` (``size``: the archive's bytes),
    with what its header claims checked against what the entry can hold before
    anything is allocated (a forged header must not ask for terabytes).

    Raises
    ------
    ValueError
        Saying which entry claims what.
    """
    info = archive.zip.getinfo(name + '.npy')
    stored = info.compress_type == zipfile.ZIP_STORED
    if info.compress_size > size or info.file_size > (
            info.compress_size if stored else 1100 * info.compress_size):  # (deflate: <1032x)
        raise ValueError('entry %r claims %d bytes in %d compressed ones, in an archive of %d'
                         % (name, info.file_size, info.compress_size, size))
    with archive.zip.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError('entry %r is a .npy file of version %s' % (name, version))
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize > info.file_size:
        raise ValueError('entry %r claims %s %s (%d bytes) but holds %d bytes'
                         % (name, dtype, shape, count * dtype.itemsize, info.file_size))
    try:
        return archive[name]
    except MemoryError:
        raise ValueError('entry %r (%s %s) does not fit in memory' % (name, dtype, shape)) \
            from None


def decode(data):
    """``(arrays, names)`` from the bytes of a zip array file; names is None for a list."""
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError,
            RuntimeError) as exc:  # zipfile: unsupported method/version, 'encrypted'
        raise FormatError(exc) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise FormatError('a single .npy array, not an archive')
    with archive:
        try:
            meta = json.loads(bytes(read_member(archive, '__meta__', len(data))).decode('utf-8'))
            kind, names, count = meta['kind'], meta['names'], int(meta['count'])
            if meta.get('format') != FORMAT or kind not in ('list', 'dict'):
                raise ValueError('unknown format %r/%r' % (meta.get('format'), kind))
            arrays = []
            for i in range(count):
                a = read_member(archive, 'arr_%d' % i, len(data))
                if str(a.dtype) not in SUPPORTED_DTYPES:
                    raise ValueError('entry %d has unsupported dtype %s' % (i, a.dtype))
                arrays.append(a)
        except (KeyError, ValueError, TypeError, OSError, zipfile.BadZipFile, EOFError,
                NotImplementedError, RuntimeError) as exc:
            raise FormatError(exc) from None
    if kind == 'dict':
        if not isinstance(names, list) or len(names) != count \
                or not all(isinstance(n, str) for n in names):
            raise FormatError('names do not match the arrays')
        return arrays, names
    return arrays, None
