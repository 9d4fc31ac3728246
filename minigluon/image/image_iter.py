"""``ImageIter``: batches of augmented images from a RecordIO file or an image list.

Images come from a ``.rec`` file (read in order, or through its ``.idx`` by key), from
files named by a ``.lst`` list under ``path_root``, or from an in-memory list; each is
decoded to RGB, augmented, transposed to CHW and put in an NCHW float32 batch.
"""
import logging
import numbers
import os
import random

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ..base import MXNetError, MXNetValueError
from ..io.data_iter import DataBatch, DataDesc, DataIter
from .augmenters import CreateAugmenter
from .processing import imdecode

__all__ = ['ImageIter']

_LOG = logging.getLogger(__name__)
_LABEL_DTYPES = ('int32', 'float32', 'int64', 'float64')
_LAST_BATCH = ('pad', 'discard', 'roll_over')


def _read_list_file(path, dtype):
    """``{key: (label NDArray, relative path)}`` and the keys in file order, from a
    ``.lst`` file."""
    imglist, keys = {}, []
    for key, labels, name in recordio.read_list(path):
        imglist[key] = (nd.array(labels.astype(dtype), dtype=dtype), name)
        keys.append(key)
    return imglist, keys


def _read_list(items, dtype):
    """The same from ``[label or [labels...], path]`` items, keyed '1', '2', ... as in
    MXNet."""
    imglist, keys = {}, []
    for number, item in enumerate(items, 1):
        if not isinstance(item, (list, tuple)) or len(item) < 2:
            raise MXNetValueError('imglist item %d must be [label, path] or [label, ..., path], '
                                  'got %r' % (number - 1, item))
        if len(item) > 2:
            label = item[:-1]
        elif isinstance(item[0], numbers.Number):
            label = [item[0]]
        else:
            label = item[0]
        key = str(number)
        imglist[key] = (nd.array(label, dtype=dtype), item[-1])
        keys.append(key)
    return imglist, keys


