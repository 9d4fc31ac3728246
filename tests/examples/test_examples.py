"""The examples run as a user runs them: alone, and under the launcher."""
import json
import os
import re
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = [sys.executable, os.path.join(ROOT, 'tools', 'launch.py')]


def _env(tmp_path):
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env['MINIGLUON_HOME'] = str(tmp_path / 'home')
    env['OMP_NUM_THREADS'] = '1'
    env.pop('DMLC_ROLE', None)
    return env


def _run(cmd, tmp_path, timeout=240):
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr


def test_kvstore_tutorial_alone_pulls_threes(tmp_path):
    code, out = _run([sys.executable, 'examples/kvstore_tutorial.py'], tmp_path)
    assert code == 0, out
    pulled = out.split('=== pull "weight" ===')[1].split('===')[0]
    assert pulled.count('[3. 3. 3.]') == 4 and '2.' not in pulled
    assert 'total number of workers: 1' in out and 'my rank among workers: 0' in out


def test_kvstore_tutorial_under_the_launcher_pulls_sixes(tmp_path):
    code, out = _run(LAUNCH + ['-n', '2', '-s', '1', '--launcher', 'local', sys.executable,
                               'examples/kvstore_tutorial.py'], tmp_path)
    assert code == 0, out
    for rank in (0, 1):
        lines = [ln.split('] ', 1)[1] for ln in out.splitlines()
                 if ln.startswith('[worker %d]' % rank)]
        text = '\n'.join(lines)
        pulled = text.split('=== pull "weight" ===')[1].split('===')[0]
        assert pulled.count('[6. 6. 6.]') == 4, text
        reduced = text.split('=== allreduce')[1]
        assert reduced.count('[6. 6. 6.]') == 4, text
        assert 'total number of workers: 2' in text
        assert 'my rank among workers: %d' % rank in text


def test_cifar10_dist_two_workers_agree_on_test_accuracy(cifar10_dist_job):
    out, folder = cifar10_dist_job.output, cifar10_dist_job.folder
    accs = re.findall(r'^\[worker (\d)\] Epoch (\d): Test_acc (\d\.\d{6})$', out, re.M)
    assert sorted((e, r) for r, e, _ in accs) == [('0', '0'), ('0', '1'), ('1', '0'),
                                                  ('1', '1')], out
    for epoch in '01':  # BatchNorm statistics averaged: one model
        assert len({a for _, e, a in accs if e == epoch}) == 1, out
    for rank in (0, 1):  # 60 samples per worker: 3 batches of 20
        assert re.search(r'^\[worker %d\] Epoch\[0\] Batch \[2/3\]\tSpeed: [\d.]+ samples/sec\t'
                         r'accuracy=[\d.]+\tloss=[\d.]+\tTime: [\d.]+s\tETA: \d+:\d\d$' % rank,
                         out, re.M), out
    # the data set says it is synthetic once per worker (not for train and test each)
    assert len(re.findall(r'^\[worker \d\] .*SYNTHETIC', out, re.M)) == 2, out
    with open(str(folder / 'metrics.jsonl')) as f:   # both workers append to one file
        records = [json.loads(line) for line in f]
    last_acc = next(a for _, e, a in accs if e == '1')  # printed to 6 decimals
    for rank in (0, 1):
        mine = [r for r in records if r['rank'] == rank]
        assert [(r['kind'], r['epoch'], r['batch']) for r in mine] == [
            (kind, epoch, batch) for epoch in (0, 1)
            for kind, batch in [('batch', 1), ('batch', 2), ('batch', 3), ('epoch', 3)]], records
        assert '%.6f' % mine[-1]['Test_acc'] == last_acc and mine[-1]['samples'] == 60
        assert all(r['samples_per_sec'] > 0 and 'accuracy' in r and 'loss' in r for r in mine)
    assert re.search(r'^\[worker 1\] Finished 2 epoch\(s\) in [\d.]+ s', out, re.M), out
    assert sorted(os.listdir(str(folder / 'ckpt'))) == ['model.params', 'progress.json',
                                                        'trainer.states']


def _processes_with(variable):
    """{pid: environment} of the processes whose environment holds ``variable``."""
    found = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/environ' % pid, 'rb') as f:
                env = dict(item.split(b'=', 1) for item in f.read().split(b'\0') if b'=' in item)
        except OSError:
            continue
        if variable.encode() in env:
            found[int(pid)] = env
    return found


