"""A restarted scheduler rebuilds the job from its live nodes (ps/rebuild.py), over the
in-process transport: training goes on, barriers and the end of the job work with the
new scheduler, and the weights are an undisturbed run's."""
import time

import pytest

from minigluon import nd
from minigluon.kvstore.ps.node import ClusterError

from ..inproc_cluster import InprocJob, Points

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

STEPS = 6
RESTARTS = {'recovery_timeout': 20.0, 'bigarray_bound': 1000}


def steps(store, points, steps=STEPS):
    """Push, pull and a barrier per step (a key small, one sliced over both servers);
    returns what was pulled last."""
    r = store.rank
    store.init('w', nd.zeros((3,)))
    store.init('big', nd.zeros((2500,)))
    for step in range(steps):
        points.at(r, 0, 'push', step)
        store.push('w', nd.ones((3,)) * (r + 1) * (step + 1))
        store.push('big', nd.arange(2500) * (r + 1) + step)
        w, big = nd.zeros((3,)), nd.zeros((2500,))
        store.pull(['w', 'big'], out=[w, big])
        points.at(r, 0, 'barrier', step)
        store.barrier()
    points.at(r, 0, 'close', steps)
    return [w.asnumpy().tolist(), big.asnumpy().tolist()]


def undisturbed():
    with InprocJob(num_workers=2, num_servers=2, **RESTARTS) as job:
        results = job.run(lambda store: steps(store, Points()))
        assert job.wait(10) == {'scheduler': 0, 'server:0': 0, 'server:1': 0}
    return results


def restarted_run(hold, release_at_once):
    """Hold worker 1 at ``hold`` (name, step), kill the scheduler there (worker 0 runs
    on meanwhile), start a new one, and let the job finish."""
    points = Points()
    points.hold(1, *hold)
    with InprocJob(num_workers=2, num_servers=2, **RESTARTS) as job:
        workers = job.start_workers(lambda store: steps(store, points))
        points.wait_for('HOLDING', 1, 0, *hold)
        job.kill('scheduler')
        if release_at_once:  # (its next request goes to the dead one)
            points.release(1, *hold)
        job.restart_scheduler()
        points.release(1, *hold)
        results = workers.results(60)
        assert job.wait(20) == {'scheduler': 0, 'server:0': 0, 'server:1': 0}
    return results


def test_a_scheduler_killed_mid_training_is_replaced_and_the_weights_are_exact():
    expected = undisturbed()
    assert restarted_run(('push', 2), release_at_once=False) == expected


def test_a_scheduler_killed_while_a_worker_waits_in_a_barrier():
    # worker 0 waits in barrier 3 for worker 1, held before it; worker 1's barrier request
    # then goes to the dead scheduler, and both are sent again to the new one
    assert restarted_run(('barrier', 3), release_at_once=True) == undisturbed()


def test_a_worker_that_finished_before_the_restart_is_not_waited_for():
    points = Points()
    points.hold(1, 'close', STEPS)
    with InprocJob(num_workers=2, num_servers=2, **RESTARTS) as job:
        workers = job.start_workers(lambda store: steps(store, points))
        points.wait_for('HOLDING', 1, 0, 'close', STEPS)
        deadline = time.monotonic() + 20
        while 'worker:0' not in job.scheduler.finished and time.monotonic() < deadline:
            time.sleep(0.02)
        job.kill('scheduler')
        job.restart_scheduler()
        points.release(1, 'close', STEPS)
        workers.results(60)
        assert job.wait(20) == {'scheduler': 0, 'server:0': 0, 'server:1': 0}


@pytest.mark.parametrize('recovery', [0, 1.0])
def test_a_scheduler_not_started_again_stops_the_job_naming_it(recovery):
    points = Points()
    points.hold(0, 'barrier', 1)
    points.hold(1, 'barrier', 1)
    with InprocJob(num_workers=2, num_servers=1, recovery_timeout=recovery) as job:
        workers = job.start_workers(lambda store: steps(store, points))
        points.wait_for('HOLDING', 0, 0, 'barrier', 1)
        points.wait_for('HOLDING', 1, 0, 'barrier', 1)
        job.kill('scheduler')
        points.release(0, 'barrier', 1)
        points.release(1, 'barrier', 1)
        errors = workers.errors_by_rank(30)
        assert job.wait(20)['server:0'] == 1
    for error in errors:
        assert isinstance(error, ClusterError), errors
        assert 'the scheduler at 127.0.0.1:1 stopped answering' in str(error)
        if recovery:
            assert 'no new scheduler answered there within 1 s' in str(error)
