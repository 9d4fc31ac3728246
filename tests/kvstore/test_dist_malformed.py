"""Authentic messages a node cannot use are refused at once, with the reason, and never
stop a node or hold up what comes after them; a node misconfigured for the job stops
at registration. Plus a seeded fuzz of every listening role of a live job."""
import hashlib
import hmac
import inspect
import json
import os
import random

import pytest

from minigluon import nd
from minigluon.base import MXNetError
from minigluon.kvstore.transport import wire
from minigluon.kvstore.transport.wire import Message

from .inproc_cluster import InprocJob
from .cluster import (Cluster, job_nonce_of, READY_THEN_WAIT, results, servers_of,
                      SHOW_SERVERS, wait_for_output)

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from .peer import Peer  # noqa: E402

def unusable_requests(store):
    store.init('w', nd.zeros((2,), dtype='int32'))
    errors = {}
    try:
        store.push('w', nd.array([0.7, 1.9], dtype='float64'))   # not exactly int32
    except MXNetError as exc:
        errors['dtype'] = str(exc)
    try:
        store.init('k' * 1025, nd.ones((2,)))                    # the servers refuse the key
    except MXNetError as exc:
        errors['key'] = str(exc)
    store.push('w', nd.array([1.0, 2.0], dtype='float64'))       # exactly representable
    out = nd.zeros((2,), dtype='int32')
    store.pull('w', out=out)
    return {'errors': errors, 'value': out.asnumpy().tolist()}


UNUSABLE = '''
import json
from minigluon import nd, kv
from minigluon.base import MXNetError
store = kv.create('dist_sync')
''' + inspect.getsource(unusable_requests) + '''
print('RESULT', json.dumps(unusable_requests(store)))
'''


def check_unusable(res):
    assert res['value'] == [1, 2]
    assert 'holds int32' in res['errors']['dtype'] and '0.7' in res['errors']['dtype']
    assert 'server:0 refused init' in res['errors']['key'] and 'bad key' in res['errors']['key']


def test_an_unusable_request_is_refused_at_once_and_holds_nothing_up():
    # (nodes as threads of this process, inproc_cluster.py)
    with InprocJob(num_workers=1, wait_timeout=30) as job:
        check_unusable(job.run(unusable_requests)[0])


def test_an_unusable_request_is_refused_at_once_with_messages_resent(tmp_path):
    env = {'PS_RESEND': '1', 'MINIGLUON_PS_WAIT_TIMEOUT': '30'}
    with Cluster(tmp_path, UNUSABLE, num_workers=1, num_servers=1, env=env) as job:
        job.assert_success(timeout=60)
        check_unusable(results(job, 'worker:0')[0])


def test_a_node_whose_job_shape_disagrees_stops_at_registration():
    server_settings = {0: {'num_worker': 1}, 1: {'num_worker': 3}}
    with InprocJob(num_workers=2, num_servers=2, connect_timeout=1.0,
                   server_settings=server_settings) as job:
        errors = job.start_workers(lambda store: 'JOINED').errors_by_rank(20)
        codes = job.wait(20)
    for rank, theirs in ((0, 1), (1, 3)):
        assert codes['server:%d' % rank] == 1, codes
        assert 'DMLC_NUM_WORKER=%d, but the job has DMLC_NUM_WORKER=2' % theirs in \
            job.servers[rank].failure
    assert codes['scheduler'] == 1 and all(error is not None for error in errors), errors


# ---- fuzz -------------------------------------------------------------------------------
WORKER = '''
import json, os, sys, time
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.init('w', nd.zeros((5,)))
''' + SHOW_SERVERS + '''sums = []
def one_round(step):
    store.push('w', nd.ones((5,)) * (r + 1) * step)
    out = nd.zeros((5,))
    store.pull('w', out=out)
    sums.append(out.asnumpy().tolist())
one_round(1)
''' + READY_THEN_WAIT + '''for step in range(2, 6):
    one_round(step)
print('RESULT', json.dumps(sums))
'''

BAD_FIELDS = {
    'arrays': [[['float32', [0, 2 ** 63]]], [['float32', [-1]]], [['object', [2]]],
               [['float32', [2.5]]], [['float32', 'x']], [['float32', [1] * 33]], 'nope',
               [['<f4', [2]]], [['float32', [1 << 41, 0]]], [['float32']], [5]],
    'key': [['s', 'x' * 1025], ['i', 1.5], ['x', 1], 5, ['i', True], ['s'], {}],
    'part': [-1, 'a', 1.5, True, [0]],
    'req': [-5, 'r', 2.5],
    'body': [[1], 'b', 5],
    'err': [5, ['e']],
    'to': [5, '', 'x' * 65],
    'v': [2, None, 'x'],
    'cmd': ['nope', 5, None],
    'src': ['', 'x' * 65, 5],
    'seq': [-1, 'x', 1.5],
}


