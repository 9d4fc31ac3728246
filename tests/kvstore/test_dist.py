"""The distributed store with real processes on 127.0.0.1: sums, optimizers, modes."""
import numpy as np
import pytest

from .cluster import Cluster, results

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

SUMS = '''
import json, sys
import numpy as np
import minigluon as mx
from minigluon import nd, kv
store = kv.create('dist_sync')
r, n = store.rank, store.num_workers
store.init('small', nd.zeros((2, 3)))
store.init(7, nd.zeros((3000,)))                  # above the bound: sliced over servers
store.init('half', nd.zeros((4,), dtype='float16'))
out = {}
for rnd in range(3):
    store.push('small', nd.ones((2, 3)) * (r + 1) * (rnd + 1))
    store.push(7, nd.arange(3000) * (r + 1))
    store.push('half', nd.ones((4,), dtype='float16') * (r + 1))
    small, big, half = nd.zeros((2, 3)), nd.zeros((3000,)), nd.zeros((4,), dtype='float16')
    store.pull(['small', 7, 'half'], out=[small, big, half])
    out[rnd] = [small.asnumpy().tolist(), big.asnumpy()[[0, 1, 2999]].tolist(),
                half.asnumpy().tolist(), str(half.dtype.__name__)]
print('RESULT', json.dumps({'rank': r, 'n': n, 'out': out}))
store.close()
'''


def test_three_workers_two_servers_exact_sums(tmp_path):
    with Cluster(tmp_path, SUMS, num_workers=3, num_servers=2,
                 env={'MXNET_KVSTORE_BIGARRAY_BOUND': '1000',
                      'MINIGLUON_PS_CHUNK_BYTES': '4096'}) as job:
        job.assert_success()
        for w in range(3):
            res = results(job, 'worker:%d' % w)[0]
            assert res['rank'] == w and res['n'] == 3
            for rnd in range(3):
                small, big, half, dtype = res['out'][str(rnd)]
                assert np.array_equal(small, np.full((2, 3), 6.0 * (rnd + 1)))
                assert big == [0.0, 6.0, 2999 * 6.0]
                assert half == [6.0] * 4 and dtype == 'float16'


OPTIMIZER = '''
import json
import minigluon as mx
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.5, wd=0.01))
store.init('w', nd.ones((5,)))
store.init('big', nd.ones((2500,)))
history = []
for step in range(4):
    store.push('w', nd.ones((5,)) * (r + 1))
    store.push('big', nd.ones((2500,)) * (r + 1))
    w, big = nd.zeros((5,)), nd.zeros((2500,))
    store.pull('w', out=w)
    store.pull('big', out=big)
    history.append([w.asnumpy()[0].item(), big.asnumpy()[[0, 2499]].tolist()])
print('RESULT', json.dumps(history))
'''


def test_sgd_on_servers_gives_exact_weights(tmp_path):
    with Cluster(tmp_path, OPTIMIZER, num_workers=3, num_servers=2,
                 env={'MXNET_KVSTORE_BIGARRAY_BOUND': '1000'}) as job:
        job.assert_success()
        w, mom, expected = 1.0, 0.0, []
        for _ in range(4):
            grad = 1 + 2 + 3
            mom = 0.5 * mom - 0.1 * (grad + 0.01 * w)
            w += mom
            expected.append(w)
        for rank in range(3):
            history = results(job, 'worker:%d' % rank)[0]
            got = [h[0] for h in history]
            np.testing.assert_allclose(got, expected, rtol=1e-6)
            for h, e in zip(history, expected):
                np.testing.assert_allclose(h[1], [e, e], rtol=1e-6)


COMPRESSED = '''
import json
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
store.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
store.init('g', nd.zeros((20,)))
rounds = []
values = nd.array([0.3, 0.6, -0.7, 0.1, 2.0] * 4) * (r + 1)
for _ in range(2):
    store.push('g', values)
    out = nd.zeros((20,))
    store.pull('g', out=out)
    rounds.append(out.asnumpy().tolist())
print('RESULT', json.dumps(rounds))
'''


