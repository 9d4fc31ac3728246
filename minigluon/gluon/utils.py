"""``gluon.utils``: splitting batches over devices, gradient clipping, checked downloads,
and the small helpers Blocks and Parameters share (hook handles, shape checks)."""
import hashlib
import os
import shutil
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import weakref

import numpy as np

from ..base import MXNetError, MXNetValueError
from ..ndarray.ndarray import NDArray, to_array

__all__ = ['split_data', 'split_and_load', 'clip_global_norm', 'check_sha1', 'download',
           'HookHandle', 'shape_is_known']

RETRY_DELAY_S = 1.0       # first back-off between download attempts, doubled each time
_MAX_RETRY_DELAY_S = 30.0
_SOCKET_TIMEOUT_S = 60.0


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Cut ``data`` into ``num_slice`` slices along ``batch_axis``.

    With ``even_split=False`` the first slices get one extra element when the length
    does not divide evenly.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise MXNetValueError(
            'data with shape %s cannot be evenly split into %d slices along axis %d. Use a '
            'batch size that is a multiple of %d or set even_split=False to allow uneven '
            'partitioning of data.' % (data.shape, num_slice, batch_axis, num_slice))
    if size < num_slice:
        raise MXNetValueError('too many slices (%d) for data with shape %s along axis %d'
                              % (num_slice, data.shape, batch_axis))
    step, extras = divmod(size, num_slice)
    bounds = np.cumsum([0] + [step + 1] * extras + [step] * (num_slice - extras))
    if batch_axis == 0:
        return [data[int(bounds[i]):int(bounds[i + 1])] for i in range(num_slice)]
    return [data.slice_axis(axis=batch_axis, begin=int(bounds[i]), end=int(bounds[i + 1]))
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` (NDArray or numpy array) over ``ctx_list``: one slice per device."""
    if not isinstance(data, NDArray):
        data = to_array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scale ``arrays`` in place so their joint L2 norm is at most ``max_norm``.

    Returns the norm before clipping (a float; an NDArray when ``check_isfinite`` is
    False, so no device synchronisation is forced).
    """
    if not arrays:
        raise MXNetError('clip_global_norm needs at least one array')
    ctx = arrays[0].context
    total = None
    for arr in arrays:
        sq = (arr.astype('float32', copy=False) ** 2).sum().as_in_context(ctx)
        total = sq if total is None else total + sq
    norm = total.sqrt()
    if check_isfinite:
        value = norm.asscalar()
        if not np.isfinite(value):
            warnings.warn(UserWarning('nan or inf is detected. Clipping results will be '
                                      'undefined.'), stacklevel=2)
        scale = max_norm / (value + 1e-8)
        if scale < 1.0:
            for arr in arrays:
                arr *= scale
        return value
    scale = nd_minimum_one(max_norm / (norm + 1e-8))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return norm


def nd_minimum_one(x):
    """``min(x, 1)`` elementwise, kept on x's device."""
    return x.clip(-np.inf, 1.0)


def _file_digest(filename, algorithm):
    digest = hashlib.new(algorithm)
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of ``filename``'s content is ``sha1_hash`` (hex, any case)."""
    return _file_digest(filename, 'sha1') == sha1_hash.lower()


def _target_path(url, path):
    name = os.path.basename(urllib.parse.urlparse(url).path)
    if path is None:
        if not name:
            raise MXNetError('download: cannot derive a file name from the URL %r; pass path='
                             % url)
        return name
    path = os.path.expanduser(os.fspath(path))
    if os.path.isdir(path):
        if not name:
            raise MXNetError('download: cannot derive a file name from the URL %r; pass a file '
                             'path, not a folder' % url)
        return os.path.join(path, name)
    return path


def _fetch(url, tmp, verify_ssl):
    """One attempt: stream ``url`` into the open file ``tmp``; errors propagate."""
    context = None if verify_ssl else ssl._create_unverified_context()
    with urllib.request.urlopen(url, timeout=_SOCKET_TIMEOUT_S, context=context) as response:
        expected = response.headers.get('Content-Length')
        tmp.seek(0)
        tmp.truncate()
        shutil.copyfileobj(response, tmp, 1 << 20)
        tmp.flush()
        if expected is not None and tmp.tell() != int(expected):
            raise OSError('connection closed after %d of %s bytes' % (tmp.tell(), expected))


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True,
             md5_hash=None):
    """Download ``url`` to ``path`` and return the file's path.

    The file is written to a temporary file beside the target, checked, then renamed
    into place, so ``path`` never holds a partial or unverified download.

    Parameters
    ----------
    url : str
    path : str, optional
        Destination file or existing folder; the URL's last part in the current
        folder by default.
    overwrite : bool, default False
        Download even when the file exists (and matches the checksum, if one is given).
    sha1_hash : str, optional
        Expected SHA-1 (hex). A mismatch raises and leaves no file.
    retries : int, default 5
        Attempts after the first one on network errors, with exponential back-off.
        Client errors (404, ...) and checksum mismatches are not retried.
    verify_ssl : bool, default True
        Verify the server's TLS certificate.
    md5_hash : str, optional
        Expected MD5 (hex), for files whose publishers give only an MD5.
    """
    if not isinstance(retries, int) or retries < 0:
        raise MXNetError('download: retries must be an int >= 0, got %r' % (retries,))
    if not verify_ssl:
        warnings.warn('Unverified HTTPS request is being made (verify_ssl=False). Adding '
                      'certificate verification is strongly advised.')
    fname = _target_path(url, path)
    checks = [(name, value.lower()) for name, value in (('sha1', sha1_hash), ('md5', md5_hash))
              if value]
    if not overwrite and os.path.exists(fname) and all(
            _file_digest(fname, name) == value for name, value in checks):
        return fname
    folder = os.path.dirname(os.path.abspath(fname))
    os.makedirs(folder, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix='.%s.' % os.path.basename(fname), suffix='.part',
                                    dir=folder)
    try:
        with os.fdopen(fd, 'w+b') as tmp:
            _fetch_with_retries(url, tmp, retries, verify_ssl)
        for name, value in checks:
            actual = _file_digest(tmp_name, name)
            if actual != value:
                raise MXNetError(
                    'download: %s checksum mismatch for %s: expected %s, got %s. The download '
                    'was discarded. The server may serve a different or corrupted file; check '
                    'the URL or fetch the file by hand' % (name.upper(), url, value, actual))
        os.replace(tmp_name, fname)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return fname


def _fetch_with_retries(url, tmp, retries, verify_ssl):
    delay = RETRY_DELAY_S
    for attempt in range(retries + 1):
        try:
            print('Downloading %s ...' % url, file=sys.stderr)
            _fetch(url, tmp, verify_ssl)
            return
        except urllib.error.HTTPError as exc:
            error = exc
            if exc.code < 500:  # the request is wrong: asking again will not help
                break
        except (urllib.error.URLError, OSError) as exc:  # refused, reset, DNS, timeout, short
            error = exc
        if attempt < retries:
            print('download of %s failed (%s); retrying in %.3g s, %d attempt(s) left'
                  % (url, error, delay, retries - attempt), file=sys.stderr)
            time.sleep(delay)
            delay = min(delay * 2, _MAX_RETRY_DELAY_S)
    raise MXNetError('download of %s failed after %d attempt(s): %s. Check the network '
                     'connection, proxy settings (https_proxy) and the URL, or download the file '
                     'by hand' % (url, attempt + 1, error))


class HookHandle:
    """What ``register_forward_hook`` and friends return: ``detach()`` (or leaving a
    ``with`` block) removes the hook again."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    @property
    def id(self):
        """The key of the hook in its Block's table of hooks."""
        return self._id

    def attach(self, hooks_dict, hook):
        """Add ``hook`` to ``hooks_dict`` (an ordered dict of a Block) under a new key."""
        if self._hooks_dict_ref is not None:
            raise MXNetError('this HookHandle is attached already; a handle attaches once')
        self._id = object()  # the same function may be registered twice, each detachable
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Remove the hook from its Block; detaching twice does nothing."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None:
            hooks_dict.pop(self._id, None)

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def shape_is_known(shape):
    """Whether every dimension of ``shape`` is known (0, or -1 as in NumPy mode, marks an
    unknown one)."""
    return shape is not None and all(size > 0 for size in shape)
