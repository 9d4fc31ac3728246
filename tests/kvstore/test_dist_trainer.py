"""The aggregation contract: N workers each calling step(b) take exactly the step
one process takes with step(N*b) on the union of their batches (workers as threads of
this process, inproc_cluster.py)."""
import os
import threading

import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon

from .inproc_cluster import InprocJob

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

MODEL = '''
import numpy as np
import minigluon as mx
from minigluon import autograd, gluon, nd

def build():
    mx.random.seed(3)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation='tanh', in_units=4), gluon.nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier())
    return net

def batches(steps, per_worker, workers):
    rng = np.random.RandomState(11)
    for _ in range(steps):
        x = rng.normal(size=(per_worker * workers, 4)).astype(np.float32)
        y = rng.randint(0, 3, size=per_worker * workers).astype(np.float32)
        yield x, y

def train(net, trainer, steps, per_worker, workers, part):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in batches(steps, per_worker, workers):
        lo, hi = part
        data, label = nd.array(x[lo:hi]), nd.array(y[lo:hi])
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(hi - lo)
    return {k: v.data().asnumpy().tolist() for k, v in net.collect_params().items()}
'''



_BUILDING = threading.Lock()  # (the seed and the names of a net are the process's)


def _build(scope):
    with _BUILDING, mx.name.NameManager():  # counted from 0 as in a process of its own
        return scope['build']()


def _model():
    scope = {}
    exec(compile(MODEL, 'model', 'exec'), scope)  # the very code the elastic workers run
    return scope


def _worker(opt, opt_args, update_on_kvstore):
    def run(store):
        scope = _model()
        net = _build(scope)
        trainer = gluon.Trainer(net.collect_params(), opt, opt_args, kvstore=store,
                                update_on_kvstore=update_on_kvstore)
        b = 5
        return scope['train'](net, trainer, 4, b, store.num_workers,
                              (store.rank * b, (store.rank + 1) * b))
    return run


def _reference(opt, opt_args, workers, per_worker):
    scope = _model()
    with mx.name.NameManager():  # counted from 0 as in the workers: the same parameter names
        net = scope['build']()
    trainer = gluon.Trainer(net.collect_params(), opt, opt_args, kvstore=None)
    return scope['train'](net, trainer, 4, per_worker, workers, (0, per_worker * workers))


@pytest.mark.parametrize('update_on_kvstore', [True, False])
@pytest.mark.parametrize('opt,opt_args', [('sgd', {'learning_rate': 0.5, 'momentum': 0.9,
                                                    'wd': 0.01}),
                                           ('adam', {'learning_rate': 0.05})])
def test_two_workers_step_b_equals_one_process_step_2b(update_on_kvstore, opt, opt_args):
    with InprocJob(num_workers=2, num_servers=2) as job:
        got = job.run(_worker(opt, opt_args, update_on_kvstore))
    expected = _reference(opt, opt_args, workers=2, per_worker=5)
    for weights in got:
        assert sorted(weights) == sorted(expected)
        for name in expected:
            np.testing.assert_allclose(weights[name], expected[name], rtol=2e-5, atol=1e-6,
                                       err_msg=name)


def _resumable(phase, folder):
    def run(store):
        scope = _model()
        net = _build(scope)
        trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.05},
                                kvstore=store)
        b = 5
        part = (store.rank * b, (store.rank + 1) * b)
        if phase == 'first':
            scope['train'](net, trainer, 2, b, store.num_workers, part)
            if store.rank == 0:
                net.save_parameters(os.path.join(folder, 'net.params'))
                trainer.save_states(os.path.join(folder, 'trainer.states'))
            store.barrier()
        else:
            net.load_parameters(os.path.join(folder, 'net.params'))
            trainer.load_states(os.path.join(folder, 'trainer.states'))
        return scope['train'](net, trainer, 2, b, store.num_workers, part)
    return run


def test_optimizer_states_saved_from_the_servers_resume_exactly(tmp_path):
    runs = {}
    for phase in ('first', 'resumed'):
        with InprocJob(num_workers=2, num_servers=2) as job:
            runs[phase] = job.run(_resumable(phase, str(tmp_path)))[0]
    with open(str(tmp_path / 'trainer.states'), 'rb') as f:
        assert f.read(2) == b'PK'  # a zip of arrays and JSON gathered from the servers
    # train() restarts the data stream, so both runs' last two steps saw the same batches
    assert sorted(runs['first']) == sorted(runs['resumed'])
    for name, value in runs['first'].items():
        assert np.array_equal(value, runs['resumed'][name]), name
