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
"""
import collections
import hashlib
import hmac
import secrets

from .wire import SID_BYTES

NONCE_BYTES = SID_BYTES      # (a session id is the listening side's nonce)
# Challenges handed out and not yet answered; the oldest is forgotten beyond this
# (a peer answers within a round trip; a flood of replayed hellos only evicts itself).
MAX_PENDING = 4096


def job_key(secret, job_id):
    """The key of the handshake: the job secret bound to this job's id."""
    return hmac.new(secret, b'minigluon-ps job\0' + job_id.encode('utf-8'),
                    hashlib.sha256).digest()


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
    """One connection's key, id, and the name its peer last used."""
    __slots__ = ('sid', 'key', 'peer')

    def __init__(self, sid, key, peer=None):
        self.sid, self.key, self.peer = sid, key, peer


class Sessions:
    """The sessions a node has opened or granted, by session id.

    A granted session stays pending until the first message in it verifies; the
    pending ones are bounded (MAX_PENDING).
    """

    def __init__(self, key_of_job):
        self.job_key = key_of_job
        self.open = {}                               # sid -> Session
        self.pending = collections.OrderedDict()     # sid -> Session (granted, unanswered)

    def grant(self, nonce):
        """A new session for a ``hello`` carrying ``nonce``; returns its id."""
        sid = new_nonce()
        self.pending[sid] = Session(sid, session_key(self.job_key, nonce, sid))
        while len(self.pending) > MAX_PENDING:
            self.pending.popitem(last=False)
        return sid

    def accept(self, nonce, sid, peer):
        """The session our ``hello`` (``nonce``) opened with ``peer``, granted as ``sid``."""
        session = self.open[sid] = Session(sid, session_key(self.job_key, nonce, sid), peer)
        return session

    def find(self, sid):
        """The session ``sid`` (open or pending), or None."""
        return self.open.get(sid) or self.pending.get(sid)

    def confirm(self, session):
        """A message verified in ``session`` and was new: it is open from now on."""
        if self.pending.pop(session.sid, None) is not None:
            self.open[session.sid] = session
