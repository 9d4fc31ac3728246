"""Event handlers, after MXNet 1.x's test_gluon_event_handler.py, plus what minigluon adds:
best and last-N checkpoints, resuming, progress lines by time, the metrics file."""
import json
import logging
import os
import re

import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon, nd
from minigluon.gluon.contrib.estimator import (BatchBegin, BatchEnd, CheckpointHandler,
                                               EarlyStoppingHandler, EpochBegin, EpochEnd,
                                               Estimator, GradientUpdateHandler, LoggingHandler,
                                               StoppingHandler, TrainBegin, TrainEnd,
                                               ValidationHandler)

from estimator_problems import blobs, mlp


def _network(net=None):
    """MXNet's handler-test network: 100 inputs, 10 classes."""
    net = gluon.nn.Sequential() if net is None else net
    net.add(gluon.nn.Dense(128, activation='relu', flatten=False),
            gluon.nn.Dense(64, activation='relu'), gluon.nn.Dense(10, activation='relu'))
    return net


def _data(samples=32):
    """Ones to class 0, 8 per batch (MXNet's handler-test data)."""
    dataset = gluon.data.ArrayDataset(nd.ones((samples, 100)), nd.zeros((samples, 1)))
    return gluon.data.DataLoader(dataset, batch_size=8)


def _estimator(net=None, metric=None, lr=0.001):
    net = _network() if net is None else net
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})
    return Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                     train_metrics=metric or mx.metric.Accuracy(), trainer=trainer)


class Scripted(mx.metric.EvalMetric):
    """A metric whose value in epoch i is values[i], whatever the batches say."""

    def __init__(self, values, name='acc'):
        self.values, self.epoch = values, -2
        super().__init__(name)

    def reset(self):
        self.epoch += 1

    def update(self, labels, preds):
        pass

    def get(self):
        return self.name, self.values[min(max(self.epoch, 0), len(self.values) - 1)]


def test_checkpoint_handler(tmp_path):
    acc = mx.metric.Accuracy()
    est = _estimator(metric=acc)
    handler = CheckpointHandler(model_dir=str(tmp_path), model_prefix='test_epoch', monitor=acc,
                                save_best=True, epoch_period=1)
    est.fit(_data(), event_handlers=[handler], epochs=1)
    assert (handler.current_epoch, handler.current_batch) == (1, 4)
    assert sorted(os.listdir(str(tmp_path))) == [
        'test_epoch-best.params', 'test_epoch-best.states', 'test_epoch-epoch0batch4.params',
        'test_epoch-epoch0batch4.states']

    net = _network(gluon.nn.HybridSequential())
    net.hybridize()
    est = _estimator(net)
    handler = CheckpointHandler(model_dir=str(tmp_path), model_prefix='test_batch',
                                epoch_period=None, batch_period=2, max_checkpoints=2)
    est.fit(_data(), event_handlers=[handler], batches=10)
    assert (handler.current_epoch, handler.current_batch) == (3, 10)
    saved = sorted(n for n in os.listdir(str(tmp_path)) if n.startswith('test_batch'))
    # the last two of the five saved (batches 1, 3, 5, 7, 9), and the hybridized graph
    assert saved == ['test_batch-epoch1batch7.params', 'test_batch-epoch1batch7.states',
                     'test_batch-epoch2batch9.params', 'test_batch-epoch2batch9.states',
                     'test_batch-symbol.json']
    graph = mx.sym.load(str(tmp_path / 'test_batch-symbol.json'))
    assert graph.list_arguments() == ['data'] + list(net.collect_params())


def test_the_best_checkpoint_is_the_epoch_with_the_best_monitored_value(tmp_path):
    monitor = Scripted([0.5, 0.7, 0.6])
    est = _estimator(metric=monitor)
    handler = CheckpointHandler(str(tmp_path), monitor=monitor, save_best=True, mode='max',
                                max_checkpoints=3)
    est.fit(_data(), event_handlers=[handler], epochs=3)
    files = {n: (tmp_path / n).read_bytes() for n in os.listdir(str(tmp_path))}
    assert files['model-best.params'] == files['model-epoch1batch8.params']
    assert files['model-best.params'] != files['model-epoch2batch12.params']
    assert handler.best == 0.7
    monitor = Scripted([0.5, 0.7, 0.6], name='loss')   # 'auto': a loss improves downwards
    handler = CheckpointHandler(str(tmp_path / 'min'), monitor=monitor, save_best=True)
    _estimator(metric=monitor).fit(_data(), event_handlers=[handler], epochs=3)
    assert handler.best == 0.5
    with pytest.raises(ValueError, match='monitor'):
        CheckpointHandler(str(tmp_path), save_best=True)


