"""examples/image_classification.py end to end on tiny data sets in their real file formats:
alone (hybrid, imperative, resumed), from RecordIO files, and under the launcher."""
import os
import re
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAM = [sys.executable, os.path.join(ROOT, 'examples', 'image_classification.py')]
LAUNCH = [sys.executable, os.path.join(ROOT, 'tools', 'launch.py')]
TINY = ['--model', 'mobilenet0.25', '--batch-size', '8', '--log-interval', '2', '-j', '0']
METRICS = r'accuracy=[01]\.\d{6}, top_k_accuracy_5=[01]\.\d{6}'


def _run(cmd, tmp_path):
    env = dict(os.environ, MINIGLUON_HOME=str(tmp_path / 'home'), OMP_NUM_THREADS='1',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    env.pop('DMLC_ROLE', None)
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr


def _write_mnist(folder, count, prefix, seed):
    """``count`` 28x28 digits in MNIST's IDX files (``prefix`` train or t10k)."""
    rng = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    labels = (np.arange(count) % 10).astype(np.uint8)
    images = (labels[:, None, None] * 25 + rng.randint(0, 30, (count, 28, 28))).astype(np.uint8)
    with open(os.path.join(folder, prefix + '-images-idx3-ubyte'), 'wb') as f:
        f.write(struct.pack('>IIII', 2051, count, 28, 28) + images.tobytes())
    with open(os.path.join(folder, prefix + '-labels-idx1-ubyte'), 'wb') as f:
        f.write(struct.pack('>II', 2049, count) + labels.tobytes())


def _write_cifar10(folder, per_file, seed):
    """CIFAR-10's six binary batches, ``per_file`` records each: a label byte, then the
    red, green and blue 32x32 planes."""
    rng = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    for name in ['data_batch_%d.bin' % i for i in range(1, 6)] + ['test_batch.bin']:
        labels = rng.randint(0, 10, (per_file, 1)).astype(np.uint8)
        planes = rng.randint(0, 256, (per_file, 3 * 32 * 32)).astype(np.uint8)
        with open(os.path.join(folder, name), 'wb') as f:
            f.write(np.concatenate([labels, planes], axis=1).tobytes())


def _write_rec(path, count, seed):
    """``count`` 32x32 PNG records, with their .idx, as MXNet packs images."""
    from minigluon import recordio
    rng = np.random.RandomState(seed)
    with recordio.MXIndexedRecordIO(path[:-4] + '.idx', path, 'w') as writer:
        for i in range(count):
            image = rng.randint(0, 256, (32, 32, 3)).astype(np.uint8)
            writer.write_idx(i, recordio.pack_img((0, float(i % 10), i, 0), image,
                                                  img_fmt='.png'))


def test_mnist_hybrid_saves_and_an_imperative_run_resumes(tmp_path):
    data = str(tmp_path / 'mnist')
    _write_mnist(data, 40, 'train', 0)
    _write_mnist(data, 16, 't10k', 1)
    common = PROGRAM + TINY + ['--dataset', 'mnist', '--data-dir', data,
                               '--prefix', str(tmp_path / 'ckpt'), '--save-frequency', '1']
    code, out = _run(common + ['--mode', 'hybrid', '--epochs', '1'], tmp_path)
    assert code == 0, out
    # 40 images, batches of 8: log lines after batches 2 and 4 (indices 1 and 3)
    assert re.findall(r'^Epoch\[0\] Batch \[(\d)\]\tSpeed: [\d.]+ samples/sec\t' + METRICS + '$',
                      out, re.M) == ['1', '3'], out
    assert re.search(r'^\[Epoch 0\] training: ' + METRICS + '$', out, re.M), out
    assert re.search(r'^\[Epoch 0\] validation: ' + METRICS + '$', out, re.M), out
    saved = sorted(os.listdir(str(tmp_path / 'ckpt')))
    assert len(saved) == 2 and saved[1] == 'mobilenet0.25_best.params', saved
    assert re.match(r'mobilenet0\.25_0_acc_[01]\.\d{4}\.params$', saved[0]), saved

    code, out = _run(common + ['--mode', 'imperative', '--num-epochs', '2', '--start-epoch',
                               '1', '--resume', str(tmp_path / 'ckpt' / saved[0])], tmp_path)
    assert code == 0, out
    assert re.search(r'^\[Epoch 1\] validation: ' + METRICS + '$', out, re.M), out
    assert '[Epoch 0]' not in out, out


def test_cifar10_under_the_launcher_each_worker_its_part(tmp_path):
    data = str(tmp_path / 'cifar')
    _write_cifar10(data, 8, 0)   # 40 training images: 20 per worker, batches of 8
    code, out = _run(LAUNCH + ['-n', '2', '-s', '1', '--launcher', 'local'] + PROGRAM + TINY +
                     ['--dataset', 'cifar10', '--data-dir', data, '--epochs', '1',
                      '--mode', 'hybrid', '--kvstore', 'dist_sync', '--save-frequency', '1',
                      '--prefix', str(tmp_path / 'ckpt')], tmp_path)
    assert code == 0, out
    for rank in (0, 1):
        batches = re.findall(r'^\[worker %d\] Epoch\[0\] Batch \[(\d+)\]' % rank, out, re.M)
        assert batches == ['1'], out   # 3 batches of its 20 images
    validation = re.findall(r'^\[worker (\d)\] \[Epoch 0\] validation: (%s)$' % METRICS,
                            out, re.M)
    assert sorted(r for r, _ in validation) == ['0', '1'], out
    assert validation[0][1] == validation[1][1], out  # one model, BatchNorm statistics too
    saved = os.listdir(str(tmp_path / 'ckpt'))  # by worker 0 only
    top1 = float(validation[0][1].split(',')[0].split('=')[1])
    assert saved == ['mobilenet0.25_0_acc_%.4f.params' % top1], saved


def test_record_files_and_a_clear_error_when_they_are_missing(tmp_path):
    data = tmp_path / 'rec'
    data.mkdir()
    _write_rec(str(data / 'train.rec'), 24, 0)
    _write_rec(str(data / 'test.rec'), 8, 1)
    code, out = _run(PROGRAM + TINY + ['--dataset', 'cifar10', '--use-rec', '--data-dir',
                                       str(data), '--epochs', '1'], tmp_path)
    assert code == 0, out
    assert re.search(r'^Epoch\[0\] Batch \[1\]\tSpeed: ', out, re.M), out
    assert re.search(r'^\[Epoch 0\] validation: ' + METRICS + '$', out, re.M), out
    code, out = _run(PROGRAM + TINY + ['--dataset', 'cifar10', '--use-rec', '--data-dir',
                                       str(tmp_path / 'nowhere')], tmp_path)
    assert code == 1 and 'nowhere' in out and 'tools/im2rec.py' in out, out
