"""Server replication (ps/replica.py, ps/failover.py): a server killed in the middle of
training is replaced by its backup and the job ends with the weights of an undisturbed
run, bit for bit. Nodes are threads of this process; kills are a kill -9's silence."""
import dataclasses
import threading

import numpy as np
import pytest

from minigluon import nd, optimizer
from minigluon.base import MXNetError
from minigluon.kvstore.ps.config import Config, ConfigError
from minigluon.kvstore.ps.server import Server

from ..inproc_cluster import CapturedLog, InprocJob, Points

SHAPES = {'small': (3,), 'other': (5,), 'big': (40,)}  # 'big' is cut over both servers
KEYS = sorted(SHAPES)
SETTINGS = dict(bigarray_bound=10, replication=True, heartbeat_timeout=1.0)


def _train(store, steps, points, kind_async=False):
    """Steps of a worker whose gradients depend on the weights it pulled."""
    rank = store.rank
    init = [nd.array(np.linspace(-1, 1, int(np.prod(SHAPES[k]))).reshape(SHAPES[k]))
            for k in KEYS]
    store.init(KEYS, init)
    store.set_optimizer(optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
    outs = [nd.zeros(SHAPES[k]) for k in KEYS]
    store.pull(KEYS, out=outs)
    for step in range(steps):
        points.at(rank, 0, 'step', step)
        grads = [nd.array(np.sin(o.asnumpy() * (rank + 1) + step)) for o in outs]
        store.push(KEYS, grads)
        points.at(rank, 0, 'pushed', step)
        store.pull(KEYS, out=outs)
    if kind_async:
        store.barrier()
        store.pull(KEYS, out=outs)
    return [o.asnumpy() for o in outs]


def _run(kill=None, steps=6, num_workers=2, kind='dist_sync', replace=False, then_kill=None):
    """Final weights of each worker; ``kill``: (server, step) killed once the workers
    pushed that step; ``replace``: start a new process for it; ``then_kill``: (server,
    step) killed later."""
    points = Points()
    events = [e for e in (kill, then_kill) if e]
    for _, step in events:
        for rank in range(num_workers):
            points.hold(rank, 'pushed', step)
    with CapturedLog() as captured, \
            InprocJob(num_workers=num_workers, num_servers=2, **SETTINGS) as job:
        workers = job.start_workers(lambda store: _train(store, steps, points,
                                                         kind == 'dist_async'), kind)
        for number, (name, step) in enumerate(events):
            for rank in range(num_workers):
                points.wait_for('HOLDING', rank, 0, 'pushed', step)
            job.kill(name)
            if number == 0 and replace:
                cfg = dataclasses.replace(job.cfg, role='server', server_id=0)
                job.servers.append(Server(cfg))
                job._threads.append(job._thread('server:0.1', job.servers[-1].run))
            for rank in range(num_workers):
                points.release(rank, 'pushed', step)
            if number == 0 and replace:
                _wait_until(lambda: 'holds copies of the keys of server:1' in captured.text)
        results = workers.results(60)
        codes = job.wait(20)
    return results, codes, captured.text


def _wait_until(condition, timeout=20):
    done = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        done.wait(0.02)
    raise AssertionError('condition not met within %g s' % timeout)


def _assert_same(results, expected):
    for got in results:
        for key, a, b in zip(KEYS, got, expected):
            np.testing.assert_array_equal(a, b, err_msg=key)


@pytest.fixture(scope='module')
def undisturbed():
    results, _, _ = _run()
    assert all(np.array_equal(a, b) for a, b in zip(results[0], results[1]))
    return results[0]


@pytest.mark.parametrize('dead', ['server:0', 'server:1'])
def test_a_server_killed_mid_training_leaves_the_weights_of_an_undisturbed_run(undisturbed,
                                                                                   dead):
    results, codes, log = _run(kill=(dead, 2))
    _assert_same(results, undisturbed)
    heir = 'server:1' if dead == 'server:0' else 'server:0'
    assert 'takes over its keys' in log and 'serves the keys of server rank' in log
    assert codes['scheduler'] == 0 and codes[heir] == 0


def test_a_replacement_becomes_the_backup_and_a_second_death_is_survived(undisturbed):
    results, codes, log = _run(kill=('server:0', 1), replace=True, then_kill=('server:1', 3))
    _assert_same(results, undisturbed)
    assert 'joins as server:0.1' in log
    assert codes['scheduler'] == 0


def test_dist_async_applies_each_push_once_across_a_fail_over():
    expected, _, _ = _run(num_workers=1, kind='dist_async')
    results, _, log = _run(kill=('server:0', 2), num_workers=1, kind='dist_async')
    assert 'takes over its keys' in log
    _assert_same(results, expected[0])


def test_a_dead_server_without_a_live_backup_still_stops_the_job_loudly():
    points = Points()
    for rank in range(2):
        points.hold(rank, 'pushed', 1)
    with InprocJob(num_workers=2, num_servers=2, **SETTINGS) as job:
        workers = job.start_workers(lambda store: _train(store, 4, points))
        for rank in range(2):
            points.wait_for('HOLDING', rank, 0, 'pushed', 1)
        job.kill('server:0')
        job.kill('server:1')
        for rank in range(2):
            points.release(rank, 'pushed', 1)
        errors = workers.errors_by_rank(30)
    assert all(isinstance(e, MXNetError) and 'server' in str(e) for e in errors), errors


def test_replication_needs_two_servers():
    env = {'DMLC_ROLE': 'worker', 'DMLC_PS_ROOT_URI': '127.0.0.1', 'DMLC_PS_ROOT_PORT': '9000',
           'DMLC_NUM_SERVER': '1', 'DMLC_NUM_WORKER': '1', 'MINIGLUON_PS_SECRET': 'x' * 32,
           'PS_REPLICATION': '1'}
    with pytest.raises(ConfigError, match='DMLC_NUM_SERVER of 2 or more'):
        Config.from_env(env)
