"""A hand-driven connection to a node of a job, for tests that play a peer (or attacker).

It presents the connection credentials and opens a session exactly as a node does,
then sends whatever frames a test wants, numbered in the session or not.
"""
import time

import zmq

from minigluon.kvstore.transport import gate, session, wire


class Peer:
    """A session with the node listening at ``endpoint`` (host, port).

    ``secret``/``job_id``: what the job's processes hold; ``job_nonce``: the
    scheduler's (cluster.job_nonce_of), which a server or worker binds its sessions to;
    ``credentials=False`` connects without presenting any (a stranger);
    ``handshake=False`` stops after connecting (no session).
    """

    def __init__(self, endpoint, secret, job_id, name='worker:9', to='server:0',
                 encrypt='plain', credentials=True, handshake=True, timeout=10,
                 job_nonce=None):
        self.ctx = zmq.Context()
        self.name, self.to = name, to
        key_of_job = session.job_key(secret, job_id)
        self.job_key = key_of_job if job_nonce is None else \
            session.peer_key(key_of_job, bytes.fromhex(job_nonce))
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.setsockopt(zmq.SNDHWM, 0)
        if credentials:
            gate.Gate(self.ctx, key_of_job, encrypt).present(self.sock)
        self.sock.connect('tcp://%s:%d' % tuple(endpoint))
        self.seq = 0
        self.sid = self.key = None
        if handshake:
            self.open_session(timeout)

    def open_session(self, timeout=10):
        nonce = session.new_nonce()
        hello = wire.Message('hello', self.name, to=self.to, body={'nonce': nonce.hex()})
        try:  # (never blocking: a refused connection may have no pipe left to queue on)
            self.sock.send_multipart(wire.encode(self.job_key, hello), zmq.NOBLOCK)
        except zmq.Again:
            pass  # then no challenge comes either
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.sock.poll(100):
                continue
            msg = wire.decode(self.job_key, self.sock.recv_multipart())
            if msg.cmd == 'challenge' and msg.body['nonce'] == nonce.hex():
                self.sid = bytes.fromhex(msg.body['sid'])
                self.key = session.session_key(self.job_key, nonce, self.sid)
                return
        raise AssertionError('no challenge from %s within %s s' % (self.to, timeout))

    def frames(self, msg, number=True):
        """``msg`` in this session (numbered next unless ``number`` is False)."""
        if number:
            self.seq += 1
            msg.seq = self.seq
        msg.src = msg.src or self.name
        msg.to = self.to if msg.to is None else msg.to
        return wire.encode(self.key, msg, self.sid)

    def send(self, msg, number=True):
        frames = self.frames(msg, number)
        self.sock.send_multipart(frames)
        return frames

    def send_frames(self, frames):
        self.sock.send_multipart(frames)

    def receive(self, timeout=10):
        """The next message in this session (acks included), or None at the deadline."""
        if not self.sock.poll(int(timeout * 1000)):
            return None
        return wire.decode(self.key, self.sock.recv_multipart())

    def close(self):
        self.ctx.destroy(linger=0)
