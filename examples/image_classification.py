"""Train a model-zoo network for image classification: MXNet's
``example/gluon/image_classification.py`` on minigluon, with the same options and log lines.

    python examples/image_classification.py --dataset cifar10 --model vgg11 --num-epochs 1
    python examples/image_classification.py --dataset mnist --model resnet18_v1 \\
        --use_thumbnail --mode hybrid --epochs 2 --lr-steps 1
    python tools/launch.py -n 2 -s 1 --launcher local python examples/image_classification.py \\
        --dataset cifar10 --model vgg11 --num-epochs 1 --kvstore dist_sync

Data sets (``--data-dir``, by default ``$MINIGLUON_HOME/datasets/<dataset>``):

- ``mnist``: the four IDX files (``train-images-idx3-ubyte`` ..., plain or ``.gz``);
- ``cifar10``: the binary batches (``data_batch_1.bin`` .. ``test_batch.bin``, directly
  or in ``cifar-10-batches-bin/``; ``datasets/get_cifar10.py`` fetches them);
- ``imagenet``: ``train/`` and ``val/``, one folder of images per class;
- ``caltech101``: ``101_ObjectCategories/`` and ``101_ObjectCategories_test/``;
- ``dummy``: one random batch in memory, ``--dummy-batches`` times per epoch.

MNIST and CIFAR-10 are downloaded when missing and a network is reachable; otherwise the
error says what to put where. With ``--use-rec`` the images come from MXNet RecordIO files
in ``--data-dir`` instead (``train.rec``, and ``val.rec`` or ``test.rec``, each with its
``.idx`` when there is one; ``tools/im2rec.py`` packs them) through
``mx.io.ImageRecordIter``. Under a distributed kvstore each worker trains on its own part
of the training set (a SplitSampler, or the iterator's ``num_parts``/``part_index``),
every worker validates on the whole validation set, and the BatchNorm running statistics
are averaged over the workers after every step (``dist_sync``), so that every worker
reports the same validation accuracy.

Where it differs from MXNet's program: ``--mode symbolic`` and the profiling options are
left out, the log goes to stderr only (no ``image-classification.log``), checkpoints are
written by worker 0 only, and ``--image-size`` and ``--dummy-batches`` are extra.
"""
import argparse
import logging
import os
import sys
import time

import numpy as np

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon.data.vision import (CIFAR10, MNIST, DatasetNotFoundError,
                                         ImageFolderDataset, transforms)
from minigluon.gluon.data.vision.datasets import default_root
from minigluon.metric import Accuracy, CompositeEvalMetric, TopKAccuracy

from cifar10_dist import MEAN as CIFAR_MEAN, STD as CIFAR_STD, average_batchnorm_statistics

CLASSES = {'mnist': 10, 'cifar10': 10, 'caltech101': 101, 'imagenet': 1000, 'dummy': 1000}
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
NORMALIZATION = {'mnist': ((0.1307,), (0.3081,)), 'cifar10': (CIFAR_MEAN, CIFAR_STD)}
CALTECH101_URL = 'https://s3.us-east-2.amazonaws.com/mxnet-public/101_ObjectCategories.tar.gz'

logger = logging.getLogger('image_classification')


