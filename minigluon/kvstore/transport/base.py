"""What the parameter-server roles need from a transport (ps-lite's Van interface).

A node owns one transport. It listens (``bind``) or not, connects to peers by name
and address, sends them messages, and has ``on_message`` called for each message that
arrives, always on the transport's one delivery thread, so the node's handlers never
run at the same time and need no locks among themselves. Timers (``every``) and
``call_soon`` run on that thread too. Two implementations: ``van.Van`` (ZeroMQ
between processes and hosts) and ``inproc.InprocVan`` (nodes that are threads of one
process, for tests).

What a node may rely on, whichever transport carries it:

- messages from one sender arrive in the order it sent them, each at most once;
- ``heard[peer]`` is when a message from ``peer`` last arrived (liveness), so a node
  that stops sending is noticed by the heartbeats, whatever made it stop;
- a handler raising ``REFUSED`` for an authentic request answers it with the error
  (when it is a request) and the node carries on;
- received arrays belong to the receiver: never views of what the sender holds.
"""
import logging

from . import wire

log = logging.getLogger('minigluon.kvstore')

# what a handler may raise for an authentic but unusable request: it is refused, not fatal
# (MXNetError is a RuntimeError)
REFUSED = (LookupError, TypeError, ValueError, AttributeError, ArithmeticError, RuntimeError)


class Transport:
    """The interface; see the module's docstring. Attributes every transport has:

    name : str
        This node's name in the job ('scheduler', 'server:0', ... or a temporary one).
    endpoint : (host, port) or None
        Where it listens, when it was asked to (``bind``).
    heard : dict
        Peer name -> ``time.monotonic()`` of the last message from it.
    owns_process : bool
        Whether the node is alone in its process, so that a worker that cannot go on
        may end the process (False for nodes that are threads of one process).
    """
    owns_process = True

    def start(self):
        """Start the delivery thread."""
        raise NotImplementedError

    def connect(self, peer, host, port):
        """Open a connection to ``peer`` listening at ``host:port``."""
        raise NotImplementedError

    def send(self, dest, msg, copy_arrays=False):
        """Send ``msg`` to ``dest`` (any thread). Its arrays must stay unchanged until
        sent unless ``copy_arrays``."""
        raise NotImplementedError

    def prepare(self, dest, msg, copy_arrays=False):
        """Make ``msg``'s arrays the transport's now, as ``send`` does first, so that the
        caller may change its own at once; ``send(dest, msg)`` later sends it (several
        prepared messages may be joined into one meanwhile, arrays and ``shm`` alike)."""
        if copy_arrays:
            msg.arrays = [a.copy() for a in msg.arrays]

    def call_soon(self, fn):
        """Run ``fn()`` on the delivery thread."""
        raise NotImplementedError

    def every(self, period, fn):
        """Run ``fn()`` on the delivery thread every ``period`` seconds."""
        raise NotImplementedError

    def stop(self, timeout=5.0):
        """Stop the delivery thread (waiting up to ``timeout`` s) and close connections."""
        raise NotImplementedError

    def settle(self, seconds):
        """Give the last messages sent (up to ``seconds``) to leave before ``stop``."""
        raise NotImplementedError

    def drain(self, timeout, messages=None):
        """Wait (at most ``timeout`` s) until each of ``messages`` ((destination, Message)
        pairs as sent), or everything sent, is known to have arrived."""

    def alias(self, name, known):
        """Reach peer ``name`` the way ``known`` was reached (a node renamed on joining)."""
        raise NotImplementedError

    def forget(self, name):
        """Drop what is kept for peer ``name`` (a node that was replaced)."""
        raise NotImplementedError

    def rename(self, name):
        """Take the name the job assigned."""
        raise NotImplementedError

    def bind_to_job(self, job_nonce):
        """Bind sessions with servers and workers to the scheduler's ``job_nonce`` (where
        sessions are keyed: van.py)."""

    def redirect(self, name, to):
        """From now on send what is addressed to ``name`` to peer ``to`` instead (another
        process took over the work of the one that was ``name``: a dead server's keys live
        on at its backup), dropping what was kept for ``name`` (on the delivery thread)."""
        self.forget(name)
        self.redirects[name] = to
        for other, target in list(self.redirects.items()):  # (what went to ``name`` too)
            if target == name:
                self.redirects[other] = to

    def share_values(self):
        """Values this node sends to several peers may be shared (a server's)."""

    def shared_array(self, shape, dtype):
        """An array for a value written once and then only sent, or None."""
        return None

    def _perform(self, item):
        """Do on the delivery thread what another thread asked: ``('send', dest, msg)``,
        ``('connect', peer, host, port)`` or ``('call', fn)``."""
        kind = item[0]
        if kind == 'send':
            self._transmit(item[1], item[2])
        elif kind == 'connect':
            self._open(*item[1:])
        elif kind == 'call':
            item[1]()

    def batch_bytes(self, dest):
        """How many bytes of arrays one message to or from ``dest`` may carry."""
        return self.cfg.chunk_bytes


def deliver(transport, msg, refuse):
    """Hand ``msg`` to the node's handler; a request it cannot use is ``refuse``d with
    the reason instead of stopping the delivery thread."""
    try:
        transport.on_message(msg)
    except REFUSED as exc:
        refuse(msg, '%s: %s' % (type(exc).__name__, exc))


def refusal(name, msg, reason):
    """The reply telling the sender of request ``msg`` why it was refused, or None when
    it waits for no answer."""
    cmd = msg.body['cmd'] if msg.cmd == 'rejected' else msg.cmd
    if cmd in wire.REQUESTS and msg.req is not None:
        return wire.Message('reply', '', req=msg.req, err='%s refused %s request %d: %s'
                            % (name, cmd, msg.req, reason))
    return None


def run_due_timers(timers, now):
    """Run the timers (``[next time, period, fn]``, from ``every``) that are due at
    ``now``; returns the seconds until the next one is due, at most 0.1."""
    wait = 0.1
    for timer in timers:
        if timer[0] <= now:
            timer[0] = now + timer[1]
            timer[2]()
        wait = min(wait, max(0.0, timer[0] - now))
    return wait
