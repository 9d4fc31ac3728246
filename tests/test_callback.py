"""mx.callback: MXNet 1.x's log lines, word for word, and the checkpoint callbacks."""
import logging
import re

import numpy as np

import minigluon as mx
from minigluon import nd
from minigluon.model import BatchEndParam
from minigluon.module import Module


def _accuracy(right, total):
    """An Accuracy metric that has seen ``right`` of ``total`` samples right."""
    acc = mx.metric.Accuracy()
    labels = np.zeros(total, np.float32)
    preds = np.zeros((total, 2), np.float32)
    preds[np.arange(total) >= right, 1] = 1
    acc.update([nd.array(labels)], [nd.array(preds)])
    return acc


def _messages(caplog):
    return [r.getMessage() for r in caplog.records]


def test_speedometer_logs_mxnets_line(caplog):
    caplog.set_level(logging.INFO)
    speed = mx.callback.Speedometer(batch_size=4, frequent=2)
    metric = _accuracy(1, 4)
    for nbatch in range(5):
        speed(BatchEndParam(epoch=3, nbatch=nbatch, eval_metric=metric, locals=None))
    lines = _messages(caplog)
    assert len(lines) == 2
    assert re.fullmatch(r'Epoch\[3\] Batch \[0-2\]\tSpeed: \d+\.\d\d samples/sec'
                        r'\taccuracy=0\.250000', lines[0]), lines[0]
    # auto_reset: the metric's local state was reset after the first line
    assert re.fullmatch(r'Epoch\[3\] Batch \[2-4\]\tSpeed: \d+\.\d\d samples/sec'
                        r'\taccuracy=nan', lines[1]), lines[1]


def test_speedometer_without_reset_or_metric(caplog):
    caplog.set_level(logging.INFO)
    speed = mx.callback.Speedometer(2, frequent=1, auto_reset=False)
    metric = _accuracy(3, 4)
    speed(BatchEndParam(0, 0, metric, None))
    speed(BatchEndParam(0, 1, metric, None))
    bare = mx.callback.Speedometer(2, frequent=1)
    bare(BatchEndParam(1, 0, None, None))
    bare(BatchEndParam(1, 1, None, None))
    first, second = _messages(caplog)
    assert re.fullmatch(r'Epoch\[0\] Batch \[0-1\]\tSpeed: \d+\.\d\d samples/sec'
                        r'\taccuracy=0\.750000', first), first
    assert re.fullmatch(r'Iter\[1\] Batch \[1\]\tSpeed: \d+\.\d\d samples/sec', second), second


def test_metric_and_progress_lines(caplog):
    caplog.set_level(logging.INFO)
    metric = _accuracy(1, 2)
    mx.callback.log_train_metric(2)(BatchEndParam(1, 4, metric, None))
    mx.callback.log_train_metric(2)(BatchEndParam(1, 5, metric, None))  # not a 2nd batch
    mx.callback.LogValidationMetricsCallback()(BatchEndParam(2, 0, metric, None))
    mx.callback.ProgressBar(total=4, length=8)(BatchEndParam(0, 1, None, None))
    assert _messages(caplog) == ['Iter[1] Batch[4] Train-accuracy=0.500000',
                                 'Epoch[2] Validation-accuracy=0.500000',
                                 '[==------] 25%\r']


def test_do_checkpoint_every_period(tmp_path):
    sym = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
    args = {'fc_weight': nd.ones((2, 3)), 'fc_bias': nd.zeros((2,))}
    save = mx.callback.do_checkpoint(str(tmp_path / 'net'), period=2)
    for epoch in range(4):
        save(epoch, sym, args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ['net-0002.params', 'net-0004.params',
                                                          'net-symbol.json']
    _, loaded, _ = mx.model.load_checkpoint(str(tmp_path / 'net'), 4)
    np.testing.assert_array_equal(loaded['fc_weight'].asnumpy(), np.ones((2, 3)))


def test_module_checkpoint(tmp_path):
    mod = Module(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc'),
                 label_names=None)
    mod.bind(data_shapes=[('data', (1, 3))])
    mod.init_params()
    save = mx.callback.module_checkpoint(mod, str(tmp_path / 'mod'), period=2)
    save(0)
    save(1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['mod-0002.params', 'mod-symbol.json']