def parse_args(argv=None):
    p = argparse.ArgumentParser(description='Train a model for image classification.')
    p.add_argument('--dataset', default='cifar10', choices=sorted(CLASSES),
                   help='data set to train on (default cifar10)')
    p.add_argument('--data-dir', default='',
                   help='folder of the data set (default $MINIGLUON_HOME/datasets/<dataset>)')
    p.add_argument('--use-rec', action='store_true',
                   help='read train.rec and val.rec (or test.rec) from --data-dir')
    p.add_argument('--num-workers', '--num-worker', '-j', dest='num_workers', type=int,
                   default=4, help='data loading processes (default 4)')
    p.add_argument('--batch-size', type=int, default=32,
                   help='training batch size per device (CPU/GPU)')
    p.add_argument('--gpus', default='',
                   help='GPUs to use, e.g. "0,1,2"; empty for the CPU')
    p.add_argument('--epochs', '--num-epochs', dest='epochs', type=int, default=120,
                   help='number of training epochs (default 120)')
    p.add_argument('--lr', type=float, default=0.1, help='learning rate (default 0.1)')
    p.add_argument('--momentum', type=float, default=0.9)
    p.add_argument('--wd', type=float, default=0.0001, help='weight decay (default 1e-4)')
    p.add_argument('--seed', type=int, default=123)
    p.add_argument('--mode', default='imperative', choices=['imperative', 'hybrid'],
                   help='hybrid: hybridize the network first')
    p.add_argument('--model', required=True, help='a model-zoo name, e.g. resnet18_v1')
    p.add_argument('--use_thumbnail', action='store_true',
                   help='ResNets: the small-image stem (3x3 convolution, no max-pool)')
    p.add_argument('--batch-norm', action='store_true', help='VGGs: with BatchNorm')
    p.add_argument('--use-pretrained', action='store_true',
                   help="start from MXNet's published ImageNet weights")
    p.add_argument('--prefix', default='', help='folder for the checkpoints (default: here)')
    p.add_argument('--start-epoch', type=int, default=0,
                   help='first epoch, 0 for fresh training, > 0 to resume')
    p.add_argument('--resume', default='', help='a .params file to start from')
    p.add_argument('--lr-factor', type=float, default=0.1, help='learning rate decay ratio')
    p.add_argument('--lr-steps', default='30,60,90',
                   help='epochs after which the learning rate is multiplied by --lr-factor')
    p.add_argument('--dtype', default='float32', help='float32, or float16')
    p.add_argument('--save-frequency', type=int, default=10,
                   help='save the model every this many epochs (the best one always)')
    p.add_argument('--kvstore', default='device', help='kvstore to use for the trainer')
    p.add_argument('--log-interval', type=int, default=50,
                   help='batches between log lines')
    p.add_argument('--image-size', type=int, default=0,
                   help='imagenet, caltech101 and dummy: side of the images '
                        '(default 224, 299 for inceptionv3)')
    p.add_argument('--dummy-batches', type=int, default=100,
                   help='dummy: batches per epoch (default 100)')
    opt = p.parse_args(argv)
    if opt.batch_size < 1 or opt.dummy_batches < 1 or opt.num_workers < 0:
        p.error('--batch-size and --dummy-batches must be positive, --num-workers >= 0')
    if opt.use_rec and opt.dataset == 'dummy':
        p.error('--use-rec reads --data-dir; the dummy data set is made in memory')
    return opt


def image_shape(opt):
    """(channels, height, width) of the images the network sees."""
    if opt.dataset == 'mnist':
        return (1, 28, 28)
    if opt.dataset == 'cifar10':
        return (3, 32, 32)
    return (3,) + (opt.image_size or (299 if opt.model == 'inceptionv3' else 224),) * 2


def normalization(dataset):
    return NORMALIZATION.get(dataset, (IMAGENET_MEAN, IMAGENET_STD))


# ---- data --------------------------------------------------------------------------------
class DummyData:
    """One random batch, given ``batches`` times per pass (MXNet's DummyIter repeats one
    batch too: its data never costs time)."""

    def __init__(self, batch_size, shape, classes, batches, seed):
        rng = np.random.RandomState(seed)
        self._batch = (nd.array(rng.uniform(-1, 1, (batch_size,) + shape)),
                       nd.array(rng.randint(0, classes, batch_size)))
        self._batches = batches

    def __iter__(self):
        return iter([self._batch] * self._batches)


def image_transforms(opt, shape):
    """(train, validation) transforms of the images of a gluon data set."""
    normalize = transforms.Normalize(*normalization(opt.dataset))
    if opt.dataset == 'mnist':
        both = transforms.Compose([transforms.ToTensor(), normalize])
        return both, both
    if opt.dataset == 'cifar10':
        return (transforms.Compose([transforms.RandomCrop(32, pad=4),
                                    transforms.RandomFlipLeftRight(),
                                    transforms.ToTensor(), normalize]),
                transforms.Compose([transforms.ToTensor(), normalize]))
    side = shape[1]
    return (transforms.Compose([transforms.RandomResizedCrop(side),
                                transforms.RandomFlipLeftRight(),
                                transforms.ToTensor(), normalize]),
            transforms.Compose([transforms.Resize(side + 32, keep_ratio=True),
                                transforms.CenterCrop(side), transforms.ToTensor(), normalize]))


def image_datasets(opt, root):
    """(train, validation) gluon data sets of ``opt.dataset`` in ``root``."""
    try:
        if opt.dataset == 'mnist':
            return MNIST(root, train=True), MNIST(root, train=False)
        if opt.dataset == 'cifar10':
            return CIFAR10(root, train=True), CIFAR10(root, train=False)
        folders = (('train', 'val') if opt.dataset == 'imagenet' else
                   ('101_ObjectCategories', '101_ObjectCategories_test'))
        return tuple(ImageFolderDataset(os.path.join(root, f)) for f in folders)
    except DatasetNotFoundError as exc:
        hint = {'imagenet': 'Put the ImageNet images in %s/train/<class>/ and %s/val/<class>/, '
                            'or pass --data-dir' % (root, root),
                'caltech101': 'Download %s and unpack it in %s, or pass --data-dir'
                              % (CALTECH101_URL, root)}.get(opt.dataset, '')
        raise SystemExit('image_classification: %s%s' % (exc, '\n' + hint if hint else ''))


