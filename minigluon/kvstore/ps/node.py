"""What servers and workers share: joining the job, heartbeats, and failing loudly.

A node connects to the scheduler, registers (role, launcher-given index, listening
address) and waits for the address book that assigns its rank. From then on it
sends a heartbeat every ``PS_HEARTBEAT_INTERVAL``; the scheduler answers each one.
A missing answer for ``PS_HEARTBEAT_TIMEOUT``, or the scheduler's news that another
node died, makes the node fail with an error naming the culprit.

When the job allows restarts (``PS_WORKER_RECOVERY_TIMEOUT`` above 0) a silent
scheduler is not fatal at once: the node opens a new session to the scheduler's
address and registers again with what the job's state is made of as it sees it (its
name, rank and address book, the incarnations of workers it heard from, the workers
it knows finished, and a worker's barrier counts), so that a scheduler started there
again rebuilds the job from the live nodes; requests the old one left unanswered are
sent to the new one. Only when no scheduler answers within that timeout does the
node fail, naming the scheduler. Meanwhile workers and servers go on training.
"""
import logging
import os
import secrets
import socket
import threading
import time

from ...base import MXNetError
from ..transport.session import parse_nonce
from ..transport.van import Van, local_address, log, resolve
from ..transport.wire import Message


# what only the scheduler may tell a node
_FROM_SCHEDULER = frozenset(['book', 'heartbeat_ack', 'dead', 'abort', 'terminate',
                             'barrier_done'])


class ClusterError(MXNetError):
    """The job cannot go on: a node died, timed out, or the cluster never formed."""


def node_name(role, rank, incarnation=0):
    """A node's name on the wire: 'server:0', 'worker:1'; a replacement worker's
    carries how many processes had the rank before it: 'worker:1.2'."""
    return '%s:%d%s' % (role, rank, '.%d' % incarnation if incarnation else '')


def parse_name(name):
    """(role, rank, incarnation) from a node's name; None for other names."""
    role, _, rest = name.partition(':')
    rank, _, incarnation = rest.partition('.')
    if not rank.isdigit() or not (incarnation.isdigit() or incarnation == ''):
        return None
    return role, int(rank), int(incarnation or 0)


def describe(node):
    """'worker 1 (pid 123 on host-a)' from an address-book entry."""
    return '%s %s (pid %s on %s)' % (node['role'], node['rank'], node.get('pid', '?'),
                                     node.get('hostname') or node.get('host'))


def open_transport(cfg, name, on_message, bind=None, on_failure=None, provisional=False):
    """The transport of a new node (transport/base.py): on ``cfg.hub`` (an in-process
    ``inproc.Hub``) when the configuration names one, over ZeroMQ otherwise."""
    if cfg.hub is not None:
        return cfg.hub.open(cfg, name, on_message, bind, on_failure, provisional)
    return Van(cfg, name, on_message, bind, on_failure, provisional)


def setup_logging(cfg):
    """Send the kvstore's log lines to stderr with a time stamp, once per process."""
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter('[%(asctime)s] %(name)s: %(message)s',
                                               '%H:%M:%S'))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO if cfg.verbose else logging.WARNING)


