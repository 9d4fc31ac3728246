#!/usr/bin/env python3
"""Make image lists (``.lst``) and RecordIO data sets (``.rec`` + ``.idx``) from a folder
of images, with the command line of MXNet's ``tools/im2rec.py``.

With ``--list``, the images under ``root`` are listed, shuffled (unless ``--no-shuffle``)
and written to ``<prefix>.lst`` (or ``_train`` / ``_val`` / ``_test`` and ``_<chunk>``
variants): one image a line, ``index<TAB>label[<TAB>label...]<TAB>relative path``.
Without it, every ``.lst`` file whose path starts with ``prefix`` is packed into a
``.rec`` / ``.idx`` pair beside it, the records in list order, each keyed by its index.

Examples::

    python tools/im2rec.py --list --recursive data/caltech data/images
    python tools/im2rec.py --resize 256 --quality 90 --num-thread 4 data/caltech data/images

Images are read as OpenCV's ``imread`` reads them in MXNet's tool (BGR channel order,
the EXIF orientation applied unless ``--color -1``), through minigluon's image codecs
and Pillow, and packed with ``minigluon.recordio``, so MXNet reads the records and they
decode to the same pixels as those MXNet's tool writes (up to one level after
``--resize``). A ``--color -1`` 16-bit image cannot be packed: it is skipped with a
message.
"""
import argparse
import collections
import concurrent.futures
import io
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from minigluon import recordio  # noqa: E402
from minigluon.base import MXNetError, MXNetValueError  # noqa: E402
from minigluon.ndarray.image import resize_raw  # noqa: E402
from minigluon.ndarray.image_codec import decode_raw  # noqa: E402
from minigluon.progress import format_duration  # noqa: E402

DEFAULT_EXTS = ['.jpeg', '.jpg', '.png']
_EXIF_ORIENTATION = 0x0112
# Seed of the list shuffle: MXNet's, so the same folder gives the same .lst.
SHUFFLE_SEED = 100
# Images submitted to the workers ahead of the writer, per worker.
WINDOW_PER_WORKER = 4


