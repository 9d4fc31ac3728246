"""What strangers can cost a node: no memory for their messages (they never get past
ZeroMQ's handshake), and no descriptor shortage from a flood of connections."""
import os
import resource
import socket
import struct
import subprocess
import sys
import time

import pytest

from .cluster import (Cluster, free_port, job_nonce_of, READY_THEN_WAIT, results, ROOT,
                      servers_of, SHOW_SERVERS, wait_for_output)

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from .peer import Peer  # noqa: E402

WORKER = '''
import json, os, sys, time
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.init('w', nd.zeros((5,)))
''' + SHOW_SERVERS + READY_THEN_WAIT + '''sums = []
for step in range(1, 4):
    store.push('w', nd.ones((5,)) * (r + 1) * step)
    out = nd.zeros((5,))
    store.pull('w', out=out)
    sums.append(out.asnumpy().tolist())
print('RESULT', json.dumps(sums))
'''


def rss_mb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    raise AssertionError('no VmRSS for %d' % pid)


def test_strangers_multi_frame_messages_cost_a_server_no_memory(tmp_path):
    with Cluster(tmp_path, WORKER, num_workers=2, num_servers=1) as job:
        wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
        _, host, port = servers_of(job)[0]
        server = job.procs['server:0'].pid
        before = rss_mb(server)
        chunk = b'\0' * (4 << 20)
        ctx = zmq.Context()
        try:
            complete = ctx.socket(zmq.DEALER)      # 20 messages of 25 frames of 4 MiB
            complete.setsockopt(zmq.SNDHWM, 0)
            complete.connect('tcp://%s:%d' % (host, port))
            try:    # (until ZeroMQ gives up on the connection the server refused)
                for _ in range(20):
                    complete.send_multipart([b'x' * 48, b'{}'] + [chunk] * 25, zmq.NOBLOCK,
                                            copy=False)
                for _ in range(2):                  # 2 x 160 MiB never finished
                    sock = ctx.socket(zmq.DEALER)
                    sock.setsockopt(zmq.SNDHWM, 0)
                    sock.connect('tcp://%s:%d' % (host, port))
                    for _ in range(40):
                        sock.send(chunk, zmq.SNDMORE | zmq.NOBLOCK, copy=False)
            except zmq.Again:
                pass  # (the refusal may even come before the first send)
            time.sleep(3)                           # what would arrive has arrived
            during = rss_mb(server)
        finally:
            ctx.destroy(linger=0)
        assert during - before < 64, 'server grew from %.0f to %.0f MB' % (before, during)
        assert 'did not present the job\'s credentials' in job.output('server:0')
        open(os.path.join(str(tmp_path), job.marker + '.go'), 'w').close()
        job.assert_success()
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == [[3.0 * s] * 5 for s in (1, 2, 3)]


def zmtp_plain_connection(endpoint, password, source):
    """A raw ZMTP 3.0 connection from address ``source`` that logs in with PLAIN and
    ``password``, so that it can send frames ZeroMQ's own sockets would never let go
    (a message never finished); None if the node refuses it."""
    def command(name, data):
        body = bytes([len(name)]) + name + data
        return bytes([0x04, len(body)]) + body

    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect(endpoint)
    try:
        sock.sendall(b'\xff' + bytes(8) + b'\x7f\x03\x00' + b'PLAIN'.ljust(20, b'\0') + bytes(32))
        sock.sendall(command(b'HELLO', bytes([9]) + b'minigluon' + bytes([len(password)]) +
                             password))
        for expected in (b'WELCOME', b'READY'):
            reply = b''
            while expected not in reply:   # (the greeting, then a command)
                chunk = sock.recv(4096)
                if not chunk or b'ERROR' in reply + chunk:
                    sock.close()
                    return None
                reply += chunk
            if expected == b'WELCOME':
                sock.sendall(command(b'INITIATE', bytes([11]) + b'Socket-Type' +
                                     struct.pack('>I', 6) + b'DEALER'))
        return sock
    except OSError:
        sock.close()
        return None


def test_a_sniffed_password_buys_no_unfinished_message_from_another_host(tmp_path):
    with Cluster(tmp_path, WORKER, num_workers=2, num_servers=1) as job:
        wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
        _, host, port = servers_of(job)[0]
        server = job.procs['server:0'].pid
        member = Peer((host, port), job.env['MINIGLUON_PS_SECRET'].encode(),
                      '127.0.0.1:%d' % job.port,        # (a node's connection, on the wire)
                      job_nonce=job_nonce_of(job))
        sniffed = member.sock.getsockopt(zmq.PLAIN_PASSWORD)
        before = rss_mb(server)
        sock = zmtp_plain_connection((host, port), sniffed, '127.0.0.2')
        try:
            if sock is not None:    # 128 frames of 1 MiB and 500,000 empty ones, unfinished
                big = b'\x03' + struct.pack('>Q', 1 << 20) + bytes(1 << 20)
                for _ in range(128):
                    sock.sendall(big)
                sock.sendall(b'\x01\x00' * 500000)
                time.sleep(2)                   # what would arrive has arrived
        except OSError:
            pass    # (refused meanwhile)
        during = rss_mb(server)
        if sock is not None:
            sock.close()
        member.close()
        assert during - before < 32, 'server grew from %.0f to %.0f MB' % (before, during)
        assert sock is None
        open(os.path.join(str(tmp_path), job.marker + '.go'), 'w').close()
        job.assert_success()
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == [[3.0 * s] * 5 for s in (1, 2, 3)]


def test_a_flood_of_connections_leaves_the_scheduler_room_and_answering(tmp_path):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip('the open-file hard limit (%d) leaves no room for the test' % hard)
    port = free_port()
    env = dict(os.environ, DMLC_ROLE='scheduler', DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT=str(port), DMLC_NUM_SERVER='1', DMLC_NUM_WORKER='1',
               MINIGLUON_PS_SECRET='s' * 32, MINIGLUON_PS_CONNECT_TIMEOUT='30',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    # started as a login shell often starts things: 1,024 descriptors, more allowed
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, min(hard, 1 << 16)))  # noqa
    log = open(str(tmp_path / 'scheduler.log'), 'w+')
    proc = subprocess.Popen([sys.executable, '-c', 'import minigluon'], env=env, stdout=log,
                            stderr=subprocess.STDOUT, preexec_fn=limit)
    flood = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(('127.0.0.1', port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, 'no scheduler'
                time.sleep(0.1)
        with open('/proc/%d/limits' % proc.pid) as f:
            row = [ln.split() for ln in f if ln.startswith('Max open files')][0]
        assert row[3] == row[4], 'soft limit %s left below the hard limit %s' % (row[3], row[4])
        for _ in range(1500):                  # more idle connections than 1,024 descriptors
            flood.append(socket.create_connection(('127.0.0.1', port), timeout=5))
        time.sleep(1)
        peer = Peer(('127.0.0.1', port), b's' * 32, '127.0.0.1:%d' % port, to='scheduler')
        peer.close()                            # (it got its challenge: the scheduler answers)
        assert proc.poll() is None
    finally:
        for s in flood:
            s.close()
        proc.kill()
        proc.wait()
        log.close()
