"""The scheduler: forms the job, watches its health, runs barriers, ends it.

It waits for ``DMLC_NUM_SERVER`` servers and ``DMLC_NUM_WORKER`` workers to
register (bounded by ``MINIGLUON_PS_CONNECT_TIMEOUT``), assigns ranks (the launcher's
``DMLC_WORKER_ID``/``DMLC_SERVER_ID`` when given, registration order otherwise),
sends everyone the address book, answers heartbeats, declares a node dead after
``PS_HEARTBEAT_TIMEOUT`` of silence (telling every other node, then exiting
non-zero), and ends the job once every worker has finished.

With ``PS_WORKER_RECOVERY_TIMEOUT`` above 0 a dead worker is not fatal: the scheduler
waits that long for a process to register with its rank (``DMLC_WORKER_ID``, or no
index at all) and gives it the rank under a new name, 'worker:1.1', with
``recovery`` in its address book. A registration for the rank of a worker still
thought alive means that one died (the launcher restarted it): it is replaced at
once. Barriers are numbered; a dead worker's arrival at the open barrier still
counts, and a replacement repeating a barrier already passed passes it at once.
A replacement that does not come in time stops the job. A dead server stops it too,
unless ``PS_REPLICATION`` gave its keys a live backup, which then serves them
(failover.py). A scheduler started again on the same address rebuilds the job from
its live nodes (rebuild.py).
"""
import threading
import time

from .failover import ServerFailover
from .node import describe, node_name, open_transport, setup_logging
from .rebuild import Rebuild
from ..transport.session import new_nonce
from ..transport.van import log, resolve
from ..transport.wire import Message