def build_parser():
    """The command line of MXNet's im2rec.py.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog='im2rec.py', formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description='Create an image list or make a record database by reading from an '
                    'image list')
    parser.add_argument('prefix', help='prefix of input/output lst and rec files.')
    parser.add_argument('root', help='path to folder containing images.')

    cgroup = parser.add_argument_group('Options for creating image lists')
    cgroup.add_argument('--list', action='store_true',
                        help='create image list(s) by traversing the root folder and write '
                             'them to <prefix>.lst; otherwise read the <prefix>*.lst files '
                             'and make <prefix>*.rec databases')
    cgroup.add_argument('--exts', nargs='+', default=DEFAULT_EXTS,
                        help='list of acceptable image extensions.')
    cgroup.add_argument('--chunks', type=int, default=1, help='number of chunks.')
    cgroup.add_argument('--train-ratio', type=float, default=1.0,
                        help='Ratio of images to use for training.')
    cgroup.add_argument('--test-ratio', type=float, default=0,
                        help='Ratio of images to use for testing.')
    cgroup.add_argument('--recursive', action='store_true',
                        help='walk the subfolders and give the images of each folder its '
                             'own label; otherwise list only the images in root, label 0.')
    cgroup.add_argument('--no-shuffle', dest='shuffle', action='store_false',
                        help='keep the folder order in <prefix>.lst instead of shuffling.')
    # MXNet before 1.1 spelled this `--shuffle BOOL`; say what replaced it.
    cgroup.add_argument('--shuffle', nargs='?', action=_RemovedShuffle, help=argparse.SUPPRESS)

    rgroup = parser.add_argument_group('Options for creating database')
    rgroup.add_argument('--pass-through', action='store_true',
                        help='whether to skip transformation and save image as is')
    rgroup.add_argument('--resize', type=int, default=0,
                        help='resize the shorter edge of image to the newsize, original images '
                             'will be packed by default.')
    rgroup.add_argument('--center-crop', action='store_true',
                        help='crop the center square of the image.')
    rgroup.add_argument('--quality', type=int, default=95,
                        help='JPEG quality for encoding, 1-100; or PNG compression for '
                             'encoding, 1-9')
    rgroup.add_argument('--num-thread', type=int, default=1,
                        help='number of threads that read and encode images; the records '
                             'keep the order of the list.')
    rgroup.add_argument('--color', type=int, default=1, choices=[-1, 0, 1],
                        help='1: three colour channels (any transparency dropped); 0: '
                             'grayscale; -1: as stored, alpha channel included.')
    rgroup.add_argument('--encoding', type=str, default='.jpg', choices=['.jpg', '.png'],
                        help='specify the encoding of the images.')
    rgroup.add_argument('--pack-label', action='store_true',
                        help='Whether to also pack multi dimensional label in the record file')
    return parser


class _RemovedShuffle(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        parser.error('--shuffle is gone since MXNet 1.1: lists are shuffled by default; '
                     'pass --no-shuffle to keep the folder order')


def parse_args(argv=None):
    """The options, checked, with ``prefix`` and ``root`` made absolute.

    Parameters
    ----------
    argv : list of str, optional
        The arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    argparse.Namespace
    """
    args = build_parser().parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    # MXNet compares lower-case suffixes with the extensions as given; normalising them
    # lets `--exts JPG` work instead of silently matching nothing.
    args.exts = [('' if e.startswith('.') else '.') + e.lower() for e in args.exts]
    checks = [(args.chunks >= 1, '--chunks must be at least 1, got %d' % args.chunks),
              (0 <= args.train_ratio <= 1, '--train-ratio must be in [0, 1], got %g'
               % args.train_ratio),
              (0 <= args.test_ratio <= 1, '--test-ratio must be in [0, 1], got %g'
               % args.test_ratio),
              (args.train_ratio + args.test_ratio <= 1 + 1e-9,
               '--train-ratio + --test-ratio must be at most 1, got %g + %g'
               % (args.train_ratio, args.test_ratio)),
              (args.resize >= 0, '--resize must be 0 (keep the size) or a length in pixels, '
                                 'got %d' % args.resize),
              (args.num_thread >= 1, '--num-thread must be at least 1, got %d'
               % args.num_thread)]
    for ok, message in checks:
        if not ok:
            raise MXNetValueError(message)
    folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    if not os.path.isdir(folder):
        raise MXNetError('the folder of prefix %r does not exist: create it first, or give '
                         'a prefix in an existing folder' % args.prefix)
    if not os.path.isdir(args.root):
        raise MXNetError('root %r is not a folder: give the folder that holds the images '
                         '(the paths in the .lst files are relative to it)' % args.root)
    return args


# ---------------------------------------------------------------- image lists

def list_images(root, recursive, exts):
    """The images under ``root`` as (index, relative path, label) in folder order.

    Parameters
    ----------
    root : str
    recursive : bool
        Walk the subfolders (names sorted); each folder that holds an image gets the next
        label, in walking order. Otherwise only ``root``'s own images, label 0.
    exts : list of str
        Lower-case suffixes, with the dot, of the files to list.

    Returns
    -------
    items : list of tuple
    classes : list of (str, int)
        Each labelled folder, relative to ``root``, with its label.
    """
    items, labels = [], {}
    if recursive:
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for fname in sorted(files):
                fpath = os.path.join(path, fname)
                if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(fpath):
                    label = labels.setdefault(path, len(labels))
                    items.append((len(items), os.path.relpath(fpath, root), label))
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(fpath):
                items.append((len(items), os.path.relpath(fpath, root), 0))
    classes = [(os.path.relpath(path, root), label) for path, label in labels.items()]
    return items, classes


def write_list(path, items):
    """Write ``items`` (index, relative path, label, ...) as MXNet's .lst lines."""
    with open(path, 'w') as fout:
        for item in items:
            labels = ''.join('%f\t' % label for label in item[2:])
            fout.write('%d\t%s%s\n' % (item[0], labels, item[1]))
    if not items:
        print('im2rec: warning: %s lists no images' % path, file=sys.stderr)


