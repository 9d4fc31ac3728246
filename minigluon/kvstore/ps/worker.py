"""The worker's node in the job: joins, hands responses to its Customer, and stops
the process when the job fails (a worker blocked in user code must not hang)."""
import os
import sys
import threading

from .customer import Customer
from .node import Node

# After a fatal cluster error, how long the process may take to stop on its own.
_EXIT_GRACE_S = 3.0


class WorkerNode(Node):
    """A joined worker: ``customer`` sends its requests, ``servers`` are connected."""
    role = 'worker'

    def __init__(self, cfg):
        super().__init__(cfg)
        self.dead_nodes = 0
        self.on_reroute = None        # the store's: called with 'server:R' once redirected
        self.customer = Customer(self.van, lambda: self.failure, cfg.wait_timeout)
        self._handlers.update({'reply': self.customer.on_response,
                               'barrier_done': self._on_barrier_done,
                               'reroute': self._on_reroute})
        self.join()
        # how many barriers of the job passed, as far as this worker knows (a restarted
        # scheduler learns it from the workers)
        self.barriers_passed = self.book.get('passed', 0)
        self._connected = set()
        routes = self.book.get('routes', {})
        for rank, host, port in self.book['servers']:
            # (a rank whose server died is served by another server, reached by its name)
            name = routes.get(str(rank), 'server:%d' % rank)
            if name not in self._connected:
                self._connected.add(name)
                self.van.connect(name, host, port)
            if name != 'server:%d' % rank:  # (nothing was sent to it yet: nothing to drop)
                self.van.redirects['server:%d' % rank] = name

    @property
    def servers(self):
        """The server ranks of the job."""
        return [rank for rank, _, _ in self.book['servers']]

    def _on_reroute(self, msg):
        """The scheduler's word that server ranks' keys are now served by another server
        (replica.py): send there what went to them, and again what they had not made
        durable."""
        name, host, port, ranks = self._note_reroute(msg)
        if name not in self._connected:
            self._connected.add(name)
            self.van.connect(name, host, port)

        def switch():  # (after the connection is made: connect is done in order)
            for rank in ranks:
                self.van.redirect('server:%d' % rank, name)
            for rank in ranks:
                if self.on_reroute is not None:
                    self.on_reroute(rank)
        self.van.call_soon(switch)

    def _on_barrier_done(self, msg):
        passed = (msg.body or {}).get('passed')
        if type(passed) is int and not msg.err:
            self.barriers_passed = max(self.barriers_passed, passed)
        self.customer.on_response(msg)

    def rejoin_report(self):
        # 'entered' > 'passed': a replacement whose predecessor arrived at the open barrier
        return {'passed': self.barriers_passed, 'entered': self.book.get('barriers', 0)}

    def on_scheduler_back(self):
        self.customer.resend('scheduler')

    def _on_dead(self, msg):
        self.dead_nodes += 1
        super()._on_dead(msg)

    def on_failure(self):
        self.customer.wake_all()
        if not self.van.owns_process:
            return  # a thread among other nodes: its waits raise, the process goes on
        timer = threading.Timer(_EXIT_GRACE_S, self._hard_exit)
        timer.daemon = True
        timer.start()

    def _hard_exit(self):
        sys.stderr.write('minigluon kvstore: %s\nminigluon kvstore: stopping this worker\n'
                         % self.failure)
        sys.stderr.flush()
        os._exit(1)
