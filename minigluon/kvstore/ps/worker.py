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
        self.customer = Customer(self.van, lambda: self.failure, cfg.wait_timeout)
        self._handlers.update({'reply': self.customer.on_response,
                               'barrier_done': self.customer.on_response})
        self.join()
        for rank, host, port in self.book['servers']:
            self.van.connect('server:%d' % rank, host, port)

    @property
    def servers(self):
        """The server ranks of the job."""
        return [rank for rank, _, _ in self.book['servers']]

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