def record_iters(opt, root, shape, batch_size, kv):
    """(train, validation) ``mx.io.ImageRecordIter``s over the RecordIO files in ``root``;
    the training one reads only this worker's part."""
    train = os.path.join(root, 'train.rec')
    val = next((os.path.join(root, n) for n in ('val.rec', 'test.rec')
                if os.path.isfile(os.path.join(root, n))), os.path.join(root, 'val.rec'))
    for path in (train, val):
        if not os.path.isfile(path):
            raise SystemExit('image_classification: --use-rec needs %s (and val.rec or test.rec '
                             'beside it); pack image folders into RecordIO files with '
                             'tools/im2rec.py, or pass --data-dir' % path)
    mean, std = normalization(opt.dataset)
    channels = 'rgb'[:len(mean)]
    common = dict(data_shape=shape, batch_size=batch_size, preprocess_threads=opt.num_workers,
                  verbose=False, **{'mean_' + c: 255 * m for c, m in zip(channels, mean)},
                  **{'std_' + c: 255 * s for c, s in zip(channels, std)})
    if opt.dataset in ('mnist', 'cifar10'):
        augment = {} if opt.dataset == 'mnist' else dict(rand_crop=True, pad=4,
                                                         rand_mirror=True)
        val_resize = {}
    else:
        augment = dict(random_resized_crop=True, min_random_area=0.08, max_aspect_ratio=4 / 3,
                       min_aspect_ratio=3 / 4, rand_mirror=True)
        val_resize = dict(resize=shape[1] + 32)

    def index(path):
        idx = path[:-4] + '.idx'
        return idx if os.path.isfile(idx) else ''

    return (mx.io.ImageRecordIter(path_imgrec=train, path_imgidx=index(train), shuffle=True,
                                  seed=opt.seed, num_parts=kv.num_workers,
                                  part_index=kv.rank, **augment, **common),
            mx.io.ImageRecordIter(path_imgrec=val, path_imgidx=index(val), **val_resize,
                                  **common))


def load_data(opt, batch_size, kv):
    """(train, validation) sources of batches; see ``batches``."""
    shape = image_shape(opt)
    if opt.dataset == 'dummy':
        data = DummyData(batch_size, shape, CLASSES['dummy'], opt.dummy_batches,
                         opt.seed + kv.rank)
        return data, data
    root = os.path.expanduser(opt.data_dir or default_root(opt.dataset))
    if opt.use_rec:
        return record_iters(opt, root, shape, batch_size, kv)
    train, val = image_datasets(opt, root)
    train_tf, val_tf = image_transforms(opt, shape)
    sampler = gluon.data.SplitSampler(len(train), kv.num_workers, kv.rank, seed=opt.seed)
    return (gluon.data.DataLoader(train.transform_first(train_tf), batch_size,
                                  sampler=sampler, num_workers=opt.num_workers),
            gluon.data.DataLoader(val.transform_first(val_tf), batch_size,
                                  num_workers=opt.num_workers))


def batches(source):
    """(data, label) pairs of a DataLoader, a DataIter or DummyData."""
    if isinstance(source, mx.io.DataIter):
        source.reset()
        return ((batch.data[0], batch.label[0]) for batch in source)
    return iter(source)


# ---- model, training, checkpoints -----------------------------------------------------------
def get_model(opt, classes, ctx):
    kwargs = {'classes': classes, 'pretrained': opt.use_pretrained}
    if opt.model.startswith('resnet'):
        kwargs['thumbnail'] = opt.use_thumbnail
    elif opt.model.startswith('vgg'):
        kwargs['batch_norm'] = opt.batch_norm
    try:
        net = gluon.model_zoo.vision.get_model(opt.model, **kwargs)
    except mx.MXNetError as exc:
        raise SystemExit('image_classification: %s' % exc)
    if opt.resume:
        net.load_parameters(opt.resume, ctx=ctx)
    elif opt.use_pretrained:
        net.collect_params().reset_ctx(ctx)
    else:
        init = mx.init.Normal() if opt.model == 'alexnet' else mx.init.Xavier(magnitude=2)
        net.initialize(init, ctx=ctx)
    net.cast(opt.dtype)
    return net


