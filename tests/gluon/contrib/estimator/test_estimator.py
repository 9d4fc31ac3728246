"""The Estimator, after MXNet 1.x's test_gluon_estimator.py and test_gluon_batch_processor.py:
arguments checked as MXNet checks them, default metrics and handlers, and real training."""
import warnings

import pytest

import minigluon as mx
from minigluon import gluon, nd
from minigluon.gluon.contrib.estimator import (BatchBegin, BatchEnd, BatchProcessor,
                                               EarlyStoppingHandler, EpochBegin, Estimator,
                                               GradientUpdateHandler, LoggingHandler,
                                               MetricHandler, TrainBegin, TrainEnd,
                                               ValidationHandler)

from estimator_problems import blobs, mlp, regression_data, regression_net


def _sgd(net, lr=0.001):
    return gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': lr})


def test_fit_takes_only_a_data_loader():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=mx.metric.Accuracy(),
                    trainer=_sgd(net), context=mx.cpu())
    est.fit(train_data=regression_data(), epochs=1)
    with pytest.raises(ValueError, match='DataLoader'):
        est.fit(train_data=[nd.ones((10, 3))], epochs=1)
    with pytest.raises(ValueError, match='exactly one of epochs and batches'):
        est.fit(train_data=regression_data(), epochs=1, batches=2)
    with pytest.raises(ValueError, match='exactly one of epochs and batches'):
        est.fit(train_data=regression_data())


def test_fit_trains_a_classifier_and_evaluate_scores_it():
    net = mlp()
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 0.05})
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), initializer=mx.init.Xavier(),
                    trainer=trainer, context=mx.cpu())
    data = blobs(shuffle=True)
    est.evaluate(blobs())
    before = est.val_metrics[0].get()[1]
    est.fit(data, epochs=3)
    est.evaluate(blobs())
    assert [m.name for m in est.train_metrics] == ['training accuracy',
                                                    'training softmaxcrossentropyloss']
    assert [m.name for m in est.val_metrics] == ['validation accuracy',
                                                  'validation softmaxcrossentropyloss']
    assert est.train_metrics[0].get()[1] > 0.9
    assert est.val_metrics[0].get()[1] > 0.9 > before + 0.2
    assert est.val_metrics[1].get()[1] < 0.5


def test_validation_data_and_validation_loss():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=mx.metric.Accuracy(),
                    trainer=_sgd(net), context=mx.cpu(), val_loss=gluon.loss.L1Loss())
    est.fit(train_data=regression_data(), val_data=regression_data(), epochs=1)
    assert isinstance(est.val_loss, gluon.loss.L1Loss)
    assert est.val_metrics[0].num_inst > 0            # validation ran
    with pytest.raises(ValueError, match='DataLoader'):
        est.fit(train_data=[nd.ones((10, 3))], val_data=[nd.ones((10, 3))], epochs=1)
    with pytest.raises(ValueError, match='DataLoader'):
        est.evaluate([nd.ones((10, 3))])


@pytest.mark.filterwarnings('ignore:No trainer specified')
def test_initializer():
    net = regression_net()
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=mx.metric.Accuracy(),
                    context=mx.cpu())
    est.fit(train_data=regression_data(), epochs=1)      # initialized by the Estimator
    net = regression_net()
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        Estimator(net=net, loss=gluon.loss.L2Loss(), initializer=mx.init.MSRAPrelu(),
                  trainer=_sgd(net), context=mx.cpu())
    assert 'Network already fully initialized' in str(caught[-1].message)


def test_a_partly_initialized_network_gets_its_new_layer_initialized():
    # fine-tuning: a trained body, a new output layer
    net = mlp()
    net.initialize(ctx=mx.cpu())
    net(nd.ones((1, 10)))
    body = net[0].weight.data().asnumpy().copy()
    new = gluon.nn.Sequential()
    new.add(net[0], gluon.nn.Dense(5))
    with warnings.catch_warnings():
        warnings.simplefilter('error')    # the trained layer is left alone, silently
        est = Estimator(new, loss=gluon.loss.SoftmaxCrossEntropyLoss(), context=mx.cpu(),
                        trainer=_sgd(new, 0.1))
    est.fit(blobs(), epochs=1)
    assert new[1].weight.shape == (5, 16)
    assert (net[0].weight.data().asnumpy() != body).any()   # the body trains on