class Scheduler(ServerFailover, Rebuild):
    """The scheduler node: registers servers and workers, gives out ranks and addresses,
    runs barriers, and watches heartbeats so a lost node stops the job loudly.
    """

    def __init__(self, cfg):
        setup_logging(cfg)
        self.cfg = cfg
        host = resolve(cfg.root_uri)
        self.van = open_transport(cfg, 'scheduler', self._dispatch, bind=(host, cfg.root_port),
                                  on_failure=lambda reason: self._abort(reason))
        self.started = time.monotonic()
        self.elastic = cfg.recovery_timeout > 0
        self.pending = []           # registrations before the book is complete
        self.nodes = {}             # name -> address-book entry (+ last_seen, lost_since)
        self.book = None            # what every node's address book holds
        self.finished = set()
        self.barriers = {}          # group -> {'passed': n, 'arrived': {(role, rank): (name, req)}}
        self.exit_code = None
        self.failure = None         # why the job stopped, when it failed
        self.done = threading.Event()
        self._last_words = []       # (name, Message): what must arrive before the end
        # drawn afresh for every job (a restarted scheduler takes the job's from the nodes'
        # books): servers and workers bind their sessions to it (van.bind_to_job), so no
        # other job's recorded hello opens one
        self.job_nonce = new_nonce().hex()
        self._handlers = {'register': self._on_register, 'heartbeat': self._on_heartbeat,
                          'barrier': self._on_barrier, 'finish': self._on_finish}
        self._init_failover()
        self._init_rebuild()

    def run(self):
        """Serve until the job ends; returns the process exit status."""
        self.van.start()
        self.van.every(min(1.0, self.cfg.heartbeat_interval), self._check_health)
        if self.cfg.verbose:
            log.info('scheduler: listening on %s:%d for %d servers and %d workers',
                     *self.van.endpoint, self.cfg.num_server, self.cfg.num_worker)
        self.done.wait()
        # the last messages (the workers' finish replies, the news of a failure, the live
        # servers' terminates) must arrive: with PS_RESEND, re-send them until each is
        # acknowledged or its node exited (its acknowledgement lost). A node hands messages
        # over in order, so each waits for every earlier one that a lossy link dropped;
        # the re-sends keep a live node hearing the scheduler meanwhile, so it does not
        # give up on it. Bounded by twice the heartbeat timeout: at 50% loss and the
        # timeout's ten re-sends, a message held for all of them ended about one job in
        # twenty with a server that never heard the end.
        live = {n for n in self._group('server') if self.nodes[n]['lost_since'] is None}
        self.van.drain(2 * self.cfg.heartbeat_timeout, [
            (dest, msg) for dest, msg in self._last_words if msg.cmd != 'terminate' or dest in live])
        self.van.settle(0.2)  # let the last messages leave
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
        if role in ('server', 'worker') and isinstance(body.get('rejoin'), dict):
            self._on_rejoin(msg, body)  # a node of the job, whose scheduler was restarted
            return
        if role not in ('server', 'worker') or \
                any(p['temp'] == msg.src for p in self.pending + list(self.nodes.values())):
            return  # malformed or repeated registration
        mismatch = self._shape_mismatch(body)
        if mismatch:
            log.error('scheduler: refused %s pid %s on %s: %s', role, body.get('pid'),
                      body.get('hostname'), mismatch)
            self._say_last(msg.src, Message('abort', '', err='scheduler: ' + mismatch))
            return
        entry = {'temp': msg.src, 'role': role, 'id': body.get('id'), 'host': body.get('host'),
                 'port': body.get('port'), 'pid': body.get('pid'),
                 'hostname': body.get('hostname')}
        if self.nodes:
            if self._hold(entry):
                return
            if self.elastic and role == 'worker':
                self._replace(entry)
            elif self.cfg.replication and role == 'server':
                self._add_server(entry)
            return  # late: the job has formed
        if self.elastic and role == 'worker' and entry['id'] is not None:
            # a worker that died before the job formed, restarted by the launcher
            self.pending = [p for p in self.pending
                            if (p['role'], p['id']) != ('worker', entry['id'])]
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

    def _shape_mismatch(self, body):
        """Why a registering node's view of the job's shape is not the scheduler's (whose
        DMLC_NUM_WORKER/DMLC_NUM_SERVER are the job's), or None."""
        for field, variable in (('num_worker', 'DMLC_NUM_WORKER'),
                                ('num_server', 'DMLC_NUM_SERVER')):
            theirs, ours = body.get(field), getattr(self.cfg, field)
            if theirs != ours:
                return ('this %s was started with %s=%s, but the job has %s=%d (the '
                        "scheduler's); start every process of the job with the same %s"
                        % (body.get('role'), variable, theirs, variable, ours, variable))
        return None

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
            p.update(name=node_name(p['role'], p['rank']), incarnation=0, last_seen=now,
                     lost_since=None)
            self.nodes[p['name']] = p
        self.book = {'servers': [[p['rank'], p['host'], p['port']] for p in servers],
                     'num_workers': self.cfg.num_worker, 'num_servers': self.cfg.num_server,
                     'job_nonce': self.job_nonce}
        self._plan_backups(servers)
        for p in servers:
            self._send_book(p, **self._server_book(p))
        for p in workers:
            self._send_book(p)
        if self.cfg.verbose:
            log.info('scheduler: the job is up: %d servers, %d workers', len(servers), len(workers))

    def _send_book(self, entry, **extra):
        # ('shared': the fields of the job's book, which a restarted scheduler takes back)
        body = dict(self.book, rank=entry['rank'], name=entry['name'], shared=sorted(self.book),
                    **extra)
        self.van.send(entry['temp'], Message('book', '', body=body))
        self.van.alias(entry['name'], entry['temp'])

    # ---- replacing dead workers ----------------------------------------------------------
    def _replace(self, entry):
        """A worker registered after the job formed: it takes a lost worker's rank."""
        workers = [n for n in self.nodes.values() if n['role'] == 'worker']
        if entry['id'] is not None:
            old = next((n for n in workers if n['rank'] == entry['id']), None)
        else:
            old = min((n for n in workers if n['lost_since'] is not None),
                      key=lambda n: n['rank'], default=None)
        if old is None:
            self._say_last(entry['temp'], Message(
                'abort', '', err='scheduler: the job has its %d workers and none of them died; '
                                 'a late worker without DMLC_WORKER_ID has no rank to take'
                                 % self.cfg.num_worker))
            return
        now = time.monotonic()
        silent = now - old['last_seen']
        if old['lost_since'] is None:  # it died and was restarted before it was missed
            self._lose(old, 'was replaced by pid %s on %s' % (entry['pid'], entry['hostname']))
        entry.update(rank=old['rank'], incarnation=old['incarnation'] + 1, last_seen=now,
                     lost_since=None)
        entry['name'] = node_name('worker', entry['rank'], entry['incarnation'])
        del self.nodes[old['name']]
        self.finished.discard(old['name'])
        self.van.forget(old['name'])
        self.nodes[entry['name']] = entry
        barrier = self.barriers.get('worker', {'passed': 0, 'arrived': {}})
        entered = barrier['passed'] + (('worker', entry['rank']) in barrier['arrived'])
        self._send_book(entry, recovery=True, barriers=entered, passed=barrier['passed'])
        log.warning('scheduler: worker %d has a new process: pid %s on %s joins as %s (restart '
                    '%d of this rank); the old one, pid %s, was last heard from %.1f s before',
                    entry['rank'], entry['pid'], entry['hostname'], entry['name'],
                    entry['incarnation'], old['pid'], silent)

    def _lose(self, node, why):
        """Wait for a replacement of worker ``node`` instead of stopping the job."""
        node['lost_since'] = time.monotonic()
        # if it still runs (stuck, cut off), it must stop: its rank goes to another process
        self.van.send(node['name'], Message('abort', '', err='scheduler: %s %s; another '
                                            'process takes its rank' % (describe(node), why)))

    # ---- health ------------------------------------------------------------------------
    def _on_heartbeat(self, msg):
        node = self.nodes.get(msg.src)
        if node is not None and node['lost_since'] is None:
            self.van.send(msg.src, Message('heartbeat_ack', ''))

    def _check_health(self):
        if self.exit_code is not None:
            return  # the job ends (its last messages are leaving)
        now = time.monotonic()
        if not self.nodes:
            if now - self.started > self.cfg.connect_timeout:
                self._abort(self._missing_report())
            return
        for name, node in list(self.nodes.items()):
            if name in self.finished:
                continue
            if node['lost_since'] is not None:
                if now - node['lost_since'] > self.cfg.recovery_timeout:
                    self._abort('%s died and no process registered to replace it within %g s '
                                '(PS_WORKER_RECOVERY_TIMEOUT); stopping the job'
                                % (describe(node), self.cfg.recovery_timeout))
                    return
                continue
            # any new message counts, delivered or not: one that waits for a re-sent one
            # before it (PS_RESEND) shows its sender alive as well
            node['last_seen'] = max(node['last_seen'], self.van.heard.get(name, 0.0),
                                    self.van.heard.get(node['temp'], 0.0))
            if now - node['last_seen'] > self.cfg.heartbeat_timeout:
                if self.elastic and node['role'] == 'worker':
                    why = ('stopped sending heartbeats %.0f s ago (PS_HEARTBEAT_TIMEOUT=%g s)'
                           % (now - node['last_seen'], self.cfg.heartbeat_timeout))
                    log.warning('scheduler: %s %s; the job waits up to %g s for a new process '
                                'with its rank (PS_WORKER_RECOVERY_TIMEOUT)', describe(node),
                                why, self.cfg.recovery_timeout)
                    self._lose(node, why)
                    continue
                if node['role'] == 'server' and self._fail_over(node, 'stopped sending '
                                                                'heartbeats %.0f s ago'
                                                                % (now - node['last_seen'])):
                    continue
                self._declare_dead(node, now - node['last_seen'])
                return
        for group, barrier in self.barriers.items():
            if barrier['arrived'] and now - barrier['since'] > self.cfg.wait_timeout:
                arrived = {name for name, _ in barrier['arrived'].values()}
                missing = [n for n in self._group(group) if n not in arrived]
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
        self.failure = self.failure or reason
        self._broadcast('dead', reason, exclude=node['name'])
        self._finish(1)

    def _abort(self, reason):
        log.error('scheduler: %s', reason)
        self.failure = self.failure or reason
        self._broadcast('abort', reason)
        self._finish(1)

    def _broadcast(self, cmd, reason, exclude=None):
        targets = [n for n in self.nodes if n != exclude and n not in self.finished] \
            if self.nodes else [p['temp'] for p in self.pending]
        for name in targets:
            self._say_last(name, Message(cmd, '', err=reason))

    def _say_last(self, name, msg):
        """Send one of the messages the job must deliver before the scheduler exits."""
        self._last_words.append((name, msg))
        self.van.send(name, msg)

    def _finish(self, code):
        if self.exit_code is None:
            self.exit_code = code
            self.done.set()

    # ---- barriers and the end ----------------------------------------------------------
    def _group(self, group):
        return [n for n, p in self.nodes.items() if group == 'all' or p['role'] == group]

    def _on_barrier(self, msg):
        group = (msg.body or {}).get('group', 'worker')
        node = self.nodes.get(msg.src)
        if node is None or node['lost_since'] is not None or msg.src not in self._group(group):
            return
        barrier = self.barriers.setdefault(group, {'passed': 0, 'arrived': {}, 'since': None})
        number = (msg.body or {}).get('n', barrier['passed'])
        if type(number) is not int or number > barrier['passed']:
            self.van.send(msg.src, Message(
                'barrier_done', '', req=msg.req, err='barrier %r from %s, but the job has passed '
                '%d barriers: the next is barrier %d' % (number, msg.src, barrier['passed'],
                                                        barrier['passed'])))
            return
        if number < barrier['passed']:  # a replacement repeating one its predecessor passed
            self.van.send(msg.src, Message('barrier_done', '', req=msg.req,
                                           body={'passed': barrier['passed']}))
            return
        if not barrier['arrived']:
            barrier['since'] = time.monotonic()
        barrier['arrived'][node['role'], node['rank']] = (msg.src, msg.req)
        self._complete_barrier(group, barrier)

    def _complete_barrier(self, group, barrier):
        if len(barrier['arrived']) >= len(self._group(group)):
            self._pass_barrier(barrier)

    def _pass_barrier(self, barrier):
        """Pass the open barrier: answer whoever waits in it."""
        arrived, barrier['arrived'] = barrier['arrived'], {}
        barrier['passed'] += 1
        for name, req in arrived.values():
            # (not a dead worker's arrival, nor one a restarted scheduler was told of)
            if name in self.nodes and req is not None:
                # (the count: a scheduler started again asks the workers for it)
                self.van.send(name, Message('barrier_done', '', req=req,
                                            body={'passed': barrier['passed']}))

    def _on_finish(self, msg):
        if msg.src not in self.nodes:
            return
        self.finished.add(msg.src)
        news = self._news()  # (every node keeps it, for a scheduler started again)
        for name, node in self.nodes.items():
            if name not in self.finished and node['temp'] is not None:
                self.van.send(name, Message('heartbeat_ack', '', body=news))
        self._say_last(msg.src, Message('reply', '', req=msg.req))
        self._end_if_finished()

    def _end_if_finished(self):
        if any(self.nodes[n].get('placeholder') for n in self._group('server')):
            return  # (a server not back after a restart would never hear the end)
        workers = self._group('worker')
        if self.exit_code is None and all(w in self.finished for w in workers):
            for name in self._group('server'):
                self._say_last(name, Message('terminate', ''))
                self.finished.add(name)
            if self.cfg.verbose:
                log.info('scheduler: every worker finished; the job ends')
            self._finish(0)
