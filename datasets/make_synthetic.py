#!/usr/bin/env python3
"""Write a learnable synthetic stand-in for CIFAR-10, in CIFAR-10's binary layout.

    python datasets/make_synthetic.py --root DIR --train 50000 --test 10000

creates ``ROOT/cifar-10-batches-bin/`` with ``data_batch_1.bin`` .. ``data_batch_5.bin``
(the training images split into five parts), ``test_batch.bin``, ``batches.meta.txt``
and a ``SYNTHETIC`` marker, so ``gluon.data.vision.CIFAR10(root=ROOT)`` reads it like
the real set (and says that it is synthetic). Each record is one label byte then the
32 x 32 red, green and blue planes.

Every class has a fixed smooth colour template (left-right symmetric, so flipping
augmentation keeps the class); an image is its class template, shifted by up to 4
pixels, with random contrast and brightness, plus Gaussian noise. A small CNN learns
it well above chance; even a nearest-class-mean classifier gets about 70% right
(chance: 10%). The same seed
and sizes always give the same bytes. Needs only numpy.
"""
import argparse
import os
import sys

import numpy as np

CLASSES = ('airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship',
           'truck')
FOLDER = 'cifar-10-batches-bin'
TRAIN_FILES = tuple('data_batch_%d.bin' % i for i in range(1, 6))
TEST_FILE = 'test_batch.bin'
MARKER = 'SYNTHETIC'
_CHUNK = 5000          # images generated at once (bounds memory)
_NOISE_STD = 50.0      # pixel noise, on the 0..255 scale
_MAX_SHIFT = 4
_SHARED = 0.4          # weight of the template common to all classes (makes it harder)


def class_templates(rng):
    """Ten smooth 32 x 32 x 3 float images in [40, 215], mirror-symmetric left-right.

    Each is partly a template shared by all classes, so that classes overlap.
    """
    coarse = rng.uniform(0, 1, size=(len(CLASSES), 4, 4, 3))
    # Bilinear upsampling of the 4 x 4 grid to 32 x 32, written out with numpy.
    pos = (np.arange(32) + 0.5) / 8 - 0.5
    i0 = np.clip(np.floor(pos).astype(int), 0, 3)
    i1 = np.clip(i0 + 1, 0, 3)
    frac = np.clip(pos - i0, 0, 1)
    wy, wx = frac[None, :, None, None], frac[None, None, :, None]
    rows = coarse[:, i0] * (1 - wy) + coarse[:, i1] * wy
    full = rows[:, :, i0] * (1 - wx) + rows[:, :, i1] * wx
    full = (full + full[:, :, ::-1]) / 2
    full = _SHARED * full.mean(axis=0) + (1 - _SHARED) * full
    return 40 + 175 * full


def make_images(labels, templates, rng):
    """uint8 images (N, 32, 32, 3) of the given classes."""
    out = np.empty((len(labels), 32, 32, 3), np.uint8)
    for start in range(0, len(labels), _CHUNK):
        part = labels[start:start + _CHUNK]
        n = len(part)
        images = templates[part].copy()
        shifts = rng.integers(-_MAX_SHIFT, _MAX_SHIFT + 1, size=(n, 2))
        for dy in range(-_MAX_SHIFT, _MAX_SHIFT + 1):
            for dx in range(-_MAX_SHIFT, _MAX_SHIFT + 1):
                sel = np.flatnonzero((shifts[:, 0] == dy) & (shifts[:, 1] == dx))
                if sel.size:
                    images[sel] = np.roll(images[sel], (dy, dx), axis=(1, 2))
        contrast = rng.uniform(0.6, 1.4, size=(n, 1, 1, 1))
        brightness = rng.uniform(-30, 30, size=(n, 1, 1, 1))
        images = (images - 128) * contrast + 128 + brightness
        images += rng.normal(0, _NOISE_STD, size=images.shape).astype(np.float32)
        out[start:start + n] = np.clip(np.rint(images), 0, 255)
    return out


def balanced_labels(count, rng):
    labels = np.arange(count) % len(CLASSES)
    rng.shuffle(labels)
    return labels.astype(np.uint8)


def cifar_records(images, labels):
    """The bytes of CIFAR-10 records: a label byte, then the R, G and B planes."""
    planes = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)
    return np.concatenate([labels[:, None].astype(np.uint8), planes], axis=1).tobytes()


def _write_atomic(path, data):
    tmp = path + '.tmp-%d' % os.getpid()
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)


def make_cifar10(root, num_train=50000, num_test=10000, seed=0):
    """Write the synthetic set under ``root/cifar-10-batches-bin``; returns that folder."""
    if num_train < len(TRAIN_FILES) or num_test < 1:
        raise ValueError('need at least %d training images (one per file) and 1 test image, '
                         'got --train %d --test %d' % (len(TRAIN_FILES), num_train, num_test))
    rng = np.random.default_rng(seed)
    templates = class_templates(rng)
    folder = os.path.join(os.path.expanduser(root), FOLDER)
    os.makedirs(folder, exist_ok=True)
    train_labels = balanced_labels(num_train, rng)
    train_images = make_images(train_labels, templates, rng)
    bounds = np.linspace(0, num_train, len(TRAIN_FILES) + 1).astype(int)
    for name, lo, hi in zip(TRAIN_FILES, bounds[:-1], bounds[1:]):
        _write_atomic(os.path.join(folder, name), cifar_records(train_images[lo:hi],
                                                                 train_labels[lo:hi]))
    test_labels = balanced_labels(num_test, rng)
    _write_atomic(os.path.join(folder, TEST_FILE),
                  cifar_records(make_images(test_labels, templates, rng), test_labels))
    _write_atomic(os.path.join(folder, 'batches.meta.txt'), ('\n'.join(CLASSES) + '\n\n').encode())
    _write_atomic(os.path.join(folder, MARKER),
                  ('Synthetic CIFAR-10 stand-in written by datasets/make_synthetic.py '
                   '(--train %d --test %d --seed %d); not the real data set.\n'
                   % (num_train, num_test, seed)).encode())
    return folder


def main(argv=None):
    default_root = os.path.join(os.environ.get('MINIGLUON_HOME') or '~/.minigluon',
                                'datasets', 'cifar10')
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--root', default=default_root,
                        help='folder to write cifar-10-batches-bin/ into (default %(default)s)')
    parser.add_argument('--train', type=int, default=50000, help='training images')
    parser.add_argument('--test', type=int, default=10000, help='test images')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    try:
        folder = make_cifar10(args.root, args.train, args.test, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    print('wrote a synthetic CIFAR-10 (%d train, %d test images, seed %d) to %s'
          % (args.train, args.test, args.seed, folder))
    return 0


if __name__ == '__main__':
    sys.exit(main())
