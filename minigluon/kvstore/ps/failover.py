"""The scheduler's half of server replication (replica.py): who backs up whom, and
what happens when a server dies or a replacement joins.

Each server rank's keys (a range) are served by one live server and copied on
another (its backup): at the start, server i serves range i and backs up server
i - 1. When a server dies, its backup is told to serve its ranges (``adopt``); once
it has, every worker is told to send what went to those ranks there (``reroute``),
and the address book changes the same way for workers that join later. A server
whose backup died gets another live one, or none until a replacement server
registers (the launcher restarts it under ``--max-restarts``): the replacement
becomes the backup of every server that has none. A server that dies while its
ranges have no live backup stops the job, as without replication.
"""
import time

from .node import describe, node_name
from ..transport.van import log
from ..transport.wire import Message


class ServerFailover:
    """Mixed into ``Scheduler``."""

    def _init_failover(self):
        self.serves = {}              # server name -> the ranks it serves
        self.backup_of = {}           # server name -> the server holding its copies, or None
        self.server_incarnations = {}  # rank -> processes that have had the rank so far
        self._replies = {}            # request id -> called with the reply
        self._request_ids = 0
        self._handlers['reply'] = self._on_reply

    def _plan_backups(self, servers):
        """Book fields of each server entry at the start (each serves its own rank)."""
        self.book['routes'] = {}      # str(rank) -> the server serving it, when not its own
        for i, p in enumerate(servers):
            self.serves[p['name']] = [p['rank']]
            self.server_incarnations[p['rank']] = 1
            backup = servers[(i + 1) % len(servers)] if self.cfg.replication else None
            self.backup_of[p['name']] = backup['name'] if backup else None

    def _server_book(self, entry):
        """What a server's own address book says besides the job's: what it serves and
        where its backup listens."""
        if not self.cfg.replication:
            return {}
        return {'serves': self.serves.get(entry['name'], []),
                'backup': self._where(self.backup_of.get(entry['name']))}

    def _where(self, name):
        node = self.nodes.get(name) if name else None
        return None if node is None else [name, node['host'], node['port']]

    def _request(self, name, msg, on_reply):
        self._request_ids += 1
        msg.req = self._request_ids
        self._replies[msg.req] = on_reply
        self.van.send(name, msg)

    def _on_reply(self, msg):
        on_reply = self._replies.pop(msg.req, None)
        if on_reply is not None:
            on_reply(msg)

    # ---- a server died -----------------------------------------------------------------
    def _fail_over(self, node, why):
        """Hand the ranges of dead server ``node`` to its backup; False when none lives."""
        name = node['name']
        heir = self.backup_of.get(name)
        if not self.cfg.replication or heir is None or heir not in self.nodes or \
                self.nodes[heir]['lost_since'] is not None:
            return False
        ranks = self.serves.pop(name, [])
        self.backup_of.pop(name, None)
        del self.nodes[name]
        self.van.forget(name)
        log.warning('scheduler: %s %s; server %s takes over its keys (server rank %s)',
                    describe(node), why, heir, ', '.join(map(str, ranks)))
        self.serves[heir] = self.serves.get(heir, []) + ranks
        for primary, backup in list(self.backup_of.items()):
            if backup == name:  # its copies died too: another live server takes them
                others = [n for n in self.serves if n != primary]
                self.backup_of[primary] = min(
                    others, key=lambda n: sum(b == n for b in self.backup_of.values()),
                    default=None)
                if primary != heir:
                    self.van.send(primary, Message('backup', '', body={
                        'backup': self._where(self.backup_of[primary])}))
        heir_node = self.nodes[heir]

        def adopted(reply):
            if reply.err:
                self._abort('%s could not take over the keys of %s: %s'
                            % (heir, describe(node), reply.err))
                return
            for entry in self.book['servers']:
                if entry[0] in ranks:
                    entry[1:3] = [heir_node['host'], heir_node['port']]
            routes = self.book.setdefault('routes', {})
            for rank in ranks:
                routes[str(rank)] = heir
            for name in self._group('all'):  # (servers too: each keeps its book current)
                if self.nodes[name]['lost_since'] is None and \
                        not self.nodes[name].get('placeholder'):
                    self.van.send(name, Message('reroute', '', body={
                        'ranks': ranks, 'to': self._where(heir)}))
        self._request(heir, Message('adopt', '', body={
            'ranges': ranks, 'backup': self._where(self.backup_of.get(heir))}), adopted)
        return True

    # ---- a restarted scheduler (rebuild.py) -------------------------------------------------
    def _restore_node(self, entry, book):
        """A server back with a new scheduler: what it serves and where its copies are."""
        if entry['role'] != 'server':
            return
        name, rank = entry['name'], entry['rank']
        self.serves[name] = [r for r in book.get('serves', [rank]) if type(r) is int]
        backup = book.get('backup')
        self.backup_of[name] = backup[0] if isinstance(backup, list) and backup else None
        self.server_incarnations[rank] = max(self.server_incarnations.get(rank, 1),
                                             entry['incarnation'] + 1)
        for other in self.serves[name]:  # (a dead rank it took over is not waited for)
            waiting = self._entry('server', other)
            if other != rank and waiting is not None and waiting.get('placeholder'):
                del self.nodes[waiting['name']]

    # ---- a replacement server ------------------------------------------------------------
    def _add_server(self, entry):
        """A server registered after the job formed (the launcher restarted a dead one):
        it becomes the backup of every server without one."""
        if entry['id'] is not None:
            alive = [n for n in self.nodes.values()
                     if n['role'] == 'server' and n['rank'] == entry['id']]
            for old in alive:  # restarted before it was missed: it died
                if not self._fail_over(old, 'was replaced by pid %s on %s'
                                       % (entry['pid'], entry['hostname'])):
                    self._declare_dead(old, time.monotonic() - old['last_seen'])
                    return
            rank = entry['id']
        else:
            taken = {n['rank'] for n in self.nodes.values() if n['role'] == 'server'}
            rank = min((r for r in range(self.cfg.num_server) if r not in taken), default=0)
        incarnation = self.server_incarnations.get(rank, 1)
        self.server_incarnations[rank] = incarnation + 1
        entry.update(rank=rank, incarnation=incarnation, last_seen=time.monotonic(),
                     lost_since=None, name=node_name('server', rank, incarnation))
        self.nodes[entry['name']] = entry
        self.serves[entry['name']] = []
        orphans = [p for p, b in self.backup_of.items() if b is None and self.serves.get(p)]
        self.backup_of[entry['name']] = None
        self._send_book(entry, serves=[], backup=None, recovery=True)
        for primary in orphans:
            self.backup_of[primary] = entry['name']
            self.van.send(primary, Message('backup', '', body={
                'backup': self._where(entry['name'])}))
        log.warning('scheduler: a new server process, pid %s on %s, joins as %s and holds '
                    'copies of the keys of %s', entry['pid'], entry['hostname'], entry['name'],
                    ', '.join(orphans) or 'no server (every one has a backup)')
