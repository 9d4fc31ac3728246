"""Communication overlapped with backward (gluon.Trainer with a distributed store) gives
bit for bit the weights of the plain step, in every mode: each job is run with the
overlap on and then off, and the workers' final weights compared exactly. The nodes are
threads of this process (inproc_cluster.py)."""
import hashlib
import threading
import time
import warnings

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd

from .inproc_cluster import InprocJob

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

_BUILDING = threading.Lock()  # (the seed is the process's: one net built at a time)


class Net(gluon.nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.conv = gluon.nn.Conv2D(4, 3, in_channels=2)
        self.bn = gluon.nn.BatchNorm(in_channels=4)
        self.dense = gluon.nn.Dense(16, in_units=64, activation='tanh')
        self.shared = gluon.nn.Dense(16, in_units=16, activation='tanh')  # used twice
        self.added = gluon.nn.Dense(16, in_units=16)                      # grad_req='add'
        self.unused = gluon.nn.Dense(3, in_units=16)                      # never reached
        self.out = gluon.nn.Dense(3, in_units=16)

    def hybrid_forward(self, F, x):
        h = self.dense(self.bn(self.conv(x)).reshape((0, -1)))
        return self.out(self.shared(self.shared(h)) + self.added(h))


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a.asnumpy()).tobytes()).hexdigest()


def train(store, cfg, overlap):
    ctxs = [mx.cpu(i) for i in range(cfg.get('devices', 1))]
    with _BUILDING:
        mx.random.seed(3)
        net = Net()
        net.initialize(mx.init.Xavier(), ctx=ctxs)
    net.added.weight.grad_req = 'add'
    trainer = gluon.Trainer(net.collect_params(), cfg['opt'][0], cfg['opt'][1], kvstore=store,
                            update_on_kvstore=cfg.get('update_on_kvstore'),
                            compression_params=cfg.get('compression'), overlap=overlap)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.RandomState(11 + store.rank)
    early, pending, peeked = [], [], []
    for step, size in enumerate(cfg.get('batches', [4] * 5)):
        x = nd.array(rng.normal(size=(size * len(ctxs), 2, 6, 6)))
        y = nd.array(rng.randint(0, 3, size=size * len(ctxs)))
        xs = gluon.utils.split_and_load(x, ctxs)
        ys = gluon.utils.split_and_load(y, ctxs)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        for loss in losses:  # one backward per device: pushed when every device's is done
            loss.backward()
        early.append(len(trainer._reducer._early))
        if step == cfg.get('lr_at'):  # between backward and step, as a schedule might
            trainer.set_learning_rate(trainer.learning_rate / 2)
        if cfg.get('peek'):  # the weights before the step are still the old ones
            peeked.append(digest(net.out.weight.data()))
        trainer.step(x.shape[0], ignore_stale_grad=True)
        pending.append(sum(p._pending is not None for p in net.collect_params().values()))
        net.added.weight.zero_grad()
    weights = {name: digest(d) for name, p in net.collect_params().items()
               for d in p.list_data()}
    return {'weights': weights, 'early': early, 'pending': pending, 'peeked': peeked}


SGD = ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01})
ADAM = ('adam', {'learning_rate': 0.01})
CASES = {
    'dist_sync, updated on the servers, two devices':
        dict(kv='dist_sync', opt=SGD, devices=2, workers=2),
    'dist_sync, updated on the workers':
        dict(kv='dist_sync', opt=ADAM, update_on_kvstore=False, workers=2),
    'dist_sync_device, two devices, 2-bit compression':
        dict(kv='dist_sync_device', opt=SGD, devices=2, workers=2,
             compression={'type': '2bit', 'threshold': 0.01}),
    'dist_async, one worker': dict(kv='dist_async', opt=ADAM, workers=1),
    # the servers hold the rounds pushed during backward until every worker's step (worker
    # 0's has sent the optimizer with the new batch size or learning rate)
    'dist_sync, a smaller last batch, the learning rate changed before a step':
        dict(kv='dist_sync', opt=SGD, workers=2, batches=[4, 4, 4, 4, 2], lr_at=2,
             peek=True),
}


def _run(case, overlap):
    # big keys in parts on both servers, in several messages each
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter('always')
        with InprocJob(num_workers=case['workers'], num_servers=2, bigarray_bound=200,
                       chunk_bytes=2048) as job:
            runs = job.run(lambda store: train(store, case, overlap), kind=case['kv'])
    return runs, [str(w.message) for w in warned]


@pytest.mark.parametrize('name', list(CASES))
def test_overlap_gives_the_weights_of_the_plain_step_bit_for_bit(name):
    case = CASES[name]
    (on, warned_on), (off, warned_off) = _run(case, True), _run(case, False)
    if 'async' not in case['kv']:
        assert warned_on == [] == warned_off
    for got_on, got_off in zip(on, off):
        assert got_on['weights'] == got_off['weights']
        assert got_on['peeked'] == got_off['peeked']
        # the first step pushes in step(), the others during backward, with the
        # next forward waiting for the weights (updated on the servers)
        assert got_off['early'] == [0] * 5 and got_off['pending'] == [0] * 5
        assert got_on['early'][0] == 0 and min(got_on['early'][1:]) >= 6
        if case.get('update_on_kvstore', True):
            assert min(got_on['pending']) >= 6


def late_step(store):
    with _BUILDING:
        mx.random.seed(3)
        net = gluon.nn.Dense(4, in_units=8)
        net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            kvstore=store, overlap=True)
    x = nd.array(np.random.RandomState(store.rank).normal(size=(4, 8)))
    stepped, arrived = [], []
    for _ in range(4):
        with autograd.record():
            loss = net(x).sum()
        loss.backward()  # from the second step on, the gradients go out here
        if store.rank == 1:
            time.sleep(0.3)  # worker 1 is slow to reach its step
        stepped.append(time.monotonic())
        trainer.step(4)
        net.weight.data().wait_to_read()  # the new weights are in
        arrived.append(time.monotonic())
    return stepped, arrived


def test_a_round_pushed_during_backward_is_applied_after_every_workers_step():
    # Each worker releases its rounds from its step, once its pushes are delivered: over a
    # slow link, weights answered while another worker's pushes still travel share the
    # link with them and the workers fall out of step. So no worker has the new weights
    # before the last worker has called step (before, worker 0's step alone released them).
    with InprocJob(num_workers=2, num_servers=2) as job:
        (_, fast_arrived), (slow_stepped, _) = job.run(late_step)
    for step in range(1, 4):  # (the first step pushes in step(), unheld)
        assert fast_arrived[step] >= slow_stepped[step], step
