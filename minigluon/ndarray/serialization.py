"""``nd.save``/``nd.load``: lists or dicts of arrays in MXNet's NDArray file format.

``save`` writes MXNet's own binary format (``mxnet_format.py``), so ``.params`` files
move both ways between MXNet and minigluon. ``load`` reads that format in every
version MXNet 1.x reads, and the zip archives of earlier minigluon versions
(``zip_format.py``). Nothing is unpickled. Writes are atomic: a temporary file in
the same folder is renamed over the destination.
"""
import os
import socket
import tempfile

from ..base import MXNetError, MXNetTypeError
from ..context import Context, current_context
from . import mxnet_format, zip_format
from .ndarray import NDArray

_NPY_MAGIC = b'\x93NUMPY'


def atomic_write(path, write):
    """Call ``write(file)`` on a temporary file, then rename it to ``path``.

    The temporary file is named after the host and process writing it, so the next
    save of ``path`` removes what a save killed on this host left behind.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    mine = '.%s.mgsave-%s-' % (os.path.basename(path), socket.gethostname())
    _remove_abandoned(folder, mine)
    fd, tmp = tempfile.mkstemp(prefix='%s%d-' % (mine, os.getpid()), dir=folder)
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


def _remove_abandoned(folder, prefix):
    """Remove the temporary files ``prefix<pid>-*`` whose process no longer runs."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].split('-', 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue            # still writing
        except ProcessLookupError:
            pass
        except OSError:         # (another user's process: alive)
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict of name -> NDArray to ``fname``.

    The file is MXNet's NDArray list, readable by MXNet's ``nd.load``. Arrays with a
    zero-size dimension or no dimensions (scalars) exist only in MXNet's numpy shape
    semantics; a file holding one is written in that version (V3), which MXNet loads
    inside ``mx.util.np_shape(True)``.

    Parameters
    ----------
    fname : str
        The file to write; it is written to a temporary file first and then renamed,
        replacing any existing file.
    data : NDArray, list of NDArray or dict of str to NDArray
        What to save; a single array is saved as a list of one.

    Raises
    ------
    MXNetError
        If ``data`` is none of these, or a dict key is not a string.
    """
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names = list(data.keys())
        arrays = list(data.values())
        if not all(isinstance(n, str) for n in names):
            raise MXNetError('nd.save: dict keys must be strings')
    elif isinstance(data, (list, tuple)):
        names, arrays = None, list(data)
    else:
        raise MXNetError('nd.save: data must be an NDArray, a list or a dict of NDArrays, got %s'
                         % type(data).__name__)
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise MXNetError('nd.save: item %s is a %s, not an NDArray'
                             % (names[i] if names else i, type(a).__name__))
    numpy_shape = mxnet_format.needs_numpy_shape([a.shape for a in arrays])
    records = ((a.asnumpy(), a.context.device_typeid, a.context.device_id) for a in arrays)
    atomic_write(fname, lambda f: mxnet_format.write(f, len(arrays), records, names,
                                                     numpy_shape))


def _decode(fname, data):
    """``(arrays, names)``, choosing the reader by the file's first bytes."""
    if mxnet_format.is_mxnet_list(data):
        try:
            return mxnet_format.decode(data)
        except mxnet_format.FormatError as exc:
            raise MXNetError('nd.load: %s is not a valid MXNet NDArray file: %s'
                             % (fname, exc)) from None
    if zip_format.is_zip(data):
        try:
            return zip_format.decode(data)
        except zip_format.ExpansionError as exc:
            raise MXNetError('nd.load: %s: %s' % (fname, exc)) from None
        except zip_format.FormatError as exc:
            raise MXNetError('nd.load: %s is not a valid minigluon array file (%s); it must be '
                             'written by nd.save or save_parameters' % (fname, exc)) from None
    if data.startswith(_NPY_MAGIC):
        raise MXNetError('nd.load: %s is a single numpy .npy array, not an NDArray file; '
                         'read it with numpy.load' % (fname,))
    raise MXNetError('nd.load: %s is not an NDArray file: it starts with %r, neither MXNet\'s '
                     'NDArray list magic 0x%x nor a zip archive of an earlier minigluon; it '
                     'must be written by nd.save or save_parameters (of MXNet or minigluon)'
                     % (fname, bytes(data[:8]), mxnet_format.LIST_MAGIC))


def load_frombuffer(buf, ctx=None):
    """Load a list or dict of NDArrays from the bytes of a file ``save`` wrote (e.g. read
    from a network or an archive)."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetTypeError('load_frombuffer: buf must be bytes, got %s' % type(buf).__name__)
    return _to_arrays(*_decode('the buffer', bytes(buf)), ctx)


def _to_arrays(arrays, names, ctx):
    ctx = current_context() if ctx is None else Context(ctx)
    out = [NDArray(ctx.put(a), ctx) for a in arrays]
    return out if names is None else dict(zip(names, out))


def load(fname, ctx=None):
    """Load what ``save`` (or MXNet's ``nd.save``) wrote: a list, or a dict of NDArrays.

    Arrays go to ``ctx`` (default: the current context), whatever context the file
    names. As in MXNet, a file without names loads as a list, so an empty dict comes
    back as an empty list.

    Parameters
    ----------
    fname : str
        The file: MXNet's NDArray list format, or the zip archive earlier minigluon
        versions wrote.
    ctx : Context, optional
        Where to put the arrays; the current context by default.

    Returns
    -------
    list of NDArray or dict of str to NDArray

    Raises
    ------
    MXNetError
        If the file does not exist or is not a valid array file.
    """
    try:
        with open(fname, 'rb') as f:
            data = f.read()
    except FileNotFoundError:
        raise MXNetError('nd.load: no such file %s' % (fname,)) from None
    return _to_arrays(*_decode(fname, data), ctx)
