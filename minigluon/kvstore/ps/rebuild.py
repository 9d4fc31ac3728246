"""The scheduler's restart: a new scheduler rebuilds the job from its live nodes.

What the scheduler holds is small: the job's shape, the address book, each node's
rank, address and process (its incarnation), the barrier counts, and which workers
finished. When the job allows restarts (``PS_WORKER_RECOVERY_TIMEOUT``) a node whose
scheduler falls silent registers again at the scheduler's address with its view of
that state (node.py, ``_rejoin``); a scheduler started there again takes:

- the address book (the fields every node's book shares, named in its ``shared``),
  and the shape, from the first node that comes back; every rank of the job gets an
  entry that waits for its node (a placeholder), so that a node that does not come
  back within ``PS_HEARTBEAT_TIMEOUT`` is handled as a silent one (a worker is
  waited for and replaced, a server fails over or stops the job);
- the incarnations of workers from what the servers heard, so that a worker
  replaced now gets a name newer than any its rank had; such a registration waits
  until every server is back (or failed over);
- the workers that finished, from any node the old scheduler told;
- the barrier count: the highest any worker saw pass; a worker waiting in a barrier
  sends its request again, and a replacement whose predecessor had arrived at the
  open barrier says so (``entered``).

A scheduler that dies before the job formed is not rebuilt: the nodes waiting for
their address book fail as before.
"""
import time

from .node import node_name, parse_name
from ..transport.van import log
from ..transport.wire import Message


