"""An in-process transport: the nodes of a job as threads of one process (for tests).

A ``Hub`` is the network: it knows which node listens at which (host, port) address.
Each node's ``InprocVan`` has one delivery thread with a queue, and behaves towards the
node as the ZeroMQ van does (base.py): handlers and timers run on that thread, a
message is sent from it in the order the node sent it, and arrives once, in order.
Every message goes through the wire encoding (wire.py) and its arrays are copied on
the way, so what a node receives is exactly what it would read from a socket, never
a view of the sender's memory. ``Hub.kill`` stops a node as ``kill -9`` would: it
neither receives nor sends any more, and the others notice when its heartbeats stop.
"""
import itertools
import queue
import secrets
import threading
import time

from . import wire
from .base import Transport, deliver, log, refusal, run_due_timers


class Hub:
    """The network of one in-process job."""

    host = '127.0.0.1'

    def __init__(self):
        self.key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._listening = {}                 # (host, port) -> InprocVan
        self._ports = itertools.count(20000)
        self.vans = []

    def open(self, cfg, name, on_message, bind=None, on_failure=None, provisional=False):
        """A transport for a new node (Van's arguments)."""
        van = InprocVan(self, cfg, name, on_message, on_failure, provisional)
        if bind is not None:
            host, port = bind
            with self._lock:
                port = port or next(self._ports)
                if (host, port) in self._listening:
                    raise OSError('cannot listen on %s:%s: address already in use' % (host, port))
                self._listening[host, port] = van
            van.endpoint = (host, port)
        with self._lock:
            self.vans.append(van)
        return van

    def find(self, host, port):
        """The node listening at host:port, or None."""
        with self._lock:
            return self._listening.get((host, port))

    def node(self, name):
        """The live transport named ``name`` (or that once had that name)."""
        with self._lock:
            return next(v for v in reversed(self.vans) if name in v.names and not v.stopped)

    def kill(self, name):
        """Stop node ``name`` at once, as kill -9 would: nothing more in or out."""
        self.node(name).stop(kill=True)

    def unlisten(self, van):
        """Forget the addresses ``van`` listened on (it stopped): connecting to them fails."""
        with self._lock:
            for where, listener in list(self._listening.items()):
                if listener is van:
                    del self._listening[where]

    def close(self):
        """Stop every transport of the hub."""
        for van in list(self.vans):
            van.stop()