def test_trainer():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        est = Estimator(net=net, loss=gluon.loss.L2Loss(), context=mx.cpu())
    assert 'No trainer specified' in str(caught[-1].message)
    assert est.trainer.learning_rate == 0.001
    est.fit(train_data=regression_data(), epochs=1)
    with pytest.raises(ValueError, match='Trainer'):
        Estimator(net=net, loss=gluon.loss.L2Loss(), trainer='sgd', context=mx.cpu())


def test_metric():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    trainer = _sgd(net)
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), trainer=trainer, context=mx.cpu())
    est.fit(train_data=regression_data(), epochs=1)
    assert [m.name for m in est.train_metrics] == ['training l2loss']   # the loss, tracked
    assert isinstance(est.train_metrics[0], mx.metric.Loss)
    metrics = [mx.metric.Accuracy(), mx.metric.Accuracy()]
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=metrics, trainer=trainer,
                    context=mx.cpu())
    est.fit(train_data=regression_data(), epochs=1)
    assert est.train_metrics == metrics and len(est.val_metrics) == 2
    composite = mx.metric.CompositeEvalMetric([mx.metric.MAE(), mx.metric.MSE()])
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=composite,
                    trainer=trainer, context=mx.cpu())
    assert [m.name for m in est.train_metrics] == ['training mae', 'training mse']
    with pytest.raises(ValueError, match='EvalMetric'):
        Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics='acc', trainer=trainer,
                  context=mx.cpu())
    est = Estimator(net=net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer,
                    context=mx.cpu())
    assert isinstance(est.train_metrics[0], mx.metric.Accuracy)


def test_loss():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    with pytest.raises(ValueError, match='gluon.loss.Loss'):
        Estimator(net=net, loss='mse', trainer=_sgd(net), context=mx.cpu())


@pytest.mark.filterwarnings('ignore:No trainer specified')
def test_context():
    est = Estimator(net=regression_net(), loss=gluon.loss.L2Loss())
    assert est.context == ([mx.gpu(0)] if mx.num_gpus() else [mx.cpu()])
    est = Estimator(net=regression_net(), loss=gluon.loss.L2Loss(),
                    context=[mx.cpu(0), mx.cpu(1)])
    assert est.context == [mx.cpu(0), mx.cpu(1)]
    with pytest.raises(ValueError, match='Context'):
        Estimator(net=regression_net(), loss=gluon.loss.L2Loss(), context='cpu')
    # MXNet asserts; minigluon says which device is missing
    with pytest.raises(ValueError, match=r'gpu\(100\) is not available'):
        Estimator(net=regression_net(), loss=gluon.loss.L2Loss(),
                  context=[mx.cpu(), mx.gpu(100)])


def test_two_devices_train_the_same_model_as_one():
    nets = []
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        mx.random.seed(3)
        net = mlp()
        est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), context=ctx,
                        initializer=mx.init.Xavier(), trainer=_sgd(net, 0.1))
        est.fit(blobs(), epochs=2)
        nets.append(net)
    for a, b in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        assert abs(a.data(mx.cpu(0)).asnumpy() - b.data(mx.cpu(0)).asnumpy()).max() < 1e-5
        assert (b.data(mx.cpu(1)).asnumpy() == b.data(mx.cpu(0)).asnumpy()).all()


@pytest.mark.filterwarnings('ignore:No trainer specified')
def test_categorize_handlers():
    class CustomHandler1(TrainBegin):
        def train_begin(self, estimator, *args, **kwargs):
            pass

    class CustomHandler2(EpochBegin, BatchBegin, TrainEnd):
        pass

    class CustomHandler3(EpochBegin, BatchBegin, BatchEnd, TrainEnd):
        pass

    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(10))
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss())
    train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
        est._categorize_handlers([CustomHandler1(), CustomHandler2(), CustomHandler3()])
    assert [len(train_begin), len(epoch_begin), len(batch_begin), len(batch_end),
            len(epoch_end), len(train_end)] == [1, 2, 2, 1, 0, 2]