def malformed_authentic(rng, peer, count):
    """``count`` frame sets tagged in ``peer``'s session, each with one thing wrong."""
    fields = sorted(BAD_FIELDS)
    commands = sorted(wire.COMMANDS - {'hello', 'challenge'})
    sets = []
    for _ in range(count):
        peer.seq += 1
        header = {'v': wire.VERSION, 'cmd': rng.choice(commands), 'src': 'worker:9',
                  'to': peer.to, 'seq': peer.seq, 'req': rng.randrange(1, 1 << 30),
                  'key': ['s', 'w'], 'part': 0, 'body': {'n': 0},
                  'arrays': [['float32', [2]]]}
        data = [b'\0' * 8]
        kind = rng.random()
        if kind < 0.8:
            field = rng.choice(fields)
            header[field] = rng.choice(BAD_FIELDS[field])
            if field == 'arrays' and header['arrays'] == [['float32', [0, 2 ** 63]]]:
                data = [b'']                         # the right length for zero elements
        elif kind < 0.9:
            data = rng.choice([[], [b'\0' * 7], [b'\0' * 8] * 2, [rng.randbytes(100)]])
        else:
            raw = rng.choice([b'not json', b'[1, 2]', b'{' + b'"a":' * 5000, b'\xff\xfe',
                              json.dumps(header).encode()[:-3], b'{"v": 1e999}'])
            tag = hmac.new(peer.key, raw, hashlib.sha256).digest()
            sets.append([peer.sid + tag, raw] + data)
            continue
        raw = json.dumps(header).encode()
        sets.append([peer.sid + hmac.new(peer.key, raw, hashlib.sha256).digest(), raw] + data)
    return sets


def unauthenticated(rng, peer, count):
    """``count`` frame sets that no session or job key verifies."""
    good = peer.frames(Message('pull', 'worker:9', key='w', part=0, req=1), number=False)
    sets = []
    for _ in range(count):
        kind = rng.randrange(8)
        if kind == 0:      # a session nobody granted
            sets.append([rng.randbytes(48)] + good[1:])
        elif kind == 1:    # the right session, a wrong tag
            sets.append([peer.sid + rng.randbytes(32)] + good[1:])
        elif kind == 2:    # the handshake's key slot with a forged tag
            sets.append([wire.NO_SESSION + rng.randbytes(32)] + good[1:])
        elif kind == 3:    # a tampered header under a real tag
            sets.append([good[0], good[1].replace(b'pull', b'push')])
        elif kind == 4:
            sets.append([rng.randbytes(rng.randrange(0, 100))])
        elif kind == 5:
            sets.append([rng.randbytes(rng.randrange(0, 60)) for _ in range(rng.randrange(2, 6))])
        elif kind == 6:
            sets.append([good[0][:rng.randrange(48)], good[1]])
        else:
            sets.append([good[0], rng.randbytes(rng.randrange(0, 2000))])
    return sets


def fuzz(endpoint, to, secret, job_id, seed, count=10000, job_nonce=None):
    """Send ``count`` malformed authentic and ``count`` unauthenticated messages to the
    node at ``endpoint``, then one with shape [0, 2**63]; returns the refusals that
    came back (by request id)."""
    rng = random.Random(seed)
    peer = Peer(endpoint, secret, job_id, name='worker:9', to=to, job_nonce=job_nonce)
    try:
        authentic = malformed_authentic(rng, peer, count)
        forged = unauthenticated(rng, peer, count)
        slots = [True] * count + [False] * count
        rng.shuffle(slots)       # interleaved, the authentic ones in their session's order
        sources = {True: iter(authentic), False: iter(forged)}
        for slot in slots:
            peer.send_frames(next(sources[slot]))
        peer.seq += 1
        header = {'v': wire.VERSION, 'cmd': 'push', 'src': 'worker:9', 'to': to,
                  'seq': peer.seq, 'req': 424242, 'key': ['s', 'w'], 'part': 0,
                  'arrays': [['float32', [0, 2 ** 63]]]}
        raw = json.dumps(header).encode()
        peer.send_frames([peer.sid + hmac.new(peer.key, raw, hashlib.sha256).digest(), raw, b''])
        refusals = {}
        while 424242 not in refusals:
            msg = peer.receive(timeout=30)
            assert msg is not None, 'no refusal of the [0, 2**63] push from %s' % to
            if msg.cmd == 'reply' and msg.err:
                refusals[msg.req] = msg.err
        return refusals
    finally:
        peer.close()


def test_fuzzing_every_listening_role_crashes_nothing_and_the_sums_stay_exact(tmp_path):
    with Cluster(tmp_path, WORKER, num_workers=2, num_servers=1) as job:
        wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
        _, host, port = servers_of(job)[0]
        secret = job.env['MINIGLUON_PS_SECRET'].encode()
        job_id = '127.0.0.1:%d' % job.port
        for seed, (endpoint, to, nonce) in enumerate([
                (('127.0.0.1', job.port), 'scheduler', None),
                ((host, port), 'server:0', job_nonce_of(job))]):
            refusals = fuzz(endpoint, to, secret, job_id, seed, job_nonce=nonce)
            assert 'too large' in refusals[424242], refusals[424242]
            assert len(refusals) > 100          # malformed requests are answered, not dropped
            codes = [p.poll() for p in job.procs.values()]
            assert codes == [None] * len(codes), '%s crashed:\n%s' % (to, job.all_output())
        open(os.path.join(str(tmp_path), job.marker + '.go'), 'w').close()
        job.assert_success()
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == [[3.0 * s] * 5 for s in range(1, 6)]
        for name in ('scheduler', 'server:0'):
            out = job.output(name)
            assert 'refused' in out and 'dropped a malformed or unauthenticated message' in out
