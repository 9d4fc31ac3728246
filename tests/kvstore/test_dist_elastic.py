"""Elastic workers: with PS_WORKER_RECOVERY_TIMEOUT a killed worker is replaced by a new
process with its rank, which resumes where the job is; sums stay exact."""
import inspect
import json
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.kvstore.ps.node import node_name

from .cluster import Cluster, alive_with
from .inproc_cluster import CapturedLog, InprocJob, Points
from .test_dist_trainer import MODEL

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

ENV = {'MXNET_KVSTORE_BIGARRAY_BOUND': '1000', 'MINIGLUON_PS_CHUNK_BYTES': '4096',
       'PS_WORKER_RECOVERY_TIMEOUT': '30'}
SMALL_PARTS = {'bigarray_bound': 1000, 'chunk_bytes': 4096}
# How worker 1 dies: (the point it is held at and killed, or reaches and is killed a
# second later, inside the call; the point worker 0 is held at meanwhile, so that the
# sync operation stays open; what the replacement sends again for that step, in place of
# what was dropped; whether the step's pushes were done).
KILLS = {
    'in-pull': (('pull', True), 'push', {'w', 'big', 'stats'}, False),
    'between-pushes': (('big', True), 'big', {'big', 'stats'}, False),
    'in-allreduce': (('allreduce', False), 'allreduce', {'stats'}, True),
    'before-allreduce': (('allreduce', True), None, {'stats'}, True),  # worker 0 waits
    'in-barrier': (('barrier', False), 'barrier', set(), True),
}


