"""Messages on the wire: a session id and HMAC tag, a small JSON header, then raw array frames.

``[sid + tag, header, array_0, array_1, ...]`` where ``sid`` names the connection's
session (session.py; all zeros for the handshake, tagged under the job key) and
``tag`` is HMAC-SHA256 of the header under that session's key. The header names the
command, the sender, the destination and the sender's sequence number in the
session, and each array's dtype (from a whitelist) and shape; array frames are raw
C-order bytes whose lengths must match. Nothing is ever unpickled or evaluated: a
frame set that fails authentication is rejected with ``WireError``; an authentic one
that fails a later check with ``Rejected``, which tells whom to answer.
"""
import hashlib
import hmac
import json

import numpy as np

VERSION = 1
MAX_HEADER_BYTES = 64 * 1024
# each array frame needs its spec in the header, at least 12 bytes ('["bool",[]],')
MAX_FRAMES = 2 + MAX_HEADER_BYTES // 12
DTYPES = frozenset(['float16', 'float32', 'float64', 'int8', 'int32', 'int64', 'uint8', 'bool',
                    'uint32'])
COMMANDS = frozenset([
    'register', 'book', 'heartbeat', 'heartbeat_ack', 'barrier', 'barrier_done', 'dead',
    'abort', 'finish', 'terminate', 'init', 'push', 'pull', 'release', 'reply',
    'set_optimizer', 'get_optimizer', 'save_states', 'load_states', 'ack', 'transport',
    'hello', 'challenge', 'replicate', 'adopt', 'backup', 'reroute',
])
# requests that expect an answer: a malformed one is answered with its error
REQUESTS = frozenset(['register', 'barrier', 'finish', 'init', 'push', 'pull',
                      'set_optimizer', 'get_optimizer', 'save_states', 'load_states',
                      'replicate', 'adopt'])
MAX_DIMENSION = 1 << 40       # larger than any array this store could hold
SID_BYTES = 16
NO_SESSION = bytes(SID_BYTES)  # handshake messages, tagged with the job key
_TAG_BYTES = 32


class WireError(ValueError):
    """A received frame set is malformed or not authentic."""


class Rejected(WireError):
    """An authentic message that fails a check; ``header`` is what could be read of it
    (a dict with a valid 'cmd', 'src' and 'seq', or None)."""

    def __init__(self, reason, header=None):
        WireError.__init__(self, reason)
        self.header = header


class Message:
    """A decoded message: header fields as attributes, arrays as numpy views."""
    __slots__ = ('cmd', 'src', 'seq', 'req', 'key', 'part', 'body', 'err', 'arrays', 'shm',
                 'to')

    def __init__(self, cmd, src, seq=0, req=None, key=None, part=None, body=None, err=None,
                 arrays=(), shm=None, to=None):
        self.cmd, self.src, self.seq, self.req = cmd, src, seq, req
        self.key, self.part, self.body, self.err = key, part, body, err
        self.arrays = list(arrays)
        self.shm = shm  # per array: its place in shared memory (shm.py), or None: a frame
        self.to = to

    def __repr__(self):
        arrays = ','.join('%s%s' % (a.dtype, list(a.shape)) for a in self.arrays)
        return '<%s from %s seq=%s req=%s key=%r part=%s%s%s>' % (
            self.cmd, self.src, self.seq, self.req, self.key, self.part,
            ' arrays=[%s]' % arrays if arrays else '', ' err=%r' % self.err if self.err else '')


def encode_key(key):
    """A key as JSON for a header: ``['i', n]`` for an int, ``['s', text]`` for a str."""
    return None if key is None else (['i', key] if isinstance(key, int) else ['s', key])


def decode_key(raw):
    """A key from its header form (``encode_key``); WireError if it is not one."""
    if raw is None:
        return None
    if (isinstance(raw, list) and len(raw) == 2 and
            ((raw[0] == 'i' and type(raw[1]) is int) or (raw[0] == 's' and isinstance(raw[1], str)
                                                         and len(raw[1]) <= 1024))):
        return raw[1]
    raise Rejected('bad key %.100r%s' % (raw, '...' if len(repr(raw)) > 100 else ''))


def encode(key, msg, sid=NO_SESSION):
    """Frames for ``msg`` in session ``sid`` with its ``key``: [sid + tag, header, *arrays]
    (arrays stay zero-copy buffers)."""
    # (not np.ascontiguousarray: it turns a 0-d array into shape (1,))
    arrays = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in msg.arrays]
    header = {'v': VERSION, 'cmd': msg.cmd, 'src': msg.src, 'seq': msg.seq}
    if msg.to is not None:
        header['to'] = msg.to
    if msg.req is not None:
        header['req'] = msg.req
    if msg.key is not None:
        header['key'] = encode_key(msg.key)
    if msg.part is not None:
        header['part'] = msg.part
    if msg.body is not None:
        header['body'] = msg.body
    if msg.err is not None:
        header['err'] = msg.err
    if arrays:
        header['arrays'] = [[a.dtype.name, list(a.shape)] for a in arrays]
        if msg.shm:
            header['shm'] = msg.shm
            arrays = [a for a, ref in zip(arrays, msg.shm) if ref is None]
    raw = json.dumps(header, separators=(',', ':')).encode('utf-8')
    if len(raw) > MAX_HEADER_BYTES:
        raise ValueError('message header of %d bytes exceeds %d' % (len(raw), MAX_HEADER_BYTES))
    tag = hmac.new(key, raw, hashlib.sha256).digest()
    return [sid + tag, raw] + arrays


