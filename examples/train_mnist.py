"""Train an MLP or LeNet on MNIST with the Module API, as MXNet's
``example/image-classification/train_mnist.py`` does.

    python examples/train_mnist.py --network mlp --data-dir data/mnist
    python examples/train_mnist.py --network lenet --num-epochs 2 --gpus 0
    python tools/launch.py -n 2 -s 1 --launcher local \\
        python examples/train_mnist.py --kv-store dist_sync

It reads the four MNIST files (``train-images-idx3-ubyte`` ... , gzipped or not) from
``--data-dir`` through ``mx.io.MNISTIter``; under a distributed store each worker
reads its part (``num_parts``/``part_index``). ``--synthetic N`` writes a stand-in of N
digit-like images in the same file format first, for machines without the data set.
"""
import argparse
import gzip
import logging
import os
import struct

import numpy as np

import minigluon as mx

FILES = {'train': ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte'),
         'val': ('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte')}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--network', default='mlp', choices=['mlp', 'lenet'])
    parser.add_argument('--data-dir', default='data/mnist')
    parser.add_argument('--gpus', default='', help='e.g. "0,1"; empty for the CPU')
    parser.add_argument('--kv-store', default='device')
    parser.add_argument('--num-epochs', type=int, default=20)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--lr-factor', type=float, default=0.1)
    parser.add_argument('--lr-step-epochs', default='10',
                        help='epochs after which the learning rate is multiplied by lr-factor')
    parser.add_argument('--optimizer', default='sgd')
    parser.add_argument('--mom', type=float, default=0.9)
    parser.add_argument('--wd', type=float, default=0.0001)
    parser.add_argument('--disp-batches', type=int, default=100,
                        help='log the speed and metrics every this many batches')
    parser.add_argument('--model-prefix', default='', help='save a checkpoint every epoch')
    parser.add_argument('--load-epoch', type=int, default=None,
                        help='resume from the checkpoint of this epoch (with --model-prefix)')
    parser.add_argument('--top-k', type=int, default=0, help='also report top-k accuracy')
    parser.add_argument('--synthetic', type=int, default=0,
                        help='write N stand-in images in MNIST\'s format to --data-dir first')
    return parser.parse_args(argv)


def mlp(num_classes=10):
    data = mx.sym.Flatten(mx.sym.Variable('data'))
    fc1 = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=128)
    act1 = mx.sym.Activation(data=fc1, name='relu1', act_type='relu')
    fc2 = mx.sym.FullyConnected(data=act1, name='fc2', num_hidden=64)
    act2 = mx.sym.Activation(data=fc2, name='relu2', act_type='relu')
    fc3 = mx.sym.FullyConnected(data=act2, name='fc3', num_hidden=num_classes)
    return mx.sym.SoftmaxOutput(data=fc3, name='softmax')


def lenet(num_classes=10):
    data = mx.sym.Variable('data')
    conv1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20)
    tanh1 = mx.sym.Activation(data=conv1, act_type='tanh')
    pool1 = mx.sym.Pooling(data=tanh1, pool_type='max', kernel=(2, 2), stride=(2, 2))
    conv2 = mx.sym.Convolution(data=pool1, kernel=(5, 5), num_filter=50)
    tanh2 = mx.sym.Activation(data=conv2, act_type='tanh')
    pool2 = mx.sym.Pooling(data=tanh2, pool_type='max', kernel=(2, 2), stride=(2, 2))
    fc1 = mx.sym.FullyConnected(data=mx.sym.flatten(data=pool2), num_hidden=500)
    tanh3 = mx.sym.Activation(data=fc1, act_type='tanh')
    fc2 = mx.sym.FullyConnected(data=tanh3, num_hidden=num_classes)
    return mx.sym.SoftmaxOutput(data=fc2, name='softmax')