def wait_for(job, name, text, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in job.output(name):
            return
        if job.procs[name].poll() is not None:
            break
        time.sleep(0.05)
    pytest.fail('%s did not print %r\n%s' % (name, text, job.all_output()))


def touch(job, name):
    open(os.path.join(str(job.tmp_path), name), 'w').close()


def unlink(job, name):
    os.unlink(os.path.join(str(job.tmp_path), name))


def kill_and_replace(job, kills):
    """Kill worker 1 as each (kind, step) of ``kills`` says, in turn, starting a
    replacement each time; returns the names of worker 1's processes, the last alive."""
    holds = []
    for kind, step in kills:
        (point, held), survivor_hold, _, _ = KILLS[kind]
        holds.append(['hold-1-%s-%d' % (point, step) if held else None,
                      survivor_hold and 'hold-0-%s-%d' % (survivor_hold, step)])
        for hold in holds[-1]:
            if hold:
                touch(job, hold)
    names = ['worker:1']
    for incarnation, ((kind, step), (victim_hold, survivor_hold)) in \
            enumerate(zip(kills, holds), 1):
        point, held = KILLS[kind][0]
        victim = names[-1]
        if held:
            wait_for(job, victim, 'HOLDING %s %d' % (point, step))
        else:
            wait_for(job, victim, 'AT %s %d' % (point, step))
            time.sleep(1.0)  # inside the call, waiting for worker 0
        if survivor_hold:
            wait_for(job, 'worker:0', 'HOLDING %s %d' % (KILLS[kind][1], step))
        job.procs[victim].send_signal(signal.SIGKILL)
        job.procs[victim].wait(10)
        if victim_hold:
            unlink(job, victim_hold)
        names.append('worker:1 #%d' % incarnation)
        job.start_worker(1, names[-1], env={'INCARNATION': str(incarnation)})
        wait_for(job, names[-1], 'REJOINED')
        if survivor_hold:
            unlink(job, survivor_hold)
    return names


def lines(job, name, tag):
    return [json.loads(line.split(' ', 1)[1]) for line in job.output(name).splitlines()
            if line.startswith(tag + ' ')]


def finish(job, alive):
    codes = job.wait(60, names=alive)
    assert all(code == 0 for code in codes.values()), '%s\n%s' % (codes, job.all_output())


# ---- the same with the nodes as threads of this process (inproc_cluster.py) ----------------
# Each step: push 'w' and 'big' (sliced over both servers), pull them, allreduce 'stats',
# barrier. The test holds a worker at a point (``points``) while it kills the other. A
# replacement adds 1000 * INCARNATION to what it sends, so the sums tell whose push
# counted. It finds where to resume from the counts the servers and the scheduler hold.
def elastic_steps(store, points, incarnation, steps, big=3000, lines=None):
    """One worker's steps; what it reports goes to ``lines[(rank, incarnation)]``."""
    r = store.rank
    marker = 1000.0 * incarnation
    out = lines.setdefault((r, incarnation), {'SUMS': [], 'STATS': [], 'REJOINED': [],
                                              'FINAL': []})
    if store.type == 'dist_async':
        store.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    store.init('w', nd.zeros((3,)))
    store.init('big', nd.zeros((big,)))
    step, phase = 0, 'push'
    if store.is_recovery:
        pushed = min(store.num_pushes('w'), store.num_pushes('big'))
        entered = store.num_barriers()       # the barrier ends a step
        store.resume('w', pushed)
        store.resume('big', pushed)
        store.resume('stats', entered)       # (before its init: allreduce creates it)
        step, phase = entered, 'allreduce' if pushed > entered else 'push'
        w, b = nd.zeros((3,)), nd.zeros((big,))
        store.pull(['w', 'big'], out=[w, b])
        out['REJOINED'].append([step, phase, float(w.asnumpy()[0]), float(b.asnumpy()[-1])])
        points.note('REJOINED', r, incarnation)
    while step < steps:
        if phase == 'push':
            points.at(r, incarnation, 'push', step)
            store.push('w', nd.ones((3,)) * ((r + 1) * (step + 1) + marker))
            points.at(r, incarnation, 'big', step)
            store.push('big', nd.ones((big,)) * ((r + 1) * (step + 1) + marker))
            points.at(r, incarnation, 'pull', step)
            w, b = nd.zeros((3,)), nd.zeros((big,))
            store.pull(['w', 'big'], out=[w, b])
            out['SUMS'].append([step, float(w.asnumpy()[0]), float(b.asnumpy()[-1])])
        points.at(r, incarnation, 'allreduce', step)
        stats = nd.array([r + 1 + marker, step])
        store.allreduce('stats', stats)
        out['STATS'].append([step, stats.asnumpy().tolist()])
        points.at(r, incarnation, 'barrier', step)
        store.barrier()
        step, phase = step + 1, 'push'
    store.barrier()
    w, b = nd.zeros((3,)), nd.zeros((big,))
    store.pull(['w', 'big'], out=[w, b])
    out['FINAL'].append([float(w.asnumpy()[0]), float(b.asnumpy()[-1])])


# The same steps in worker processes: the function's own source, with its points held
# by files hold-RANK-POINT-STEP and what it reports printed as it comes.
STEPS = """
import json, os, time
import minigluon as mx
from minigluon import nd, kv


class FilePoints:
    def at(self, rank, incarnation, name, step):
        hold = 'hold-%d-%s-%d' % (rank, name, step)
        if os.path.exists(hold):
            print('HOLDING', name, step, flush=True)
            while os.path.exists(hold):
                time.sleep(0.02)
        print('AT', name, step, flush=True)

    def note(self, *event):
        pass


class Printed(list):
    def __init__(self, tag):
        super().__init__()
        self.tag = tag

    def append(self, item):
        print(self.tag, json.dumps(item), flush=True)


class PrintedLines(dict):
    def setdefault(self, key, default):
        return {tag: Printed(tag) for tag in default}


""" + inspect.getsource(elastic_steps) + """
elastic_steps(kv.create(os.environ['KIND']), FilePoints(), int(os.environ.get('INCARNATION', '0')),
              int(os.environ['STEPS']), int(os.environ.get('BIG', '3000')), PrintedLines())
"""


def kill_and_replace_threads(job, points, kills, run, store_type='dist_sync'):
    """``kill_and_replace`` for a job of threads: worker 1's incarnation n is killed as
    ``kills[n]`` says and ``run(incarnation)`` started in its place; returns the handles
    of the replacements."""
    for kind, step in kills:
        (point, held), survivor_hold, _, _ = KILLS[kind]
        if held:
            points.hold(1, point, step)
        if survivor_hold:
            points.hold(0, survivor_hold, step)
    replacements = []
    for incarnation, (kind, step) in enumerate(kills, 1):
        (point, held), survivor_hold, _, _ = KILLS[kind]
        points.wait_for('HOLDING' if held else 'AT', 1, incarnation - 1, point, step)
        if survivor_hold:
            points.wait_for('HOLDING', 0, 0, survivor_hold, step)
        time.sleep(0.3)  # what it sent before the point has left; (not held:) inside the call
        job.kill(node_name('worker', 1, incarnation - 1))
        if held:
            points.release(1, point, step)
        replacements.append(job.start_workers(
            lambda store, incarnation=incarnation: run(store, incarnation), store_type,
            ranks=[1]))
        points.wait_for('REJOINED', 1, incarnation)
        if survivor_hold:
            points.release(0, survivor_hold, step)
    return replacements


def test_killed_in_a_push_between_pushes_in_an_allreduce_and_in_a_barrier():
    kills = [('in-pull', 1), ('between-pushes', 3), ('in-allreduce', 4),
             ('before-allreduce', 5), ('in-barrier', 6)]
    points, out = Points(), {}

    def run(store, incarnation):
        elastic_steps(store, points, incarnation, 8, lines=out)

    with CapturedLog() as logged, InprocJob(num_workers=2, num_servers=2, recovery_timeout=30,
                                            **SMALL_PARTS) as job:
        first = job.start_workers(lambda store: run(store, 0))
        last = kill_and_replace_threads(job, points, kills, run)[-1]
        last.results()
        assert first.errors_by_rank()[0] is None
        assert job.wait() == {'scheduler': 0, 'server:0': 0, 'server:1': 0}

    def incarnation(key, step):
        """Which of worker 1's processes made the push of ``step`` that counted."""
        return sum(1 for kind, k in kills if step > k or
                   (step == k and key in KILLS[kind][2]))

    def sums(step):
        return [3.0 * (step + 1) + 1000 * incarnation(key, step) for key in ('w', 'big')]

    ones = [(0, 0)] + [(1, i) for i in range(len(kills) + 1)]
    for who in ones:
        for step, w, big in out[who]['SUMS']:
            assert [w, big] == sums(step), (who, step)
        for step, stats in out[who]['STATS']:
            assert stats == [3.0 + 1000 * incarnation('stats', step), 2.0 * step], who
    # worker 0 saw every step once, and so did worker 1's processes between them
    assert [s for s, _, _ in out[0, 0]['SUMS']] == list(range(8))
    assert [s for who in ones[1:] for s, _, _ in out[who]['SUMS']] == list(range(8))
    # each replacement resumed where its predecessor stopped, from the values after
    # the rounds it had pushed to ('w' one round back when it died between the keys)
    rejoined = [out[1, i]['REJOINED'][0] for i in range(1, len(kills) + 1)]
    assert [r[:2] for r in rejoined] == [[1, 'push'], [3, 'push'], [4, 'allreduce'],
                                         [5, 'allreduce'], [7, 'push']]
    for (_, _, w, big), (kind, step) in zip(rejoined, kills):
        assert [w, big] == sums(step - 1 + KILLS[kind][3]), kind
    assert 'worker 1 has a new process (worker:1.1)' in logged.text
    # (worker 0 waited in the allreduce of step 5)
    assert re.search(r'the other workers waited [\d.]+ s', logged.text), logged.text
    assert 'joins as worker:1.5 (restart 5 of this rank)' in logged.text, logged.text


def test_a_replaced_worker_maps_the_shared_memory_again_and_sums_stay_exact(tmp_path):
    # 'big' parts of 140 KB go through shared memory: the replacement offers its own
    # ring and maps the servers' stores afresh; the dead one's regions are let go
    kills = [('in-pull', 1), ('between-pushes', 2)]
    env = dict(ENV, KIND='dist_sync', STEPS='4', BIG='70000', PS_VERBOSE='1',
               MINIGLUON_PS_CHUNK_BYTES='262144')
    with Cluster(tmp_path, STEPS, num_workers=2, num_servers=2, env=env) as job:
        names = kill_and_replace(job, kills)
        finish(job, ['scheduler', 'server:0', 'server:1', 'worker:0', names[-1]])
        counted = {('w', 1): 1, ('big', 1): 1, ('w', 2): 1, ('big', 2): 2, ('w', 3): 2,
                   ('big', 3): 2}
        for name in ['worker:0'] + names:
            for step, w, big in lines(job, name, 'SUMS'):
                assert [w, big] == [3.0 * (step + 1) + 1000 * counted.get((k, step), 0)
                                    for k in ('w', 'big')], (name, step, job.all_output())
        assert [s for s, _, _ in lines(job, 'worker:0', 'SUMS')] == list(range(4))
        for name in ('server:0', 'server:1'):
            out = job.output(name)
            for peer in ('worker:0', 'worker:1.1', 'worker:1.2'):
                assert 'to %s go through shared memory, pulled values by reference' % peer \
                    in out, job.all_output()
    assert not alive_with(job.marker), 'processes outlived the job'


def test_dist_async_counts_every_push_once():
    # under dist_async pushes are applied as they come (SGD, learning rate 1): the
    # dead worker's pushes of its last step stay, its replacement goes on after them
    points, out = Points(), {}

    def run(store, incarnation):
        elastic_steps(store, points, incarnation, 5, lines=out)

    with InprocJob(num_workers=2, num_servers=2, recovery_timeout=30, **SMALL_PARTS) as job:
        first = job.start_workers(lambda store: run(store, 0), kind='dist_async')
        kill_and_replace_threads(job, points, [('in-pull', 2)], run,
                                 'dist_async')[-1].results()
        assert first.errors_by_rank()[0] is None
    assert out[1, 1]['REJOINED'][0][:2] == [2, 'allreduce']
    pushed = sum(3.0 * (step + 1) for step in range(5)) + 1000 * 2   # (steps 3 and 4)
    for who in ((0, 0), (1, 1)):
        assert out[who]['FINAL'] == [[-pushed, -pushed]], out
        for step, stats in out[who]['STATS']:
            assert stats == [3.0 + 1000 * (step >= 2), 2.0 * step], who


def _held_in_a_pull(store, held):
    store.init('w', nd.zeros((3,)))
    for step in range(5):
        store.push('w', nd.ones((3,)))
        if step == 1 and store.rank == 1:
            held.set()
            return  # (killed here by the test)
        store.pull('w', out=nd.zeros((3,)))
        store.barrier()


def test_no_replacement_in_time_stops_the_job_naming_the_worker():
    # (nodes as threads of this process, inproc_cluster.py)
    held = threading.Event()
    with InprocJob(num_workers=2, recovery_timeout=0.5, heartbeat_timeout=1.0) as job:
        workers = job.start_workers(lambda store: _held_in_a_pull(store, held), close=False)
        assert held.wait(30)
        job.kill('worker:1')
        started = time.monotonic()
        errors = workers.errors_by_rank(15)
        codes = job.wait(15)
        # heartbeat timeout (1 s) + waiting for a replacement (0.5 s) + stopping
        assert time.monotonic() - started < 10
        assert codes == {'scheduler': 1, 'server:0': 1}, codes
        named = r'worker 1 \(pid %d .*PS_WORKER_RECOVERY_TIMEOUT' % os.getpid()
        for why in (errors[0], job.scheduler.failure, job.servers[0].failure):
            assert re.search(named, str(why)), why


TRAINER = MODEL + '''
import json, os, time
from minigluon import kv
from minigluon.base import MXNetError
store = kv.create('dist_sync')
net = build()
try:   # the optimizer state on the workers could not be recovered: refused
    gluon.Trainer(net.collect_params(), 'sgd', kvstore=store, update_on_kvstore=False).step(1)
except MXNetError as exc:
    print('REFUSED', exc, flush=True)
trainer = gluon.Trainer(net.collect_params(), 'sgd',
                        {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.01}, kvstore=store)
first, b = 0, 5
if store.is_recovery:
    first = trainer.recover()
    print('RECOVERED', json.dumps([first, trainer.learning_rate]), flush=True)
lo, hi = store.rank * b, (store.rank + 1) * b
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
for step, (x, y) in enumerate(batches(6, b, store.num_workers)):
    if step < first:
        continue
    if os.path.exists('hold-%d-step-%d' % (store.rank, step)):
        # the last step's pushes may still wait in the I/O thread; the pulled weights
        # arrive only once the servers applied them, so the step count is known
        for param in net.collect_params().values():
            param.data()
        print('HOLDING step', step, flush=True)
        time.sleep(60)
    if step == 2:
        trainer.set_learning_rate(0.25)
    with autograd.record():
        loss = loss_fn(net(nd.array(x[lo:hi])), nd.array(y[lo:hi]))
    loss.backward()
    trainer.step(hi - lo)
print('RESULT', json.dumps({k: v.data().asnumpy().tolist()
                            for k, v in net._collect_params_with_prefix().items()}))
'''


def _trainer_reference():
    scope = {}
    exec(compile(MODEL, 'model', 'exec'), scope)  # the very code the workers run
    net = scope['build']()
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 0.01}, kvstore=None)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for step, (x, y) in enumerate(scope['batches'](6, 5, 2)):
        if step == 2:
            trainer.set_learning_rate(0.25)
        with autograd.record():
            loss = loss_fn(net(nd.array(x)), nd.array(y))
        loss.backward()
        trainer.step(10)
    return {k: v.data().asnumpy() for k, v in net._collect_params_with_prefix().items()}


