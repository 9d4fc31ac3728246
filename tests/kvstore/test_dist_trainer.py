"""The aggregation contract: N workers each calling step(b) take exactly the step
one process takes with step(N*b) on the union of their batches."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon

from .cluster import Cluster, results

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

WORKER = MODEL + '''
import json, os
from minigluon import kv
store = kv.create('dist_sync')
update_on_kvstore = os.environ['UPDATE_ON_KVSTORE'] == '1'
net = build()
trainer = gluon.Trainer(net.collect_params(), os.environ['OPT'], json.loads(os.environ['OPT_ARGS']),
                        kvstore=store, update_on_kvstore=update_on_kvstore)
b = 5
weights = train(net, trainer, 4, b, store.num_workers, (store.rank * b, (store.rank + 1) * b))
print('RESULT', json.dumps(weights))
'''


def _reference(opt, opt_args, workers, per_worker):
    scope = {}
    exec(compile(MODEL, 'model', 'exec'), scope)  # the very code the workers run
    with mx.name.NameManager():  # counted from 0 as in the workers: the same parameter names
        net = scope['build']()
    trainer = gluon.Trainer(net.collect_params(), opt, opt_args, kvstore=None)
    return scope['train'](net, trainer, 4, per_worker, workers, (0, per_worker * workers))


@pytest.mark.parametrize('update_on_kvstore', [True, False])
@pytest.mark.parametrize('opt,opt_args', [('sgd', {'learning_rate': 0.5, 'momentum': 0.9,
                                                    'wd': 0.01}),
                                           ('adam', {'learning_rate': 0.05})])
def test_two_workers_step_b_equals_one_process_step_2b(tmp_path, update_on_kvstore, opt,
                                                       opt_args):
    env = {'UPDATE_ON_KVSTORE': '1' if update_on_kvstore else '0', 'OPT': opt,
           'OPT_ARGS': json.dumps(opt_args)}
    with Cluster(tmp_path, WORKER, num_workers=2, num_servers=2, env=env) as job:
        job.assert_success()
        expected = _reference(opt, opt_args, workers=2, per_worker=5)
        for rank in range(2):
            got = results(job, 'worker:%d' % rank)[0]
            assert sorted(got) == sorted(expected)
            for name in expected:
                np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=1e-6,
                                           err_msg=name)


RESUMABLE = MODEL + '''
import json, os
from minigluon import kv
store = kv.create('dist_sync')
net = build()
trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.05}, kvstore=store)
b, folder = 5, os.environ['CKPT']
part = (store.rank * b, (store.rank + 1) * b)
if os.environ['PHASE'] == 'first':
    train(net, trainer, 2, b, store.num_workers, part)
    if store.rank == 0:
        net.save_parameters(os.path.join(folder, 'net.params'))
        trainer.save_states(os.path.join(folder, 'trainer.states'))
    store.barrier()
    weights = train(net, trainer, 2, b, store.num_workers, part)
else:
    net.load_parameters(os.path.join(folder, 'net.params'))
    trainer.load_states(os.path.join(folder, 'trainer.states'))
    weights = train(net, trainer, 2, b, store.num_workers, part)
print('RESULT', json.dumps(weights))
'''


def test_optimizer_states_saved_from_the_servers_resume_exactly(tmp_path):
    ckpt = tmp_path / 'ckpt'
    ckpt.mkdir()
    runs = {}
    for phase in ('first', 'resumed'):
        folder = tmp_path / phase
        folder.mkdir()
        with Cluster(folder, RESUMABLE, num_workers=2, num_servers=2,
                     env={'CKPT': str(ckpt), 'PHASE': phase}) as job:
            job.assert_success()
            runs[phase] = results(job, 'worker:0')[0]
    with open(str(ckpt / 'trainer.states'), 'rb') as f:
        assert f.read(2) == b'PK'  # a zip of arrays and JSON gathered from the servers
    # train() restarts the data stream, so both runs' last two steps saw the same batches
    assert sorted(runs['first']) == sorted(runs['resumed'])
    for name, value in runs['first'].items():
        assert np.array_equal(value, runs['resumed'][name]), name