class InprocVan(Transport):
    """One node's transport on a ``Hub``; the interface is ``Transport``'s."""

    owns_process = False

    def __init__(self, hub, cfg, name, on_message, on_failure=None, provisional=False):
        self.hub, self.cfg, self.name = hub, cfg, name
        self.on_message, self.on_failure = on_message, on_failure
        self.names = {name}
        self.endpoint = None
        self.heard = {}
        self.redirects = {}      # peer name -> the peer that took its place (redirect)
        self.stopped = False
        self._provisional = provisional
        self._queue = queue.SimpleQueue()
        self._routes = {}        # peer name -> its InprocVan
        self._opened = set()     # peers we connected to (they are who they say)
        self._waiting = {}       # peer -> [host, port, messages] until it listens
        self._timers = []        # [next time, period, fn]
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='kvstore-inproc-%s' % name)

    # ---- any thread --------------------------------------------------------------------
    def start(self):
        self._thread.start()

    def connect(self, peer, host, port):
        self._post(('connect', peer, host, port))

    def send(self, dest, msg, copy_arrays=False):
        # as over ZeroMQ, the arrays are read when the message goes out (copied then, into
        # the receiver's frames); ``copy_arrays``: now, so the caller may change them at once
        dest = self.redirects.get(dest, dest)
        self.prepare(dest, msg, copy_arrays)
        if threading.current_thread() is self._thread:
            self._transmit(dest, msg)
        else:
            self._post(('send', dest, msg))

    def call_soon(self, fn):
        self._post(('call', fn))

    def every(self, period, fn):
        self.call_soon(lambda: self._timers.append([time.monotonic() + period, period, fn]))

    def settle(self, seconds):
        """Nothing to wait for: a sent message is in its receiver's queue already."""

    def stop(self, timeout=5.0, kill=False):
        """Stop delivering and sending; ``kill``: without a word, as a killed process."""
        if self.stopped:
            return
        self.stopped = True
        self.hub.unlisten(self)
        self._queue.put(('stop',))
        if not kill and self._thread.is_alive() and \
                threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _post(self, item):
        if not self.stopped:
            self._queue.put(item)

    # ---- the delivery thread -------------------------------------------------------------
    def alias(self, name, known):
        self._routes[name] = self._routes[known]
        if known in self._opened:
            self._opened.add(name)

    def forget(self, name):
        self._routes.pop(name, None)
        self._opened.discard(name)
        self._waiting.pop(name, None)

    def rename(self, name):
        self.name = name
        self.names.add(name)
        self._provisional = False

    def _run(self):
        try:
            while not self.stopped:
                try:
                    item = self._queue.get(timeout=self._run_timers())
                except queue.Empty:
                    continue
                if self.stopped:
                    return
                if item[0] == 'msg':
                    self._receive(item[1], item[2])
                else:
                    self._perform(item)
        except Exception:  # a bug in a handler must not silently kill the node
            log.exception('%s: delivery thread failed', self.name)
            if self.on_failure is not None:
                self.on_failure('internal error in the kvstore delivery thread (see the log '
                                'above)')

    def _run_timers(self):
        now = time.monotonic()
        wait = run_due_timers(self._timers, now)
        if self._waiting:
            for peer, (host, port, _) in list(self._waiting.items()):
                self._open(peer, host, port)
            wait = min(wait, 0.01)
        return wait

    def _open(self, peer, host, port):
        target = self.hub.find(host, port)
        if target is None:  # not listening yet: tried again on the next turn
            self._waiting.setdefault(peer, [host, port, []])
            return
        self._routes[peer] = target
        self._opened.add(peer)
        for msg in self._waiting.pop(peer, [None, None, []])[2]:
            self._transmit(peer, msg)

    def _transmit(self, dest, msg):
        if self.stopped:
            return
        dest = self.redirects.get(dest, dest)  # (sent before a redirect, leaving after it)
        target = self._routes.get(dest)
        if target is None:
            if dest in self._waiting:
                self._waiting[dest][2].append(msg)
            else:
                log.warning('%s: no route to %s; message dropped', self.name, dest)
            return
        msg.src, msg.to = self.name, dest
        frames = wire.encode(self.hub.key, msg)
        # the receiver gets its own bytes, as from a socket
        frames = frames[:2] + [bytearray(a.data) for a in frames[2:]]
        if self.cfg.verbose >= 2:
            log.info('%s -> %s: %r', self.name, dest, msg)
        target._post(('msg', self, frames))

    def _receive(self, sender, frames):
        try:
            msg = wire.decode(self.hub.key, frames)
        except wire.Rejected as exc:
            header = exc.header
            if header is None:
                log.warning('%s: dropped a malformed message: %s', self.name, exc)
                return
            req = header.get('req')
            msg = wire.Message('rejected', header['src'], header['seq'],
                               req=req if type(req) is int and req >= 0 else None,
                               body={'cmd': header['cmd']}, err=str(exc))
        if msg.cmd != 'rejected' and (msg.to is None or
                                      (msg.to not in self.names and not self._provisional)):
            log.warning('%s: dropped %s addressed to %r, not to this node', self.name, msg.cmd,
                        msg.to)
            return
        self.heard[msg.src] = time.monotonic()
        if msg.src not in self._opened:  # a peer that connected to us: answered the same way
            self._routes[msg.src] = sender
        if self.cfg.verbose >= 2:
            log.info('%s <- %s: %r', self.name, msg.src, msg)
        if msg.cmd == 'rejected':
            self._refuse(msg, msg.err)
            return
        deliver(self, msg, self._refuse)

    def _refuse(self, msg, reason):
        log.warning('%s: refused %s from %s: %s', self.name, msg.cmd, msg.src, reason)
        reply = refusal(self.name, msg, reason)
        if reply is not None:
            self._transmit(msg.src, reply)

    def inject(self, frames, sender):
        """Deliver raw ``frames`` as if ``sender`` (an InprocVan) had sent them (tests of
        what a node does with what it did not expect)."""
        self._post(('msg', sender, frames))
