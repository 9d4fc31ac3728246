"""python -m minigluon.plot: records read from metrics files and from text output, and PNGs
rendered from real short runs, checked by their pixels."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon, nd
from minigluon.plot import COLOURS, main, parse_line, read_records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS='1', MINIGLUON_HOME=str(tmp_path / 'home'),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    env.pop('DMLC_ROLE', None)
    return env


def _need_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        reason = "matplotlib is not installed (pip install -e '.[plot]' or '.[test]')"
        print('skipped: ' + reason)
        pytest.skip(reason)


def _pixels(png, panel, colour, tol=40):
    """How many pixels inside ``panel``'s axes (its frame left out) are ``colour``."""
    from PIL import Image
    image = np.asarray(Image.open(png).convert('RGB')).astype(int)
    left, top, right, bottom = panel['bbox']
    inside = image[top + 3:bottom - 3, left + 3:right - 3]
    target = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(inside - target).max(axis=2) <= tol).sum())


def _panel(panels, name, x):
    return next(p for p in panels if p['panel'] == name and p['x'] == x)


# ---- reading ------------------------------------------------------------------------------
def test_progress_and_epoch_lines_of_the_examples_with_the_launcher_prefix():
    line = ('[worker 1] Epoch[2] Batch [40/157]\tSpeed: 25.81 samples/sec\taccuracy=0.412000\t'
            'loss=1.500000\tTime: 12.3s\tETA: 1:23')
    assert parse_line(line) == {'kind': 'batch', 'epoch': 2, 'batch': 40, 'batches': 157,
                                'samples_per_sec': 25.81, 'accuracy': 0.412, 'loss': 1.5,
                                'time': 12.3, 'rank': 1}
    # the format of earlier minigluon and of MXNet's Speedometer
    assert parse_line('Epoch[0] Batch [20]\tSpeed: 30.00 samples/sec\taccuracy=0.250000') == {
        'kind': 'batch', 'epoch': 0, 'batch': 20, 'batches': None, 'samples_per_sec': 30.0,
        'accuracy': 0.25, 'rank': 0}
    assert parse_line('Epoch[0] Batch [0-20]\tSpeed: 30.00 samples/sec\taccuracy=nan')['batch'] \
        == 20
    assert parse_line('[worker 0] Epoch 3: Test_acc 0.467400') == {
        'kind': 'epoch', 'epoch': 3, 'Test_acc': 0.4674, 'rank': 0}
    assert parse_line('Epoch[4] Validation-accuracy=0.750000', rank=2) == {
        'kind': 'epoch', 'epoch': 4, 'validation accuracy': 0.75, 'rank': 2}
    for other in ('[server 0] Epoch 3: Test_acc 0.4', '[scheduler] {"kind": "epoch"}',
                  'Epoch[0] Test [3/5]\tSpeed: 1.00 samples/sec', 'Finished 1 epoch(s) in 3.9 s',
                  '{"kind": "batch", "phase": "test", "epoch": 0}', '{not json', ''):
        assert parse_line(other) is None, other


def test_the_estimators_log_lines():
    assert parse_line('[Epoch 1][Batch 3][Samples 32] time/interval: 0.012s training accuracy: '
                      '0.5000, training l2loss: 1.2500, speed: 800.5 samples/s, ETA: 0:01') == {
        'kind': 'batch', 'epoch': 1, 'batch': 4, 'samples_per_sec': 800.5,
        'training accuracy': 0.5, 'training l2loss': 1.25, 'rank': 0}
    assert parse_line('[worker 1] [Epoch 0] Finished in 0.031s, training accuracy: 0.7500, '
                      'validation accuracy: 0.8000') == {
        'kind': 'epoch', 'epoch': 0, 'training accuracy': 0.75, 'validation accuracy': 0.8,
        'rank': 1}


def test_json_records_and_text_mix_in_one_file(tmp_path):
    path = tmp_path / 'mixed.log'
    path.write_text('\n'.join([
        'some other line',
        json.dumps({'kind': 'batch', 'phase': 'train', 'rank': 1, 'epoch': 0, 'batch': 2,
                    'samples_per_sec': 5.0, 'accuracy': 0.5}),
        '[worker 0] ' + json.dumps({'kind': 'epoch', 'epoch': 0, 'Test_acc': 0.5}),
        '[worker 0] Epoch 1: Test_acc 0.600000']) + '\n')
    records = read_records([str(path)])
    assert [(r['kind'], r['rank'], r['source']) for r in records] == [
        ('batch', 1, 0), ('epoch', 0, 0), ('epoch', 0, 0)]


# ---- real runs, drawn -----------------------------------------------------------------------
@pytest.fixture
def launched_run(cifar10_dist_job):
    """A real two-worker cifar10_dist.py job: its metrics file and its merged output."""
    folder = cifar10_dist_job.folder
    return str(folder / 'metrics.jsonl'), str(folder / 'job.log')


