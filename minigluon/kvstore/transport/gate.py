"""Who may open a connection to a node at all, and what a crowd of them may cost.

Before any message is read, ZeroMQ's own handshake has to pass: a node's listening
socket answers only peers that present the job's credentials, checked by a ZAP
handler that the node's I/O thread serves. A peer without them is disconnected
before it can send a single message, so it can make the node buffer nothing (a
multi-part message is buffered whole by ZeroMQ before anyone can look at it). Two
modes (``MINIGLUON_PS_ENCRYPT``):

- plain (the default, for trusted cluster networks): ZeroMQ's PLAIN mechanism. Its
  password travels unencrypted, so it is a token of one connection: a fresh nonce
  and its tag under the job key. A node admits a token from the first address that
  presents it, and from there again (ZeroMQ reconnects with the same one), never
  from another host: a password sniffed on the wire opens no connection, so a
  stranger cannot reach the messages ZeroMQ would buffer whole. The messages
  themselves are authenticated per session (session.py).
- ``curve``: CurveZMQ. Both key pairs are derived from the job secret and job id;
  the handler admits only the job's client key. Every byte, arrays included, is
  encrypted and authenticated.

A handshake not completed within ``HANDSHAKE_S`` closes the connection, and the
open-file soft limit is raised to the hard limit, so a flood of idle connections
costs the attacker, not the job.
"""
import collections
import hashlib
import hmac
import logging
import secrets

import zmq
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

log = logging.getLogger('minigluon.kvstore')

ZAP_ENDPOINT = 'inproc://zeromq.zap.01'
HANDSHAKE_S = 10
MODES = ('plain', 'curve')
_USER = b'minigluon'
_NONCE_BYTES = 16
# plain tokens remembered with their first address (only authentic ones, one per
# connection a node of the job opened: far fewer than this)
MAX_TOKENS = 1 << 16
_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL |
           zmq.EVENT_HANDSHAKE_FAILED_AUTH)


def _derive(key_of_job, what):
    return hmac.new(key_of_job, b'gate\0' + what, hashlib.sha256).digest()


def _curve_pair(key_of_job, what):
    secret = z85.encode(_derive(key_of_job, what))
    return zmq.curve_public(secret), secret


class Gate:
    """The credentials of one job and the ZAP handler that checks them.

    Parameters
    ----------
    ctx : zmq.Context
        The node's context (a ZAP handler serves the sockets of its context).
    key_of_job : bytes
        session.job_key of the job.
    mode : str
        'plain' or 'curve'.
    """

    def __init__(self, ctx, key_of_job, mode):
        if mode not in MODES:
            raise ValueError('unknown connection mode %r' % (mode,))
        self.mode = mode
        self._key = key_of_job
        self._tokens = collections.OrderedDict()   # plain nonce -> address first seen
        self._server = _curve_pair(key_of_job, b'curve server')
        self._client = _curve_pair(key_of_job, b'curve client')
        self._ctx = ctx
        self.handler = None
        self.monitor = None
        self.refused = 0

    def serve(self, sock):
        """Make listening socket ``sock`` demand the credentials (before it binds)."""
        if self.handler is None:
            self.handler = self._ctx.socket(zmq.REP)
            self.handler.setsockopt(zmq.LINGER, 0)
            self.handler.bind(ZAP_ENDPOINT)
        self.monitor = sock.get_monitor_socket(_FAILED)
        sock.setsockopt(zmq.ZAP_DOMAIN, b'minigluon')
        sock.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_S * 1000)
        if self.mode == 'curve':
            sock.setsockopt(zmq.CURVE_SERVER, 1)
            sock.setsockopt(zmq.CURVE_SECRETKEY, self._server[1])
        else:
            sock.setsockopt(zmq.PLAIN_SERVER, 1)

    def present(self, sock):
        """Make connecting socket ``sock`` present the credentials (before it connects)."""
        if self.mode == 'curve':
            sock.setsockopt(zmq.CURVE_SERVERKEY, self._server[0])
            sock.setsockopt(zmq.CURVE_PUBLICKEY, self._client[0])
            sock.setsockopt(zmq.CURVE_SECRETKEY, self._client[1])
        else:
            nonce = secrets.token_bytes(_NONCE_BYTES)
            sock.setsockopt(zmq.PLAIN_USERNAME, _USER)
            sock.setsockopt(zmq.PLAIN_PASSWORD, (nonce + self._token_tag(nonce)).hex().encode())

    def answer(self):
        """Answer the ZAP requests waiting on ``handler`` (on the I/O thread)."""
        for _ in range(64):
            try:
                request = self.handler.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(request) < 6:
                continue  # not from libzmq: nothing to answer
            version, request_id, _, address, _, mechanism = request[:6]
            credentials = request[6:]
            admitted = self._admits(mechanism, credentials, address)
            self.handler.send_multipart([version, request_id,
                                         b'200' if admitted else b'400',
                                         b'OK' if admitted else b'not this job', b'', b''])

    def report(self):
        """Log the connections refused since the last call (on the I/O thread)."""
        for _ in range(64):
            try:
                event = recv_monitor_message(self.monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            self.refused += 1
            if self.refused <= 10 or self.refused % 1000 == 0:
                log.warning("refused a connection at %s: it did not present the job's "
                            'credentials (a stranger, another job, another MINIGLUON_PS_ENCRYPT, '
                            "or another host's password replayed); %d refused so far",
                            event['endpoint'].decode('ascii', 'replace'), self.refused)

    def _token_tag(self, nonce):
        return _derive(self._key, b'plain\0' + nonce)

    def _admits(self, mechanism, credentials, address):
        if self.mode == 'curve':
            return (mechanism == b'CURVE' and len(credentials) == 1 and
                    hmac.compare_digest(credentials[0], z85.decode(self._client[0])))
        if not (mechanism == b'PLAIN' and len(credentials) == 2 and credentials[0] == _USER):
            return False
        try:
            token = bytes.fromhex(credentials[1].decode('ascii'))
        except ValueError:  # (UnicodeDecodeError is one)
            return False
        nonce, tag = token[:_NONCE_BYTES], token[_NONCE_BYTES:]
        if len(nonce) != _NONCE_BYTES or not hmac.compare_digest(tag, self._token_tag(nonce)):
            return False
        first = self._tokens.setdefault(nonce, address)
        while len(self._tokens) > MAX_TOKENS:
            self._tokens.popitem(last=False)
        return first == address


def raise_open_file_limit():
    """Raise this process's open-file soft limit to its hard limit (each connection
    costs a descriptor; 1024, a common default, is soon reached by a flood)."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY:
            hard = 1 << 20
        if soft != resource.RLIM_INFINITY and soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):  # not POSIX, or not allowed: keep it
        pass
