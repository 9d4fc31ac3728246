"""MINIGLUON_PS_ENCRYPT=curve: every connection is CurveZMQ with the job's keys; a node
or peer without them (plain credentials included) cannot connect."""

import pytest

from .cluster import (Cluster, job_nonce_of, READY_THEN_WAIT, results, servers_of,
                      SHOW_SERVERS, wait_for_output)

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
if not zmq.has('curve'):
    pytest.skip('this libzmq has no CurveZMQ', allow_module_level=True)
from .peer import Peer  # noqa: E402

WORKER = '''
import json, os, sys, time
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.init('w', nd.zeros((5,)))
store.init('big', nd.zeros((3000,)))        # above the bound: sliced over both servers
''' + SHOW_SERVERS + READY_THEN_WAIT + '''sums = []
for step in range(1, 4):
    store.push(['w', 'big'], [nd.ones((5,)) * (r + 1) * step, nd.arange(3000) * (r + 1)])
    out = [nd.zeros((5,)), nd.zeros((3000,))]
    store.pull(['w', 'big'], out=out)
    sums.append([out[0].asnumpy().tolist(), out[1].asnumpy()[[0, 1, 2999]].tolist()])
print('RESULT', json.dumps(sums))
'''


def test_an_encrypted_job_sums_exactly_and_admits_only_its_own_keys(tmp_path):
    env = {'MINIGLUON_PS_ENCRYPT': 'curve', 'MXNET_KVSTORE_BIGARRAY_BOUND': '1000'}
    with Cluster(tmp_path, WORKER, num_workers=2, num_servers=2, env=env) as job:
        wait_for_output(job, ['worker:0', 'worker:1'], 'READY')
        _, host, port = servers_of(job)[0]
        secret = job.env['MINIGLUON_PS_SECRET'].encode()
        job_id = '127.0.0.1:%d' % job.port
        # the job's curve keys open a session; its plain credentials or another job's
        # keys do not even get a connection
        Peer((host, port), secret, job_id, encrypt='curve', job_nonce=job_nonce_of(job)).close()
        for encrypt, other_job in (('plain', job_id), ('curve', 'another-job')):
            with pytest.raises(AssertionError, match='no challenge'):
                Peer((host, port), secret, other_job, encrypt=encrypt, timeout=2)
        open(str(tmp_path / (job.marker + '.go')), 'w').close()
        job.assert_success()
        for rank in range(2):
            assert results(job, 'worker:%d' % rank)[0] == \
                [[[3.0 * s] * 5, [0.0, 3.0, 2999 * 3.0]] for s in (1, 2, 3)]
        # (the refusal's log line depends on how far the peer got before it gave up;
        # a node that keeps trying is logged: the next test)


def test_a_plain_node_cannot_join_an_encrypted_job(tmp_path):
    env = {'MINIGLUON_PS_ENCRYPT': 'curve', 'MINIGLUON_PS_CONNECT_TIMEOUT': '4'}
    code = 'from minigluon import kv\nkv.create("dist_sync")\n'
    with Cluster(tmp_path, code, num_workers=1, num_servers=1, env=env,
                 worker_env={0: {'MINIGLUON_PS_ENCRYPT': 'plain'}}) as job:
        codes = job.wait(60)
        assert codes['worker:0'] != 0
        assert 'MINIGLUON_PS_ENCRYPT' in job.output('worker:0')
        assert "did not present the job's credentials" in job.output('scheduler')
