"""Distributed training of ResNet18 on CIFAR-10: the Gluon tutorial's program.

On one machine, two workers and one parameter server:

    python tools/launch.py -n 2 -s 1 --launcher local \\
        python examples/cifar10_dist.py --synthetic 4000 --num-epochs 3

On a cluster (one worker and one server per host listed in ``hosts``):

    python tools/launch.py -n 2 -s 2 -H hosts --launcher ssh --sync-dst-dir ~/cifar10_dist \\
        python examples/cifar10_dist.py

Alone (no launcher), pass ``--kvstore local``. Each worker trains on its own equal
part of the training set (SplitSampler) and every worker reports the same test
accuracy each epoch, in the tutorial's format ``Epoch 0: Test_acc 0.467400``. When the
real CIFAR-10 is absent and cannot be downloaded, a synthetic stand-in in the same
file format is generated (datasets/make_synthetic.py) and the program says so.
``--use-rec`` reads MXNet RecordIO files instead, ``train.rec`` and ``test.rec`` with
their ``.idx`` in ``--data-dir`` (``tools/im2rec.py`` makes them from image folders),
decoded in the DataLoader's workers; each worker still reads only its own part.

While it trains, a progress line comes every ``--log-interval`` batches and at least
every ``--progress-interval`` seconds (speed, accuracy and loss so far, the epoch's
ETA); in a terminal, a bar instead when tqdm is installed. ``--metrics-file FILE``
appends them and every epoch's summary to FILE as JSON lines, which
``python -m minigluon.plot FILE -o curves.png`` draws. ``--checkpoint-dir DIR`` saves the
model and trainer states every epoch (worker 0) and ``--resume`` continues from there.

With ``tools/launch.py --max-restarts N``, a worker that dies is started again and
carries on at the epoch and batch where the job is (the servers keep count), so that
every step still gets one gradient from every worker: the order of an epoch's
samples and their random augmentation depend only on the seed, the epoch and the
sample.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import minigluon as mx
from minigluon import autograd, gluon, kv, nd
from minigluon.gluon.data.vision import (CIFAR10, DatasetNotFoundError, ImageRecordDataset,
                                         transforms)
from minigluon.progress import Progress

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description='Train a model-zoo network on CIFAR-10, '
                                            'distributed through a kvstore.')
    p.add_argument('--kvstore', default='dist_sync',
                   help='dist_sync, dist_async, dist_sync_device, local, ... (default dist_sync)')
    p.add_argument('--gpus', default='',
                   help='GPUs per worker: a count ("2") or a list ("0,2"); empty: CPU')
    p.add_argument('--model', default='resnet18_v1', help='any model-zoo name')
    p.add_argument('--num-epochs', type=int, default=5)
    p.add_argument('--batch-size', type=int, default=64, help='per worker, over its devices')
    p.add_argument('--lr', type=float, default=0.05)
    p.add_argument('--optimizer', default='sgd')
    p.add_argument('--wd', type=float, default=1e-4)
    p.add_argument('--momentum', type=float, default=0.9)
    p.add_argument('--data-dir', default=os.path.join(os.environ.get('MINIGLUON_HOME') or
                                                      '~/.minigluon', 'datasets', 'cifar10'))
    p.add_argument('--synthetic', type=int, default=0, metavar='N',
                   help='train on a synthetic set of N images (test: N/5), even if CIFAR-10 '
                        'is present')
    p.add_argument('--use-rec', action='store_true',
                   help='read train.rec and test.rec (MXNet RecordIO, with .idx) from '
                        '--data-dir')
    p.add_argument('--log-interval', type=int, default=20,
                   help='batches between progress lines (0: only by time)')
    p.add_argument('--progress-interval', type=float, default=10.0, metavar='SECONDS',
                   help='longest time between progress lines (default 10)')
    p.add_argument('--metrics-file', metavar='FILE',
                   help='append the progress and every epoch as JSON lines to FILE ({rank} '
                        'in the name: the rank); draw them with python -m minigluon.plot')
    p.add_argument('--checkpoint-dir', help='save parameters and trainer states every epoch')
    p.add_argument('--resume', action='store_true', help='continue from --checkpoint-dir')
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--loader-workers', type=int, default=0,
                   help='DataLoader worker processes per training worker')
    args = p.parse_args(argv)
    if args.resume and not args.checkpoint_dir:
        p.error('--resume needs --checkpoint-dir')
    if args.batch_size < 1 or args.num_epochs < 1:
        p.error('--batch-size and --num-epochs must be positive')
    if args.use_rec and args.synthetic:
        p.error('--use-rec reads --data-dir; it does not go with --synthetic')
    return args


def contexts(gpus):
    if not gpus:
        return [mx.cpu()]
    ids = range(int(gpus)) if gpus.isdigit() else [int(i) for i in gpus.split(',')]
    return [mx.gpu(i) for i in ids]


def synthetic_root(data_dir, size):
    """Generate (once) a synthetic set of ``size`` training images; returns its root."""
    sys.path.insert(0, os.path.join(HERE, '..', 'datasets'))
    import make_synthetic
    root = os.path.join(os.path.expanduser(data_dir), 'synthetic-%d' % size)
    if not os.path.exists(os.path.join(root, make_synthetic.FOLDER, make_synthetic.MARKER)):
        make_synthetic.make_cifar10(root, size, max(size // 5, 10), seed=0)
    return root


def load_data(args):
    """(train, test) data sets: RecordIO files, the real CIFAR-10, else a synthetic
    stand-in."""
    if args.use_rec:
        return tuple(ImageRecordDataset(os.path.join(os.path.expanduser(args.data_dir),
                                                     name + '.rec'))
                     for name in ('train', 'test'))
    if args.synthetic:
        root = synthetic_root(args.data_dir, args.synthetic)  # CIFAR10 says it is synthetic
    else:
        try:
            return CIFAR10(root=args.data_dir, train=True), CIFAR10(root=args.data_dir,
                                                                    train=False)
        except DatasetNotFoundError as exc:
            size = 5000
            print('CIFAR-10 is not in %s and could not be downloaded (%s); training on a '
                  'stand-in of %d images instead, so accuracy figures are not CIFAR-10 results. '
                  'Fetch the real set with `python datasets/get_cifar10.py`.'
                  % (args.data_dir, str(exc).splitlines()[0], size))
            root = synthetic_root(args.data_dir, size)
    return CIFAR10(root=root, train=True), CIFAR10(root=root, train=False)


class Augmented(gluon.data.Dataset):
    """``data`` with ``transform`` applied to its images, whose random draws are seeded
    by (seed, epoch, index): any process makes the same samples, a replacement worker
    or a DataLoader worker process as well."""

    def __init__(self, data, transform, seed, epoch):
        self._data, self._transform, self._seed, self._epoch = data, transform, seed, epoch

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        np.random.seed([self._seed, self._epoch, idx])
        image, label = self._data[idx]
        return self._transform(image), label


def build_net(args, ctx):
    kwargs = {'classes': 10}
    if args.model.startswith('resnet'):
        kwargs['thumbnail'] = True  # the CIFAR stem: one 3x3 convolution, no max-pool
    net = gluon.model_zoo.vision.get_model(args.model, **kwargs)
    net.initialize(mx.init.Xavier(magnitude=2), ctx=ctx)
    return net


def optimizer_params(args):
    params = {'learning_rate': args.lr, 'wd': args.wd}
    if args.optimizer.lower() in ('sgd', 'nag', 'signum'):
        params['momentum'] = args.momentum
    return params


def average_batchnorm_statistics(net, store, ctx):
    """Every worker keeps the same BatchNorm running statistics: their average after
    each step (one allreduce of them all). Every worker evaluates with them, and a
    worker that replaces a dead one takes them from the servers."""
    params = [p for name, p in sorted(net.collect_params().items())
              if name.endswith('running_mean') or name.endswith('running_var')]
    if not params:
        return
    flat = nd.concat(*[p.data(ctx[0]).reshape((-1,)) for p in params], dim=0)
    store.allreduce('bn-stats', flat, average=True)
    start = 0
    for p in params:
        size = p.data(ctx[0]).size
        p.set_data(flat[start:start + size].reshape(p.shape))
        start += size


def evaluate(net, data, ctx, loop=None):
    """Accuracy of ``net`` on ``data``; ``loop`` (a progress Loop) reports while it runs."""
    metric = mx.metric.Accuracy()
    for batch in data:
        xs = gluon.utils.split_and_load(batch[0], ctx, even_split=False)
        ys = gluon.utils.split_and_load(batch[1], ctx, even_split=False)
        metric.update(ys, [net(x) for x in xs])
        if loop is not None:
            loop.update(batch[0].shape[0])
    if loop is not None:
        loop.close()
    return metric.get()[1]


def make_progress(args, rank):
    """Progress lines every --log-interval batches and --progress-interval seconds."""
    return Progress(rank=rank, interval=args.progress_interval,
                    log_interval=args.log_interval or None, metrics_file=args.metrics_file)


def train_epoch(net, train_data, ctx, trainer, loss_fn, loop, store=None):
    """One pass over ``train_data``; returns the training metrics. With a distributed
    ``store``, the BatchNorm running statistics are averaged over the workers every step."""
    metrics = [mx.metric.Accuracy(), mx.metric.Loss()]
    for data, label in train_data:
        xs = gluon.utils.split_and_load(data, ctx, even_split=False)
        ys = gluon.utils.split_and_load(label, ctx, even_split=False)
        with autograd.record():
            outputs = [net(x) for x in xs]
            losses = [loss_fn(out, y) for out, y in zip(outputs, ys)]
        autograd.backward(losses)
        if store is not None:
            average_batchnorm_statistics(net, store, ctx)
        trainer.step(data.shape[0])
        metrics[0].update(ys, outputs)
        metrics[1].update(None, losses)
        loop.update(data.shape[0], metrics)
    loop.close()
    return metrics


def save_checkpoint(folder, net, trainer, epoch):
    os.makedirs(folder, exist_ok=True)
    net.save_parameters(os.path.join(folder, 'model.params'))
    trainer.save_states(os.path.join(folder, 'trainer.states'))
    tmp = os.path.join(folder, '.progress.json.tmp')
    with open(tmp, 'w') as f:
        json.dump({'epoch': epoch}, f)
    os.replace(tmp, os.path.join(folder, 'progress.json'))


def resume(args, net, trainer, ctx):
    """With --resume, load the last checkpoint; returns the epoch to start from."""
    if not args.resume or not os.path.exists(os.path.join(args.checkpoint_dir, 'progress.json')):
        return 0
    with open(os.path.join(args.checkpoint_dir, 'progress.json')) as f:
        first_epoch = json.load(f)['epoch'] + 1
    net.load_parameters(os.path.join(args.checkpoint_dir, 'model.params'), ctx=ctx)
    net(nd.zeros((1, 3, 32, 32), ctx=ctx[0]))  # finish deferred shapes before the Trainer
    trainer.load_states(os.path.join(args.checkpoint_dir, 'trainer.states'))
    print('Resuming from %s at epoch %d' % (args.checkpoint_dir, first_epoch))
    return first_epoch


def end_epoch(net, trainer, store, ctx, test_data, args, epoch, progress=None):
    """Checkpoint (worker 0), evaluate, and wait until every worker is done with the
    epoch (a replacement counts these barriers); returns the test accuracy."""
    if args.checkpoint_dir and store.rank == 0:
        save_checkpoint(args.checkpoint_dir, net, trainer, epoch)
    loop = progress.loop(epoch, len(test_data), 'test') if progress is not None else None
    test_acc = evaluate(net, test_data, ctx, loop)
    print('Epoch %d: Test_acc %f' % (epoch, test_acc))
    sys.stdout.flush()
    store.barrier()
    return test_acc


def rejoin(net, trainer, store, ctx, test_data, args, batches_per_epoch):
    """In a worker that replaces a dead one: (epoch, batch) where the job is, from the
    steps the servers count; the weights, the optimizer and the running statistics come
    from the servers. At the start of an epoch the dead worker may not have finished
    the one before (its barrier count tells): that is finished here."""
    net(nd.zeros((1, 3, 32, 32), ctx=ctx[0]))  # finish deferred shapes before the Trainer
    steps = trainer.recover()
    # the statistics as the last step left them: its average again (the servers drop
    # this repeated push), then one average per step from this one on
    store.resume('bn-stats', max(steps - 1, 0))
    if steps:
        average_batchnorm_statistics(net, store, ctx)
    epoch, batch = divmod(steps, batches_per_epoch)
    print('Rejoining the job at epoch %d, batch %d' % (epoch, batch))
    if epoch and not batch and store.num_barriers() < epoch:
        end_epoch(net, trainer, store, ctx, test_data, args, epoch - 1)
    return epoch, batch


def main(argv=None):
    args = parse_args(argv)
    store = kv.create(args.kvstore)
    print('Total number of workers: %d' % store.num_workers)
    print("This worker's rank: %d" % store.rank)
    sys.stdout.flush()
    mx.random.seed(args.seed)
    ctx = contexts(args.gpus)

    train, test = load_data(args)
    normalize = transforms.Normalize(MEAN, STD)
    train_tf = transforms.Compose([transforms.RandomCrop(32, pad=4),
                                   transforms.RandomFlipLeftRight(),
                                   transforms.ToTensor(), normalize])
    test_tf = transforms.Compose([transforms.ToTensor(), normalize])
    sampler = gluon.data.SplitSampler(len(train), store.num_workers, store.rank, seed=args.seed)
    batches_per_epoch = -(-len(sampler) // args.batch_size)
    test_data = gluon.data.DataLoader(test.transform_first(test_tf), args.batch_size,
                                      num_workers=args.loader_workers)

    net = build_net(args, ctx)
    # (the running statistics are not trained: average_batchnorm_statistics keeps them)
    trained = [p for p in net.collect_params().values() if p.grad_req != 'null']
    trainer = gluon.Trainer(trained, args.optimizer, optimizer_params(args), kvstore=store)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    first_epoch, first_batch = resume(args, net, trainer, ctx), 0
    if store.is_recovery:
        first_epoch, first_batch = rejoin(net, trainer, store, ctx, test_data, args,
                                          batches_per_epoch)
    for _ in range(first_epoch):
        list(sampler)  # its epochs' orders are one seeded sequence: skip those done

    progress = make_progress(args, store.rank)
    start, samples = time.time(), 0
    for epoch in range(first_epoch, args.num_epochs):
        order = list(sampler)[first_batch * args.batch_size:]
        train_data = gluon.data.DataLoader(Augmented(train, train_tf, args.seed, epoch),
                                           args.batch_size, sampler=order,
                                           num_workers=args.loader_workers)
        loop = progress.loop(epoch, len(train_data))
        metrics = train_epoch(net, train_data, ctx, trainer, loss_fn, loop, store)
        samples, first_batch = samples + loop.samples, 0
        test_acc = end_epoch(net, trainer, store, ctx, test_data, args, epoch, progress)
        loop.summary(metrics, Test_acc=test_acc)
    progress.close()
    elapsed = time.time() - start
    print('Finished %d epoch(s) in %.1f s: %d samples, %.2f samples/sec on this worker'
          % (args.num_epochs - first_epoch, elapsed, samples, samples / max(elapsed, 1e-9)))
    store.close()


if __name__ == '__main__':
    main()
