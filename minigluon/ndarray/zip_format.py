"""Reading the array files of earlier minigluon versions: a zip of ``.npy`` files + JSON.

Such a file is a numpy ``.npz`` archive without pickles: one entry per array
(``arr_0``, ``arr_1``, ...) plus ``__meta__``, a JSON document giving the kind (list
or dict) and the names. ``nd.save`` now writes MXNet's format (``mxnet_format.py``);
these files stay readable. ``read_member`` is also how the optimizer-state archives
(``Updater.set_states``, ``kvstore/ps/states_file.py``) are read: never past what the
archive's own size allows.
"""
import io
import json
import os
import weakref
import zipfile

import numpy as np

from .dtypes import SUPPORTED_DTYPES

FORMAT = 'minigluon.ndarray'
# Local file header, and the end record that is all an empty archive holds.
ZIP_MAGICS = (b'PK\x03\x04', b'PK\x05\x06')

LIMIT_VARIABLE = 'MINIGLUON_ARCHIVE_MAX_BYTES'
# minigluon writes its archives uncompressed (np.savez), so their members never declare more
# bytes than the file holds: twice the file's size (at least 16 MiB, for a small archive
# recompressed by another tool) reads all of them, and caps what a compressed one (deflate
# expands up to 1032x) can make a reader allocate at a small multiple of its own size.
_MIN_LIMIT = 16 << 20
_within_limit = weakref.WeakKeyDictionary()  # open zip files whose members were summed


class FormatError(ValueError):
    """The bytes are not a valid minigluon zip array file; the message says why."""


class ExpansionError(FormatError):
    """The archive's members declare more bytes than ``expansion_limit`` allows (or the
    limit set in the environment is malformed)."""


def is_zip(head):
    """Whether the bytes ``head`` (at least the first four of a file) start a zip archive,
    as an ``.npz`` file does.
    """
    return head[:4] in ZIP_MAGICS


def expansion_limit(size):
    """The most bytes the members of an archive of ``size`` bytes may declare in all."""
    raw = os.environ.get(LIMIT_VARIABLE)
    if raw is None:
        return max(2 * size, _MIN_LIMIT)
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if limit < 0:
        raise ExpansionError('%s=%r is not a number of bytes; set it to the most bytes an '
                             'archive may expand to, or unset it' % (LIMIT_VARIABLE, raw))
    return limit


def _check_declared_total(zf, size):
    """Refuse the open zip file ``zf`` (of ``size`` bytes) when its members declare more
    bytes than ``expansion_limit`` allows, before any of them is read."""
    if zf in _within_limit:
        return
    total = sum(info.file_size for info in zf.infolist())
    limit = expansion_limit(size)
    if total > limit:
        why = (LIMIT_VARIABLE if LIMIT_VARIABLE in os.environ else
               'twice its size, at least %d MiB: minigluon writes archives uncompressed, so '
               'this one was compressed by another tool or forged' % (_MIN_LIMIT >> 20))
        raise ExpansionError(
            "the archive's members declare %d bytes once uncompressed, more than the %d "
            'allowed for its %d bytes (%s); if you trust it, set %s=%d or more'
            % (total, limit, size, why, LIMIT_VARIABLE, total))
    _within_limit[zf] = True


def read_member(archive, name, size):
    """Entry ``name`` of the open ``.npz`` ``archive`` (``size``: the archive's bytes),
    with what its header claims checked against what the entry can hold before
    anything is allocated (a forged header must not ask for terabytes), and the sizes
    all entries declare checked against ``expansion_limit(size)`` (a zip bomb must not
    expand). Reading stops at the declared size: zipfile inflates no further than it.

    Raises
    ------
    ValueError
        Saying which entry claims what; ``ExpansionError`` how much the archive declares.
    """
    _check_declared_total(archive.zip, size)
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
        except ExpansionError:
            raise
        except (KeyError, ValueError, TypeError, OSError, zipfile.BadZipFile, EOFError,
                NotImplementedError, RuntimeError) as exc:
            raise FormatError(exc) from None
    if kind == 'dict':
        if not isinstance(names, list) or len(names) != count \
                or not all(isinstance(n, str) for n in names):
            raise FormatError('names do not match the arrays')
        return arrays, names
    return arrays, None