def test_a_replaced_worker_0_trains_on_from_the_servers_weights_and_optimizer(tmp_path):
    env = dict(ENV, KIND='dist_sync')
    with Cluster(tmp_path, TRAINER, num_workers=2, num_servers=2, env=env) as job:
        # worker 0 dies before the first step (the servers have no optimizer, no keys),
        # then again before its pushes of step 4
        names = ['worker:0']
        for step in (0, 4):
            touch(job, 'hold-0-step-%d' % step)
        for incarnation, step in enumerate((0, 4), 1):
            wait_for(job, names[-1], 'HOLDING step %d' % step)
            job.procs[names[-1]].send_signal(signal.SIGKILL)
            job.procs[names[-1]].wait(10)
            unlink(job, 'hold-0-step-%d' % step)
            names.append('worker:0 #%d' % incarnation)
            job.start_worker(0, names[-1])
            wait_for(job, names[-1], 'RECOVERED')
        finish(job, ['scheduler', 'server:0', 'server:1', 'worker:1', names[-1]])
        # the step count, and the learning rate set at step 2, came from the servers
        assert [lines(job, name, 'RECOVERED') for name in names[1:]] == [[[0, 0.5]],
                                                                          [[4, 0.25]]]
        assert 'update_on_kvstore=False the optimizer state lives in each worker' in \
            job.output('worker:1')
        # its init did not overwrite the servers' weights: exactly an undisturbed run's
        expected = _trainer_reference()
        got = [lines(job, name, 'RESULT')[0] for name in (names[-1], 'worker:1')]
        assert got[0] == got[1]
        for name, value in expected.items():
            np.testing.assert_allclose(got[0][name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    assert not alive_with(job.marker), 'processes outlived the job'
