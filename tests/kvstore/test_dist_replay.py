"""Frames captured on the wire are worth nothing when replayed: not to the node they
were sent to, not to another node, not into another job that shares the secret.

The attacker here is the strongest plain mode admits: it sniffed the job's traffic,
connection handshake included (it presents the connection credentials), but does
not hold the secret. Frames are captured by tests/kvstore/capture/sitecustomize.py.
"""
import json
import os
import threading
import time

import pytest

from .cluster import (alive_with, Cluster, job_nonce_of, READY_THEN_WAIT, results, ROOT,
                      servers_of, SHOW_SERVERS, wait_for_output)

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from .peer import Peer  # noqa: E402
from minigluon.kvstore.transport import session, wire  # noqa: E402

CAPTURE = os.path.join(ROOT, 'tests', 'kvstore', 'capture')

WORKER = '''
import json, os, sys, time
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.init('w', nd.zeros((4,)))
store.init(5, nd.zeros((300,)))
''' + SHOW_SERVERS + '''
def one_round(step):
    if r == 1 and step > 6:
        time.sleep(0.15)    # worker 0's pull waits for this push: its answer comes later
    store.push(['w', 5], [nd.ones((4,)) * (r + 1) * step, nd.ones((300,)) * (r + 1)])
    out = [nd.zeros((4,)), nd.zeros((300,))]
    store.pull(['w', 5], out=out)
    return [out[0].asnumpy().tolist(), float(out[1].asnumpy().sum())]

sums = [one_round(step) for step in range(1, 7)]  # (a push numbered above the heartbeats)
''' + READY_THEN_WAIT + '''for step in range(7, 17):
    sums.append(one_round(step))
print('RESULT', json.dumps(sums))
'''


def expected_sums():
    return [[[3.0 * step] * 4, 900.0] for step in range(1, 17)]


def start_job(tmp_path, capture, env=None):
    env = dict(env or {})
    env.update({'MGTEST_CAPTURE': str(capture), 'MINIGLUON_PS_WAIT_TIMEOUT': '20',
                'PYTHONPATH': CAPTURE + os.pathsep + ROOT})
    job = Cluster(tmp_path, WORKER, num_workers=2, num_servers=1, env=env).start()
    wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
    return job


def server_endpoint(job):
    _, host, port = servers_of(job)[0]
    return host, port


def captured(path, node=None, dest=None, cmd=None):
    """Frame sets recorded in ``path`` (as bytes), filtered by sender, destination, command."""
    sets = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            frames = [bytes.fromhex(x) for x in rec['frames']]
            header = json.loads(frames[1])
            if (node is None or rec['node'].startswith(node)) and \
                    (dest is None or rec['dest'] == dest) and (cmd is None or header['cmd'] == cmd):
                sets.append(frames)
    assert sets, 'nothing captured from %s to %s (%s)' % (node, dest, cmd)
    return sets


class Replayer(threading.Thread):
    """Sends each captured frame set to its port every ``period`` s until stopped."""

    def __init__(self, targets, secret, period=0.02):
        threading.Thread.__init__(self, daemon=True)
        # connection credentials sniffed from a handshake, but no secret and no session
        self.peers = [(Peer(endpoint, secret, job_id, handshake=False), frame_sets)
                      for endpoint, job_id, frame_sets in targets]
        self.period = period
        self.stopped = threading.Event()
        self.sent = 0

    def run(self):
        while not self.stopped.is_set():
            for peer, frame_sets in self.peers:
                for frames in frame_sets:
                    peer.send_frames(frames)
                    self.sent += 1
            time.sleep(self.period)

    def stop(self):
        self.stopped.set()
        self.join()
        for peer, _ in self.peers:
            peer.close()


def go(job):
    open(os.path.join(str(job.tmp_path), job.marker + '.go'), 'w').close()


def test_frames_replayed_to_their_node_or_the_scheduler_change_nothing(tmp_path):
    capture = tmp_path / 'capture.jsonl'
    job = start_job(tmp_path, capture)
    try:
        secret = job.env['MINIGLUON_PS_SECRET'].encode()
        job_id = '127.0.0.1:%d' % job.port          # the default job id of a manual launch
        pushes = captured(capture, 'worker:0', 'server:0', 'push')[-1:]
        beats = captured(capture, None, 'scheduler')[-3:]   # registrations, barriers...
        # a push replayed to its server (the route to worker 0 must not move to us) and
        # to the scheduler (worker 0's heartbeats must not be taken for duplicates)
        attack = Replayer([(server_endpoint(job), job_id, pushes + beats),
                           (('127.0.0.1', job.port), job_id, pushes + beats)], secret)
        attack.start()
        time.sleep(0.5)
        go(job)
        codes = job.wait(60)
        attack.stop()
        assert attack.sent > 50
        assert all(c == 0 for c in codes.values()), '%s\n%s' % (codes, job.all_output())
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == expected_sums()
    finally:
        job.close()
    assert not alive_with(job.marker)


