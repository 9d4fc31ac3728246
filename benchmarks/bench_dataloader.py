"""CIFAR-10 training input pipeline throughput, in images per second.

    PYTHONPATH=. python benchmarks/bench_dataloader.py [--images 20000] [--workers 0 1 2]
        [--batch-size 128] [--repeat 3] [--root DIR] [--smoke]

Reads CIFAR-10 from ``--root`` when given, else writes a synthetic set in the real
binary layout (datasets/make_synthetic.py) to a temporary folder. The pipeline is the
usual CIFAR training one: RandomCrop(32, pad=4), RandomFlipLeftRight, ToTensor,
Normalize, shuffled batches of 128. Each row is the fastest of ``--repeat`` full epochs,
worker start-up included, with the CPU time the main process and the workers spent per
image (less sensitive to other load on the machine than images/s). Target: 10,000
images/s with 2 workers on a 2-core machine. ``--smoke`` runs one epoch of 256 synthetic
images in batches of 32 (the test suite's check that the script still works).
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'datasets'))

from minigluon.gluon.data import DataLoader  # noqa: E402
from minigluon.gluon.data.vision import CIFAR10, transforms  # noqa: E402

import make_synthetic  # noqa: E402

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2023, 0.1994, 0.2010)


def epoch(loader):
    """(images/s, main-process CPU µs per image, worker CPU µs per image) of one epoch."""
    cpu0, start = os.times(), time.perf_counter()
    images = 0
    for data, label in loader:
        images += data.shape[0]
    wall, cpu1 = time.perf_counter() - start, os.times()
    main = cpu1.user - cpu0.user + cpu1.system - cpu0.system
    workers = (cpu1.children_user - cpu0.children_user
               + cpu1.children_system - cpu0.children_system)  # reaped at the epoch's end
    return images / wall, main / images * 1e6, workers / images * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--root', help='CIFAR-10 folder (default: a synthetic set)')
    parser.add_argument('--images', type=int, default=20000,
                        help='synthetic training images (default %(default)s)')
    parser.add_argument('--workers', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--batch-size', type=int, default=128)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--smoke', action='store_true',
                        help='one epoch of 256 synthetic images, batch 32: does it run?')
    args = parser.parse_args()
    if args.smoke:
        args.root, args.images, args.batch_size, args.repeat = None, 256, 32, 1
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root
        if root is None:
            root = tmp
            make_synthetic.make_cifar10(root, args.images, 10, seed=0)
        dataset = CIFAR10(root, train=True)
        train = transforms.Compose([transforms.RandomCrop(32, pad=4),
                                    transforms.RandomFlipLeftRight(),
                                    transforms.ToTensor(),
                                    transforms.Normalize(MEAN, STD)])
        dataset = dataset.transform_first(train)
        print('%d images, batch %d, %d CPU core(s), numpy %s'
              % (len(dataset), args.batch_size, os.cpu_count(), np.__version__))
        print('| num_workers | images/s | main CPU µs/image | worker CPU µs/image |')
        print('|---:|---:|---:|---:|')
        for workers in args.workers:
            loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                last_batch='discard', num_workers=workers)
            best = max((epoch(loader) for _ in range(args.repeat)), key=lambda r: r[0])
            print('| %d | %.0f | %.1f | %.1f |' % ((workers,) + best), flush=True)


if __name__ == '__main__':
    main()
