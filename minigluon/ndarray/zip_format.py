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
            raise FormatError(exc) from None
    if kind == 'dict':
        if not isinstance(names, list) or len(names) != count \
                or not all(isinstance(n, str) for n in names):
            raise FormatError('names do not match the arrays')
        return arrays, names
    return arrays, None