def _two_bit_reference(grads, threshold, rounds):
    residual = [np.zeros_like(g) for g in grads]
    sums = []
    for _ in range(rounds):
        total = np.zeros_like(grads[0])
        for i, g in enumerate(grads):
            residual[i] += g
            q = np.where(residual[i] >= threshold, threshold,
                         np.where(residual[i] <= -threshold, -threshold, 0.0))
            residual[i] -= q
            total += q
        sums.append(total)
    return sums


def test_two_bit_compression_gives_the_quantised_sums(tmp_path):
    with Cluster(tmp_path, COMPRESSED, num_workers=2, num_servers=2) as job:
        job.assert_success()
        base = np.array([0.3, 0.6, -0.7, 0.1, 2.0] * 4, dtype=np.float32)
        expected = _two_bit_reference([base * 1, base * 2], 0.5, 2)
        for rank in range(2):
            got = results(job, 'worker:%d' % rank)[0]
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-6)


ASYNC = '''
import json
import minigluon as mx
from minigluon import nd, kv
store = kv.create('dist_async')
r = store.rank
store.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
store.init('w', nd.zeros((3,)))
for _ in range(5):
    store.push('w', nd.ones((3,)) * (r + 1))
store.barrier()          # every push has been applied once all workers get here
out = nd.zeros((3,))
store.pull('w', out=out)
print('RESULT', json.dumps(out.asnumpy().tolist()))
'''


def test_dist_async_reaches_the_exact_final_value(tmp_path):
    with Cluster(tmp_path, ASYNC, num_workers=3, num_servers=1) as job:
        job.assert_success()
        for rank in range(3):
            assert results(job, 'worker:%d' % rank)[0] == [-30.0] * 3  # -(1+2+3)*5


NO_OPTIMIZER_ASYNC = '''
from minigluon import nd, kv
from minigluon.base import MXNetError
store = kv.create('dist_async')
store.init('w', nd.zeros((3,)))
store.push('w', nd.ones((3,)))
try:
    store.pull('w', out=nd.zeros((3,)))
    store.barrier()
    print('NO ERROR')
except MXNetError as exc:
    print('ERROR', exc)
'''


def test_dist_async_without_optimizer_is_a_clear_error(tmp_path):
    with Cluster(tmp_path, NO_OPTIMIZER_ASYNC, num_workers=1, num_servers=1) as job:
        job.assert_success()
        assert 'needs an optimizer' in job.output('worker:0')


TUTORIAL = '''
import json
import minigluon as mx
from minigluon import nd, kv
store = kv.create('dist')
shape = (2, 3)
ctx = [mx.cpu(0), mx.cpu(1)]
store.init(3, nd.ones(shape) * 2)
y = [nd.zeros(shape, ctx=c) for c in ctx]
store.push(3, [nd.ones(shape, ctx=c) * (i + 1) for i, c in enumerate(ctx)])
store.pull(3, out=y)
print('RESULT', json.dumps([a.asnumpy().tolist() for a in y]))
'''


@pytest.mark.parametrize('kind', ['dist', 'dist_sync_device'])
def test_tutorial_two_workers_pushing_one_and_two_pull_six(tmp_path, kind):
    with Cluster(tmp_path, TUTORIAL.replace("'dist'", repr(kind)), num_workers=2) as job:
        job.assert_success()
        for rank in range(2):
            for arr in results(job, 'worker:%d' % rank)[0]:
                assert np.array_equal(arr, np.full((2, 3), 6.0))


SHAPE_CLASH = '''
from minigluon import nd, kv
from minigluon.base import MXNetError
store = kv.create('dist_sync')
try:
    store.init('w', nd.zeros((2,) if store.rank == 0 else (3,)))
    print('INIT OK')
except MXNetError as exc:
    print('ERROR', exc)
'''


def test_same_key_with_another_shape_is_an_error_naming_both(tmp_path):
    with Cluster(tmp_path, SHAPE_CLASH, num_workers=2) as job:
        job.assert_success()
        out = job.output('worker:1')
        assert 'ERROR' in out and '(3,)' in out and '(2,)' in out, job.all_output()