def make_list(args):
    """Write the .lst file(s) for ``args`` (shuffle, chunks, train/val/test split).

    Returns
    -------
    list of str
        The paths written.
    """
    items, classes = list_images(args.root, args.recursive, args.exts)
    if not items:
        raise MXNetError('no images with the extensions %s in %s%s' % (
            ' '.join(args.exts), args.root,
            '' if args.recursive else ' (pass --recursive to look in subfolders)'))
    for folder, label in classes:
        print(folder, label)
    if args.shuffle:
        random.Random(SHUFFLE_SEED).shuffle(items)
    # The ratios cut each chunk at multiples of the chunk size, as MXNet does.
    chunk_size = (len(items) + args.chunks - 1) // args.chunks
    written = []
    for i in range(args.chunks):
        chunk = items[i * chunk_size:(i + 1) * chunk_size]
        stem = args.prefix + ('_%d' % i if args.chunks > 1 else '')
        n_train = int(chunk_size * args.train_ratio)
        n_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            parts = [('.lst', chunk)]
        else:
            parts = []
            if args.test_ratio:
                parts.append(('_test.lst', chunk[:n_test]))
            if args.train_ratio + args.test_ratio < 1.0:
                parts.append(('_val.lst', chunk[n_test + n_train:]))
            parts.append(('_train.lst', chunk[n_test:n_test + n_train]))
        for suffix, part in parts:
            write_list(stem + suffix, part)
            written.append(stem + suffix)
    return written


def read_list(path):
    """The items of a .lst file: [index, relative path, label, ...] per line.

    Raises
    ------
    MXNetError
        For a line that is not ``index<TAB>label(s)<TAB>path`` with numbers.
    """
    items = []
    with open(path) as fin:
        for number, line in enumerate(fin, 1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.strip().split('\t')]
            try:
                if len(parts) < 3:
                    raise ValueError('%d tab-separated field(s), at least 3 needed'
                                     % len(parts))
                items.append([int(parts[0]), parts[-1]] + [float(p) for p in parts[1:-1]])
            except ValueError as exc:
                raise MXNetError('%s line %d: %r is not "index<TAB>label[<TAB>label...]'
                                 '<TAB>path" (%s); fields must be separated by tabs'
                                 % (path, number, line.rstrip('\n'), exc)) from None
    return items


# ---------------------------------------------------------------- reading images

def _as_bgr(img):
    """A Pillow image as an HxWx3 BGR array (OpenCV's order), swapped by Pillow's packer:
    a numpy fancy index costs ten times as much."""
    if img.mode != 'RGB':
        img = img.convert('RGB')
    return np.frombuffer(img.tobytes('raw', 'BGR'), np.uint8).reshape(img.height, img.width, 3)


def _libpng_gray(rgb):
    """Gray from RGB as libpng computes it for OpenCV (weights 0.299, 0.587 in 1/32768
    steps, truncated), so gray PNGs match MXNet's im2rec exactly."""
    rgb = rgb.astype(np.uint32)
    return ((9797 * rgb[:, :, 0] + 19234 * rgb[:, :, 1] + 3737 * rgb[:, :, 2]) >> 15) \
        .astype(np.uint8)


