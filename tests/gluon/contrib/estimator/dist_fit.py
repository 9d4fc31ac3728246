"""One worker of test_estimator_dist.py's job: an unchanged Estimator fit with a dist_sync
Trainer. Checkpoints go to OUT/rank<r> (so the test sees who wrote), metrics to
OUT/metrics.jsonl; the worker of rank 1 alone asks to stop after two epochs.

    python tools/launch.py -n 2 -s 1 --launcher local python dist_fit.py OUT
"""
import os
import sys

import minigluon as mx
from minigluon import gluon, kv
from minigluon.gluon.contrib.estimator import (CheckpointHandler, EarlyStoppingHandler,
                                               EpochEnd, Estimator, LoggingHandler)

from estimator_problems import blob_dataset, blobs, mlp


class StopOnRankOne(EpochEnd):
    """Votes to stop after ``epochs`` epochs, on the worker of rank 1 only."""

    def __init__(self, rank, epochs):
        self.rank, self.epochs, self.seen = rank, epochs, 0

    def epoch_end(self, estimator, *args, **kwargs):
        self.seen += 1
        return self.rank == 1 and self.seen == self.epochs


def main(out):
    store = kv.create('dist_sync')
    mx.random.seed(0)
    train = blob_dataset(samples=64)
    sampler = gluon.data.SplitSampler(len(train), store.num_workers, store.rank)
    train_data = gluon.data.DataLoader(train, batch_size=8, sampler=sampler)
    net = mlp()
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1}, kvstore=store)
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    handlers = [
        CheckpointHandler(os.path.join(out, 'rank%d' % store.rank), monitor=est.val_metrics[0],
                          save_best=True, max_checkpoints=3),
        EarlyStoppingHandler(est.val_metrics[0], patience=5),
        LoggingHandler(log_interval=2, metrics_file=os.path.join(out, 'metrics.jsonl')),
        StopOnRankOne(store.rank, 2)]
    est.fit(train_data, val_data=blobs(samples=32, seed=1), epochs=5, event_handlers=handlers)
    total = sum(float(p.data().sum().asscalar()) for p in net.collect_params().values())
    print('parameter sum %.6f' % total, flush=True)
    store.close()


if __name__ == '__main__':
    main(sys.argv[1])