def test_launcher_index_decides_the_rank(tmp_path):
    code = 'from minigluon import kv\nstore = kv.create("dist_sync")\nprint("RANK", store.rank)\n'
    with Cluster(tmp_path, code, num_workers=2) as job:
        job.assert_success()
        for w in range(2):
            assert 'RANK %d' % w in job.output('worker:%d' % w)


ALLREDUCE = '''
import json, os
import minigluon as mx
from minigluon import nd, kv
store = kv.create(os.environ['KIND'])
r = store.rank
store.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))   # must not touch allreduce keys
store.init('w', nd.zeros((2,)))
outs = []
for step in range(2):
    stats = nd.array([r + 1.0, 10.0 * (r + 1) + step])
    store.allreduce('bn.running_mean', stats, average=True)
    outs.append(stats.asnumpy().tolist())
    store.push('w', nd.ones((2,)))
store.barrier()                 # dist_async: every push applied before the pull
w = nd.zeros((2,))
store.pull('w', out=w)
print('RESULT', json.dumps({'stats': outs, 'w': w.asnumpy().tolist()}))
'''


@pytest.mark.parametrize('kind', ['dist_sync', 'dist_async'])
def test_allreduce_keys_are_summed_never_optimised(tmp_path, kind):
    with Cluster(tmp_path, ALLREDUCE, num_workers=2, num_servers=2,
                 env={'KIND': kind}) as job:
        job.assert_success()
        for rank in range(2):
            res = results(job, 'worker:%d' % rank)[0]
            assert res['stats'] == [[1.5, 15.0], [1.5, 16.0]]
            assert res['w'] == [-4.0, -4.0]  # two SGD steps of lr 1 on a summed grad of 2


BATCHES = '''
import json
import numpy as np
import minigluon as mx
from minigluon import nd, kv
from minigluon.base import MXNetError
store = kv.create('dist_sync')
r = store.rank
keys = ['k%d' % i for i in range(20)] + [7]          # 7 is sliced over both servers
shapes = [(i + 1, 3) for i in range(20)] + [(3000,)]
store.init(keys, [nd.zeros(s) for s in shapes])
out = []
for step in range(2):
    store.push(keys, [nd.ones(s) * (r + 1) * (step + 1) for s in shapes])   # one call
    outs = [nd.zeros(s) for s in shapes] + [nd.zeros((4, 3))]
    store.pull(keys + ['k3'], out=outs)             # a key twice in one call
    out.append([float(o.asnumpy().sum()) for o in outs])
try:
    store.pull(['k1', 'nope'], out=[nd.zeros((2, 3)), nd.zeros((1,))])
except MXNetError as exc:
    out.append(str(exc))
print('RESULT', json.dumps(out))
'''


def test_small_parts_for_one_server_travel_in_one_message_and_sum_exactly(tmp_path):
    env = {'MXNET_KVSTORE_BIGARRAY_BOUND': '1000', 'MINIGLUON_PS_CHUNK_BYTES': '4096',
           'PS_VERBOSE': '2'}
    with Cluster(tmp_path, BATCHES, num_workers=2, num_servers=2, env=env) as job:
        job.assert_success()
        for w in range(2):
            res = results(job, 'worker:%d' % w)[0]
            for step in range(2):
                want = [3.0 * (step + 1) * (i + 1) * 3 for i in range(20)] + \
                    [3.0 * (step + 1) * 3000, 3.0 * (step + 1) * 4 * 3]
                assert res[step] == want
            assert "not been initialised" in res[2] and "'nope'" in res[2]
        # per step and server: one message for the small keys, at most two for the 4 KiB
        # parts of key 7 (24 messages per step without batches)
        pushes = [line for s in range(2) for line in job.output('server:%d' % s).splitlines()
                  if '<- worker:0: <push' in line]
        assert 4 <= len(pushes) <= 12, '\n'.join(pushes)