def _check_int(value, name, minimum=0):
    if type(value) is not int or value < minimum:
        raise Rejected('bad %s %.100r' % (name, value))
    return value


def session_of(frames):
    """The session id a frame set claims (not yet authenticated); WireError if none."""
    if len(frames) < 2:
        raise WireError('%d frames, need at least 2' % len(frames))
    first = _bytes(frames[0])
    if len(first) != SID_BYTES + _TAG_BYTES:
        raise WireError('session id and tag of %d bytes' % len(first))
    return first[:SID_BYTES]


def decode(key, frames, shm_view=None):
    """A Message from received frames (bytes or zmq Frames) tagged with ``key``.

    ``shm_view(src, seq, ref, dtype, shape, nbytes)`` gives an array placed in shared
    memory (shm.py; ValueError if ``ref`` is bad); without it such a message is rejected.
    Raises WireError if they are not authentic or name shared memory that cannot be
    viewed (e.g. a duplicate's, released already), Rejected if they are authentic but
    anything else is off; nothing else escapes.
    """
    session_of(frames)
    tag, raw = _bytes(frames[0])[SID_BYTES:], _bytes(frames[1])
    if len(raw) > MAX_HEADER_BYTES:
        raise WireError('header of %d bytes' % len(raw))
    expected = hmac.new(key, raw, hashlib.sha256).digest()
    if not hmac.compare_digest(tag, expected):
        raise WireError('authentication failed (the sender does not hold the job secret, or '
                        'the message belongs to another session or job)')
    try:
        header = json.loads(raw.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError):  # (deep nesting: RecursionError)
        raise Rejected('header is not JSON') from None
    if not isinstance(header, dict) or header.get('v') != VERSION:
        raise Rejected('bad header version')
    cmd, src, seq = header.get('cmd'), header.get('src'), header.get('seq')
    if not isinstance(cmd, str) or cmd not in COMMANDS:
        raise Rejected('unknown command %.100r' % (cmd,))
    if not isinstance(src, str) or not 0 < len(src) <= 64:
        raise Rejected('bad sender %.100r' % (src,))
    if type(seq) is not int or seq < 0:
        raise Rejected('bad seq %.100r' % (seq,))
    try:
        return _decode_rest(header, cmd, src, seq, frames, shm_view)
    except WireError as exc:  # (Rejected, or an authentic header naming memory gone by)
        exc.header = header
        raise
    except Exception as exc:  # whatever the reason, nothing escapes decoding
        raise Rejected('%s: %s' % (type(exc).__name__, exc), header) from None


def _decode_rest(header, cmd, src, seq, frames, shm_view):
    req = header.get('req')
    if req is not None:
        _check_int(req, 'req')
    part = header.get('part')
    if part is not None:
        _check_int(part, 'part')
    to = header.get('to')
    if to is not None and not (isinstance(to, str) and 0 < len(to) <= 64):
        raise Rejected('bad destination %.100r' % (to,))
    body = header.get('body')
    if body is not None and not isinstance(body, dict):
        raise Rejected('body must be an object')
    err = header.get('err')
    if err is not None and not isinstance(err, str):
        raise Rejected('err must be a string')
    specs = header.get('arrays', [])
    if not isinstance(specs, list):
        raise Rejected('bad array specs')
    refs = header.get('shm') or [None] * len(specs)
    if not isinstance(refs, list) or len(refs) != len(specs):
        raise Rejected('bad shared-memory references')
    inline = [i for i, ref in enumerate(refs) if ref is None]
    if len(inline) != len(frames) - 2:
        raise Rejected('header announces %d arrays in frames but %d data frames came'
                       % (len(inline), len(frames) - 2))
    frame_of = dict(zip(inline, frames[2:]))
    arrays = []
    for i, spec in enumerate(specs):
        if not (isinstance(spec, list) and len(spec) == 2 and isinstance(spec[0], str)
                and spec[0] in DTYPES
                and isinstance(spec[1], list) and len(spec[1]) <= 32):
            raise Rejected('bad array spec %.200r' % (spec,))
        dtype = np.dtype(spec[0])
        shape = tuple(_check_int(n, 'dimension') for n in spec[1])
        count = 1
        for n in shape:
            if n > MAX_DIMENSION:
                raise Rejected('dimension %d in shape %s is too large' % (n, list(shape)))
            count *= n
        if refs[i] is not None:
            arrays.append(_shared(shm_view, src, seq, refs[i], dtype, shape,
                                  count * dtype.itemsize))
            continue
        frame = frame_of[i]
        buf = frame.buffer if hasattr(frame, 'buffer') else memoryview(frame)
        if buf.nbytes != count * dtype.itemsize:
            raise Rejected('array frame of %d bytes does not hold %s %s'
                           % (buf.nbytes, spec[0], list(shape)))
        arrays.append(np.frombuffer(buf, dtype=dtype).reshape(shape))
    return Message(cmd, src, seq, req, decode_key(header.get('key')), part, body, err, arrays,
                   shm=header.get('shm'), to=to)


def _shared(shm_view, src, seq, ref, dtype, shape, nbytes):
    if shm_view is None:
        raise WireError('an array in shared memory, but this node shares none')
    try:
        return shm_view(src, seq, ref, dtype, shape, nbytes)
    except ValueError as exc:
        raise WireError(str(exc)) from None


def _bytes(frame):
    return frame.bytes if hasattr(frame, 'bytes') else bytes(frame)
