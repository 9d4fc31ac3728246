"""``MNISTIter``: batches of the MNIST IDX files, in the order and scale of MXNet's C++
MNISTIter (its shuffle is libstdc++'s ``std::shuffle`` driven by ``std::mt19937``)."""
import logging
import os

import numpy as np

from ..base import MXNetError, MXNetValueError
from ..gluon.data.vision.datasets import read_idx
from .image_record_params import _to_bool, _to_int, _to_str
from .mx_data_iter import MXDataIter, check_positive, parse_kwargs

__all__ = ['MNISTIter']

_LOG = logging.getLogger(__name__)
_UINT32_MAX = 0xFFFFFFFF


def _to_float32(name, value):
    if str(value) in ('None', 'float32') or value is np.float32:
        return 'float32'
    raise MXNetValueError('MNISTIter makes float32 batches; %s=%r is not supported'
                          % (name, value))


_PARAMS = {
    'image': ('./train-images-idx3-ubyte', _to_str),
    'label': ('./train-labels-idx1-ubyte', _to_str),
    'batch_size': (128, _to_int), 'shuffle': (True, _to_bool), 'flat': (False, _to_bool),
    'seed': (0, _to_int), 'silent': (False, _to_bool), 'num_parts': (1, _to_int),
    'part_index': (0, _to_int), 'prefetch_buffer': (4, _to_int), 'ctx': ('gpu', _to_str),
    'dtype': ('float32', _to_float32),
    'data_name': ('data', _to_str), 'label_name': ('softmax_label', _to_str),
}


def cxx_shuffle_order(count, seed):
    """The permutation ``std::shuffle(first, first + count, std::mt19937(seed))`` makes of
    ``0..count-1`` with libstdc++ (the library MXNet's Linux builds use)."""
    generator = np.random.RandomState(seed % (1 << 32))._bit_generator  # MT19937, init_genrand
    order = list(range(count))
    raw = iter(())
    for i in range(1, count):
        # std::uniform_int_distribution(0, i): rejection, then division by the scale
        scaling = _UINT32_MAX // (i + 1)
        past = (i + 1) * scaling
        while True:
            value = next(raw, None)
            if value is None:
                raw = iter(generator.random_raw(max(count - i, 16)).tolist())
                value = next(raw)
            if value < past:
                break
        j = value // scaling
        order[i], order[j] = order[j], order[i]
    return order


def _part(count, num_parts, part_index):
    """MXNet's split of ``count`` examples into parts (in double precision, truncated)."""
    return (int(count / num_parts * part_index), int(count / num_parts * (part_index + 1)))


def _idx_path(path):
    """``path``, or ``path.gz`` when only that exists."""
    if not os.path.exists(path) and os.path.exists(path + '.gz'):
        return path + '.gz'
    if not os.path.isfile(path):
        raise MXNetError('MNISTIter: %r is not a file; give the IDX files of MNIST (e.g. '
                         'train-images-idx3-ubyte, plain or .gz; mx.test_utils.get_mnist_ubyte() '
                         'downloads them into data/)' % (path,))
    return path


class MNISTIter(MXDataIter):
    """Batches of MNIST's IDX files (images and labels), as MXNet's ``mx.io.MNISTIter``.

    Parameters
    ----------
    image : str, default './train-images-idx3-ubyte'
        The images' IDX file (plain, or gzip when it ends in ``.gz``).
    label : str, default './train-labels-idx1-ubyte'
        The labels' IDX file.
    batch_size : int, default 128
    shuffle : bool, default True
        Shuffle the examples once, when the iterator is made (every epoch then has the
        same order, as in MXNet).
    flat : bool, default False
        Batches of shape (batch, rows * cols) instead of (batch, 1, rows, cols).
    seed : int, default 0
        The shuffle's seed; MXNet's order for the same seed.
    silent : bool, default False
        Do not log what was loaded.
    num_parts, part_index : int, default 1, 0
        Read only the part ``part_index`` of ``num_parts`` contiguous parts.
    data_name, label_name : str, default 'data', 'softmax_label'

    The pixels are scaled to [0, 1) as MXNet scales them (``pixel / 256``); labels are
    float32 of shape (batch,). A last batch shorter than ``batch_size`` is dropped.
    """

    def __init__(self, **kwargs):
        p = parse_kwargs('MNISTIter', kwargs, _PARAMS)
        check_positive('MNISTIter', 'batch_size', p['batch_size'])
        if not 0 <= p['part_index'] < p['num_parts']:
            raise MXNetValueError('MNISTIter: part_index must be in [0, num_parts), got '
                                  'part_index=%d with num_parts=%d'
                                  % (p['part_index'], p['num_parts']))
        image_path, label_path = _idx_path(p['image']), _idx_path(p['label'])
        images, labels = read_idx(image_path, 3), read_idx(label_path, 1)
        start, end = _part(len(images), p['num_parts'], p['part_index'])
        images = images[start:end]
        start, end = _part(len(labels), p['num_parts'], p['part_index'])
        labels = labels[start:end]
        if len(images) != len(labels):
            raise MXNetError('MNISTIter: %s holds %d images but %s holds %d labels (in part %d '
                             'of %d); give matching files'
                             % (image_path, len(images), label_path, len(labels),
                                p['part_index'], p['num_parts']))
        if p['shuffle']:
            order = cxx_shuffle_order(len(images), p['seed'])
            images, labels = images[order], labels[order]
        self._images = images.astype(np.float32) * np.float32(1.0 / 256.0)
        if p['flat']:
            self._images = self._images.reshape(len(images), -1)
        else:
            self._images = self._images[:, np.newaxis]
        self._labels = labels.astype(np.float32)
        self._loc = 0
        bs = p['batch_size']
        if not p['silent']:
            _LOG.info('MNISTIter: load %d images, shuffle=%d, shape=%s', len(images),
                      p['shuffle'], (bs,) + self._images.shape[1:])
        super().__init__(bs)
        self._start(bs, p['data_name'], p['label_name'])

    def _read_batch(self):
        bs = self.batch_size
        if self._loc + bs > len(self._images):
            return None
        window = slice(self._loc, self._loc + bs)
        self._loc += bs
        # MXNet's MNISTIter sets no indices: they read as zeros
        return self._images[window], self._labels[window], 0, np.zeros(bs, np.uint64)

    def _before_first(self):
        self._loc = 0