@pytest.mark.skipif(not os.path.isdir('/proc'), reason='finds the worker to kill in /proc')
def test_cifar10_dist_a_killed_worker_is_replaced_and_the_results_do_not_change(
        tmp_path, cifar10_dist_job):
    mark = 'MG_ELASTIC_%d' % os.getpid()
    launcher = subprocess.Popen(cifar10_dist_job.command(tmp_path, ['--env', mark + '=1']),
                                cwd=ROOT, env=cifar10_dist_job.env(tmp_path),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    lines, kill = [], True
    for line in launcher.stdout:
        lines.append(line)
        if kill and line.startswith('[worker 1] Epoch[1] Batch [1/3]'):
            kill = False  # the replacement's first line of epoch 1 says [1/2]
            victims = [pid for pid, env in _processes_with(mark).items()
                       if env.get(b'DMLC_ROLE') == b'worker' and
                       env.get(b'DMLC_WORKER_ID') == b'1']
            assert len(victims) == 1
            os.kill(victims[0], signal.SIGKILL)
    assert launcher.wait(60) == 0, ''.join(lines)
    undisturbed, killed = cifar10_dist_job.output, ''.join(lines)
    assert 'restart 1 of 1' in killed, killed
    # where the replacement rejoins depends on how far the dead process got: batch 0 when
    # its release of that step had not reached the servers (the round stays open and the
    # replacement pushes to it), later when it had; the results are the same either way
    rejoined = r'^\[worker 1\] Rejoining the job at epoch 1, batch [012]$'
    assert re.search(rejoined, killed, re.M), killed
    accuracy = r'^\[worker (\d)\] Epoch (\d): Test_acc (\S+)$'
    assert sorted(set(re.findall(accuracy, killed, re.M))) == \
        sorted(re.findall(accuracy, undisturbed, re.M)), killed  # every step the same
    assert len(re.findall(accuracy, undisturbed, re.M)) == 4
    assert not _processes_with(mark)


def test_cifar10_dist_alone_with_a_local_store_and_resume(tmp_path):
    args = [sys.executable, 'examples/cifar10_dist.py', '--kvstore', 'local', '--model',
            'cifar_resnet20_v1', '--synthetic', '100', '--batch-size', '25',
            '--checkpoint-dir', str(tmp_path / 'ckpt')]
    code, out = _run(args + ['--num-epochs', '1'], tmp_path)
    assert code == 0 and 'Epoch 0: Test_acc' in out, out
    code, out = _run(args + ['--num-epochs', '2', '--resume'], tmp_path)
    assert code == 0, out
    assert 'Resuming from' in out and 'Epoch 1: Test_acc' in out and 'Epoch 0:' not in out, out


def test_cifar10_dist_bad_flags_are_clear(tmp_path):
    code, out = _run([sys.executable, 'examples/cifar10_dist.py', '--resume'], tmp_path)
    assert code == 2 and '--resume needs --checkpoint-dir' in out


def test_train_cifar10_on_two_cpu_devices(tmp_path):
    code, out = _run([sys.executable, 'examples/train_cifar10.py', '--cpus', '2', '--model',
                      'cifar_resnet20_v1', '--synthetic', '100', '--num-epochs', '1',
                      '--batch-size', '20', '--checkpoint-dir', str(tmp_path / 'ckpt')],
                     tmp_path)
    assert code == 0 and 'Epoch 0: Test_acc' in out, out
    assert sorted(os.listdir(str(tmp_path / 'ckpt'))) == ['model.params', 'progress.json',
                                                          'trainer.states']


def _write_rec(path, count, seed):
    """``count`` 32x32 PNG records with labels 0-9, written as MXNet packs images."""
    import numpy as np
    from minigluon import recordio
    rng = np.random.RandomState(seed)
    with recordio.MXIndexedRecordIO(path[:-4] + '.idx', path, 'w') as writer:
        for i in range(count):
            label = i % 10
            image = np.full((32, 32, 3), 25 * label, np.uint8) + rng.randint(0, 20, (32, 32, 3),
                                                                            dtype=np.uint8)
            writer.write_idx(i, recordio.pack_img((0, float(label), i, 0), image,
                                                  img_fmt='.png'))


def test_cifar10_dist_trains_from_record_files_each_worker_its_part(tmp_path):
    data = tmp_path / 'rec'
    data.mkdir()
    _write_rec(str(data / 'train.rec'), 80, 0)
    _write_rec(str(data / 'test.rec'), 20, 1)
    code, out = _run(LAUNCH + ['-n', '2', '-s', '1', '--launcher', 'local', sys.executable,
                               'examples/cifar10_dist.py', '--model', 'cifar_resnet20_v1',
                               '--use-rec', '--data-dir', str(data), '--num-epochs', '1',
                               '--batch-size', '10', '--loader-workers', '1',
                               '--progress-interval', '600'], tmp_path)
    assert code == 0, out
    accuracy = [re.search(r'^\[worker %d\] Epoch 0: Test_acc ([0-9.]+)$' % rank, out, re.M)
                for rank in (0, 1)]
    assert all(accuracy) and accuracy[0].group(1) == accuracy[1].group(1), out
    # 80 records over 2 workers: 40 each, 4 batches of 10
    assert re.search(r'^\[worker 1\] Finished 1 epoch\(s\) .*: 40 samples', out, re.M), out
    code, out = _run([sys.executable, 'examples/cifar10_dist.py', '--use-rec', '--kvstore',
                      'local', '--data-dir', str(tmp_path / 'nowhere')], tmp_path)
    assert code != 0 and 'nowhere' in out and 'im2rec' in out, out