def test_plot_of_a_launched_jobs_metrics_file(launched_run, tmp_path, capsys):
    _need_matplotlib()
    png = str(tmp_path / 'curves.png')
    assert main([launched_run[0], '-o', png, '--title', 'cifar10_dist']) == 0
    assert 'rank(s) 0, 1' in capsys.readouterr().out
    from minigluon.plot import render
    panels = render(read_records([launched_run[0]]), png)
    from PIL import Image
    assert Image.open(png).size == (1500, 850)
    for panel in panels:
        # both workers' lines, in their colours, in every panel; nobody else's
        assert set(panel['lines'].values()) == {COLOURS[0], COLOURS[1]}, panel
        for rank in (0, 1):
            assert _pixels(png, panel, COLOURS[rank]) > 40, (panel, rank)
        assert _pixels(png, panel, COLOURS[2]) == 0
    accuracy = _panel(panels, 'accuracy', 'epoch')['lines']
    assert set(accuracy) == {'rank 0 accuracy', 'rank 0 Test_acc', 'rank 1 accuracy',
                             'rank 1 Test_acc'}
    assert set(_panel(panels, 'loss', 'time')['lines']) == {'rank 0 loss', 'rank 1 loss'}


def test_plot_of_a_launched_jobs_text_output(launched_run, tmp_path):
    _need_matplotlib()
    from minigluon.plot import render
    png = str(tmp_path / 'from-log.png')
    records = read_records([launched_run[1]])
    assert {r['rank'] for r in records} == {0, 1}
    assert sum(r['kind'] == 'epoch' for r in records) == 4     # Test_acc, 2 epochs x 2
    panels = render(records, png)
    for name in ('accuracy', 'loss', 'throughput'):
        for x in ('time', 'epoch'):
            for rank in (0, 1):
                assert _pixels(png, _panel(panels, name, x), COLOURS[rank]) > 40, (name, x)
    # the text has no time for the test accuracy: only against epochs
    assert 'rank 0 Test_acc' in _panel(panels, 'accuracy', 'epoch')['lines']
    assert 'rank 0 Test_acc' not in _panel(panels, 'accuracy', 'time')['lines']


def test_plot_of_an_estimator_fit_with_every_handler(tmp_path):
    _need_matplotlib()
    from minigluon.gluon.contrib.estimator import (CheckpointHandler, EarlyStoppingHandler,
                                                   Estimator, GradientUpdateHandler,
                                                   LoggingHandler, MetricHandler,
                                                   StoppingHandler, ValidationHandler)
    from minigluon.plot import render
    mx.random.seed(1)
    rng = np.random.RandomState(1)
    x = rng.normal(size=(96, 8)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    train = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(x[:64]), nd.array(y[:64])),
                                  batch_size=8, shuffle=True)
    val = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(x[64:]), nd.array(y[64:])),
                                batch_size=8)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(16, activation='relu'), gluon.nn.Dense(2))
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.02})
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer,
                    initializer=mx.init.Xavier())
    metrics = str(tmp_path / 'metrics.jsonl')
    est.fit(train, val_data=val, epochs=4, event_handlers=[
        MetricHandler(est.train_metrics), GradientUpdateHandler(), StoppingHandler(),
        ValidationHandler(val, est.evaluate),
        LoggingHandler(log_interval=2, metrics_file=metrics),
        CheckpointHandler(str(tmp_path / 'ckpt'), monitor=est.val_metrics[0], save_best=True),
        EarlyStoppingHandler(est.val_metrics[0], patience=10)])
    png = str(tmp_path / 'estimator.png')
    panels = render(read_records([metrics]), png)
    accuracy = _panel(panels, 'accuracy', 'epoch')
    assert set(accuracy['lines']) == {'rank 0 training accuracy', 'rank 0 validation accuracy'}
    assert set(_panel(panels, 'loss', 'time')['lines']) == {
        'rank 0 training softmaxcrossentropyloss', 'rank 0 validation softmaxcrossentropyloss'}
    for panel in panels:
        assert _pixels(png, panel, COLOURS[0]) > 40, panel
        assert _pixels(png, panel, COLOURS[1]) == 0


def test_without_matplotlib_the_message_says_what_to_install(tmp_path):
    path = tmp_path / 'm.jsonl'
    path.write_text(json.dumps({'kind': 'epoch', 'epoch': 0, 'Test_acc': 0.5}) + '\n')
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from minigluon.plot import main\n"
            "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, '-c', code, str(path), '-o',
                           str(tmp_path / 'x.png')], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert "pip install 'minigluon[plot]'" in proc.stderr
    assert not (tmp_path / 'x.png').exists()


def test_a_file_without_metrics_is_a_clear_error(tmp_path):
    _need_matplotlib()
    path = tmp_path / 'empty.log'
    path.write_text('nothing to see\n')
    proc = subprocess.run([sys.executable, '-m', 'minigluon.plot', str(path)],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path))
    assert proc.returncode == 1 and 'no metrics found in' in proc.stderr
    assert not (tmp_path / 'curves.png').exists()