def test_frames_of_another_job_with_the_same_secret_change_nothing(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    capture_a = tmp_path / 'a.jsonl'
    job_a = start_job(tmp_path / 'a', capture_a, env={'MINIGLUON_PS_JOB_ID': 'job-a'})
    try:
        go(job_a)
        job_a.assert_success()
    finally:
        job_a.close()
    secret = job_a.env['MINIGLUON_PS_SECRET']
    terminate = captured(capture_a, 'scheduler', 'server:0', 'terminate')
    pushes = captured(capture_a, 'worker:0', 'server:0', 'push')[-2:]
    # job B: the same secret (and a job id of its own, as the launcher gives every job)
    job_b = start_job(tmp_path / 'b', tmp_path / 'b.jsonl',
                      env={'MINIGLUON_PS_SECRET': secret, 'MINIGLUON_PS_JOB_ID': 'job-b'})
    try:
        attack = Replayer([(server_endpoint(job_b), 'job-b', terminate + pushes)],
                          secret.encode())
        attack.start()
        time.sleep(0.5)
        go(job_b)
        codes = job_b.wait(60)
        attack.stop()
        assert all(c == 0 for c in codes.values()), '%s\n%s' % (codes, job_b.all_output())
        for rank in range(2):
            assert results(job_b, 'worker:%d' % rank)[0] == expected_sums()
        assert 'unknown session' in job_b.output('server:0')   # the attack arrived
    finally:
        job_b.close()


def test_a_hello_recorded_in_an_earlier_job_on_the_same_port_opens_no_session(tmp_path):
    # a manual launch started again: the same secret, scheduler address and default job id
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    capture_a = tmp_path / 'a.jsonl'
    job_a = start_job(tmp_path / 'a', capture_a)
    try:
        go(job_a)
        job_a.assert_success()
    finally:
        job_a.close()
    hellos = captured(capture_a, 'worker:0', 'server:0', 'hello')
    secret = job_a.env['MINIGLUON_PS_SECRET']
    job_b = start_job(tmp_path / 'b', tmp_path / 'b.jsonl',
                      env={'MINIGLUON_PS_SECRET': secret, 'DMLC_PS_ROOT_PORT': str(job_a.port)})
    try:
        # the connection credentials as a sniffer on that host has them, the hellos as
        # they were recorded: job A's server granted them a session, job B's must not
        peer = Peer(server_endpoint(job_b), secret.encode(), '127.0.0.1:%d' % job_a.port,
                    handshake=False)
        try:
            for frames in hellos:
                peer.send_frames(frames)
            wait_for_output(job_b, ['server:0'], 'dropped a malformed or unauthenticated',
                            timeout=10)
            assert not peer.sock.poll(200), 'a recorded hello was answered with a challenge'
        finally:
            peer.close()
        go(job_b)
        codes = job_b.wait(60)
        assert all(c == 0 for c in codes.values()), '%s\n%s' % (codes, job_b.all_output())
        for rank in range(2):
            assert results(job_b, 'worker:%d' % rank)[0] == expected_sums()
    finally:
        job_b.close()


WAITING_WORKER = '''
import json, os, sys, time
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
''' + SHOW_SERVERS + READY_THEN_WAIT + '''store.init('w', nd.zeros((4,)))
store.push('w', nd.ones((4,)) * (r + 1))
out = nd.zeros((4,))
store.pull('w', out=out)
print('RESULT', json.dumps(out.asnumpy().tolist()))
'''


def test_a_hello_replayed_5000_times_leaves_a_waiting_workers_session_alone(tmp_path):
    # the workers hold sessions with the server, granted and not yet used (nothing is
    # sent before the first init), while a hello is replayed on another connection
    env = {'MINIGLUON_PS_WAIT_TIMEOUT': '15', 'MINIGLUON_PS_TRANSPORT': 'tcp'}
    with Cluster(tmp_path, WAITING_WORKER, num_workers=2, num_servers=1, env=env) as job:
        wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
        endpoint = server_endpoint(job)
        secret = job.env['MINIGLUON_PS_SECRET'].encode()
        job_id = '127.0.0.1:%d' % job.port
        # a hello as a sniffer saw it on the wire, answered once already
        nonce = session.new_nonce()
        attacker = Peer(endpoint, secret, job_id, handshake=False, job_nonce=job_nonce_of(job))
        hello = wire.encode(attacker.job_key, wire.Message(
            'hello', 'worker:1', to='server:0', body={'nonce': nonce.hex()}))
        sids = []
        try:
            for _ in range(5000):
                attacker.send_frames(hello)
            deadline = time.monotonic() + 20
            while len(sids) < 5000 and attacker.sock.poll(1000) and \
                    time.monotonic() < deadline:
                challenge = wire.decode(attacker.job_key, attacker.sock.recv_multipart())
                sids.append(challenge.body['sid'])
        finally:
            attacker.close()
        go(job)
        job.assert_success(60)
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == [3.0] * 4
        assert len(sids) > 100 and len(set(sids)) == 1   # answered, one session granted
