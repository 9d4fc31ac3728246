"""A process without the job's secret can neither crash, change nor stop anything."""
import os
import random
import socket
import time

import numpy as np
import pytest

from minigluon.kvstore.transport import wire
from minigluon.kvstore.transport.wire import Message

from .cluster import alive_with, Cluster, results, servers_of, SHOW_SERVERS, wait_for_output

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

WORKER = '''
import json, os, sys, time
import numpy as np
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.init('w', nd.ones((6,)))
store.init(3, nd.arange(5000))                   # above the bound: on both servers
store.push(['w', 3], [nd.ones((6,)) * (r + 1), nd.ones((5000,)) * (r + 1)])
w, big = nd.zeros((6,)), nd.zeros((5000,))
store.pull(['w', 3], out=[w, big])
before = [w.asnumpy().tolist(), big.asnumpy()[[0, 4999]].tolist()]
''' + SHOW_SERVERS + '''print('READY', flush=True)
go = sys.argv[1] + '.go'                         # the test creates it after its attack
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), go)):
    if time.monotonic() > deadline:
        sys.exit('no go signal')
    time.sleep(0.05)
store.pull(['w', 3], out=[w, big])
after_attack = [w.asnumpy().tolist(), big.asnumpy()[[0, 4999]].tolist()]
rounds = []
for step in range(3):
    store.push(['w', 3], [nd.ones((6,)) * (r + 1) * (step + 2), nd.arange(5000) * (r + 1)])
    store.pull(['w', 3], out=[w, big])
    rounds.append([w.asnumpy().tolist(), big.asnumpy()[[0, 1, 4999]].tolist()])
print('RESULT', json.dumps({'before': before, 'after_attack': after_attack, 'rounds': rounds}))
'''

WRONG_SECRET = b'not-the-job-secret-0123456789abcdef'
COMMANDS = ['terminate', 'push', 'pull', 'barrier', 'init', 'set_optimizer', 'abort', 'dead',
            'finish', 'register', 'book', 'load_states', 'save_states', 'heartbeat', 'reply',
            'ack']


def forged_messages():
    """Well-formed messages a peer without the secret might try, as Message objects."""
    value = np.full(6, 1e9, np.float32)
    for cmd in COMMANDS:
        for src in ('scheduler', 'worker:0', 'worker:1', 'server:0'):
            arrays = [value] if cmd in ('push', 'init', 'load_states') else []
            yield Message(cmd, src, seq=1, req=1, key='w', part=0, arrays=arrays,
                          body={'group': 'worker', 'role': 'worker', 'id': 1,
                                'config': {'name': 'sgd'}})
            yield Message(cmd, src, seq=10 ** 6, req=7, key=3, part=1,
                          arrays=[np.full(2500, -1.0, np.float32)] if arrays else [])


