"""The Module-API programs end to end: the talk's linear regression (alone, under the
launcher with the numbers of one process, started by hand with DMLC_* variables, and
beside MXNet 1.9.1) and the MNIST trainer."""
import os
import socket
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, 'examples')
LINEAR = [sys.executable, os.path.join(EXAMPLES, 'linear_regression.py')]
LAUNCH = [sys.executable, os.path.join(ROOT, 'tools', 'launch.py')]


def _env(**extra):
    env = dict(os.environ, OMP_NUM_THREADS='1',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''), **extra)
    for name in [k for k in env if k.startswith('DMLC_')]:
        if name not in extra:
            del env[name]
    return env


def _run(cmd, tmp_path):
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=_env(), capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr


def test_linear_regression_learns_the_line(tmp_path):
    out = _run(LINEAR + ['--save-weights', 'w.npz'], tmp_path)
    assert 'Speed:' in out and 'Validation-mae=' in out
    weights = np.load(tmp_path / 'w.npz')
    np.testing.assert_allclose(weights['weight'].ravel(), [1, 2], atol=0.05)


def test_linear_regression_two_workers_take_the_steps_of_one(tmp_path):
    """dist_sync with 2 workers of batch 2 ends where one process with batch 4 ends."""
    fixed = ['--no-shuffle', '--num-epochs', '3']
    _run(LINEAR + fixed + ['--batch-size', '4', '--kv-store', 'local',
                           '--save-weights', 'one.npz'], tmp_path)
    out = _run(LAUNCH + ['-n', '2', '-s', '1', '--launcher', 'local'] + LINEAR + fixed +
               ['--batch-size', '2', '--kv-store', 'dist_sync', '--save-weights', 'dist.npz'],
               tmp_path)
    assert '[worker 1] worker 1: weight' in out
    one, dist = np.load(tmp_path / 'one.npz'), np.load(tmp_path / 'dist.npz')
    np.testing.assert_allclose(dist['weight'], one['weight'], rtol=1e-6)
    np.testing.assert_allclose(dist['bias'], one['bias'], rtol=1e-6)


def test_linear_regression_started_by_hand_with_dmlc_variables(tmp_path):
    """The talk's launch: the same command as scheduler, server and two workers,
    dist_async; importing minigluon serves the scheduler and server roles. The job's
    secret is the one variable beyond MXNet's (the launcher sets it)."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    common = dict(DMLC_PS_ROOT_URI='127.0.0.1', DMLC_PS_ROOT_PORT=str(port),
                  DMLC_NUM_SERVER='1', DMLC_NUM_WORKER='2',
                  MINIGLUON_PS_SECRET='0123456789abcdef0123')
    # async: each push is scaled by 1 / (batch * workers), as the Trainer's contract has it
    cmd = LINEAR + ['--kv-store', 'dist_async', '--batch-size', '2', '--lr', '0.02']
    procs = [subprocess.Popen(cmd + (['--save-weights', 'w%d.npz' % i] if role == 'worker'
                                     else []),
                              cwd=str(tmp_path), env=_env(DMLC_ROLE=role, **common),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i, role in enumerate(['scheduler', 'server', 'worker', 'worker'])]
    try:
        outs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-2000:]
    for i in (2, 3):
        weights = np.load(tmp_path / ('w%d.npz' % i))
        np.testing.assert_allclose(weights['weight'].ravel(), [1, 2], atol=0.1)


def test_the_talks_program_converges_as_under_mxnet(answers_of_both):
    script = '''
    import json, logging, sys
    import numpy as np
    import mxnet as mx

    np.random.seed(0)
    mx.random.seed(0)
    train_data = np.random.uniform(0, 1, [100, 2])
    train_label = np.array([train_data[i][0] + 2 * train_data[i][1] for i in range(100)])
    batch_size = 1
    eval_data = np.array([[7, 2], [6, 10], [12, 2]])
    eval_label = np.array([11, 26, 16])
    train_iter = mx.io.NDArrayIter(train_data, train_label, batch_size, shuffle=True,
                                   label_name='lin_reg_label')
    eval_iter = mx.io.NDArrayIter(eval_data, eval_label, batch_size, shuffle=False)
    X = mx.sym.Variable('data')
    Y = mx.symbol.Variable('lin_reg_label')
    fully_connected_layer = mx.sym.FullyConnected(data=X, name='fc1', num_hidden=1)
    lro = mx.sym.LinearRegressionOutput(data=fully_connected_layer, label=Y, name='lro')
    model = mx.mod.Module(symbol=lro, data_names=['data'], label_names=['lin_reg_label'])
    model.fit(train_iter, eval_iter, optimizer_params={'learning_rate': 0.005, 'momentum': 0.9},
              num_epoch=20, eval_metric='mae', kvstore='device',
              batch_end_callback=mx.callback.Speedometer(batch_size, 20))
    json.dump({'mae': model.score(eval_iter, 'mae')[0][1],
               'weight': model.get_params()[0]['fc1_weight'].asnumpy().tolist()},
              open(sys.argv[1] + '/out.json', 'w'))
    '''
    theirs, ours = answers_of_both(script, 'out.json')
    # the shuffles differ (each framework's generator), the fit does not
    assert theirs['mae'] < 0.2 and ours['mae'] < 0.2
    np.testing.assert_allclose(ours['weight'], theirs['weight'], atol=0.05)
    np.testing.assert_allclose(ours['weight'][0], [1, 2], atol=0.1)


def test_train_mnist_mlp_and_lenet_with_checkpoints(tmp_path):
    mnist = [sys.executable, os.path.join(EXAMPLES, 'train_mnist.py'), '--synthetic', '200',
             '--data-dir', str(tmp_path / 'mnist'), '--batch-size', '20', '--disp-batches', '5']
    out = _run(mnist + ['--num-epochs', '2', '--model-prefix', 'mlp'], tmp_path)
    assert 'Epoch[1] Validation-accuracy=1.000000' in out
    assert (tmp_path / 'mlp-0002.params').exists() and (tmp_path / 'mlp-symbol.json').exists()
    out = _run(mnist + ['--num-epochs', '3', '--model-prefix', 'mlp', '--load-epoch', '2'],
               tmp_path)
    assert 'Epoch[0]' not in out and 'Epoch[2] Train-accuracy' in out
    out = _run(mnist + ['--network', 'lenet', '--num-epochs', '1', '--top-k', '3'], tmp_path)
    assert 'Epoch[0] Validation-top_k_accuracy_3=' in out


def test_module_refuses_a_job_that_replaces_workers(tmp_path):
    """Module.fit cannot resume a replacement worker in step: every worker stops at once,
    saying so, instead of hanging."""
    proc = subprocess.run(LAUNCH + ['-n', '2', '-s', '1', '--launcher', 'local',
                                    '--max-restarts', '1'] + LINEAR +
                          ['--kv-store', 'dist_sync', '--num-epochs', '1'],
                          cwd=str(tmp_path), env=_env(), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert 'Module.fit cannot resume' in proc.stdout + proc.stderr
