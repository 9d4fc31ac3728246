"""The transport of one node (ps-lite calls it the van): sockets, one I/O thread.

Every ZeroMQ socket of a process belongs to one background thread (ZeroMQ sockets
are not thread-safe). ``send`` may be called from any thread: other threads hand
messages to it through a queue and a wake-up pipe. The thread admits connections
(gate.py), opens a session on each (session.py), sends, receives, authenticates and
validates every incoming frame set (dropping and logging bad ones), drops duplicates
and replays, answers an authentic request it cannot use with its error,
acknowledges when ``PS_RESEND`` is on and re-sends what was not acknowledged in
time (delivering each session's messages in the order sent), and calls the node's
handler and timers. Handlers therefore run on the I/O thread and never need locks
among themselves. Arrays for a peer on the same host go through shared memory
(shm.py), only their header through the socket.
"""
import collections
import logging
import os
import random
import socket
import threading
import time

import zmq

from ...network import address_towards, interface_address
from . import gate, session, shm, wire
from .base import Transport, deliver, refusal, run_due_timers

log = logging.getLogger('minigluon.kvstore')

HELLO_RETRY_S = 0.5     # a hello (or its challenge) may be lost: PS_DROP_MSG, a slow peer


class _Inbox:
    """Messages of one session: each delivered once, in the order it sent them.

    A sender numbers its messages in each session 1, 2, 3, ... With ``PS_RESEND`` a
    re-sent message arrives after later ones, which wait here until it comes (so a
    pull cannot overtake the push before it); without, a gap is a message that will
    never come, so it is skipped. Duplicates and replays are dropped either way, and
    the memory kept is only what waits for a gap. A number more than ``WINDOW``
    ahead is no message this sender could have sent.
    """
    __slots__ = ('next', 'held')
    WINDOW = 1 << 16

    def __init__(self):
        self.next = 1
        self.held = {}

    def is_new(self, seq):
        """Whether ``seq`` was neither delivered nor is held (and is in the window)."""
        return self.next <= seq < self.next + self.WINDOW and seq not in self.held

    def accept(self, msg, wait_for_gaps):
        """The messages now deliverable, in order (none for a duplicate or an early one)."""
        if not self.is_new(msg.seq):
            return []
        if not wait_for_gaps:
            self.next = msg.seq + 1
            return [msg]
        self.held[msg.seq] = msg
        ready = []
        while self.next in self.held:
            ready.append(self.held.pop(self.next))
            self.next += 1
        return ready