class WeightsAtTrainBegin(TrainBegin):
    """Records the first layer's weights once every other train_begin has run."""
    priority = 10

    def train_begin(self, estimator, *args, **kwargs):
        self.weights = estimator.net[0].weight.data().asnumpy().copy()


def test_resume_checkpoint(tmp_path):
    prefix = os.path.join(str(tmp_path), 'test_net')
    acc = mx.metric.Accuracy()
    est = _estimator(metric=acc)
    est.fit(_data(), epochs=2, event_handlers=[
        CheckpointHandler(str(tmp_path), model_prefix='test_net', monitor=acc,
                          max_checkpoints=1)])
    assert sorted(os.listdir(str(tmp_path))) == ['test_net-epoch1batch8.params',
                                                 'test_net-epoch1batch8.states']
    saved = gluon.nn.Sequential()
    _network(saved).load_parameters(prefix + '-epoch1batch8.params')
    est.net[0].weight.set_data(nd.zeros(est.net[0].weight.shape))   # lost, to be restored
    seen = WeightsAtTrainBegin()
    est.fit(_data(), epochs=5, event_handlers=[
        seen, CheckpointHandler(str(tmp_path), model_prefix='test_net', monitor=acc,
                                max_checkpoints=1, resume_from_checkpoint=True)])
    assert est.max_epoch == 3                          # epochs 2, 3 and 4 remained
    assert (seen.weights == saved[0].weight.data().asnumpy()).all()
    assert sorted(os.listdir(str(tmp_path))) == ['test_net-epoch4batch20.params',
                                                 'test_net-epoch4batch20.states']
    with pytest.raises(ValueError, match='already reached the 5 epochs'):
        est.fit(_data(), epochs=5, event_handlers=[
            CheckpointHandler(str(tmp_path), model_prefix='test_net',
                              resume_from_checkpoint=True)])


def test_resume_by_batches_and_from_nothing(tmp_path):
    est = _estimator()
    handler = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=3,
                                resume_from_checkpoint=True)
    est.fit(_data(), batches=6, event_handlers=[handler])     # nothing to resume: from scratch
    assert sorted(os.listdir(str(tmp_path)))[::2] == ['model-epoch0batch2.params',
                                                      'model-epoch1batch5.params']
    handler = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=3,
                                resume_from_checkpoint=True)
    est.fit(_data(), batches=10, event_handlers=[handler])
    assert est.max_batch == 4 and handler.current_batch == 4
    # the loader starts a new epoch: batches 6-9 are epoch 2's (MXNet numbers them so)
    assert 'model-epoch2batch8.params' in os.listdir(str(tmp_path))
    with pytest.raises(ValueError, match='save by batches only'):
        est.fit(_data(), batches=20, event_handlers=[
            CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])


def test_early_stopping():
    acc = mx.metric.Accuracy()
    est = _estimator(metric=acc)
    early_stopping = EarlyStoppingHandler(monitor=acc, patience=0, mode='min')
    est.fit(_data(), event_handlers=[early_stopping], epochs=5)
    assert (early_stopping.current_epoch, early_stopping.stopped_epoch) == (2, 1)
    early_stopping = EarlyStoppingHandler(monitor=acc, patience=2, mode='auto')
    est.fit(_data(), event_handlers=[early_stopping], epochs=1)
    assert early_stopping.current_epoch == 1


def test_early_stopping_waits_patience_epochs_for_min_delta():
    monitor = Scripted([0.50, 0.60, 0.605, 0.61, 0.9, 0.95])
    est = _estimator(metric=monitor)
    handler = EarlyStoppingHandler(monitor, min_delta=0.02, patience=2)
    est.fit(_data(), event_handlers=[handler], epochs=6)
    # 0.605 and 0.61 are less than 0.02 better than 0.60: two epochs without improvement
    assert (handler.current_epoch, handler.stopped_epoch, handler.best) == (4, 3, 0.60)
    handler = EarlyStoppingHandler(monitor, baseline=0.99, patience=1)   # never reached
    est.fit(_data(), event_handlers=[handler], epochs=6)
    assert handler.current_epoch == 1
    with pytest.raises(ValueError, match='Composite'):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric([mx.metric.Accuracy()]))


def test_logging(tmp_path):
    output = str(tmp_path / 'test_log')
    est = _estimator()
    est.logger.addHandler(logging.FileHandler(output))
    handler = LoggingHandler(metrics=est.train_metrics)
    est.fit(_data(), event_handlers=[handler], epochs=3)
    assert handler.batch_index == 0 and handler.current_epoch == 3
    with open(output) as f:
        text = f.read()
    assert 'Training begin: using optimizer SGD with current learning rate 0.0010' in text
    assert '[Epoch 2] Finished in' in text and 'Train finished using total' in text
    for h in est.logger.handlers:
        h.close()


