"""Train on CIFAR-10 on one machine with several devices: the Gluon idiom end to end.

    python examples/train_cifar10.py --model cifar_resnet20_v1 --synthetic 2000 --num-epochs 2
    python examples/train_cifar10.py --gpus 2                   # two GPUs
    python examples/train_cifar10.py --cpus 2                   # cpu(0) and cpu(1)

Each batch is split over the devices with ``split_and_load``; the Trainer sums the
gradients through a 'device' kvstore and updates every copy of the weights. Progress,
``--metrics-file``, ``--checkpoint-dir`` and ``--resume`` work as in ``cifar10_dist.py``.
"""
import minigluon as mx
from minigluon import gluon

from cifar10_dist import (MEAN, STD, build_net, evaluate, load_data, make_progress,
                          optimizer_params, parse_args, resume, save_checkpoint, train_epoch)
from minigluon.gluon.data.vision import transforms


def main():
    import argparse
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument('--cpus', type=int, default=1, help='CPU devices when --gpus is empty')
    own, rest = extra.parse_known_args()
    args = parse_args(rest)
    ctx = ([mx.gpu(int(i)) for i in args.gpus.split(',')] if ',' in args.gpus else
           [mx.gpu(i) for i in range(int(args.gpus))] if args.gpus else
           [mx.cpu(i) for i in range(own.cpus)])
    mx.random.seed(args.seed)
    train, test = load_data(args)
    normalize = transforms.Normalize(MEAN, STD)
    train_data = gluon.data.DataLoader(
        train.transform_first(transforms.Compose([
            transforms.RandomCrop(32, pad=4), transforms.RandomFlipLeftRight(),
            transforms.ToTensor(), normalize])),
        args.batch_size, shuffle=True, num_workers=args.loader_workers)
    test_data = gluon.data.DataLoader(
        test.transform_first(transforms.Compose([transforms.ToTensor(), normalize])),
        args.batch_size, num_workers=args.loader_workers)

    net = build_net(args, ctx)
    trainer = gluon.Trainer(net.collect_params(), args.optimizer, optimizer_params(args),
                            kvstore='device')
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    progress = make_progress(args, rank=0)
    for epoch in range(resume(args, net, trainer, ctx), args.num_epochs):
        loop = progress.loop(epoch, len(train_data))
        metrics = train_epoch(net, train_data, ctx, trainer, loss_fn, loop)
        test_acc = evaluate(net, test_data, ctx, progress.loop(epoch, len(test_data), 'test'))
        print('Epoch %d: Test_acc %f' % (epoch, test_acc))
        loop.summary(metrics, Test_acc=test_acc)
        if args.checkpoint_dir:
            save_checkpoint(args.checkpoint_dir, net, trainer, epoch)
    progress.close()


if __name__ == '__main__':
    main()