class Van(Transport):
    """Sockets of one node and the thread that drives them (the ZeroMQ ``Transport``).

    Parameters
    ----------
    cfg : Config
    name : str
        This node's name on the wire ('scheduler', 'server:0', ... or a temporary one).
    on_message : callable(Message)
        Called on the I/O thread for each authentic, well-formed message.
    bind : (host, port) or None
        Bind a ROUTER socket there for peers to connect to (port 0: any free port).
    on_failure : callable(str), optional
        Called if the I/O thread itself breaks (a bug), so the node can stop loudly.
    provisional : bool
        ``name`` is temporary (a node not yet given its name by the scheduler), so
        messages addressed to the name it will get are accepted too.
    """

    def __init__(self, cfg, name, on_message, bind=None, on_failure=None, provisional=False):
        self.cfg = cfg
        self.name = name
        self.on_message = on_message
        self.on_failure = on_failure
        self._ctx = zmq.Context()
        self._sessions = session.Sessions(session.job_key(cfg.secret, cfg.job_id))
        self._gate = gate.Gate(self._ctx, self._sessions.job_key, cfg.encrypt)
        self._names = {name}
        self._provisional = provisional
        self._transport = cfg.transport if shm.available() else 'tcp'
        # (a batch meant for shared memory may have to come in frames when the ring is full)
        self._max_msg = max(cfg.chunk_bytes, _shm_batch(cfg) if self._transport != 'tcp' else 0) \
            + (1 << 20)
        self._router = None
        self.endpoint = None
        if bind is not None:
            gate.raise_open_file_limit()
            self._router = self._socket(zmq.ROUTER)
            self._gate.serve(self._router)
            self._router.setsockopt(zmq.MAXMSGSIZE, self._max_msg)
            self._router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            host, port = bind
            address = 'tcp://%s' % _bracket(host)
            try:
                if port:
                    self._router.bind('%s:%d' % (address, port))
                else:
                    port = self._router.bind_to_random_port(address)
            except zmq.ZMQError as exc:
                self._ctx.destroy(linger=0)
                raise OSError('cannot listen on %s:%s: %s' % (host, port, exc)) from None
            self.endpoint = (host, port)
        self._routes = {}        # peer name -> (socket, routing id or None)
        self._session_to = {}    # peer name -> the Session of its connection
        self._hellos = {}        # peer -> [socket, nonce, last sent, messages waiting, key]
        self._peer_keys = []     # handshake keys of the job's nonces, newest first (bind_to_job)
        self.heard = {}          # peer name -> when a new message from it last came
        self.redirects = {}      # peer name -> the peer that took its place (redirect)
        # names of peers that may connect to us although we connected to them too (servers
        # replicating to each other: ps/replica.py)
        self.both_ways = ()
        self._peer_of = {}       # DEALER socket -> the peer name we connected it to
        self._outbox = collections.deque()
        # a pipe, not a ZeroMQ socket, wakes the I/O thread: any thread may write to it
        self._wake_rx, self._wake_tx = os.pipe()
        os.set_blocking(self._wake_rx, False)
        os.set_blocking(self._wake_tx, False)
        self._last_seq = {}      # peer -> last sequence number sent to it
        self._channel = {}       # peer name -> the name it was first reached by (aliases)
        self._unacked = {}       # (channel, seq) -> [dest, frames, last send time]
        # channels whose peer closed its connection to us (ROUTER_MANDATORY refused a
        # message): drain stops waiting for their acknowledgements until they speak again
        self._closed = set()
        self._inboxes = {}       # session id -> _Inbox
        self._timers = []        # [next time, period, fn]
        self._poller = zmq.Poller()
        self._poller.register(self._wake_rx, zmq.POLLIN)
        if self._router is not None:
            self._poller.register(self._router, zmq.POLLIN)
            self._poller.register(self._gate.handler, zmq.POLLIN)
            self._poller.register(self._gate.monitor, zmq.POLLIN)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name='kvstore-van', daemon=True)
        self._rejected = 0
        if cfg.transport == 'shm' and self._transport == 'tcp':
            log.warning('%s: MINIGLUON_PS_TRANSPORT=shm, but this platform has no memfd or '
                        '/proc: arrays go over TCP', name)
        self._rings = {}         # channel -> our shm.Ring towards it (False: refused)
        self._mapped = {}        # peer name -> shm.Mapping of the ring it offered us
        self._store = None       # shm.Store of values several peers read (servers)
        self._stores = {}        # peer name -> shm.StoreMapping of the store it offered us
        self._shares_values = False

    def _socket(self, kind):
        sock = self._ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 2000)
        # a peer that takes nothing (dead, its queue full) must not stop this thread's
        # timers for ever: a send waits at most as long as a silent peer is tolerated
        sock.setsockopt(zmq.SNDTIMEO, int(self.cfg.heartbeat_timeout * 1000))
        return sock

    # ---- called from any thread ------------------------------------------------------------
    def start(self):
        """Start the I/O thread that sends and receives for this node."""
        self._thread.start()

    def connect(self, peer, host, port):
        """Open a connection to ``peer`` listening at host:port (done on the I/O thread)."""
        self._post(('connect', peer, host, port))

    def send(self, dest, msg, copy_arrays=False):
        """Send ``msg`` to ``dest``; safe from any thread.

        ZeroMQ sockets must not be used by two threads, so only the I/O thread
        touches them: called there (a handler replying), the message goes out at
        once; called from another thread, it is queued and the I/O thread woken. The
        I/O thread fills in the sender and numbers the message in the order it goes
        out. Arrays for a peer that mapped our ring are copied into it at once;
        others go out zero-copy: the caller must not modify them until delivered,
        unless ``copy_arrays`` (always done when re-sending is on, since a resend may
        happen much later).
        """
        dest = self.redirects.get(dest, dest)
        self.prepare(dest, msg, copy_arrays)
        if threading.current_thread() is self._thread:
            self._transmit(dest, msg)
        else:
            self._post(('send', dest, msg))

    def prepare(self, dest, msg, copy_arrays=False):
        """What ``send`` does first, on the caller's thread: arrays into our ring towards
        ``dest`` (or copied, see ``send``). A message prepared is not prepared again."""
        dest = self.redirects.get(dest, dest)
        if msg.arrays and msg.shm is None:
            self._place(dest, msg)
        if copy_arrays or self.cfg.resend:
            refs = msg.shm or [None] * len(msg.arrays)
            msg.arrays = [a if ref else a.copy() for a, ref in zip(msg.arrays, refs)]

    def share_values(self):
        """Values this node sends to several peers (a server's) go out by reference
        from a store in shared memory when ``shared_array`` made them."""
        self._shares_values = True

    def shared_array(self, shape, dtype):
        """An array in the store, for a value written once and then only sent (the I/O
        thread's); None when there is none or it is full."""
        return self._store.alloc(shape, dtype) if self._store is not None else None

    def _place(self, dest, msg):
        """Put the big arrays of ``msg`` into our ring towards ``dest``, if it has one."""
        channel = self._channel.get(dest, dest)
        ring = self._rings.get(channel)
        if not ring or not ring.ready:
            return
        refs = [None] * len(msg.arrays)
        for i, a in enumerate(msg.arrays):
            if a.nbytes < shm.MIN_BYTES:
                continue
            if ring.store_ok:
                refs[i] = self._store.ref(a, channel)
                if refs[i] is not None:
                    continue
            placed = ring.place(a)
            if placed is not None:
                msg.arrays[i], refs[i] = placed
        if any(refs):
            msg.shm = refs

    def batch_bytes(self, dest):
        """How many bytes of arrays one message to or from ``dest`` may carry: more when
        they go through shared memory (MINIGLUON_PS_CHUNK_BYTES otherwise)."""
        dest = self.redirects.get(dest, dest)
        ring = self._rings.get(self._channel.get(dest, dest))
        return max(ring.batch_bytes, self.cfg.chunk_bytes) if ring and ring.ready \
            else self.cfg.chunk_bytes

    def call_soon(self, fn):
        """Run ``fn()`` on the I/O thread."""
        self._post(('call', fn))

    def every(self, period, fn):
        """Run ``fn()`` on the I/O thread every ``period`` seconds."""
        self.call_soon(lambda: self._timers.append([time.monotonic() + period, period, fn]))

    def stop(self, timeout=5.0):
        """Stop the I/O thread (waiting up to ``timeout`` s) and close the sockets."""
        self._stop = True
        self._wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        self._ctx.destroy(linger=0)
        for ring in self._rings.values():
            if ring:
                ring.close_fd()
        if not self._thread.is_alive() and self._wake_tx is not None:
            wake_tx, self._wake_tx = self._wake_tx, None
            os.close(wake_tx)
            os.close(self._wake_rx)

    def settle(self, seconds):
        """Give the last messages ``seconds`` to leave before ``stop`` closes the sockets."""
        time.sleep(seconds)

    def drain(self, timeout, messages=None):
        """Wait (at most ``timeout`` s) until each of ``messages`` ((destination, Message)
        pairs as given to ``send``) and everything sent to their peers before them, or
        every re-sendable message, was acknowledged, or its peer closed its connection
        (a node that exited after its last message came: its acknowledgement was lost)."""
        deadline = time.monotonic() + timeout
        while self.cfg.resend and time.monotonic() < deadline and self._awaiting(messages):
            time.sleep(0.01)

    def _awaiting(self, messages):
        closed = self._closed
        if messages is None:
            return any(channel not in closed for channel, _ in list(self._unacked))
        # (a message is numbered when it goes out: 0 until then.) One acknowledged is not
        # enough: the peer hands messages over in order, so one that arrived may wait for
        # an earlier one still being sent again, which must arrive too.
        last = {}
        for dest, msg in messages:
            if not msg.seq:
                return True
            channel = self._channel.get(dest, dest)
            last[channel] = max(last.get(channel, 0), msg.seq)
        return any(channel in last and seq <= last[channel] and channel not in closed
                   for channel, seq in list(self._unacked))  # (written by the I/O thread)

    def _post(self, item):
        self._outbox.append(item)
        self._wake()

    def _wake(self):
        wake_tx = self._wake_tx
        if wake_tx is None:
            return  # stopped: nobody is listening
        try:
            os.write(wake_tx, b'w')
        except BlockingIOError:
            pass  # the pipe is full: the I/O thread is awake anyway

    # ---- I/O thread --------------------------------------------------------------------
    def alias(self, name, known):
        """Reach peer ``name`` the way ``known`` was reached (a node renamed on joining)."""
        self._routes[name] = self._routes[known]
        self._session_to[name] = self._session_to[known]
        self._channel[name] = self._channel.get(known, known)

    def forget(self, name):
        """Drop what is kept for peer ``name`` (a replaced node): its route (a connection
        we opened to it is closed), the order of its messages, and what was sent to it
        and not yet acknowledged."""
        channel = self._channel.pop(name, name)
        for peer in (name, channel):
            sock = self._routes.pop(peer, (None,))[0]
            if sock is not None and self._peer_of.get(sock) == peer:
                # a connection we opened (a scheduler that was restarted): a new process
                # at its address knows none of its sessions, so ``connect`` opens another
                self._poller.unregister(sock)
                del self._peer_of[sock]
                sock.close(linger=0)
            self._hellos.pop(peer, None)
            old = self._session_to.pop(peer, None)
            if old is not None:
                self._inboxes.pop(old.sid, None)
            self._mapped.pop(peer, None)
            self._stores.pop(peer, None)
        if self._store is not None:
            self._store.forget(channel)
        ring = self._rings.pop(channel, None)
        if ring:
            ring.close_fd()
        self._last_seq.pop(channel, None)
        for entry in [e for e in self._unacked if e[0] == channel]:
            del self._unacked[entry]

    def bind_to_job(self, job_nonce):
        """Open and grant sessions with servers and workers under ``job_nonce`` (bytes the
        scheduler drew at start, from the address book) from now on, so that a hello
        recorded in another job with the same secret and job id (a manual launch's
        default: the scheduler's address) is refused. Connections to the scheduler stay
        under the job key: a node reaches it before it can learn anything. Every nonce
        given stays valid."""
        key = session.peer_key(self._sessions.job_key, job_nonce)
        if key not in self._peer_keys:
            self._peer_keys.insert(0, key)

    def rename(self, name):
        """Take the name the job assigned (numbering and re-sending go on in each
        session as before)."""
        self.name = name
        self._names.add(name)
        self._provisional = False
        self._rings.clear()  # (offered under the old name: peers know it by that one)

    def _transmit(self, dest, msg):
        # numbered here, on the I/O thread, so numbers follow the order on the socket
        dest = self.redirects.get(dest, dest)  # (sent before a redirect, leaving after it)
        link = self._session_to.get(dest)
        if link is None:
            if dest in self._hellos:  # its session is being opened: sent once it is
                self._hellos[dest][3].append(msg)
            else:
                log.warning('%s: no route to %s; message dropped', self.name, dest)
            return
        channel = self._channel.get(dest, dest)
        if channel not in self._rings and self._transport != 'tcp' and \
                any(a.nbytes >= shm.MIN_BYTES for a in msg.arrays):
            self._offer(dest, channel)
        msg.src = self.name
        msg.to = dest
        msg.seq = self._last_seq[channel] = self._last_seq.get(channel, 0) + 1
        for ref in msg.shm or ():
            if ref is not None and len(ref) == 3:   # a value of the store, not a copy
                self._store.sent(ref, channel, msg.seq)
        frames = wire.encode(link.key, msg, link.sid)
        if self.cfg.verbose >= 2:
            log.info('%s -> %s: %r', self.name, dest, msg)
        if self.cfg.resend:
            self._unacked[channel, msg.seq] = [dest, frames, time.monotonic()]
        self._write(dest, frames)

    def _offer(self, dest, channel):
        """Offer ``dest`` a ring for the arrays we send it; used once it says it mapped it."""
        try:
            ring = shm.Ring(self.cfg.shm_bytes)
        except OSError as exc:
            log.warning('%s: no shared memory (%s); arrays go over TCP', self.name, exc)
            self._rings[channel] = False
            return
        self._rings[channel] = ring
        body = {'offer': ring.offer()}
        if self._shares_values:
            if self._store is None:
                try:
                    self._store = shm.Store(self.cfg.shm_bytes)
                except OSError as exc:
                    log.warning('%s: no shared store (%s)', self.name, exc)
                    self._shares_values = False
            if self._store is not None:
                body['store'] = self._store.offer(channel)
        self._transmit(dest, wire.Message('transport', '', body=body))

    def _on_transport(self, sock, msg):
        body = msg.body or {}
        if 'offer' in body:
            reason = None
            if self._transport == 'tcp':
                reason = 'MINIGLUON_PS_TRANSPORT=tcp (or no shared memory) at %s' % self.name
            else:
                other_hosts = self._transport == 'shm'
                try:
                    self._mapped[msg.src] = shm.Mapping(body['offer'], other_hosts)
                    if isinstance(body.get('store'), dict):
                        self._stores[msg.src] = shm.StoreMapping(body['store'], other_hosts)
                except (OSError, ValueError) as exc:
                    self._mapped.pop(msg.src, None)
                    reason = '%s cannot use it: %s' % (self.name, exc)
            self._transmit(msg.src, wire.Message('transport', '', body={
                'accept': reason is None, 'reason': reason, 'max_bytes': self._max_msg,
                'store': msg.src in self._stores}))
            return
        peer = self._peer_of.get(sock, msg.src)
        channel = self._channel.get(peer, peer)
        ring = self._rings.get(channel)
        if not ring or ring.ready or ring.fd is None:
            return  # not an answer to an open offer of ours
        ring.close_fd()
        if body.get('accept') is True and type(body.get('max_bytes')) is int:
            ring.batch_bytes = min(self._max_msg, body['max_bytes']) - (1 << 20)
            ring.store_ok = self._store is not None and body.get('store') is True
            ring.ready = True
        else:
            self._rings[channel] = False
        if self.cfg.verbose or (self._transport == 'shm' and not ring.ready):
            log.log(logging.INFO if ring.ready else logging.WARNING,
                    '%s: arrays to %s go through %s%s', self.name, peer,
                    ('shared memory' + (', pulled values by reference' if ring.store_ok else ''))
                    if ring.ready else 'TCP',
                    '' if ring.ready else ' (%s)' % body.get('reason'))

    def _write(self, dest, frames):
        route = self._routes.get(dest)
        if route is None:
            log.warning('%s: no route to %s; message dropped', self.name, dest)
            return
        sock, rid = route
        # with re-sending on, a message that finds the peer's queue full is sent again
        # later like a lost one: waiting here would stop the re-sends and heartbeats
        flags = zmq.NOBLOCK if self.cfg.resend else 0
        try:
            if rid is None:
                sock.send_multipart(frames, flags, copy=False)
            else:
                sock.send_multipart([rid] + frames, flags, copy=False)
        except zmq.Again:
            if not self.cfg.resend and self.on_failure is not None:
                self.on_failure('%s took no message for %.0f s: it is stuck or gone'
                                % (dest, self.cfg.heartbeat_timeout))
        except zmq.ZMQError as exc:
            # ROUTER_MANDATORY: the peer is gone; heartbeats will report it
            log.debug('%s: cannot send to %s: %s', self.name, dest, exc)
            if exc.errno == zmq.EHOSTUNREACH:
                self._closed.add(self._channel.get(dest, dest))

    def _run(self):
        try:
            while not self._stop:
                timeout = self._run_timers()
                for sock, _ in self._poller.poll(timeout):
                    if self._stop:  # (stop() may have closed the sockets meanwhile)
                        return
                    self._drain(sock)
                self._flush_outbox()
        except Exception:  # a bug in a handler must not silently kill the node
            log.exception('%s: I/O thread failed', self.name)
            if self.on_failure is not None:
                self.on_failure('internal error in the kvstore I/O thread (see the log above)')

    def _run_timers(self):
        now = time.monotonic()
        wait = run_due_timers(self._timers, now)
        if self.cfg.resend:
            self._resend(now)
            wait = min(wait, self.cfg.resend_timeout / 4)
        for peer, hello in list(self._hellos.items()):
            if now - hello[2] >= HELLO_RETRY_S:
                self._send_hello(peer)
        return int(wait * 1000)

    def _resend(self, now):
        for (_, seq), entry in list(self._unacked.items()):
            if now - entry[2] >= self.cfg.resend_timeout:
                entry[2] = now
                if self.cfg.verbose >= 2:
                    log.info('%s: re-sending seq %d to %s', self.name, seq, entry[0])
                self._write(entry[0], entry[1])

    def _flush_outbox(self):
        while self._outbox:
            self._perform(self._outbox.popleft())

    def _open(self, peer, host, port):
        sock = self._socket(zmq.DEALER)
        sock.setsockopt(zmq.MAXMSGSIZE, self._max_msg)
        self._gate.present(sock)
        sock.connect('tcp://%s:%d' % (_bracket(host), port))
        self._peer_of[sock] = peer
        self._routes[peer] = (sock, None)
        self._poller.register(sock, zmq.POLLIN)
        key = self._peer_keys[0] if self._peer_keys and peer != 'scheduler' \
            else self._sessions.job_key
        self._hellos[peer] = [sock, session.new_nonce(), 0.0, [], key]
        self._send_hello(peer)
        if self.cfg.verbose >= 1:
            log.info('%s: connecting to %s at %s:%d', self.name, peer, host, port)

    def _send_hello(self, peer):
        """Ask ``peer`` for a session (again, until its challenge comes)."""
        hello = self._hellos[peer]
        hello[2] = time.monotonic()
        frames = wire.encode(hello[4], wire.Message(
            'hello', self.name, to=peer, body={'nonce': hello[1].hex()}))
        try:
            hello[0].send_multipart(frames, zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # tried again shortly

    def _handshake_keys(self, sock):
        """The keys a hello or challenge on ``sock`` may be tagged with: on a connection we
        opened, our hello's; on ours, those of the job's nonces once the address book gave
        one (bind_to_job), else the job key, but none while a node waits for its book (a
        peer that got its book first says hello again)."""
        if sock is not self._router:
            hello = self._hellos.get(self._peer_of.get(sock))
            return [hello[4]] if hello is not None else []
        if self._peer_keys:
            return self._peer_keys
        return [] if self._provisional else [self._sessions.job_key]

    def _handshake(self, sock, rid, msg, key):
        """A hello (we grant a session) or the challenge answering ours (it opens); ``key``:
        the one it verified under."""
        body = msg.body or {}
        nonce = session.parse_nonce(body.get('nonce'))
        if msg.cmd == 'hello' and rid is not None and nonce is not None:
            if msg.to not in self._names and not self._provisional:
                # (one captured on its way to another node: not ours to grant)
                self._note_rejected('a hello addressed to %r, not to this node' % (msg.to,))
                return
            sid = self._sessions.grant(nonce, key)
            frames = wire.encode(key, wire.Message(
                'challenge', self.name, to=msg.src, body={'nonce': nonce.hex(), 'sid': sid.hex()}))
            try:
                sock.send_multipart([rid] + frames, zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # the peer is gone, or will say hello again
            return
        peer = self._peer_of.get(sock)
        hello = self._hellos.get(peer)
        sid = session.parse_nonce(body.get('sid'))
        if msg.cmd == 'challenge' and rid is None and hello is not None and sid is not None \
                and nonce == hello[1]:
            del self._hellos[peer]
            self._session_to[peer] = self._sessions.accept(nonce, sid, peer, key)
            for waiting in hello[3]:
                self._transmit(peer, waiting)
            return
        # (a replayed challenge, or the answer to a hello said again): nothing to do
        if msg.cmd != 'challenge':
            self._note_rejected('a %s that answers nothing we asked' % msg.cmd)

    def _drain(self, sock):
        if sock == self._wake_rx:
            try:
                while os.read(sock, 4096):
                    pass
            except BlockingIOError:
                pass
            return
        if sock is self._gate.handler:
            self._gate.answer()
            return
        if sock is self._gate.monitor:
            self._gate.report()
            return
        for _ in range(256):  # bounded, so one busy peer cannot starve timers
            try:
                frames = _receive_frames(sock, wire.MAX_FRAMES + (sock is self._router))
            except zmq.Again:
                return
            if frames is None:
                self._note_rejected('a message of more than %d frames' % wire.MAX_FRAMES)
                continue
            rid = None
            if sock is self._router:
                if len(frames) < 1:
                    continue
                rid, frames = frames[0].bytes, frames[1:]
            self._receive(sock, rid, frames)

    def _receive(self, sock, rid, frames):
        link = None
        try:
            sid = wire.session_of(frames)
            if sid == wire.NO_SESSION:
                keys = self._handshake_keys(sock)
                if not keys:
                    return
                msg, key = _decode_handshake(keys, frames)
                if msg.cmd not in ('hello', 'challenge'):
                    raise wire.WireError('%s outside a session' % msg.cmd)
            else:
                if self.cfg.drop_msg and random.random() * 100 < self.cfg.drop_msg:
                    return  # PS_DROP_MSG: a lossy network (before a shared region is viewed)
                link = self._sessions.find(sid)
                if link is None:
                    raise wire.WireError('unknown session (from an earlier connection, another '
                                         'node or another job)')
                if rid is None and link is not self._session_to.get(self._peer_of.get(sock)):
                    raise wire.WireError('a session of another connection')
                msg = wire.decode(link.key, frames, self._shm_view)
        except wire.Rejected as exc:
            msg = self._rejected_request(link, exc)
            if msg is None:
                return
        except wire.WireError as exc:
            header = getattr(exc, 'header', None)
            if link is not None and header is not None and shm.STALE in str(exc) and \
                    header.get('to') in self._names and not self._new_here(link, header['seq']):
                # an authentic duplicate whose region was used and written again since
                # (its ack was lost): acknowledged from its header, or it comes for ever
                self._answer_duplicate(sock, rid, link, wire.Message(
                    header['cmd'], header['src'], header['seq'], to=header.get('to')))
                return
            self._note_rejected(exc)
            return
        if link is None:
            self._handshake(sock, rid, msg, key)
            return
        if msg.cmd != 'rejected' and (msg.to is None or
                                      (msg.to not in self._names and not self._provisional)):
            self._note_rejected('%s addressed to %r, not to this node' % (msg.cmd, msg.to))
            return
        if (rid is None and msg.src != self._peer_of.get(sock)) or \
                (rid is not None and self._routes.get(msg.src, (self._router,))[0] is not
                 self._router and not msg.src.startswith(self.both_ways)):
            # a connection we opened speaks for the peer we opened it to, and a peer we
            # connected to never speaks through one opened to us (but see both_ways)
            self._note_rejected('%s claims to come from %s' % (msg.cmd, msg.src))
            return
        if msg.cmd == 'ack':  # acks are not numbered (seq 0) and never acknowledged
            # (a connection we opened tells which peer acknowledged, whatever its name now)
            peer = self._peer_of.get(sock, msg.src)
            self._unacked.pop((self._channel.get(peer, peer), msg.req), None)
            if rid is None:  # (only the peer itself can write to a connection we opened)
                self.heard[peer] = time.monotonic()
            return
        inbox = self._inboxes.get(link.sid)
        if inbox is None:
            inbox = self._inboxes[link.sid] = _Inbox()
        if not inbox.is_new(msg.seq):
            self._answer_duplicate(sock, rid, link, msg)
            return
        # verified and new: only now may it teach us where its sender is
        self._sessions.confirm(link)
        link.peer = msg.src
        self.heard[msg.src] = time.monotonic()
        self._closed.discard(self._channel.get(msg.src, msg.src))
        if rid is not None and (msg.src not in self._routes or
                                self._routes[msg.src][0] is self._router):
            self._routes[msg.src] = (sock, rid)
            self._session_to[msg.src] = link
        if self.cfg.resend:
            self._ack(link, msg)
        for ready in inbox.accept(msg, wait_for_gaps=self.cfg.resend):
            if self.cfg.verbose >= 2:
                log.info('%s <- %s: %r', self.name, ready.src, ready)
            if ready.cmd == 'transport':  # between the two vans: the node never sees it
                self._on_transport(sock, ready)
                continue
            if ready.cmd == 'rejected':
                self._refuse(ready, ready.err)
                continue
            store = self._stores.get(ready.src)
            if store is not None:
                store.delivered(ready.seq)
            # an authentic but malformed request (e.g. a shape that is not a list) is
            # refused like a malformed frame; the node carries on
            deliver(self, ready, self._refuse)

    def _new_here(self, link, seq):
        inbox = self._inboxes.get(link.sid)
        return inbox is None or inbox.is_new(seq)

    def _answer_duplicate(self, sock, rid, link, msg):
        """A re-sent message whose ack was lost, or a replay: no effect but the ack."""
        if rid is None or self._routes.get(msg.src) == (sock, rid):
            self.heard[msg.src] = time.monotonic()  # (a re-send: its sender lives)
        if self.cfg.resend and msg.src in self._routes:
            self._ack(link, msg)

    def _ack(self, link, msg):
        ack = wire.Message('ack', self.name, 0, req=msg.seq, to=msg.src)
        self._write(msg.src, wire.encode(link.key, ack, link.sid))

    def _note_rejected(self, reason):
        self._rejected += 1
        if self._rejected <= 10 or self.cfg.verbose or self._rejected % 10000 == 0:
            log.warning('%s: dropped a malformed or unauthenticated message: %s (%d so far)',
                        self.name, reason, self._rejected)

    def _rejected_request(self, link, exc):
        """An authentic message that cannot be used: a stand-in that takes its place in
        its session's order (so nothing after it waits for it) and is answered with the
        reason; None when not even its number can be read."""
        header = exc.header
        if link is None or header is None:
            self._note_rejected(exc)
            return None
        req = header.get('req')
        to = header.get('to')
        return wire.Message('rejected', header['src'], header['seq'],
                            req=req if type(req) is int and req >= 0 else None,
                            body={'cmd': header['cmd']}, err=str(exc),
                            to=to if isinstance(to, str) else None)

    def _refuse(self, msg, reason):
        """Log why an authentic message was not used; answer it with that reason when its
        sender waits for an answer."""
        cmd = msg.body['cmd'] if msg.cmd == 'rejected' else msg.cmd
        self._rejected += 1
        if self._rejected <= 10 or self.cfg.verbose or self._rejected % 10000 == 0:
            log.warning('%s: refused %s from %s: %s', self.name, cmd, msg.src, reason)
        reply = refusal(self.name, msg, reason)
        if reply is not None:
            self._transmit(msg.src, reply)

    def _shm_view(self, src, seq, ref, dtype, shape, nbytes):
        mapping = (self._stores if isinstance(ref, list) and len(ref) == 3
                   else self._mapped).get(src)
        if mapping is None:
            raise ValueError('%s sent an array in shared memory it never offered' % src)
        return mapping.view(ref, dtype, shape, nbytes, seq)


def _decode_handshake(keys, frames):
    """The hello or challenge in ``frames`` and the first of ``keys`` it verifies under."""
    for key in keys[:-1]:
        try:
            return wire.decode(key, frames), key
        except wire.WireError:
            pass
    return wire.decode(keys[-1], frames), keys[-1]


def _receive_frames(sock, limit):
    """The frames of the next message on ``sock`` (zmq.Again if none), or None when it
    has more than ``limit`` (they are dropped one by one, never held together)."""
    frames = [sock.recv(zmq.NOBLOCK, copy=False)]
    while frames[-1].more:
        frame = sock.recv(copy=False)  # (a message arrives whole: the rest is here)
        if len(frames) == limit:
            while frame.more:
                frame = sock.recv(copy=False)
            return None
        frames.append(frame)
    return frames


def _shm_batch(cfg):
    return cfg.shm_bytes // 4


def _bracket(host):
    return '[%s]' % host if ':' in host else host


def resolve(host):
    """An IP address for ``host`` (names are looked up once)."""
    try:
        return socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0]
    except socket.gaierror:
        try:
            return socket.getaddrinfo(host, None)[0][4][0]
        except socket.gaierror as exc:
            raise OSError('cannot resolve host %r: %s' % (host, exc)) from None


def local_address(cfg):
    """The address this node listens on: DMLC_NODE_HOST, DMLC_INTERFACE, or the one
    that routes to the scheduler (found without sending anything)."""
    if cfg.node_host:
        return resolve(cfg.node_host)
    if cfg.interface:
        try:
            return interface_address(cfg.interface)
        except OSError as exc:
            raise OSError('DMLC_INTERFACE=%s: %s' % (cfg.interface, exc)) from None
    return address_towards(resolve(cfg.root_uri), cfg.root_port)