def learning_rate(opt, lr_steps, epoch):
    """--lr decayed by --lr-factor once for every step before ``epoch``, as MXNet's does."""
    return opt.lr * opt.lr_factor ** sum(step < epoch for step in lr_steps)


def evaluate(net, val_data, ctx, metric, dtype):
    metric.reset()
    for data, label in batches(val_data):
        xs = gluon.utils.split_and_load(data.astype(dtype, copy=False), ctx, even_split=False)
        ys = gluon.utils.split_and_load(label.astype(dtype, copy=False), ctx,
                                        even_split=False)
        metric.update(ys, [net(x) for x in xs])
    return metric.get()


def save_checkpoint(net, opt, epoch, top1, best_acc):
    """Every --save-frequency epochs, and whenever the validation accuracy is the best yet."""
    names = []
    if opt.save_frequency and (epoch + 1) % opt.save_frequency == 0:
        names.append('%s_%d_acc_%.4f.params' % (opt.model, epoch, top1))
    if top1 > best_acc[0]:
        best_acc[0] = top1
        names.append('%s_best.params' % opt.model)
    if names and opt.prefix:
        os.makedirs(opt.prefix, exist_ok=True)
    for name in names:
        fname = os.path.join(opt.prefix, name)
        net.save_parameters(fname)
        logger.info('[Epoch %d] Saving checkpoint to %s with Accuracy: %.4f', epoch, fname, top1)


def train(opt, net, ctx, kv, batch_size):
    train_data, val_data = load_data(opt, batch_size, kv)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': opt.lr, 'wd': opt.wd, 'momentum': opt.momentum,
                             'multi_precision': True}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = CompositeEvalMetric([Accuracy(), TopKAccuracy(5)])
    lr_steps = [int(x) for x in opt.lr_steps.split(',') if x.strip()]
    # one model on every worker: its BatchNorm statistics too (see the module docstring)
    average_stats = kv.type.startswith('dist_sync')
    total_time, num_epochs, best_acc = 0, 0, [0]
    for epoch in range(opt.start_epoch, opt.epochs):
        trainer.set_learning_rate(learning_rate(opt, lr_steps, epoch))
        tic = btic = time.time()
        metric.reset()
        for i, (data, label) in enumerate(batches(train_data)):
            xs = gluon.utils.split_and_load(data.astype(opt.dtype), ctx, even_split=False)
            ys = gluon.utils.split_and_load(label.astype(opt.dtype), ctx, even_split=False)
            with autograd.record():
                outputs = [net(x) for x in xs]
                losses = [loss_fn(z, y) for z, y in zip(outputs, ys)]
            autograd.backward(losses)
            if average_stats:
                average_batchnorm_statistics(net, kv, ctx)
            trainer.step(data.shape[0])
            metric.update(ys, outputs)
            if opt.log_interval and not (i + 1) % opt.log_interval:
                name, acc = metric.get()
                logger.info('Epoch[%d] Batch [%d]\tSpeed: %f samples/sec\t%s=%f, %s=%f',
                            epoch, i, batch_size / (time.time() - btic), name[0], acc[0],
                            name[1], acc[1])
            btic = time.time()
        epoch_time = time.time() - tic
        if num_epochs > 0:  # the first epoch is slower (tracing, caches): not averaged
            total_time += epoch_time
        num_epochs += 1
        name, acc = metric.get()
        logger.info('[Epoch %d] training: %s=%f, %s=%f', epoch, name[0], acc[0], name[1], acc[1])
        logger.info('[Epoch %d] time cost: %f', epoch, epoch_time)
        name, val_acc = evaluate(net, val_data, ctx, metric, opt.dtype)
        logger.info('[Epoch %d] validation: %s=%f, %s=%f', epoch, name[0], val_acc[0],
                    name[1], val_acc[1])
        if kv.rank == 0:
            save_checkpoint(net, opt, epoch, val_acc[0], best_acc)
    if num_epochs > 1:
        print('Average epoch time: {}'.format(total_time / (num_epochs - 1)))


def main(argv=None):
    opt = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    logger.info('Starting new image-classification task:, %s', opt)
    mx.random.seed(opt.seed)
    np.random.seed(opt.seed)
    ctx = [mx.gpu(int(i)) for i in opt.gpus.split(',')] if opt.gpus.strip() else [mx.cpu()]
    batch_size = opt.batch_size * max(1, len(ctx))
    kv = mx.kv.create(opt.kvstore)
    net = get_model(opt, CLASSES[opt.dataset], ctx)
    if opt.mode == 'hybrid':
        net.hybridize()
    train(opt, net, ctx, kv, batch_size)
    sys.stdout.flush()


if __name__ == '__main__':
    main()