def read_image(path, flag):
    """The image at ``path`` as OpenCV's ``imread(path, flag)`` gives it.

    Most images go through minigluon's decoder; Pillow here handles what ``imread``
    does beyond it: the EXIF orientation, 16-bit and 1-bit PNGs, and libpng's gray
    conversion.

    Parameters
    ----------
    path : str
    flag : {1, 0, -1}
        1: HxWx3 BGR uint8; 0: HxW gray uint8; -1: as stored (HxW gray, HxWx3 BGR or
        HxWx4 BGRA, 16-bit gray kept as uint16). 1 and 0 apply the EXIF orientation.

    Returns
    -------
    numpy.ndarray
    """
    from PIL import Image, ImageOps
    with open(path, 'rb') as fin:
        data = fin.read()
    with Image.open(io.BytesIO(data)) as img:  # parses the header, decodes nothing yet
        fmt = img.format
        deep = img.mode.startswith('I;16') or img.mode == 'I'
        turned = flag != -1 and img.getexif().get(_EXIF_ORIENTATION, 1) != 1
        png_gray = flag == 0 and fmt == 'PNG' and img.mode not in ('L', 'LA', '1')
        bilevel = flag == -1 and img.mode == '1'  # stays one channel
        if not (deep or turned or png_gray or bilevel):
            pixels = decode_raw(data, flag, False, repr(path))
            return pixels[:, :, 0] if pixels.shape[2] == 1 else pixels
        if flag == 0 and fmt == 'JPEG':
            img.draft('L', img.size)  # libjpeg's own luma, as OpenCV decodes gray
        if turned:
            img = ImageOps.exif_transpose(img)
        if deep:
            wide = np.asarray(img).astype(np.uint16)
            if flag == -1:
                return wide
            gray = (wide >> 8).astype(np.uint8)
            return gray if flag == 0 else np.repeat(gray[:, :, None], 3, axis=2)
        if flag == 1:
            return _as_bgr(img)
        if png_gray:
            return _libpng_gray(np.asarray(img.convert('RGB')))
        return np.asarray(img.convert('L'))


def center_crop(img):
    """The central square of ``img``, its side the shorter side."""
    h, w = img.shape[:2]
    if h > w:
        top = (h - w) // 2
        return img[top:top + w]
    left = (w - h) // 2
    return img[:, left:left + h]


def resize_shorter(img, size):
    """``img`` resized (bilinear) so that its shorter side is ``size``."""
    h, w = img.shape[:2]
    if h > w:
        new_w, new_h = size, h * size // w
    else:
        new_w, new_h = w * size // h, size
    out = resize_raw(np, img if img.ndim == 3 else img[:, :, None], new_w, new_h, interp=1)
    return out if img.ndim == 3 else out[:, :, 0]


def encode_item(args, item):
    """One record for ``item`` of a .lst file.

    Returns
    -------
    bytes or None
        The packed record, or None if the image could not be read or encoded (the
        reason is printed on stderr).
    """
    path = os.path.join(args.root, item[1])
    if len(item) > 3 and args.pack_label:
        header = recordio.IRHeader(0, item[2:], item[0], 0)
    else:
        header = recordio.IRHeader(0, item[2], item[0], 0)
    try:
        if args.pass_through:
            with open(path, 'rb') as fin:
                return recordio.pack(header, fin.read())
        img = read_image(path, args.color)
        if args.center_crop:
            img = center_crop(img)
        if args.resize:
            img = resize_shorter(img, args.resize)
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except Exception as exc:  # one bad image must not end a long run: skip it, as MXNet
        print('im2rec: skipped %s: %s: %s' % (path, type(exc).__name__, exc),
              file=sys.stderr)
        return None


# ---------------------------------------------------------------- packing

