"""What only a real GPU can show: arrays crossing between the host and the device, the
DataLoader's page-locked batches, the stores summing on the GPU, and training jobs on a
GPU ending with the weights the same job ends with on the CPU.

The op, layer, loss, optimizer and initializer tests run on the GPU through the ``ctx``
fixture (their ``gpu0`` variants); ``tools/gpu_check.sh`` runs both selections."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, backend, gluon, nd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(
    mx.num_gpus() == 0, reason='no GPU: %s' % backend.gpu_unavailable_reason(0))


def _on_gpu(array):
    return array.context == mx.gpu(0) and backend.is_device_array(array.handle)


def test_copyto_and_as_in_context_cross_between_host_and_device():
    host = np.random.RandomState(0).normal(size=(3, 5)).astype(np.float32)
    on_cpu = nd.array(host)
    on_gpu = on_cpu.as_in_context(mx.gpu(0))
    assert _on_gpu(on_gpu)
    back = on_gpu.copyto(mx.cpu())
    assert back.context == mx.cpu() and isinstance(back.handle, np.ndarray)
    np.testing.assert_array_equal(back.asnumpy(), host)
    into = nd.zeros((3, 5), ctx=mx.gpu(0))
    on_cpu.copyto(into)  # into an existing device array
    np.testing.assert_array_equal(into.asnumpy(), host)
    into_host = nd.zeros((3, 5))
    on_gpu.copyto(into_host)
    np.testing.assert_array_equal(into_host.asnumpy(), host)
    assert on_gpu.as_in_context(mx.gpu(0)) is on_gpu  # already there: no copy


def test_gradients_flow_back_across_the_device_boundary():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = (x.as_in_context(mx.gpu(0)) ** 2).sum()
    y.backward()
    assert x.grad.context == mx.cpu()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0, 6.0])


def test_split_and_load_over_gpu0_twice():
    data = nd.arange(24).reshape((6, 4))
    parts = gluon.utils.split_and_load(data, [mx.gpu(0), mx.gpu(0)])
    assert len(parts) == 2 and all(_on_gpu(p) for p in parts)
    assert [p.shape for p in parts] == [(3, 4), (3, 4)]
    joined = np.concatenate([p.asnumpy() for p in parts])
    np.testing.assert_array_equal(joined, data.asnumpy())


@pytest.mark.parametrize('num_workers', [0, 2])
def test_dataloader_pin_memory_gives_page_locked_batches(num_workers):
    import cupy
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    y = np.arange(10, dtype=np.float32)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4,
                                   pin_memory=True, num_workers=num_workers)
    seen = []
    for data, label in loader:
        assert data.context == mx.cpu_pinned(0) and label.context == mx.cpu_pinned(0)
        attributes = cupy.cuda.runtime.pointerGetAttributes(data.handle.ctypes.data)
        assert attributes.type == cupy.cuda.runtime.memoryTypeHost  # page-locked
        seen.append(data.as_in_context(mx.gpu(0)).asnumpy())
    np.testing.assert_array_equal(np.concatenate(seen), x)


@pytest.mark.parametrize('kind,summed_on', [('device', 'gpu'), ('local', 'cpu')])
def test_in_process_stores_sum_where_their_kind_says(kind, summed_on):
    store = mx.kv.create(kind)
    store.init('w', nd.zeros((4,), ctx=mx.gpu(0)))
    store.push('w', [nd.ones((4,), ctx=mx.gpu(0)) * i for i in (1, 2, 3)])
    assert store._stored('w').context.device_type == summed_on
    out = [nd.zeros((4,), ctx=mx.gpu(0)), nd.zeros((4,))]
    store.pull('w', out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), [6.0] * 4)
    assert _on_gpu(out[0])


def test_a_trainer_on_the_device_store_matches_the_cpu():
    def train(ctx, kind):
        mx.random.seed(5)
        with mx.name.NameManager():
            net = gluon.nn.HybridSequential()
            net.add(gluon.nn.Conv2D(4, 3, padding=1, in_channels=2), gluon.nn.BatchNorm(),
                    gluon.nn.Activation('relu'), gluon.nn.Dense(3))
        net.initialize(mx.init.Xavier(), ctx=ctx)
        trainer = gluon.Trainer(net.collect_params(), 'sgd',
                                {'learning_rate': 0.1, 'momentum': 0.9}, kvstore=kind)
        rng = np.random.RandomState(1)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for _ in range(3):
            x = rng.normal(size=(8, 2, 5, 5)).astype(np.float32)
            y = rng.randint(0, 3, size=8).astype(np.float32)
            xs = gluon.utils.split_and_load(nd.array(x), ctx)
            ys = gluon.utils.split_and_load(nd.array(y), ctx)
            with autograd.record():
                losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
            autograd.backward(losses)
            trainer.step(8)
        return {k: v.data(ctx[0]).asnumpy() for k, v in net.collect_params().items()}

    on_gpu = train([mx.gpu(0)], 'device')
    on_cpu = train([mx.cpu(0)], 'local')
    for name, value in on_cpu.items():
        np.testing.assert_allclose(on_gpu[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


WORKER = '''
import json, os, sys
import numpy as np
import minigluon as mx
from minigluon import autograd, gluon, nd
ctx = mx.gpu(0) if os.environ['DEVICE'] == 'gpu' else mx.cpu(0)
store = mx.kv.create(os.environ['KVSTORE'])
mx.random.seed(3)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(8, activation='tanh', in_units=4), gluon.nn.Dense(3, in_units=8))
net.initialize(mx.init.Xavier(), ctx=ctx)
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5, 'momentum': 0.9},
                        kvstore=store)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
rng = np.random.RandomState(11)
b = 5
for _ in range(4):
    x = rng.normal(size=(2 * b, 4)).astype(np.float32)
    y = rng.randint(0, 3, size=2 * b).astype(np.float32)
    lo, hi = store.rank * b, (store.rank + 1) * b
    with autograd.record():
        loss = loss_fn(net(nd.array(x[lo:hi], ctx=ctx)), nd.array(y[lo:hi], ctx=ctx))
    loss.backward()
    trainer.step(b)
print('RESULT', json.dumps({k: v.data(ctx).asnumpy().tolist()
                            for k, v in net.collect_params().items()}))
'''


def test_two_dist_sync_device_workers_on_one_gpu_end_with_the_cpu_jobs_weights(tmp_path):
    pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
    from kvstore.cluster import Cluster, results  # tests/ is on sys.path (no __init__)
    weights = {}
    for device, kind in (('gpu', 'dist_sync_device'), ('cpu', 'dist_sync')):
        folder = tmp_path / device
        folder.mkdir()
        with Cluster(folder, WORKER, num_workers=2, num_servers=1,
                     env={'DEVICE': device, 'KVSTORE': kind}) as job:
            job.assert_success(timeout=120)
            weights[device] = [results(job, 'worker:%d' % r)[-1] for r in (0, 1)]
    for rank in (0, 1):
        assert weights['gpu'][rank].keys() == weights['cpu'][rank].keys()
        for name, value in weights['cpu'][rank].items():
            np.testing.assert_allclose(weights['gpu'][rank][name], value, rtol=1e-5, atol=1e-6,
                                       err_msg='rank %d %s' % (rank, name))


def test_cifar10_dist_with_one_gpu_per_worker_under_the_launcher(tmp_path):
    pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''),
               MINIGLUON_HOME=str(tmp_path / 'home'))
    env.pop('DMLC_ROLE', None)
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'launch.py'), '-n', '2', '-s', '1',
           '--launcher', 'local', sys.executable, 'examples/cifar10_dist.py', '--gpus', '1',
           '--kvstore', 'dist_sync_device', '--model', 'cifar_resnet20_v1', '--synthetic',
           '200', '--num-epochs', '1', '--batch-size', '20', '--log-interval', '2',
           '--metrics-file', str(tmp_path / 'metrics.jsonl')]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    accs = re.findall(r'^\[worker (\d)\] Epoch 0: Test_acc (\d\.\d{6})$', out, re.M)
    assert sorted(r for r, _ in accs) == ['0', '1'], out
    assert accs[0][1] == accs[1][1], out
    with open(str(tmp_path / 'metrics.jsonl')) as f:
        records = [json.loads(line) for line in f]
    assert {r['rank'] for r in records} == {0, 1}
    assert all(np.isfinite(r['loss']) for r in records if 'loss' in r), records
