"""Sessions: every connection gets its own key by a challenge-response on the job secret.

A frame captured on the wire must be worth nothing anywhere else. So no message is
tagged with the secret itself: the node that opens a connection sends ``hello``
with a fresh nonce, the listening node answers ``challenge`` with a fresh session
id of its own, and both derive the session key from the job key and the two
nonces. Only those two frames are tagged with the job key (the secret bound to the
job id), and a replayed ``hello`` only earns its sender a challenge it cannot
answer. Every other message is tagged with its session's key and numbered in it
(van.py drops a number seen before), names its destination, and a listening node
learns which connection leads to a peer only from a message that verified under a
session and was new. A frame from another connection, another node, an earlier
session or another job that shares the secret is dropped without effect.

A ``hello`` replayed (or said again) is answered with the session its nonce was
granted already, never a new one: however often a captured hello is replayed, it
holds one place among the pending sessions, so it cannot push out the session of a
node that has not used its own yet (a worker waits with it until its first ``init``).
"""
import collections
import hashlib
import hmac
import secrets

from .wire import SID_BYTES

NONCE_BYTES = SID_BYTES      # (a session id is the listening side's nonce)
# Sessions granted and not yet used; the oldest is forgotten beyond this (only hellos
# of distinct nonces count: tagged with the job key, they come from the job's nodes)
MAX_PENDING = 4096


def job_key(secret, job_id):
    """The key of the handshake: the job secret bound to this job's id."""
    return hmac.new(secret, b'minigluon-ps job\0' + job_id.encode('utf-8'),
                    hashlib.sha256).digest()


def peer_key(key_of_job, job_nonce):
    """The key of the handshakes between a job's servers and workers: the job key bound
    to the nonce its scheduler drew at start (given out in the address book), so that a
    hello recorded in another job with the same secret and job id is worth nothing."""
    return hmac.new(key_of_job, b'peers\0' + job_nonce, hashlib.sha256).digest()


def session_key(key_of_job, nonce, sid):
    """The key of the session that ``nonce`` (the connecting side's) and ``sid`` (the
    listening side's) opened."""
    return hmac.new(key_of_job, b'session\0' + nonce + sid, hashlib.sha256).digest()


def new_nonce():
    """A fresh random nonce (also a fresh session id)."""
    return secrets.token_bytes(NONCE_BYTES)


def parse_nonce(text):
    """The nonce bytes in a handshake body field, or None if it is not one."""
    if not isinstance(text, str) or len(text) != 2 * NONCE_BYTES:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


class Session:
    """One connection's key, id, the name its peer last used, and the connecting
    side's nonce that opened it."""
    __slots__ = ('sid', 'key', 'peer', 'nonce')

    def __init__(self, sid, key, peer=None, nonce=None):
        self.sid, self.key, self.peer, self.nonce = sid, key, peer, nonce


class Sessions:
    """The sessions a node has opened or granted, by session id.

    A granted session stays pending until the first message in it verifies; the
    pending ones are bounded (MAX_PENDING). A nonce is granted one session.
    """

    def __init__(self, key_of_job):
        self.job_key = key_of_job
        self.open = {}                               # sid -> Session
        self.pending = collections.OrderedDict()     # sid -> Session (granted, unanswered)
        self.granted = {}                            # nonce -> Session (pending or open)

    def grant(self, nonce, key=None):
        """The session for a ``hello`` carrying ``nonce`` (new unless the nonce was granted
        one already: a replay); returns its id. ``key``: the hello's, as in ``accept``."""
        known = self.granted.get(nonce)
        if known is not None:
            return known.sid
        sid = new_nonce()
        self.pending[sid] = self.granted[nonce] = Session(
            sid, session_key(key or self.job_key, nonce, sid), nonce=nonce)
        while len(self.pending) > MAX_PENDING:
            del self.granted[self.pending.popitem(last=False)[1].nonce]
        return sid

    def accept(self, nonce, sid, peer, key=None):
        """The session our ``hello`` (``nonce``) opened with ``peer``, granted as ``sid``.
        ``key``: the handshake's, when not the job key (``peer_key``)."""
        session = self.open[sid] = Session(sid, session_key(key or self.job_key, nonce, sid),
                                           peer)
        return session

    def find(self, sid):
        """The session ``sid`` (open or pending), or None."""
        return self.open.get(sid) or self.pending.get(sid)

    def confirm(self, session):
        """A message verified in ``session`` and was new: it is open from now on."""
        if self.pending.pop(session.sid, None) is not None:
            self.open[session.sid] = session
