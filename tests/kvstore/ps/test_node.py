"""A node joining the job: what peers send before its address book waits for it."""
import pytest

from minigluon.kvstore.ps.config import Config
from minigluon.kvstore.transport.wire import Message

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from minigluon.kvstore.ps.node import Node  # noqa: E402  (needs pyzmq)


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