def write_synthetic(folder, count, seed=0):
    """``count`` training and ``count // 5`` test images in MNIST's idx files: each class a
    blurred stroke pattern of its own plus noise, so a small network can learn them."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(seed)
    patterns = rng.rand(10, 28, 28) > 0.8
    for part, n in (('train', count), ('val', max(count // 5, 10))):
        labels = rng.randint(0, 10, n).astype(np.uint8)
        images = patterns[labels] * 200 + rng.randint(0, 56, (n, 28, 28))
        images_file, labels_file = FILES[part]
        with open(os.path.join(folder, images_file), 'wb') as f:
            f.write(struct.pack('>IIII', 2051, n, 28, 28) + images.astype(np.uint8).tobytes())
        with open(os.path.join(folder, labels_file), 'wb') as f:
            f.write(struct.pack('>II', 2049, n) + labels.tobytes())


def find(folder, name):
    for candidate in (name, name + '.gz'):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            return path
    raise SystemExit('train_mnist: %s(.gz) is not in %s; put the four MNIST files there '
                     '(http://yann.lecun.com/exdb/mnist/), or pass --synthetic 2000 for a '
                     'stand-in' % (name, folder))


def get_iters(args, kv, flat):
    if args.synthetic:
        write_synthetic(args.data_dir, args.synthetic)
    iters = []
    for part in ('train', 'val'):
        images, labels = (find(args.data_dir, name) for name in FILES[part])
        iters.append(mx.io.MNISTIter(image=images, label=labels, batch_size=args.batch_size,
                                     shuffle=part == 'train', flat=flat, seed=kv.rank,
                                     num_parts=kv.num_workers if part == 'train' else 1,
                                     part_index=kv.rank if part == 'train' else 0))
    return iters


def count_examples(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as f:
        return struct.unpack('>II', f.read(8))[1]


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(asctime)-15s %(message)s')
    kv = mx.kv.create(args.kv_store)
    train, val = get_iters(args, kv, flat=args.network == 'mlp')
    symbol = mlp() if args.network == 'mlp' else lenet()
    devices = [mx.gpu(int(i)) for i in args.gpus.split(',')] if args.gpus else mx.cpu()

    examples = count_examples(find(args.data_dir, FILES['train'][1]))
    epoch_size = max(examples // args.batch_size // kv.num_workers, 1)
    begin_epoch = args.load_epoch or 0
    steps = [epoch_size * (int(e) - begin_epoch)
             for e in args.lr_step_epochs.split(',') if e.strip() and int(e) > begin_epoch]
    lr = args.lr * args.lr_factor ** sum(int(e) <= begin_epoch
                                         for e in args.lr_step_epochs.split(',') if e.strip())
    optimizer_params = {'learning_rate': lr, 'wd': args.wd}
    if args.optimizer in ('sgd', 'nag', 'dcasgd', 'signum'):
        optimizer_params['momentum'] = args.mom
    if steps:
        optimizer_params['lr_scheduler'] = mx.lr_scheduler.MultiFactorScheduler(
            step=steps, factor=args.lr_factor)

    arg_params = aux_params = None
    if args.load_epoch is not None:
        if not args.model_prefix:
            raise SystemExit('train_mnist: --load-epoch needs --model-prefix')
        symbol, arg_params, aux_params = mx.model.load_checkpoint(args.model_prefix,
                                                                  args.load_epoch)
        logging.info('Loaded model %s-%04d.params', args.model_prefix, args.load_epoch)
    checkpoint = None
    if args.model_prefix:
        prefix = args.model_prefix if kv.rank == 0 else '%s-%d' % (args.model_prefix, kv.rank)
        checkpoint = mx.callback.do_checkpoint(prefix)
    metrics = ['accuracy'] + ([mx.metric.create('top_k_accuracy', top_k=args.top_k)]
                              if args.top_k > 0 else [])

    model = mx.mod.Module(context=devices, symbol=symbol)
    model.fit(train, begin_epoch=begin_epoch, num_epoch=args.num_epochs, eval_data=val,
              eval_metric=metrics, kvstore=kv, optimizer=args.optimizer,
              optimizer_params=optimizer_params,
              initializer=mx.init.Xavier(rnd_type='gaussian', factor_type='in', magnitude=2),
              arg_params=arg_params, aux_params=aux_params,
              batch_end_callback=mx.callback.Speedometer(args.batch_size, args.disp_batches),
              epoch_end_callback=checkpoint, allow_missing=True)


if __name__ == '__main__':
    main()
