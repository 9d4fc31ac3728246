"""A node joining the job (what peers send before its address book waits for it), and
ending with it."""
import pytest

from minigluon import nd
from minigluon.kvstore.ps.config import Config
from minigluon.kvstore.transport.wire import Message

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from minigluon.kvstore.ps.node import Node  # noqa: E402  (needs pyzmq)

from ..inproc_cluster import InprocJob  # noqa: E402


class Recorder(Node):
    role = 'server'

    def __init__(self, cfg):
        super().__init__(cfg, listen=True)
        self.seen = []
        self._handlers['push'] = lambda msg: self.seen.append((self.van.name, msg.key))


def test_a_request_that_overtakes_the_address_book_is_answered_under_the_final_name():
    cfg = Config(role='server', root_uri='127.0.0.1', root_port=1, num_server=1,
                 num_worker=1, secret=b's' * 32)
    node = Recorder(cfg)
    try:
        # a worker got its book first and pushes; ours was delayed (e.g. dropped, re-sent)
        node._dispatch(Message('push', 'worker:0', seq=1, key='w'))
        assert node.seen == []
        node._dispatch(Message('book', 'scheduler', seq=1,
                               body={'name': 'server:0', 'rank': 0, 'servers': [],
                                     'num_workers': 1, 'num_servers': 1}))
        assert node.seen == [('server:0', 'w')]
        node._dispatch(Message('push', 'worker:0', seq=2, key='v'))
        assert node.seen == [('server:0', 'w'), ('server:0', 'v')]
    finally:
        node.van.stop()


def test_a_server_whose_terminate_is_lost_ends_with_the_job_once_every_worker_finished():
    # (on a lossy link the scheduler's last word can be lost however often it is sent
    # again: a server told that every worker finished must not report a failed job)
    with InprocJob(num_workers=2, num_servers=1) as job:
        send = job.scheduler.van.send

        def lossy_send(dest, msg, copy_arrays=False):
            if msg.cmd != 'terminate':
                send(dest, msg, copy_arrays)
        job.scheduler.van.send = lossy_send
        job.run(lambda store: store.init('w', nd.zeros((2,))))
        codes = job.wait(15)
    assert codes == {'scheduler': 0, 'server:0': 0}, codes