class Node:
    """Base of Server and the WorkerNode behind DistKVStore."""
    role = None

    def __init__(self, cfg, listen=False):
        setup_logging(cfg)
        self.cfg = cfg
        self.host = local_address(cfg) if cfg.hub is None else cfg.hub.host
        self.van = open_transport(cfg, 'new-%s-%s' % (self.role, secrets.token_hex(4)),
                                  self._dispatch, bind=(self.host, 0) if listen else None,
                                  on_failure=self.fatal, provisional=True)
        self.my_rank = None
        self.book = None
        self.failure = None
        self._joined = threading.Event()
        self._failed = threading.Event()
        self._last_answer = time.monotonic()
        self._early = []  # from peers whose address book came before ours (handled after it)
        self.incarnations = {}        # worker rank -> its latest process heard from (servers)
        self.finished_workers = set()  # names of the workers the scheduler said finished
        self._scheduler_at = None      # (address, port)
        self._scheduler_lost = None    # since when a silent scheduler is waited for
        self._rejoin_tried = 0.0
        self._handlers = {'book': self._on_book, 'heartbeat_ack': self._on_heartbeat_ack,
                          'dead': self._on_dead, 'abort': self._on_abort}

    # ---- joining -------------------------------------------------------------------------
    def join(self):
        """Register with the scheduler and wait for the address book (bounded)."""
        cfg = self.cfg
        self._scheduler_at = (resolve(cfg.root_uri), cfg.root_port)
        self.van.connect('scheduler', *self._scheduler_at)
        self.van.start()
        self.van.send('scheduler', Message('register', '', body=self._registration()))
        # heartbeats from now on: an address book that is lost and re-sent a few times
        # must not make this node look dead to the scheduler meanwhile
        self.van.every(cfg.heartbeat_interval, self._heartbeat)
        deadline = time.monotonic() + cfg.connect_timeout + 5
        while not self._joined.is_set():
            if self._failed.wait(0.05):
                raise ClusterError(self.failure)
            if time.monotonic() > deadline:
                self.fatal('no address book from the scheduler at %s:%d within %.0f s: is the '
                           'scheduler running, and are DMLC_PS_ROOT_URI/DMLC_PS_ROOT_PORT, '
                           'the job secret, MINIGLUON_PS_JOB_ID and MINIGLUON_PS_ENCRYPT the '
                           'same for every process?'
                           % (cfg.root_uri, cfg.root_port, cfg.connect_timeout))
                raise ClusterError(self.failure)

    def _registration(self):
        """What this node tells the scheduler when it registers."""
        cfg = self.cfg
        own_id = cfg.worker_id if self.role == 'worker' else cfg.server_id
        body = {'role': self.role, 'id': own_id, 'host': self.host, 'pid': os.getpid(),
                'hostname': socket.gethostname(), 'num_worker': cfg.num_worker,
                'num_server': cfg.num_server}
        if self.van.endpoint:
            body['port'] = self.van.endpoint[1]
        return body

    def _on_book(self, msg):
        body = msg.body or {}
        job_nonce = parse_nonce(body.get('job_nonce'))
        if job_nonce is not None:  # (every book carries it)
            self.van.bind_to_job(job_nonce)
        self.van.rename(body['name'])
        self.my_rank = body["rank"]
        self.book = body
        self._last_answer = time.monotonic()
        if body.get('recovery'):
            log.warning('%s: joined the job in place of a dead %s %d', body['name'], self.role,
                        body['rank'])
        elif self.cfg.verbose:
            log.info('%s: joined the job as %s', body['name'], body['name'])
        self._joined.set()
        early, self._early = self._early, []
        for early_msg in early:
            self._dispatch(early_msg)

    def _note_reroute(self, msg):
        """Keep this node's copy of the address book current when server ranks' keys move
        to another server (a restarted scheduler takes the book back from the nodes)."""
        if msg.src != 'scheduler':
            raise ValueError('only the scheduler sends reroute')
        body = msg.body or {}
        name, host, port = body['to']
        ranks = [int(rank) for rank in body['ranks']]
        for entry in self.book['servers']:
            if entry[0] in ranks:
                entry[1:3] = [host, port]
        routes = self.book.setdefault('routes', {})
        for rank in ranks:
            routes[str(rank)] = name
        return name, host, port, ranks

    # ---- liveness --------------------------------------------------------------------
    def _heartbeat(self):
        # (anything from the scheduler counts: a message that waits for a re-sent one
        # before it (PS_RESEND), a re-sent one, an acknowledgement)
        self._last_answer = max(self._last_answer, self.van.heard.get('scheduler', 0.0))
        silent = time.monotonic() - self._last_answer
        if self.book is not None and silent > self.cfg.heartbeat_timeout:
            if self._every_worker_finished():
                self.on_job_end()  # (the scheduler ended the job; its last word was lost)
                return
            if self.cfg.recovery_timeout <= 0:
                self.fatal('the scheduler at %s:%d stopped answering (no reply for %.0f s): it '
                           'died or the network is down' % (self.cfg.root_uri,
                                                            self.cfg.root_port, silent))
                return
            self._await_scheduler(silent)
            return  # (no heartbeats until a scheduler answers the registration)
        if self._scheduler_lost is not None:
            log.warning('%s: a scheduler answers at %s:%d again; the job goes on',
                        self.van.name, self.cfg.root_uri, self.cfg.root_port)
            self._scheduler_lost = None
        self.van.send('scheduler', Message('heartbeat', ''))

    def _every_worker_finished(self):
        """Whether the scheduler said that every worker rank finished."""
        ranks = {ident[1] for ident in map(parse_name, self.finished_workers)
                 if ident is not None and ident[0] == 'worker'}
        return ranks >= set(range(self.cfg.num_worker))

    def on_job_end(self):
        """Hook: the job ended (a server's terminate may be lost on a lossy link: every
        worker had finished when the scheduler fell silent)."""

    def _on_heartbeat_ack(self, msg):
        self._last_answer = time.monotonic()
        finished = (msg.body or {}).get('finished')
        if isinstance(finished, list):
            self.finished_workers.update(n for n in finished if isinstance(n, str))

    # ---- a restarted scheduler ---------------------------------------------------------
    def _await_scheduler(self, silent):
        """The scheduler is silent and the job allows restarts: register again with the
        one at its address (in a new session) every PS_HEARTBEAT_TIMEOUT, and fail once
        none answered for PS_WORKER_RECOVERY_TIMEOUT."""
        cfg, now = self.cfg, time.monotonic()
        if self._scheduler_lost is None:
            self._scheduler_lost = now
            log.warning('%s: the scheduler at %s:%d stopped answering (no reply for %.0f s); '
                        'waiting up to %g s (PS_WORKER_RECOVERY_TIMEOUT) for a new one there',
                        self.van.name, cfg.root_uri, cfg.root_port, silent,
                        cfg.recovery_timeout)
        elif now - self._scheduler_lost > cfg.recovery_timeout:
            self.fatal('the scheduler at %s:%d stopped answering %.0f s ago and no new '
                       'scheduler answered there within %g s (PS_WORKER_RECOVERY_TIMEOUT): it '
                       'died and was not started again, or the network is down'
                       % (cfg.root_uri, cfg.root_port, silent, cfg.recovery_timeout))
            return
        if now - self._rejoin_tried >= cfg.heartbeat_timeout:
            self._rejoin_tried = now
            # a new process has none of our sessions: open another one (the transport
            # queues what is sent until it is open)
            self.van.forget('scheduler')
            self.van.connect('scheduler', *self._scheduler_at)
            self.van.call_soon(self._rejoin)

    def _rejoin(self):
        """Register again, with this node's view of the job's state (on the I/O thread)."""
        body = self._registration()
        body['rejoin'] = dict(self.rejoin_report(), name=self.van.name, rank=self.my_rank,
                              book=self.book, finished=sorted(self.finished_workers),
                              incarnations=sorted(self.incarnations.items()))
        self.van.send('scheduler', Message('register', '', body=body))
        self.on_scheduler_back()

    def rejoin_report(self):
        """What else a restarted scheduler needs from this node (a worker's barriers)."""
        return {}

    def on_scheduler_back(self):
        """Hook: a session with a (new) scheduler is being opened; send again what the old
        one left unanswered."""

    def _on_dead(self, msg):
        self.fatal(msg.err or 'another node of the job died')

    def _on_abort(self, msg):
        self.fatal(msg.err or 'the scheduler aborted the job')

    def fatal(self, reason):
        """Record the first failure, wake every waiter; subclasses decide how to stop."""
        if self.failure is not None:
            return
        self.failure = '%s: %s' % (self.van.name, reason)
        log.error('%s', self.failure)
        self._failed.set()
        self.on_failure()

    def on_failure(self):
        """Hook for subclasses (wake blocked calls, exit the process...)."""

    def _dispatch(self, msg):
        if msg.cmd in _FROM_SCHEDULER and msg.src != 'scheduler':
            raise ValueError('only the scheduler sends %s' % msg.cmd)
        if msg.src == 'scheduler' and msg.cmd != 'heartbeat_ack':
            self._last_answer = time.monotonic()
        elif self.book is None:  # answered once we know our name, so replies carry it
            self._early.append(msg)
            return
        handler = self._handlers.get(msg.cmd)
        if handler is None:
            log.warning('%s: unexpected %s from %s dropped', self.van.name, msg.cmd, msg.src)
            return
        handler(msg)
