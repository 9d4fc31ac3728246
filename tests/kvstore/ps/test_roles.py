"""``import minigluon`` under DMLC_ROLE=server or scheduler serves that role and exits."""
import json
import os
import subprocess
import sys

from ..cluster import ROOT


def test_a_role_is_served_before_the_layers_above_the_kvstore_load():
    # (they serve no role: a server or the scheduler of every job would pay for them)
    env = dict(os.environ, DMLC_ROLE='scheduler', DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT='1', DMLC_NUM_SERVER='two', DMLC_NUM_WORKER='1',
               MINIGLUON_PS_SECRET='s' * 32, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, '-X', 'importtime', '-c', 'import minigluon'],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and 'DMLC_NUM_SERVER' in done.stderr, done.stderr[-2000:]
    loaded = {line.rsplit('|', 1)[-1].strip() for line in done.stderr.splitlines()
              if line.startswith('import time:')}
    assert 'minigluon.kvstore.ps.roles' in loaded
    assert not {'minigluon.gluon', 'minigluon.test_utils', 'minigluon.io'} & loaded


SGD_ON_THE_SERVER = '''
import json
import minigluon as mx
from minigluon import kv, nd
store = kv.create('dist_sync')
store.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01,
                                     rescale_grad=0.5))
store.init('w', nd.ones((1000,)))
for _ in range(2):
    store.push('w', nd.arange(1000) * 0.001)
out = nd.zeros((1000,))
store.pull('w', out=out)
print('RESULT', json.dumps(out.asnumpy()[[0, 1, 999]].tolist()), flush=True)
store.close()
'''


def test_a_server_served_by_import_runs_the_compiled_update():
    """The server role is served inside ``import minigluon`` (as MXNet's import does),
    so its I/O thread applies SGD with momentum (the compiled kernel, imported lazily)
    while the main thread holds that import's lock; the kernel module is loaded before
    serving, or the I/O thread waits on the lock forever and the job dies of missed
    heartbeats."""
    import numpy as np
    env = dict(os.environ, PYTHONPATH=ROOT, PS_HEARTBEAT_TIMEOUT='5')
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'tools', 'launch.py'), '-n', '1', '-s', '1',
         '--launcher', 'local', sys.executable, '-c', SGD_ON_THE_SERVER],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    got = json.loads(done.stdout.split('RESULT ', 1)[1].splitlines()[0])
    w, mom = np.ones(1000, np.float32), np.zeros(1000, np.float32)
    for _ in range(2):  # MXNet's SGD: mom = 0.9 mom - lr wd w - lr rescale g; w += mom
        g = (np.arange(1000) * 0.001).astype(np.float32) * np.float32(0.5)
        mom = mom * np.float32(0.9) - np.float32(0.1 * 0.01) * w - np.float32(0.1) * g
        w = w + mom
    np.testing.assert_allclose(got, w[[0, 1, 999]], rtol=1e-6)


SERVE_AND_LOOK = '''
import os, sys
from minigluon.kvstore.ps import roles, server
from minigluon.kvstore.ps.config import Config
from minigluon.ndarray.ops import compiled, updates_cpu
server.Server.run = lambda self: print('compiled when serving:',
                                       bool(updates_cpu.sgd_momentum.compiled),
                                       'kernels on:', compiled.enabled())
os.environ['DMLC_ROLE'] = 'server'  # (after the imports: importing minigluon would serve it)
sys.exit(roles.run_role(Config.from_env()))
'''


def test_a_server_has_the_sgd_kernel_compiled_before_it_serves():
    """Compiling it at the first update would be on the I/O thread that sends the
    heartbeats: seconds on a loaded machine, and the scheduler declared the server dead
    (tests/kvstore/test_dist_failures.py, with a 4 s heartbeat timeout)."""
    env = dict(os.environ, PYTHONPATH=ROOT, DMLC_ROLE='worker', DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT='1', DMLC_NUM_SERVER='1', DMLC_NUM_WORKER='1',
               MINIGLUON_PS_SECRET='s' * 32)
    done = subprocess.run([sys.executable, '-c', SERVE_AND_LOOK], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'compiled when serving: True kernels on: True' in done.stdout, done.stdout
