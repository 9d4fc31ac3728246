"""The van in one process: exactly once and in order, even when messages are dropped."""
import threading
import time

import pytest

from minigluon.kvstore.ps.config import Config
from minigluon.kvstore.transport import wire
from minigluon.kvstore.transport.wire import Message

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from minigluon.kvstore.transport.van import Van  # noqa: E402  (needs pyzmq)

from ..peer import Peer  # noqa: E402

SECRET = b's' * 32


def config(**changes):
    settings = dict(role='server', root_uri='127.0.0.1', root_port=1, num_server=2,
                    num_worker=1, secret=SECRET)
    settings.update(changes)
    return Config(**settings)


class Receiver:
    def __init__(self, cfg, name):
        self.got = []
        self.lock = threading.Lock()
        self.van = Van(cfg, name, self.on_message, bind=('127.0.0.1', 0))
        self.van.start()

    def on_message(self, msg):
        with self.lock:
            self.got.append((msg.src, msg.key))

    def wait_for(self, count, timeout=20):
        deadline = time.monotonic() + timeout
        while len(self.got) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # a late duplicate would show up now
        return list(self.got)


@pytest.mark.parametrize('lossy', [False, True])
def test_messages_arrive_once_and_in_order_with_bounded_state(lossy):
    extra = dict(resend=True, resend_timeout=0.05, drop_msg=30) if lossy else {}
    servers = [Receiver(config(**extra), 'server:%d' % i) for i in range(2)]
    sender = Van(config(role='worker', **extra), 'worker:0', lambda msg: None)
    try:
        sender.start()
        for i, server in enumerate(servers):
            sender.connect('server:%d' % i, *server.van.endpoint)
        count = 150
        for n in range(count):  # interleaved over two peers, as pushes of many keys are
            sender.send('server:%d' % (n % 2), Message('push', '', key=n))
        for i, server in enumerate(servers):
            expected = [('worker:0', n) for n in range(i, count, 2)]
            assert server.wait_for(len(expected)) == expected
            link = server.van._session_to['worker:0']
            inbox = server.van._inboxes[link.sid]
            assert inbox.held == {} and inbox.next == len(expected) + 1  # nothing piles up
        sender.drain(5)
        assert not sender._unacked
    finally:
        sender.stop()
        for server in servers:
            server.van.stop()


@pytest.mark.parametrize('lossy', [False, True])
def test_send_is_safe_from_any_thread_and_from_handlers(lossy):
    """Several threads send at once while a handler on the I/O thread replies to each
    message: every message arrives once, and each thread's messages in its order."""
    extra = dict(resend=True, resend_timeout=0.05, drop_msg=20) if lossy else {}
    server = Receiver(config(**extra), 'server:0')
    echoed = Receiver(config(**extra), 'server:1')
    sender = None

    def echo(msg):  # runs on the sender's I/O thread
        sender.send('server:1', Message('push', '', key=msg.key))

    sender = Van(config(role='worker', **extra), 'worker:0', echo)
    try:
        sender.start()
        sender.connect('server:0', *server.van.endpoint)
        sender.connect('server:1', *echoed.van.endpoint)
        threads, per_thread = 4, 60

        def send_many(t):
            for n in range(per_thread):
                sender.send('server:0', Message('push', '', key=t * 1000 + n))

        workers = [threading.Thread(target=send_many, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for _ in range(20):  # the I/O thread sends too, while the others are busy
            sender.call_soon(lambda: echo(Message('push', '', key=-1)))
        for w in workers:
            w.join()
        got = [key for _, key in server.wait_for(threads * per_thread)]
        assert sorted(got) == sorted(t * 1000 + n for t in range(threads)
                                     for n in range(per_thread))
        for t in range(threads):
            assert [k for k in got if k // 1000 == t] == [t * 1000 + n for n in range(per_thread)]
        assert [key for _, key in echoed.wait_for(20)] == [-1] * 20
    finally:
        sender.stop()
        server.van.stop()
        echoed.van.stop()


def test_a_replayed_authentic_message_is_delivered_once():
    server = Receiver(config(), 'server:0')
    peer = Peer(server.van.endpoint, SECRET, '')
    try:
        frames = peer.send(Message('push', 'worker:0', key='w'))
        for _ in range(2):
            peer.send_frames(frames)
        peer.send(Message('push', 'worker:0', key='v'))
        assert server.wait_for(2) == [('worker:0', 'w'), ('worker:0', 'v')]
    finally:
        peer.close()
        server.van.stop()


def test_a_message_of_too_many_frames_is_dropped_and_the_next_one_served():
    server = Receiver(config(), 'server:0')
    peer = Peer(server.van.endpoint, SECRET, '')
    try:
        frames = peer.frames(Message('push', 'worker:0', key='w'))
        peer.send_frames(frames + [b''] * (wire.MAX_FRAMES - 1))   # one frame too many
        peer.send(Message('push', 'worker:0', key='v'))
        assert server.wait_for(1) == [('worker:0', 'v')]
    finally:
        peer.close()
        server.van.stop()


def test_a_replayed_hello_is_granted_its_session_again_not_a_new_one():
    server = Receiver(config(), 'server:0')
    peer = Peer(server.van.endpoint, SECRET, '', handshake=False)
    try:
        hello = wire.encode(peer.job_key, Message('hello', 'worker:0', to='server:0',
                                                  body={'nonce': '01' * 16}))
        elsewhere = wire.encode(peer.job_key, Message('hello', 'worker:0', to='server:1',
                                                      body={'nonce': '02' * 16}))
        for frames in [hello] * 3 + [elsewhere]:
            peer.send_frames(frames)
        sids = set()
        while peer.sock.poll(500):
            sids.add(wire.decode(peer.job_key, peer.sock.recv_multipart()).body['sid'])
        assert len(sids) == 1     # (and none for the hello meant for another node)
    finally:
        peer.close()
        server.van.stop()


def test_drain_stops_waiting_for_a_peer_that_closed_its_connection():
    # a node that exited after its last message came: its acknowledgement was lost, and
    # waiting out the whole timeout for it only delays the end of the job
    extra = dict(resend=True, resend_timeout=0.05)
    server = Receiver(config(**extra), 'server:0')
    client = Van(config(role='worker', **extra), 'worker:0', lambda msg: None)
    try:
        client.start()
        client.connect('server:0', *server.van.endpoint)
        client.send('server:0', Message('push', '', key=1))
        assert server.wait_for(1) == [('worker:0', 1)]
        client.drain(5)
        client.stop()
        last = Message('push', '', key=2)
        server.van.send('worker:0', last)
        started = time.monotonic()
        server.van.drain(10, [('worker:0', last)])
        assert time.monotonic() - started < 3
    finally:
        client.stop()
        server.van.stop()