def attack_frames(rng, real):
    """Every frame set this attacker sends to one port."""
    noise = rng.randbytes
    sets = [[b''], [b'', b''], [noise(1)], [noise(1000)], [noise(32), noise(200)],
            [noise(32), b'{}'], [b'\0' * 32, b'not json', b'x'],
            [noise(32), b'{' + b'"a":' * 10000],                      # deep nesting
            [noise(32), b'x' * (wire.MAX_HEADER_BYTES + 10)],        # huge header
            [noise(32), noise(100)] + [noise(1000)] * 50]             # many frames
    # unauthenticated but well-formed headers: a random tag, or no tag at all
    for msg in forged_messages():
        frames = wire.encode(WRONG_SECRET, msg)
        sets.append([noise(32)] + frames[1:])
        sets.append(frames[1:])
    # the same, tagged under a wrong secret, whole and with wrong array lengths
    for msg in forged_messages():
        frames = [bytes(f) if isinstance(f, bytes) else f.tobytes()
                  for f in wire.encode(WRONG_SECRET, msg)]
        sets.append(frames)
        if len(frames) > 2:
            sets.append(frames[:2] + [frames[2][:-4]])
            sets.append(frames[:2] + [frames[2] + b'\0' * 8])
            sets.append(frames[:2])
            sets.append(frames + [frames[2]])
    # near misses of a real 'terminate' (never sent as is): its tag on a changed header,
    # and its header with one bit of the tag flipped
    tag, header = real
    sets.append([tag, header.replace(b'scheduler', b'server:0')])
    sets.append([tag, header + b' '])
    for bit in range(0, 256, 7):
        flipped = bytearray(tag)
        flipped[bit // 8] ^= 1 << (bit % 8)
        sets.append([bytes(flipped), header])
    return sets


def attack(ports, rng, job_secret):
    ctx = zmq.Context()
    try:
        # what the real scheduler would send, then tampered with
        real = [bytes(f) for f in wire.encode(job_secret, Message('terminate', 'scheduler',
                                                                    seq=10 ** 6))]
        for port in ports:
            frame_sets = attack_frames(rng, real)
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.connect('tcp://127.0.0.1:%d' % port)
            try:  # (never blocking: the gate may refuse the connection before a send)
                for frames in frame_sets:
                    sock.send_multipart(frames, zmq.NOBLOCK)
            except zmq.Again:
                pass
            big = ctx.socket(zmq.DEALER)      # one message over the size limit: cut off
            big.setsockopt(zmq.LINGER, 1000)
            big.connect('tcp://127.0.0.1:%d' % port)
            try:
                big.send_multipart([rng.randbytes(32), b'{}', b'\0' * (8 << 20)], zmq.NOBLOCK)
            except zmq.Again:
                pass
            with socket.create_connection(('127.0.0.1', port), timeout=5) as raw:
                raw.sendall(rng.randbytes(4096))        # not even ZMTP
            with socket.create_connection(('127.0.0.1', port), timeout=5) as raw:
                raw.sendall(b'\xff' + b'\0' * 8 + b'\x7f' + rng.randbytes(100))  # ZMTP-like
        time.sleep(1.0)  # let every byte arrive while the sockets are still open
    finally:
        ctx.destroy(linger=0)


def test_a_peer_without_the_secret_cannot_crash_change_or_stop_the_job(tmp_path):
    env = {'MXNET_KVSTORE_BIGARRAY_BOUND': '1000', 'MINIGLUON_PS_CHUNK_BYTES': '4096'}
    with Cluster(tmp_path, WORKER, num_workers=2, num_servers=2, env=env) as job:
        wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
        ports = [job.port] + [port for _, _, port in servers_of(job)]
        assert len(set(ports)) == 3
        attack(ports, random.Random(1234), job.env['MINIGLUON_PS_SECRET'].encode())
        codes = [p.poll() for p in job.procs.values()]
        assert codes == [None] * len(codes), 'a node stopped:\n%s' % job.all_output()
        open(os.path.join(str(tmp_path), job.marker + '.go'), 'w').close()
        job.assert_success(timeout=60)
        for name in ('scheduler', 'server:0', 'server:1'):   # the attack reached them all
            assert 'did not present the job\'s credentials' in job.output(name)
        for rank in range(2):
            res = results(job, 'worker:%d' % rank)[0]
            assert res['before'] == res['after_attack'] == [[3.0] * 6, [3.0, 3.0]]
            for step, (w, big) in enumerate(res['rounds']):
                assert w == [3.0 * (step + 2)] * 6
                assert big == [0.0, 3.0, 4999 * 3.0]
    assert not alive_with(job.marker), 'processes outlived the job'


MALFORMED_BUT_AUTHENTIC = '''
import json, os, sys
import numpy as np
from minigluon import nd, kv
from minigluon.kvstore.transport import wire
import zmq
store = kv.create('dist_sync')
store.init('w', nd.zeros((3,)))
if store.rank == 0:
    # a sender holding the secret but sending nonsense: a shape that is no list,
    # an init without a body, a push of the wrong size
    rank, host, port = store.book['servers'][0]
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.connect('tcp://%s:%d' % (host, port))
    secret = os.environ['MINIGLUON_PS_SECRET'].encode()
    for i, msg in enumerate([
            wire.Message('init', 'worker:9', seq=1, req=1, key='x', part=0, body={'shape': 5}),
            wire.Message('set_optimizer', 'worker:9', seq=2, req=2, body={'config': 'sgd'}),
            wire.Message('push', 'worker:9', seq=3, req=3, key='w', part=0,
                         arrays=[np.ones(7, np.float32)])]):
        try:  # (the gate refuses it: it may be gone before a send)
            sock.send_multipart(wire.encode(secret, msg), zmq.NOBLOCK)
        except zmq.Again:
            break
    sock.close(linger=1000)
store.push('w', nd.ones((3,)) * (store.rank + 1))
out = nd.zeros((3,))
store.pull('w', out=out)
print('RESULT', json.dumps(out.asnumpy().tolist()))
'''


def test_authentic_but_malformed_requests_do_not_stop_a_server(tmp_path):
    with Cluster(tmp_path, MALFORMED_BUT_AUTHENTIC, num_workers=2, num_servers=1) as job:
        job.assert_success()
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == [3.0, 3.0, 3.0]