def test_custom_handler():
    class CustomStopHandler(TrainBegin, BatchEnd, EpochEnd):
        def __init__(self, batch_stop=None, epoch_stop=None):
            self.batch_stop, self.epoch_stop = batch_stop, epoch_stop
            self.num_batch = self.num_epoch = 0
            self.stop_training = False

        def train_begin(self, estimator, *args, **kwargs):
            self.num_batch = self.num_epoch = 0

        def batch_end(self, estimator, *args, **kwargs):
            self.num_batch += 1
            self.stop_training = self.stop_training or self.num_batch == self.batch_stop
            return self.stop_training

        def epoch_end(self, estimator, *args, **kwargs):
            self.num_epoch += 1
            self.stop_training = self.stop_training or self.num_epoch == self.epoch_stop
            return self.stop_training

    est = _estimator()   # 32 samples, 8 per batch: 4 batches an epoch
    handler = CustomStopHandler(3, 2)
    est.fit(_data(), event_handlers=[handler], epochs=3)
    assert (handler.num_batch, handler.num_epoch) == (3, 1)
    handler = CustomStopHandler(100, 5)
    est.fit(_data(), event_handlers=[handler], epochs=10)
    assert (handler.num_batch, handler.num_epoch) == (20, 5)


def _batch_lines(text):
    return [line for line in text.splitlines() if re.match(
        r'\[Epoch \d+\]\[Batch \d+\]\[Samples \d+\] time/interval: \d+\.\d+s '
        r'training accuracy: \d+\.\d+, speed: [\d.]+ samples/s, ETA: \d+:\d\d$', line)]


@pytest.mark.parametrize('log_interval, expected', [(1, 13), (5, 3)])
def test_logging_interval(monkeypatch, capsys, log_interval, expected):
    acc = mx.metric.Accuracy()
    handler = LoggingHandler(metrics=[acc], log_interval=log_interval)
    est = _estimator(metric=acc)
    est.fit(train_data=_data(100), epochs=1, event_handlers=[handler])
    lines = _batch_lines(capsys.readouterr().out)
    assert len(lines) == expected == int(100 / 8 / log_interval) + 1
    assert lines[-1].startswith('[Epoch 0][Batch 12][Samples 100]' if log_interval == 1 else
                                '[Epoch 0][Batch 10][Samples 88]')


def test_progress_lines_come_by_time_whatever_the_interval(capsys):
    acc = mx.metric.Accuracy()
    handler = LoggingHandler(metrics=[acc], progress_interval=1e-9)   # 'epoch' interval
    _estimator(metric=acc).fit(train_data=_data(100), epochs=1, event_handlers=[handler])
    lines = _batch_lines(capsys.readouterr().out)
    assert len(lines) == 13 and lines[-1].endswith('ETA: 0:00')


def test_validation_handler_batch_axis():
    est = _estimator()
    est.fit(_data(), epochs=3)

    class Columns(gluon.data.Dataset):
        """Samples along axis 1."""

        def __init__(self, data, label):
            self.data, self.label = data, label

        def __getitem__(self, idx):
            return self.data[:, idx], self.label[:, idx]

        def __len__(self):
            return self.label.shape[1]

    def columns(n):
        return gluon.data.DataLoader(Columns(nd.ones((100, n)), nd.zeros((1, n))), batch_size=8)

    est = Estimator(est.net, loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                    train_metrics=mx.metric.Accuracy(), trainer=est.trainer)
    est.fit(columns(32), val_data=columns(30), epochs=3, batch_axis=1)
    assert est.val_metrics[0].num_inst == 30


def test_validation_handler():
    class TestHandler(EpochEnd):
        def epoch_end(self, estimator, *args, **kwargs):
            estimator.run_test_handler = True

    est = _estimator()
    handler = ValidationHandler(val_data=_data(), eval_fn=est.evaluate,
                                event_handlers=TestHandler())
    est.fit(train_data=_data(), val_data=_data(), event_handlers=[handler], epochs=2)
    assert est.run_test_handler is True

    calls = []
    handler = ValidationHandler(val_data=_data(), batch_period=3, epoch_period=2,
                                eval_fn=lambda **kw: calls.append(kw['batch_axis']))
    est.fit(train_data=_data(), event_handlers=[handler], epochs=2)
    assert len(calls) == 2 + 1   # after batches 3 and 6, and after the second epoch