class ProgressLine:
    """Images done, images/s and the ETA on stderr: one line rewritten in a terminal,
    a line every ``interval`` seconds otherwise, and a last line at the end."""

    def __init__(self, name, total, stream=None, interval=10.0):
        self.name, self.total = name, total
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, 'isatty') and self.stream.isatty()
        self.interval = 0.5 if self.tty else interval
        self.start = self.last = time.monotonic()
        self.done = 0

    def update(self, done):
        self.done = done
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._show(now, end='\r' if self.tty else '\n')

    def finish(self):
        self._show(time.monotonic(), end='\n')

    def _show(self, now, end):
        elapsed = max(now - self.start, 1e-9)
        speed = self.done / elapsed
        eta = (self.total - self.done) / speed if speed > 0 else None
        self.stream.write('%s: %d/%d images  %.1f images/s  %s %s%s' % (
            self.name, self.done, self.total, speed,
            'time' if self.done == self.total else 'ETA',
            format_duration(elapsed if self.done == self.total else eta), end))
        self.stream.flush()


def pack_list(args, lst_path, items):
    """Pack ``items``, read from the .lst file ``lst_path``, into a .rec / .idx pair
    beside it.

    Images are read and encoded by ``args.num_thread`` threads (Pillow does that work
    without holding the GIL) and written in list order.

    Returns
    -------
    int
        The records written.

    Raises
    ------
    MXNetError
        If the list names images but none of them could be packed.
    """
    stem = os.path.splitext(lst_path)[0]
    print('Creating .rec file from', lst_path, 'in', os.path.dirname(lst_path))
    if not items:
        print('im2rec: warning: %s lists no images' % lst_path, file=sys.stderr)
    record = recordio.MXIndexedRecordIO(stem + '.idx', stem + '.rec', 'w')
    progress = ProgressLine(os.path.basename(lst_path), len(items))
    written = skipped = 0

    def write(item, packed):
        nonlocal written, skipped
        if packed is None:
            skipped += 1
        else:
            record.write_idx(item[0], packed)
            written += 1
        progress.update(written + skipped)

    try:
        if args.num_thread == 1:
            for item in items:
                write(item, encode_item(args, item))
        else:
            with concurrent.futures.ThreadPoolExecutor(args.num_thread) as pool:
                pending = collections.deque()
                for item in items:
                    pending.append((item, pool.submit(encode_item, args, item)))
                    if len(pending) >= WINDOW_PER_WORKER * args.num_thread:
                        item, future = pending.popleft()
                        write(item, future.result())
                while pending:
                    item, future = pending.popleft()
                    write(item, future.result())
    finally:
        record.close()
    progress.finish()
    if items and not written:
        raise MXNetError('none of the %d images of %s could be packed (the reasons are '
                         'above); is %s the folder their paths are relative to?'
                         % (len(items), lst_path, args.root))
    if skipped:
        print('im2rec: %d of %d images of %s could not be packed (see above)'
              % (skipped, len(items), lst_path), file=sys.stderr)
    return written


def list_files(prefix):
    """The .lst files whose path starts with ``prefix`` (all those in it if it is a
    folder), sorted."""
    folder = prefix if os.path.isdir(prefix) else os.path.dirname(prefix)
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    return [p for p in paths if p.startswith(prefix) and p.endswith('.lst')
            and os.path.isfile(p)]


def main(argv=None):
    """Run im2rec with the arguments ``argv`` (``sys.argv[1:]`` by default).

    Returns
    -------
    list of str
        The .lst files written (``--list``) or packed.

    Raises
    ------
    MXNetError
        For bad options, a missing root, no images or no .lst files to pack.
    """
    args = parse_args(argv)
    if args.list:
        return make_list(args)
    lists = list_files(args.prefix)
    if not lists:
        raise MXNetError('no .lst file starts with the prefix %s: make one first with '
                         '--list, or give the prefix of existing ones' % args.prefix)
    # Every list is read before any packing, so a bad line stops the run early.
    contents = [read_list(path) for path in lists]
    if not any(contents):
        raise MXNetError('the .lst files %s list no images' % ', '.join(lists))
    for path, items in zip(lists, contents):
        pack_list(args, path, items)
    return lists


if __name__ == '__main__':
    try:
        main()
    except MXNetError as exc:
        sys.exit('im2rec.py: error: %s' % exc)