class ImageIter(DataIter):
    """Batches of augmented images, with labels, from a ``.rec`` file or an image list.

    Parameters
    ----------
    batch_size : int
        Images per batch.
    data_shape : tuple of int
        Each image's (channels, height, width) after augmentation; channels must be 3.
    label_width : int, default 1
        Labels per image.
    path_imgrec : str, optional
        A RecordIO file of packed images (``im2rec``, ``recordio.pack_img``).
    path_imglist : str, optional
        A ``.lst`` file: ``index<TAB>label(s)<TAB>path`` per line. With ``path_imgrec`` and
        ``path_imgidx`` its labels replace the records' own (keys are the index).
    path_root : str, optional
        The folder the list's paths are relative to.
    path_imgidx : str, optional
        The ``.rec`` file's index; needed to shuffle or split a ``.rec`` file.
    shuffle : bool, default False
        Shuffle the images at every ``reset`` (Python's ``random``).
    part_index, num_parts : int, default 0 and 1
        Read only part ``part_index`` of ``num_parts`` equal, contiguous parts of the
        keys (for distributed training); as in MXNet, the last ``len % num_parts`` keys
        belong to no part.
    aug_list : list of Augmenter, optional
        The augmenters; by default ``CreateAugmenter(data_shape, **kwargs)``.
    imglist : list, optional
        In-memory ``[label or [labels], path]`` items, used when no list file is given.
    data_name, label_name : str
        The names in ``provide_data`` and ``provide_label``.
    dtype : {'float32', 'int32', 'int64', 'float64'}, default 'float32'
        The dtype labels are parsed to from a list; as in MXNet, batches hold their
        labels as float32.
    last_batch_handle : {'pad', 'discard', 'roll_over'}, default 'pad'
        The last, incomplete batch: filled up with images from the start (``pad`` says
        how many), dropped, or completed with the next epoch's first images.
    **kwargs
        Passed to ``CreateAugmenter`` when ``aug_list`` is None.
    """

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name='data',
                 label_name='softmax_label', dtype='float32', last_batch_handle='pad',
                 **kwargs):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise MXNetValueError('ImageIter needs images: give path_imgrec (a .rec file), '
                                  'path_imglist (a .lst file) or imglist (a list)')
        if dtype not in _LABEL_DTYPES:
            raise MXNetValueError('ImageIter: dtype %r label not supported; use one of %s'
                                  % (dtype, ', '.join(_LABEL_DTYPES)))
        if last_batch_handle not in _LAST_BATCH:
            raise MXNetValueError('ImageIter: last_batch_handle must be one of %s, got %r'
                                  % (', '.join(_LAST_BATCH), last_batch_handle))
        if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise MXNetValueError('ImageIter: batch_size must be a positive int, got %r'
                                  % (batch_size,))
        name = type(self).__name__
        self.imgidx = None
        self.imgrec = None
        if path_imgrec:
            _LOG.info('%s: loading recordio %s...', name, path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, 'r')
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, 'r')

        imgkeys = None
        if path_imglist:
            _LOG.info('%s: loading image list %s...', name, path_imglist)
            self.imglist, imgkeys = _read_list_file(path_imglist, dtype)
        elif isinstance(imglist, list):
            _LOG.info('%s: loading image list...', name)
            self.imglist, imgkeys = _read_list(imglist, dtype)
        else:
            self.imglist = None
        self.path_root = path_root

        self.check_data_shape(data_shape)
        data_shape = tuple(data_shape)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape)]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape)]
        self.batch_size = batch_size
        self.data_shape = data_shape
        self.label_width = label_width
        self.shuffle = shuffle

        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise MXNetValueError('ImageIter: shuffle=True and num_parts > 1 read a .rec '
                                      'file by key: give its index as path_imgidx too')
            self.seq = self.imgidx
        else:
            self.seq = None  # read the .rec file in order

        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise MXNetValueError('ImageIter: part_index must be in [0, num_parts=%d), '
                                      'got %r' % (num_parts, part_index))
            size = len(self.seq) // num_parts
            self.seq = self.seq[part_index * size:(part_index + 1) * size]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        self._current = None  # what the last sample read was, for error messages
        self.reset()

    def reset(self):
        """Go back to the start (reshuffling); with ``roll_over``, a pending incomplete
        batch is kept and completed by the next ``next()``."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != 'roll_over' or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Go back to the start and drop any rolled-over incomplete batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def next_sample(self):
        """The next image's ``(label, encoded bytes)``; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:  # a .rec file read in order
            s = self.imgrec.read()
            if s is None:
                if self.last_batch_handle != 'discard':
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(s)
            self._current = 'record id %d of %s' % (header.id, self.imgrec.uri)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != 'discard':
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            self._current = 'record key %r of %s' % (idx, self.imgrec.uri)
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            if self.imglist is None:
                return header.label, img
            return self.imglist[idx][0], img
        label, fname = self.imglist[idx]
        self._current = 'filename: %s' % fname
        return label, self.read_image(fname)

    def _put_label(self, batch_label, i, label):
        values = label.asnumpy() if isinstance(label, nd.NDArray) else np.asarray(label)
        values = values.reshape(-1)
        if values.size != self.label_width:
            raise MXNetValueError('ImageIter: %s has %d label(s) but label_width=%d; set '
                                  'label_width to match the data'
                                  % (self._current, values.size, self.label_width))
        batch_label[i] = values[0] if self.label_width == 1 else values

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill the batch from position ``start``; returns how many images it holds."""
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as exc:
                    _LOG.debug('Invalid image, skipping: %s', exc)
                    continue
                data = self.postprocess_data(self.augmentation_transform(data))
                if tuple(data.shape) != self.data_shape:
                    raise MXNetValueError(
                        'ImageIter: the augmenters made %s into shape %s, but data_shape is '
                        '%s; end aug_list with a crop or resize to that size'
                        % (self._current, tuple(data.shape), self.data_shape))
                batch_data[i] = data
                self._put_label(batch_label, i, label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next ``DataBatch``: NCHW float32 data and float32 labels.

        ``pad`` is the number of images at the end of the last batch that were taken
        from the start of the data (``pad`` mode) or of the next epoch (``roll_over``).
        """
        if self._cache_data is not None:  # complete the batch rolled over
            batch_data, batch_label = self._cache_data, self._cache_label
            i = self._cache_idx
        else:
            batch_data = nd.zeros((self.batch_size,) + self.data_shape)
            batch_label = nd.empty(self.provide_label[0][1])
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == 'discard':
                raise StopIteration
            if self.last_batch_handle == 'roll_over' and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = \
                    batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == 'pad':
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """Raise unless ``data_shape`` is (3, height, width)."""
        if len(data_shape) != 3:
            raise MXNetValueError('data_shape should have length 3, with dimensions CxHxW; '
                                  'got %r' % (data_shape,))
        if data_shape[0] != 3:
            raise MXNetValueError('This iterator expects inputs to have 3 channels; '
                                  'data_shape is %r' % (data_shape,))

    def check_valid_image(self, data):
        """Raise (a RuntimeError: the image is skipped) if the decoded ``data`` is not an
        image."""
        if len(data[0].shape) == 0:
            raise MXNetError('Data shape is wrong: %s decoded to shape %s'
                             % (self._current, data.shape))

    def imdecode(self, s):
        """Decode an image's bytes to an HWC RGB uint8 NDArray (see ``mx.image.imdecode``);
        the error names the broken image."""
        try:
            return imdecode(s)
        except MXNetError as exc:
            raise MXNetError('Broken image %s, %s' % (self._current, exc)) from None

    def read_image(self, fname):
        """The bytes of the image file ``fname`` (relative to ``path_root``)."""
        path = fname if self.path_root is None else os.path.join(self.path_root, fname)
        with open(path, 'rb') as fin:
            return fin.read()

    def augmentation_transform(self, data):
        """``data`` through every augmenter of ``auglist`` in turn."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """An augmented HWC image as the CHW array that goes into the batch."""
        return nd.transpose(datum, axes=(2, 0, 1))
