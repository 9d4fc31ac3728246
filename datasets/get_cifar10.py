#!/usr/bin/env python3
"""Download the official CIFAR-10 binary archive, verify its published MD5 and unpack it.

    python datasets/get_cifar10.py [--root DIR]

leaves ``DIR/cifar-10-batches-bin/`` (``data_batch_1.bin`` .. ``data_batch_5.bin``,
``test_batch.bin``, ``batches.meta.txt``), where ``gluon.data.vision.CIFAR10(root=DIR)``
reads it. DIR defaults to ``$MINIGLUON_HOME/datasets/cifar10`` (``~/.minigluon/...``),
CIFAR10's default root. Without network access, ``datasets/make_synthetic.py`` writes a
synthetic stand-in in the same format.
"""
import argparse
import os
import sys

try:
    import minigluon  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

from minigluon.base import MXNetError  # noqa: E402
from minigluon.gluon.data.vision.datasets import CIFAR10, default_root  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--root', default=default_root('cifar10'),
                        help='folder to unpack into (default %(default)s)')
    parser.add_argument('--url', default=CIFAR10._archive_url,
                        help='archive URL, e.g. a mirror (default %(default)s)')
    parser.add_argument('--md5', default=CIFAR10._archive_md5,
                        help="the archive's MD5 (default: the published %(default)s)")
    parser.add_argument('--retries', type=int, default=5)
    args = parser.parse_args(argv)
    try:
        folder = CIFAR10.fetch(args.root, url=args.url, md5=args.md5, retries=args.retries)
    except MXNetError as exc:
        print('get_cifar10: %s' % exc, file=sys.stderr)
        print('Without network access, `python datasets/make_synthetic.py --root %s` writes a '
              'synthetic stand-in in the same format.' % args.root, file=sys.stderr)
        return 1
    print('CIFAR-10 is in %s' % folder)
    return 0


if __name__ == '__main__':
    sys.exit(main())