def test_events_come_in_order_and_handlers_by_priority():
    seen = []

    class Every(TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd):
        def __init__(self, name, priority):
            self.name, self.priority = name, priority

        def train_begin(self, estimator, *args, **kwargs):
            seen.append((self.name, 'train_begin'))

        def epoch_begin(self, estimator, *args, **kwargs):
            seen.append((self.name, 'epoch_begin'))

        def batch_begin(self, estimator, *args, **kwargs):
            seen.append((self.name, 'batch_begin'))

        def batch_end(self, estimator, *args, **kwargs):
            seen.append((self.name, 'batch_end'))

        def epoch_end(self, estimator, *args, **kwargs):
            seen.append((self.name, 'epoch_end'))

        def train_end(self, estimator, *args, **kwargs):
            seen.append((self.name, 'train_end'))

    _estimator().fit(_data(16), epochs=1, event_handlers=[Every('late', 5), Every('early', -5)])
    events = [e for n, e in seen if n == 'early']
    assert events == ['train_begin', 'epoch_begin', 'batch_begin', 'batch_end', 'batch_begin',
                      'batch_end', 'epoch_end', 'train_end']
    assert [n for n, _ in seen[:2]] == ['early', 'late']


def test_a_given_gradient_update_handler_replaces_the_default():
    class Counting(GradientUpdateHandler):
        steps = 0

        def batch_end(self, estimator, *args, **kwargs):
            Counting.steps += 1
            return super().batch_end(estimator, *args, **kwargs)

    est = _estimator()
    est.net(nd.ones((1, 100)))
    before = est.net[0].weight.data().asnumpy().copy()
    handlers = est._prepare_default_handlers(None, [Counting()])
    assert sum(isinstance(h, GradientUpdateHandler) for h in handlers) == 1
    est.fit(_data(), epochs=1, event_handlers=[Counting()])
    assert Counting.steps == 4 and (est.net[0].weight.data().asnumpy() != before).any()


def test_stopping_handler_counts_batches_over_epochs():
    est = _estimator()
    handler = StoppingHandler()
    est.fit(_data(), batches=6, event_handlers=[handler])
    assert (handler.current_batch, handler.current_epoch) == (6, 2)


def test_metrics_file_has_progress_and_epochs_with_validation(tmp_path):
    net = mlp()
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.05})
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer,
                    initializer=mx.init.Xavier())
    path = str(tmp_path / 'run' / 'metrics-{rank}.jsonl')
    handler = LoggingHandler(log_interval=4, metrics_file=path)
    est.fit(blobs(shuffle=True), val_data=blobs(seed=1), epochs=2, event_handlers=[handler])
    with open(str(tmp_path / 'run' / 'metrics-0.jsonl')) as f:
        records = [json.loads(line) for line in f]
    assert [(r['kind'], r['epoch'], r['batch']) for r in records] == [
        ('batch', 0, 1), ('batch', 0, 5), ('epoch', 0, 8),
        ('batch', 1, 1), ('batch', 1, 5), ('epoch', 1, 8)]
    assert all(r['rank'] == 0 and r['batches'] == 8 and r['samples_per_sec'] > 0
               for r in records)
    batch, epoch = records[-2], records[-1]
    assert set(batch) >= {'training accuracy', 'training softmaxcrossentropyloss'}
    assert 'validation accuracy' not in batch                # not stale values mid-epoch
    assert epoch['validation accuracy'] == est.val_metrics[0].get()[1] > 0.9
    assert epoch['training accuracy'] == est.train_metrics[0].get()[1]
    assert epoch['time'] >= batch['time'] and epoch['samples'] == 64


def test_in_a_terminal_the_estimator_draws_a_bar(monkeypatch, capsys):
    pytest.importorskip('tqdm', reason='tqdm is not installed (minigluon[progress])')
    est = _estimator()
    handler = LoggingHandler(log_interval=1, metrics=est.train_metrics, bar=True)
    est.fit(_data(), epochs=1, event_handlers=[handler])
    out = capsys.readouterr().out
    assert '4/4' in out and 'training accuracy=' in out
    assert '[Epoch 0][Batch' not in out    # the bar shows the progress instead
    assert '[Epoch 0] Finished in' in out


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="integer or 'epoch'"):
        LoggingHandler(log_interval='batch')
    with pytest.raises(ValueError, match='EarlyStoppingHandler needs monitor'):
        EarlyStoppingHandler(monitor='accuracy')
    with pytest.raises(ValueError, match='event_handlers'):
        _estimator().fit(_data(), epochs=1, event_handlers=['logging'])
    with pytest.warns(RuntimeWarning, match='unknown'):
        EarlyStoppingHandler(mx.metric.Accuracy(), mode='best')
    assert np.isinf(LoggingHandler().priority)