def test_default_handlers():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    train_acc = mx.metric.RMSE()
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=train_acc,
                    trainer=_sgd(net), context=mx.cpu())
    with warnings.catch_warnings():
        warnings.simplefilter('error')          # all defaults: no warning
        est.fit(train_data=regression_data(), epochs=1)
    # mixing default handlers and a handler with the Estimator's metrics
    est.fit(train_data=regression_data(), epochs=1,
            event_handlers=[LoggingHandler(metrics=est.train_metrics)])
    # handlers with the metric objects the user created (the same objects)
    est.fit(train_data=regression_data(), epochs=1,
            event_handlers=[MetricHandler(metrics=[train_acc]),
                            LoggingHandler(metrics=[train_acc])])
    # a handler with a metric the Estimator does not know
    with pytest.raises(ValueError, match='LoggingHandler.metrics'):
        est.fit(train_data=regression_data(), epochs=1,
                event_handlers=[LoggingHandler(metrics=[mx.metric.RMSE('val acc')])])
    early_stopping = EarlyStoppingHandler(monitor=est.val_metrics[0])
    handlers = est._prepare_default_handlers(val_data=None, event_handlers=[early_stopping])
    assert len(handlers) == 5
    assert isinstance(handlers[0], GradientUpdateHandler)
    assert isinstance(handlers[1], MetricHandler)
    assert isinstance(handlers[4], LoggingHandler)
    handlers = est._prepare_default_handlers(val_data=regression_data(), event_handlers=None)
    assert sum(isinstance(h, ValidationHandler) for h in handlers) == 1


def test_val_net_shares_the_trained_parameters():
    net = regression_net()
    val_net = regression_net()
    net.initialize(ctx=mx.cpu())
    val_net.share_parameters(net.collect_params())
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), trainer=_sgd(net, 0.1),
                    context=mx.cpu(), val_net=val_net)
    est.fit(train_data=regression_data(), val_data=regression_data(), epochs=2)
    x = nd.random.uniform(shape=(2, 3))
    assert (val_net(x).asnumpy() == net(x).asnumpy()).all()
    # a validation network with parameters of its own, never initialized, fails loudly
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), trainer=_sgd(net), context=mx.cpu(),
                    val_net=regression_net())
    with pytest.raises(RuntimeError, match='not been initialized'):
        est.fit(train_data=regression_data(), val_data=regression_data(), epochs=1)


def test_val_handlers(capsys):
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), train_metrics=mx.metric.RMSE(),
                    trainer=_sgd(net), context=mx.cpu())
    est.fit(train_data=regression_data(), epochs=1)
    est.evaluate(val_data=regression_data())
    capsys.readouterr()
    est.evaluate(val_data=regression_data(), event_handlers=[
        LoggingHandler(log_interval=1, metrics=est.val_metrics)])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'Validation Begin'
    assert [line.split(' time/')[0] for line in out[1:4]] == [
        '[Validation][Batch 0][Samples 4]', '[Validation][Batch 1][Samples 8]',
        '[Validation][Batch 2][Samples 10]']
    assert out[4].startswith('Validation finished in ') and 'validation rmse: ' in out[4]


class CountingProcessor(BatchProcessor):
    """A custom batch processor: the default work, counted."""

    def __init__(self):
        self.fitted = self.evaluated = 0

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        self.fitted += 1
        return super().fit_batch(estimator, train_batch, batch_axis)

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        self.evaluated += 1
        return super().evaluate_batch(estimator, val_batch, batch_axis)


def test_batch_processor():
    net = regression_net()
    net.initialize(ctx=mx.cpu())
    processor = CountingProcessor()
    est = Estimator(net=net, loss=gluon.loss.L2Loss(), trainer=_sgd(net), context=mx.cpu(),
                    batch_processor=processor)
    est.fit(train_data=regression_data(), val_data=regression_data(), epochs=2)
    assert (processor.fitted, processor.evaluated) == (6, 6)   # 3 batches, 2 epochs
    with pytest.raises(ValueError, match='DataLoader'):
        est.fit(train_data=[nd.ones((10, 3))], epochs=1)
    with pytest.raises(ValueError, match='fit_batch'):
        Estimator(net=net, loss=gluon.loss.L2Loss(), trainer=_sgd(net), context=mx.cpu(),
                  batch_processor=object())
