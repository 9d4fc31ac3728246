"""The scheduler: forms the job, watches its health, runs barriers, ends it.

It waits for ``DMLC_NUM_SERVER`` servers and ``DMLC_NUM_WORKER`` workers to
register (bounded by ``MINIGLUON_PS_CONNECT_TIMEOUT``), assigns ranks (the launcher's
``DMLC_WORKER_ID``/``DMLC_SERVER_ID`` when given, registration order otherwise),
sends everyone the address book, answers heartbeats, declares a node dead after
``PS_HEARTBEAT_TIMEOUT`` of silence (telling every other node, then exiting
non-zero), and ends the job once every worker has finished.
"""
import threading
import time

from .node import describe, setup_logging
from .van import Van, log, resolve
from .wire import Message


class Scheduler:
    """The scheduler node: registers servers and workers, gives out ranks and addresses,
    runs barriers, and watches heartbeats so a lost node stops the job loudly.
    """

    def __init__(self, cfg):
        setup_logging(cfg)
        self.cfg = cfg
        host = resolve(cfg.root_uri)
        self.van = Van(cfg, 'scheduler', self._dispatch, bind=(host, cfg.root_port),
                       on_failure=lambda reason: self._abort(reason))
        self.started = time.monotonic()
        self.pending = []           # registrations before the book is complete
        self.nodes = {}             # name -> address-book entry (+ last_seen)
        self.finished = set()
        self.barriers = {}          # group -> {name: request id}
        self.barrier_since = {}
        self.exit_code = None
        self.done = threading.Event()
        self._handlers = {'register': self._on_register, 'heartbeat': self._on_heartbeat,
                          'barrier': self._on_barrier, 'finish': self._on_finish}

    def run(self):
        """Serve until the job ends; returns the process exit status."""
        self.van.start()
        self.van.every(min(1.0, self.cfg.heartbeat_interval), self._check_health)
        if self.cfg.verbose:
            log.info('scheduler: listening on %s:%d for %d servers and %d workers',
                     *self.van.endpoint, self.cfg.num_server, self.cfg.num_worker)
        self.done.wait()
        # the last messages (terminate, the last worker's reply) must arrive: with PS_RESEND,
        # give them a few re-sends (a stopped worker never acknowledges, hence the bound)
        self.van.drain(min(self.cfg.heartbeat_timeout, 5 * self.cfg.resend_timeout))
        time.sleep(0.2)  # let the last messages leave
        self.van.stop()
        return self.exit_code

    def _dispatch(self, msg):
        node = self.nodes.get(msg.src)
        if node is not None:
            node['last_seen'] = time.monotonic()
        handler = self._handlers.get(msg.cmd)
        if handler is None:
            log.warning('scheduler: unexpected %s from %s dropped', msg.cmd, msg.src)
            return
        handler(msg)

    # ---- forming the job ---------------------------------------------------------------
    def _on_register(self, msg):
        body = msg.body or {}
        role = body.get('role')
        if self.nodes or role not in ('server', 'worker') or \
                any(p['temp'] == msg.src for p in self.pending):
            return  # late, malformed or repeated registration
        entry = {'temp': msg.src, 'role': role, 'id': body.get('id'), 'host': body.get('host'),
                 'port': body.get('port'), 'pid': body.get('pid'),
                 'hostname': body.get('hostname')}
        self.pending.append(entry)
        if self.cfg.verbose:
            log.info('scheduler: %s registered from %s (%d of %d)', role, entry['hostname'],
                     len(self.pending), self.cfg.num_server + self.cfg.num_worker)
        wanted = {'server': self.cfg.num_server, 'worker': self.cfg.num_worker}
        counts = {r: sum(1 for p in self.pending if p['role'] == r) for r in wanted}
        if counts[role] > wanted[role]:
            self._abort('more %ss registered than DMLC_NUM_%s=%d: %s is one too many'
                        % (role, role.upper(), wanted[role], entry['hostname']))
        elif counts == wanted:
            self._publish_book()

    def _assign(self, role, count):
        entries = [p for p in self.pending if p['role'] == role]
        taken = {}
        for p in entries:
            if p['id'] is not None:
                if p['id'] in taken:
                    self._abort('two %ss claim index %d: pid %s on %s and pid %s on %s'
                                % (role, p['id'], taken[p['id']]['pid'], taken[p['id']]['hostname'],
                                   p['pid'], p['hostname']))
                    return None
                taken[p['id']] = p
        free = iter(r for r in range(count) if r not in taken)
        for p in entries:
            p['rank'] = p['id'] if p['id'] is not None else next(free)
        return sorted(entries, key=lambda p: p['rank'])

    def _publish_book(self):
        servers = self._assign('server', self.cfg.num_server)
        workers = self._assign('worker', self.cfg.num_worker)
        if servers is None or workers is None:
            return
        now = time.monotonic()
        for p in servers + workers:
            p['name'] = '%s:%d' % (p['role'], p['rank'])
            p['last_seen'] = now
            self.nodes[p['name']] = p
        book = {'servers': [[p['rank'], p['host'], p['port']] for p in servers],
                'num_workers': self.cfg.num_worker, 'num_servers': self.cfg.num_server}
        for p in servers + workers:
            body = dict(book, rank=p['rank'], name=p['name'])
            self.van.send(p['temp'], Message('book', '', body=body))
            self.van.alias(p['name'], p['temp'])
        if self.cfg.verbose:
            log.info('scheduler: the job is up: %d servers, %d workers', len(servers), len(workers))

    # ---- health ------------------------------------------------------------------------
    def _on_heartbeat(self, msg):
        if msg.src in self.nodes:
            self.van.send(msg.src, Message('heartbeat_ack', ''))

    def _check_health(self):
        now = time.monotonic()
        if not self.nodes:
            if now - self.started > self.cfg.connect_timeout:
                self._abort(self._missing_report())
            return
        for name, node in self.nodes.items():
            if name in self.finished:
                continue
            if now - node['last_seen'] > self.cfg.heartbeat_timeout:
                self._declare_dead(node, now - node['last_seen'])
                return
        for group, members in self.barriers.items():
            if members and now - self.barrier_since[group] > self.cfg.wait_timeout:
                missing = [n for n in self._group(group) if n not in members]
                self._abort('barrier timed out after %.0f s waiting for %s'
                            % (self.cfg.wait_timeout, ', '.join(missing)))
                return

    def _missing_report(self):
        have = {r: [p for p in self.pending if p['role'] == r] for r in ('server', 'worker')}
        parts = []
        for role, want in (('server', self.cfg.num_server), ('worker', self.cfg.num_worker)):
            got = have[role]
            if len(got) < want:
                parts.append('%d of %d %ss missing (registered: %s)'
                             % (want - len(got), want, role,
                                ', '.join('pid %s on %s' % (p['pid'], p['hostname']) for p in got)
                                or 'none'))
        return ('the cluster did not form within %.0f s (MINIGLUON_PS_CONNECT_TIMEOUT): %s'
                % (self.cfg.connect_timeout, '; '.join(parts)))

    def _declare_dead(self, node, silent):
        reason = ('%s stopped sending heartbeats %.0f s ago (PS_HEARTBEAT_TIMEOUT=%g s): it '
                  'died or is unreachable; stopping the job'
                  % (describe(node), silent, self.cfg.heartbeat_timeout))
        log.error('scheduler: %s', reason)
        self._broadcast('dead', reason, exclude=node['name'])
        self._finish(1)

    def _abort(self, reason):
        log.error('scheduler: %s', reason)
        self._broadcast('abort', reason)
        self._finish(1)

    def _broadcast(self, cmd, reason, exclude=None):
        targets = [n for n in self.nodes if n != exclude and n not in self.finished] \
            if self.nodes else [p['temp'] for p in self.pending]
        for name in targets:
            self.van.send(name, Message(cmd, '', err=reason))

    def _finish(self, code):
        if self.exit_code is None:
            self.exit_code = code
            self.done.set()

    # ---- barriers and the end ----------------------------------------------------------
    def _group(self, group):
        return [n for n, p in self.nodes.items() if group == 'all' or p['role'] == group]

    def _on_barrier(self, msg):
        group = (msg.body or {}).get('group', 'worker')
        if msg.src not in self.nodes or msg.src not in self._group(group):
            return
        members = self.barriers.setdefault(group, {})
        if not members:
            self.barrier_since[group] = time.monotonic()
        members[msg.src] = msg.req
        if len(members) == len(self._group(group)):
            self.barriers[group] = {}
            for name, req in members.items():
                self.van.send(name, Message('barrier_done', '', req=req))

    def _on_finish(self, msg):
        if msg.src not in self.nodes:
            return
        self.finished.add(msg.src)
        self.van.send(msg.src, Message('reply', '', req=msg.req))
        workers = self._group('worker')
        if all(w in self.finished for w in workers):
            for name in self._group('server'):
                self.van.send(name, Message('terminate', ''))
                self.finished.add(name)
            if self.cfg.verbose:
                log.info('scheduler: every worker finished; the job ends')
            self._finish(0)