class Rebuild:
    """Mixed into ``Scheduler``."""

    def _init_rebuild(self):
        self._held = []               # worker registrations waiting for every server

    # ---- a node registers again ----------------------------------------------------------
    def _on_rejoin(self, msg, body):
        info = body['rejoin']
        role, name, rank, book = body.get('role'), info.get('name'), info.get('rank'), \
            info.get('book')
        ident = parse_name(name) if isinstance(name, str) else None
        if ident is None or ident[:2] != (role, rank) or name != msg.src or \
                not isinstance(book, dict) or not isinstance(book.get('shared'), list):
            raise ValueError('malformed registration of a node of the job from %s' % msg.src)
        mismatch = self._shape_mismatch(body)
        if mismatch:
            raise ValueError(mismatch)
        if self.exit_code is not None:
            return
        if self.book is None:
            self._adopt_book(book, name)
        self._learn(info)
        now = time.monotonic()
        current = self._entry(role, rank)
        if current is not None and not current.get('placeholder'):
            if current['incarnation'] > ident[2]:
                self.van.send(name, Message('abort', '', err='scheduler: %s took the rank of %s'
                                            % (current['name'], name)))
                return
            if current['name'] == name:  # said again (its first answer may be on its way)
                current['last_seen'] = now
                self.van.send(name, Message('heartbeat_ack', '', body=self._news()))
                return
            self.van.send(current['name'], Message('abort', '', err='scheduler: %s took its '
                                                   'rank' % name))
        if current is not None:
            del self.nodes[current['name']]
        entry = {'temp': name, 'role': role, 'id': body.get('id'), 'host': body.get('host'),
                 'port': body.get('port'), 'pid': body.get('pid'),
                 'hostname': body.get('hostname'), 'rank': rank, 'name': name,
                 'incarnation': ident[2], 'last_seen': now, 'lost_since': None}
        self.nodes[name] = entry
        self._restore_node(entry, book)
        if role == 'worker':
            self._rejoin_barrier(entry, info)
        self.van.send(name, Message('heartbeat_ack', '', body=self._news()))
        waiting = sorted(n for n, p in self.nodes.items() if p.get('placeholder'))
        log.warning('scheduler: %s (pid %s on %s) is back%s', name, entry['pid'],
                    entry['hostname'], '; waiting for %s' % ', '.join(waiting) if waiting
                    else '; the job is whole again')
        self._after_rejoin()

    def _restore_node(self, entry, book):
        """Hook: what else the scheduler takes from a returning node's address book
        (``book``, its own copy, with the fields that are that node's)."""

    def _adopt_book(self, book, first):
        """The job as the first returning node knows it: its book, and a placeholder for
        every rank until its node is back."""
        self.book = {k: book[k] for k in book['shared'] if k in book}
        self.job_nonce = self.book.get('job_nonce', getattr(self, 'job_nonce', None))
        now = time.monotonic()
        ranks = {'server': [r for r, _, _ in self.book.get('servers', [])],
                 'worker': range(self.cfg.num_worker)}
        for role, role_ranks in ranks.items():
            for rank in role_ranks:
                name = node_name(role, rank)
                self.nodes[name] = {'temp': None, 'role': role, 'id': rank, 'host': None,
                                    'port': None, 'pid': '?', 'placeholder': True,
                                    'hostname': 'a host not heard from since the scheduler '
                                                'restarted', 'rank': rank, 'name': name,
                                    'incarnation': 0, 'last_seen': now, 'lost_since': None}
        self.barriers.setdefault('worker', {'passed': 0, 'arrived': {}, 'since': None})
        log.warning('scheduler: started again in a running job (%s is the first node back): '
                    'rebuilding its state from the live nodes', first)
        for entry in self.pending:  # (registered before: restarted while there was none)
            if entry['role'] == 'worker':
                self._held.append(entry)
        self.pending = []

    def _entry(self, role, rank):
        return next((p for p in self.nodes.values() if (p['role'], p['rank']) == (role, rank)),
                    None)

    def _learn(self, info):
        """Incarnations and finished workers a returning node knows of."""
        known = {}
        for pair in info.get('incarnations') or ():
            if isinstance(pair, list) and len(pair) == 2 and all(type(v) is int for v in pair):
                known[pair[0]] = max(known.get(pair[0], 0), pair[1])
        finished = []
        for name in info.get('finished') or ():
            ident = parse_name(name) if isinstance(name, str) else None
            if ident is not None and ident[0] == 'worker':
                known[ident[1]] = max(known.get(ident[1], 0), ident[2])
                finished.append(ident)
        for rank, incarnation in known.items():
            entry = self._entry('worker', rank)
            if entry is not None and entry.get('placeholder') and \
                    incarnation > entry['incarnation']:
                del self.nodes[entry['name']]
                entry.update(incarnation=incarnation,
                             name=node_name('worker', rank, incarnation))
                self.nodes[entry['name']] = entry
        for _, rank, incarnation in finished:
            entry = self._entry('worker', rank)
            if entry is not None and entry['incarnation'] == incarnation:
                self.finished.add(entry['name'])

    def _rejoin_barrier(self, entry, info):
        """A returning worker's barrier counts: a barrier it saw pass has passed; one its
        predecessor arrived at (and it did not, in its place) has its arrival."""
        barrier = self.barriers.setdefault('worker', {'passed': 0, 'arrived': {}, 'since': None})
        passed, entered = info.get('passed'), info.get('entered')
        if type(passed) is int and passed > barrier['passed']:
            if barrier['arrived']:  # (the ones waiting in it lost their answer)
                self._pass_barrier(barrier)
            barrier['passed'] = max(barrier['passed'], passed)
        if type(entered) is int and entered > barrier['passed']:
            if not barrier['arrived']:
                barrier['since'] = time.monotonic()
            barrier['arrived'].setdefault(('worker', entry['rank']), (entry['name'], None))
            self._complete_barrier('worker', barrier)

    def _after_rejoin(self):
        """Once every server is back (or failed over): replace the workers that registered
        meanwhile, and end the job if every worker had finished."""
        if any(p.get('placeholder') for p in self.nodes.values() if p['role'] == 'server'):
            return
        held, self._held = self._held, []
        for entry in held:
            self._replace(entry)
        self._end_if_finished()

    def _hold(self, entry):
        """Whether a late registration waits (until every server is back: they know which
        processes its rank had)."""
        if entry['role'] == 'worker' and any(p.get('placeholder') for p in self.nodes.values()
                                             if p['role'] == 'server'):
            self._held.append(entry)
            return True
        return False

    def _news(self):
        """What every node keeps for a restarted scheduler: which workers finished."""
        return {'finished': sorted(n for n in self.finished
                                   if self.nodes.get(n, {}).get('role') == 'worker')}
