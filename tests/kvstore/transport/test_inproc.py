"""The in-process transport keeps the promises the roles rely on (transport/base.py)."""
import threading
import time

import numpy as np

from minigluon.kvstore.ps.config import Config
from minigluon.kvstore.transport.inproc import Hub
from minigluon.kvstore.transport.wire import Message


def _pair():
    hub = Hub()
    cfg = Config(role='worker', root_uri=Hub.host, root_port=1, num_server=1, num_worker=1,
                 secret=b'x' * 16, hub=hub)
    got, done = [], threading.Event()

    def on_message(msg):
        got.append(msg)
        if msg.cmd == 'finish':
            done.set()
    server = hub.open(cfg, 'server:0', on_message, bind=(Hub.host, 0))
    client = hub.open(cfg, 'worker:0', lambda msg: None)
    server.start()
    client.start()
    client.connect('server:0', *server.endpoint)  # (sent before the peer listens: held)
    return hub, server, client, got, done


def test_messages_arrive_in_order_as_copies_and_a_killed_node_gets_nothing():
    hub, server, client, got, done = _pair()
    try:
        value = np.arange(6, dtype=np.float32).reshape(2, 3)
        for i in range(100):
            client.send('server:0', Message('push', '', req=i, key='k', arrays=[value]),
                        copy_arrays=True)
        value[:] = -1  # the sender's array is its own again (copy_arrays)
        client.send('server:0', Message('finish', ''))
        assert done.wait(10)
        assert [m.req for m in got[:-1]] == list(range(100))
        assert got[0].arrays[0].tolist() == [[0, 1, 2], [3, 4, 5]]
        got[1].arrays[0][:] = 7  # each received array is the receiver's own
        assert got[0].arrays[0].tolist() == [[0, 1, 2], [3, 4, 5]]
        assert got[0].arrays[0].flags.writeable and 'worker:0' in server.heard
        assert got[0].to == 'server:0' and got[0].src == 'worker:0'
        hub.kill('server:0')
        count = len(got)
        client.send('server:0', Message('push', '', req=200, key='k'))
        time.sleep(0.1)
        assert len(got) == count
    finally:
        hub.close()


def test_a_handler_error_answers_the_request_and_the_node_goes_on():
    hub = Hub()
    cfg = Config(role='worker', root_uri=Hub.host, root_port=1, num_server=1, num_worker=1,
                 secret=b'x' * 16, hub=hub)
    replies, done = [], threading.Event()

    def broken(msg):
        raise ValueError('no such thing')
    server = hub.open(cfg, 'server:0', broken, bind=(Hub.host, 0))
    client = hub.open(cfg, 'worker:0', lambda msg: (replies.append(msg), done.set()))
    try:
        server.start()
        client.start()
        client.connect('server:0', *server.endpoint)
        client.send('server:0', Message('pull', '', req=7, key='k'))
        assert done.wait(10)
        assert replies[0].req == 7 and 'refused pull request 7: ValueError: no such thing' \
            in replies[0].err
    finally:
        hub.close()
