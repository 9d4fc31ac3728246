"""``mx.io.ImageRecordIter``: batches of augmented images from a RecordIO file, as MXNet
1.x's C++ iterator makes them.

The main process plans each batch exactly as MXNet's parser does (which records, in
which order, with which augmentation seed, and the pad of a last batch); DataLoader
worker processes read, decode, augment and normalise the records and send back
finished batches. The plan follows dmlc-core's input splits:

- with ``path_imgidx`` the file is read by index: ``num_parts`` cuts it by record count,
  and ``shuffle`` permutes the records of the part every epoch;
- without an index the file is read in 8 MiB chunks: ``num_parts`` cuts it by bytes,
  at record boundaries, and ``shuffle`` permutes the records of each chunk.

With ``round_batch`` (the default) a last batch that runs out of records is filled from
the start of the next pass, ``pad`` says how many, and the next epoch starts after them.
Shuffles use ``std::mt19937`` and libstdc++'s ``std::shuffle``, so the order is MXNet's.
"""
import logging
import os
from collections import deque

import numpy as np

from ..base import MXNetError
from ..gluon.data import DataLoader
from ..ndarray import NDArray
from ..ndarray import load as nd_load
from ..ndarray import save as nd_save
from .. import recordio
from ..context import cpu
from .data_iter import DataBatch, DataDesc, DataIter
from .image_record_aug import (AugmentParams, StdRandom, augment, decode_record_image,
                               draw_normalization, normalize)
from .image_record_params import parse_params

__all__ = ['ImageRecordIter', 'ImageRecordUInt8Iter', 'ImageRecordInt8Iter']

_LOG = logging.getLogger(__name__)

_RAND_MAGIC = 111                  # MXNet's and dmlc-core's offset to every seed
_CHUNK_WORDS = 2 << 20             # dmlc-core reads unindexed files 2M words (8 MiB) at a time
_SEED_SPAN = 1 << 32               # a worker's key is record * _SEED_SPAN + seed


# ---- the RecordIO file ---------------------------------------------------------------------
def _read_index(path, rec_path, size):
    """Sorted record offsets from a ``.idx`` file."""
    offsets = np.unique(np.asarray([offset for _, offset in recordio.read_index(path)],
                                   np.int64))
    if len(offsets) == 0:
        raise MXNetError('the index %s lists no records' % path)
    if offsets[0] < 0 or offsets[-1] >= size or (offsets % 4).any():
        raise MXNetError('the index %s does not belong to %s: it lists byte offsets outside '
                         'the file (%d bytes) or not 4-byte aligned' % (path, rec_path, size))
    return offsets


def _chunks(starts, part_end, window_words=_CHUNK_WORDS):
    """dmlc-core's chunks of an unindexed part: ``(first, stop)`` record-number ranges.

    A chunk reads a window of ``4 * window_words`` bytes from its first record; unless
    the part ends inside the window, the last record that starts in it (with its
    header inside) is left to the next chunk; a window holding no such record doubles.
    """
    out, first = [], 0
    while first < len(starts):
        words = window_words + 1
        while True:
            window = (words - 1) * 4
            begin = int(starts[first])
            if part_end - begin < window:
                stop = len(starts)
                break
            last = int(np.searchsorted(starts, begin + window - 8, side='right')) - 1
            if last > first:
                stop = last
                break
            words *= 2
        out.append((first, stop))
        first = stop
    return out


# ---- MXNet's record order: dmlc-core's splits and the parser's batches ---------------------
class _IndexedSource:
    """dmlc-core's IndexedRecordIOSplitter over the ``count`` records of a part."""

    def __init__(self, count, shuffle, seed):
        self.count = count
        self.rng = StdRandom(_RAND_MAGIC + seed) if shuffle else None
        self.n_overflow = 0
        self.order = None
        self.before_first()

    def copy(self):
        twin = _IndexedSource.__new__(_IndexedSource)
        twin.__dict__.update(self.__dict__)
        twin.rng = self.rng.copy() if self.rng is not None else None
        return twin

    def before_first(self):
        if self.rng is not None:
            self.order = np.asarray(self.rng.shuffle(list(range(self.count))), np.int64)
        self.pos = 0

    def next_chunk(self, batch_size):
        wanted = self.n_overflow or batch_size
        if self.rng is not None:
            taken = min(wanted, self.count - self.pos)
            if taken == 0:
                return None
            self.n_overflow = wanted - taken
            chunk = self.order[self.pos:self.pos + taken].tolist()
        else:
            last = min(self.pos + wanted, self.count)
            self.n_overflow = self.pos + wanted - last
            if last == self.pos:
                return None
            chunk = list(range(self.pos, last))
        self.pos += len(chunk)
        return chunk


class _StreamSource:
    """dmlc-core's RecordIOSplitter: the part's records chunk after chunk."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.next = 0

    def copy(self):
        twin = _StreamSource(self.chunks)
        twin.next = self.next
        return twin

    def before_first(self):
        self.next = 0

    def next_chunk(self, batch_size):
        if self.next >= len(self.chunks):
            return None
        first, stop = self.chunks[self.next]
        self.next += 1
        return list(range(first, stop))


class _Planner:
    """MXNet's ImageRecordIOParser2 over record numbers: ``next_batch`` gives the
    ``(record, seed)`` entries of a batch and its pad, as ``ParseNext`` fills it.

    A record's augmentation seed is ``idx + seed_aug + 111`` with ``seed_aug`` (``idx``
    being where the parser put it: its slot in the batch, or past the batch), as in
    MXNet; without ``seed_aug`` they are drawn from a generator seeded ``111 * (seed + 1)``
    (MXNet's first decoding thread draws from ``111``), so runs repeat and epochs differ.
    """

    def __init__(self, source, batch_size, round_batch, legacy_shuffle, seed, seed_aug):
        self.source = source
        self.batch_size = batch_size
        self.round_batch = round_batch
        self.shuffle_rng = StdRandom(_RAND_MAGIC + seed) if legacy_shuffle else None
        self.seed_aug = seed_aug
        self.seed_rng = StdRandom(_RAND_MAGIC * (seed + 1)) if seed_aug is None else None
        self.queue, self.queued = (), 0
        self.overflow = False

    def copy(self):
        twin = _Planner.__new__(_Planner)
        twin.__dict__.update(self.__dict__)
        twin.source = self.source.copy()
        for name in ('shuffle_rng', 'seed_rng'):
            rng = getattr(self, name)
            setattr(twin, name, rng.copy() if rng is not None else None)
        return twin

    def _seed(self, idx):
        if self.seed_aug is not None:
            return (idx + self.seed_aug + _RAND_MAGIC) % _SEED_SPAN
        return self.seed_rng.raw()

    def parse(self, chunk, first_idx):
        """The chunk's records with seeds, numbered from ``first_idx``."""
        return [(record, self._seed(first_idx + i)) for i, record in enumerate(chunk)]

    def next_batch(self):
        """``(entries, pad)``, or None at the end of the epoch."""
        if self.overflow:
            return None
        size, batch, pad = self.batch_size, [], 0
        while len(batch) < size:
            if self.queued < len(self.queue):
                take = min(len(self.queue) - self.queued, size - len(batch))
                batch += self.queue[self.queued:self.queued + take]
                self.queued += take
                continue
            chunk = self.source.next_chunk(size)
            if chunk is not None:
                if self.shuffle_rng is None:
                    parsed = self.parse(chunk, len(batch))
                    room = size - len(batch)
                    batch += parsed[:room]
                    self.queue, self.queued = tuple(parsed[room:]), 0
                else:
                    parsed = self.parse(chunk, size)
                    self.queue, self.queued = tuple(self.shuffle_rng.shuffle(parsed)), 0
                continue
            if not batch:
                return None
            pad = size - len(batch)
            if not self.round_batch:
                break
            if self.overflow:
                raise MXNetError('number of input images must be bigger than the batch '
                                 'size: this part has fewer than batch_size=%d records'
                                 % size)
            self.overflow = True
            self.source.before_first()
        return batch, pad

    def before_first(self):
        if not self.round_batch or not self.overflow:
            self.queue, self.queued = (), 0
            self.source.before_first()
        else:
            self.overflow = False

    def chunks(self):
        """Every chunk of one pass with its seeds, as MXNet's mean-image pass parses them
        (numbered from batch_size); the pass ends with ``before_first``."""
        while True:
            chunk = self.source.next_chunk(self.batch_size)
            if chunk is None:
                break
            yield self.parse(chunk, self.batch_size)
        self.before_first()


# ---- what the workers do -------------------------------------------------------------------
class _RecordDecoder:
    """Key ``record * 2**32 + seed`` -> ``(image, draws, label, id)``: the record read,
    decoded and augmented with a generator seeded ``seed``, which then draws the
    normalisation (applied by ``_Batchify`` straight into the batch)."""

    def __init__(self, reader, offsets, labels, label_width, params, dtype):
        self.reader, self.offsets, self.labels = reader, offsets, labels
        self.label_width, self.params, self.dtype = label_width, params, dtype

    def __len__(self):
        return len(self.offsets) * _SEED_SPAN

    def __getitem__(self, key):
        record, seed = divmod(int(key), _SEED_SPAN)
        offset = int(self.offsets[record])
        path = self.reader.uri
        header, payload = recordio.unpack(self.reader.read_at(offset))
        what = 'the record at byte offset %d of %s (id %d)' % (offset, path, header.id)
        label = self._label(header, what)
        img = decode_record_image(payload, self.params.data_shape[0], what)
        rng = self._rng = self.__dict__.get('_rng') or StdRandom(0)   # one per process
        rng.reseed(seed)
        img = augment(self.params, img, rng)
        draws = draw_normalization(self.params, rng, self.dtype, img.shape[2])
        return img, draws, label, header.id

    def _label(self, header, what):
        if self.labels is not None:
            label = self.labels.get(header.id)
            if label is None:
                raise MXNetError('fail to find imagelabel for id %d (%s) in path_imglist'
                                 % (header.id, what))
            return label
        if header.flag > 0:
            if header.flag != self.label_width:
                raise MXNetError('rec file provide %d-dimensional label but label_width is '
                                 'set to %d (%s)' % (header.flag, self.label_width, what))
            return np.asarray(header.label, np.float32)
        if self.label_width != 1:
            raise MXNetError('label_width must be 1 unless an imglist is provided or the rec '
                             'file is packed with multi dimensional label: %s has one label '
                             'and label_width=%d' % (what, self.label_width))
        return np.array([header.label], np.float32)


class _Batchify:
    """Samples -> ``(data, label, ids)`` numpy arrays of ``batch_size`` rows, each image
    normalised into its row; rows past the samples (a last batch without round_batch)
    are zeros."""

    def __init__(self, batch_size, params, dtype, mean_img, label_width):
        self.batch_size, self.params, self.dtype = batch_size, params, dtype
        self.mean_img, self.label_width = mean_img, label_width
        self._owner, self._data = os.getpid(), None

    def _data_buffer(self):
        """A worker process copies each batch out to shared memory before it makes the
        next, so one buffer serves every batch there: a fresh 38 MB array per batch of
        64 224x224 images costs page faults worth a third of the decoding. In the
        calling process every batch is the user's to keep."""
        shape = (self.batch_size,) + self.params.data_shape
        if os.getpid() == self._owner:
            return np.empty(shape, self.dtype)
        if self._data is None:
            self._data = np.empty(shape, self.dtype)
        return self._data

    def __call__(self, samples):
        data = self._data_buffer()
        label = np.zeros((self.batch_size, self.label_width), np.float32)
        ids = np.zeros(self.batch_size, np.uint64)
        for i, (img, draws, lbl, rid) in enumerate(samples):
            normalize(self.params, img, draws, self.dtype, self.mean_img, out=data[i])
            label[i], ids[i] = lbl, rid
        data[len(samples):] = 0
        return data, label, ids


class _StackImages:
    """Samples -> their float32 normalised images stacked (the mean-image pass)."""

    def __init__(self, params):
        self.params = params

    def __call__(self, samples):
        return np.stack([normalize(self.params, img, draws, np.float32, None)
                         for img, draws, _, _ in samples])


class _PlanSampler:
    """The batch sampler of one epoch: yields each planned batch's keys and queues its
    pad and the planner's state after it, for the iterator to pick up in order."""

    def __init__(self, planner):
        self.planner = planner
        self.pending = deque()
        self.end_state = None

    def __iter__(self):
        while True:
            planned = self.planner.next_batch()
            if planned is None:
                self.end_state = self.planner.copy()
                return
            entries, pad = planned
            self.pending.append((pad, self.planner.copy()))
            yield [record * _SEED_SPAN + seed for record, seed in entries]


# ---- the iterator --------------------------------------------------------------------------
class ImageRecordIter(DataIter):
    """Iterates over batches of images from a RecordIO (``.rec``) file, as MXNet's
    ``mx.io.ImageRecordIter``.

    Each record (``recordio.pack_img``, ``im2rec.py``) is decoded, augmented with
    MXNet's default augmenter (resize, rotation/shear/scale, pad, crop, colour jitter,
    HSL jitter, PCA noise), mirrored, normalised and put in a batch of ``data_shape``
    images in NCHW layout, RGB(A) channel order. Decoding runs in
    ``preprocess_threads`` worker processes. The parameters are MXNet's, with MXNet's
    defaults; those below are the most used (MXNet's documentation lists every one).

    Parameters
    ----------
    path_imgrec : str
        The ``.rec`` file.
    data_shape : tuple of int
        (channels, height, width) of each image; channels 1 (gray), 3 (RGB) or 4 (RGBA).
    batch_size : int
    path_imgidx : str, optional
        The ``.idx`` file: enables splitting by record count and whole-part shuffles.
    path_imglist : str, optional
        A ``.lst`` file whose labels replace the records' (matched by record id).
    label_width : int, default 1
        Labels per image; batches' labels are (batch,) for 1, else (batch, label_width).
    shuffle : bool, default False
        Shuffle the records every epoch (seeded by ``seed``).
    seed : int, default 0
    num_parts, part_index : int, default 1, 0
        Read only part ``part_index`` of ``num_parts`` disjoint parts (one per worker of
        a distributed job).
    round_batch : bool, default True
        Fill a short last batch from the start (its ``pad`` says how many); with False the
        last batch is short: the missing rows are zeros and ``pad`` counts them.
    preprocess_threads : int, default 4
        Worker processes that decode; 0 decodes in the calling process.
    prefetch_buffer : int, default 4
        Batches decoded ahead.
    dtype : {'float32', 'uint8', 'int8'}, default 'float32'
        uint8 gives the pixels; int8 ``pixel - round(mean)``; float32 the normalised
        values ``(pixel - mean) * scale / std``.
    resize : int, default -1
        Resize the shorter edge to this before the other augmentations.
    rand_crop, rand_mirror, mirror : bool, default False
        Random crop position (else centred), random and forced horizontal flips.
    max_rotate_angle, max_shear_ratio, max_aspect_ratio : optional
        Random rotation (degrees), shear and aspect-ratio change, in one warp.
    min_random_scale, max_random_scale : float, default 1
        Random scale of the image, in the same warp.
    max_crop_size, min_crop_size, random_resized_crop, pad, fill_value : optional
        Random-size square crops, Inception-style crops (with ``min_random_area`` and
        ``min_aspect_ratio``), a border of ``pad`` pixels of ``fill_value``.
    inter_method : int, default 1
        0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 by the size change,
        10 random.
    random_h, random_s, random_l : int, default 0
        Random shifts of hue, saturation and lightness.
    brightness, contrast, saturation, pca_noise : float, default 0
        Colour jitter and PCA (lighting) noise.
    max_random_contrast, max_random_illumination : float, default 0
        A random contrast factor and offset, applied with the normalisation.
    seed_aug : int, optional
        Seed every record's augmentation from its position, so epochs and runs repeat
        (and match MXNet's).
    mean_img : str, optional
        An NDArray file with the mean image (CxHxW); created over the data when missing.
    mean_r, mean_g, mean_b, mean_a, std_r, std_g, std_b, std_a, scale : float, optional
        Per-channel mean and standard deviation, and a factor on the result.
    data_name, label_name : str, default 'data', 'softmax_label'

    Batches are NDArrays on ``cpu(0)`` (MXNet's are on ``cpu_pinned(device_id)``).
    Parameters MXNet accepts but minigluon does not need (``ctx``, ``device_id``) are
    accepted; unknown names are ignored with a warning, as MXNet ignores them.

    Raises
    ------
    MXNetError
        For a missing or corrupt file, bad parameters, or a record that is not an image.
    """

    def __init__(self, **kwargs):
        p = parse_params(kwargs)
        super().__init__(p['batch_size'])
        self._p = p
        self._dtype = p['dtype']
        shape = tuple(p['data_shape'])
        self._aug = AugmentParams(shape, **{k: p[k] for k in AugmentParams.FIELDS})
        path = p['path_imgrec']
        if os.path.isdir(path) or not os.path.isfile(path):
            raise MXNetError('path_imgrec=%r is not a file: give the .rec file (pack one with '
                             'tools/im2rec.py or mx.recordio)' % (path,))
        self._reader = recordio.MXRecordIO(path, 'r')
        offsets, source = self._open_part(path)
        self._offsets = offsets
        labels = self._read_imglist() if p['path_imglist'] else None
        legacy = not p['path_imgidx'] and p['shuffle']
        self._planner = _Planner(source, self.batch_size, p['round_batch'], legacy, p['seed'],
                                 p['seed_aug'])
        self._decoder = _RecordDecoder(self._reader, offsets, labels, p['label_width'],
                                       self._aug, self._dtype)
        if p['verbose']:
            _LOG.info('ImageRecordIter: %s, part %d of %d: %d records, %d decoding processes',
                      path, p['part_index'], p['num_parts'], len(offsets),
                      p['preprocess_threads'])
        mean_img = None
        if self._dtype != np.uint8 and p['mean_img']:
            mean_img = self._mean_image(p['mean_img'])
        label_shape = (self.batch_size,) if p['label_width'] == 1 else \
            (self.batch_size, p['label_width'])
        self.provide_data = [DataDesc(p['data_name'], (self.batch_size,) + shape, self._dtype)]
        self.provide_label = [DataDesc(p['label_name'], label_shape, np.float32)]
        self._label_shape = label_shape
        self._batchify = _Batchify(self.batch_size, self._aug, self._dtype, mean_img,
                                   p['label_width'])
        self._state = self._planner.copy()
        self._epoch = self._sampler = self._ahead = None
        self._finished = False
        self._current = None
        # as MXNet's MXDataIter: the first batch is read now (errors show at once)
        self._first_batch = None
        try:
            self._first_batch = self.next()
        except StopIteration:
            raise MXNetError('part %d of %d of %s holds no records: use fewer parts'
                             % (p['part_index'], p['num_parts'], path)) from None

    # -- the file and its part --
    def _open_part(self, path):
        p = self._p
        size = os.path.getsize(path)
        rank, parts = p['part_index'], p['num_parts']
        if p['path_imgidx']:
            starts = _read_index(p['path_imgidx'], path, size)
            step = -(-len(starts) // parts)
            part = starts[rank * step:(rank + 1) * step]
            return part, _IndexedSource(len(part), p['shuffle'], p['seed'])
        step = -(-size // parts)
        step = -(-step // 4) * 4
        begin, end = min(step * rank, size), min(step * (rank + 1), size)
        if begin >= end:
            return np.zeros(0, np.int64), _StreamSource([])
        end = recordio.next_record_start(path, end)
        begin = recordio.next_record_start(path, begin) if begin else 0
        part = np.asarray(recordio.record_starts(path, begin, end), np.int64)
        return part, _StreamSource(_chunks(part, end))

    def _read_imglist(self):
        p = self._p
        labels = {}
        width = p['label_width']
        try:
            with open(p['path_imglist']) as f:
                for number, line in enumerate(f, 1):
                    fields = line.split()
                    if not fields:
                        continue
                    try:
                        key = int(fields[0])
                        values = [float(v) for v in fields[1:1 + width]]
                    except ValueError:
                        values = []
                    if len(values) != width:
                        raise MXNetError('Bad ImageList format: %s, line %d: expected an '
                                         'index and %d label(s), got %r'
                                         % (p['path_imglist'], number, width, line.rstrip()))
                    labels[key] = np.asarray(values, np.float32)
        except OSError as exc:
            raise MXNetError('cannot read path_imglist=%r: %s'
                             % (p['path_imglist'], exc.strerror or exc)) from None
        return labels

    # -- the mean image --
    def _mean_image(self, path):
        shape = tuple(self._p['data_shape'])
        if os.path.exists(path):
            loaded = nd_load(path)
            arrays = list(loaded.values()) if isinstance(loaded, dict) else loaded
            if len(arrays) != 1:
                raise MXNetError('Invalid mean image file format: %s holds %d arrays, the '
                                 'mean image is one' % (path, len(arrays)))
            mean = arrays[0].asnumpy().astype(np.float32)
            if mean.shape != shape:
                raise MXNetError('the mean image in %s has shape %s but data_shape is %s: '
                                 'delete the file to compute it again'
                                 % (path, mean.shape, shape))
            return mean
        if self._p['verbose']:
            _LOG.info('ImageRecordIter: cannot find %s: computing the mean image', path)
        mean = self._compute_mean()
        nd_save(path, {'mean_img': NDArray(mean, cpu(0))})
        return mean

    def _compute_mean(self):
        """The average of the processed images over one pass, summed in float32 in record
        order as MXNet does (augmentations and normalisation included)."""
        keys = [record * _SEED_SPAN + seed for chunk in self._planner.chunks()
                for record, seed in chunk]
        decoder = _RecordDecoder(self._reader, self._offsets, self._decoder.labels,
                                 self._p['label_width'], self._aug, np.float32)
        loader = DataLoader(decoder, batch_sampler=[keys[i:i + self.batch_size] for i in
                                                    range(0, len(keys), self.batch_size)],
                            batchify_fn=_StackImages(self._aug), num_workers=self._workers())
        total = None
        for images in loader:
            for image in images:
                total = image.copy() if total is None else total + image
        if total is None:
            raise MXNetError('cannot compute a mean image: %s has no records'
                             % self._p['path_imgrec'])
        return total * np.float32(1.0 / len(keys))

    def _workers(self):
        return self._p['preprocess_threads']

    # -- iteration --
    def _start_epoch(self, state):
        """A sampler over the epoch that starts in ``state`` and the DataLoader iterator
        decoding it (its worker processes start now)."""
        sampler = _PlanSampler(state.copy())
        loader = DataLoader(self._decoder, batch_sampler=sampler,
                            batchify_fn=self._batchify, num_workers=self._workers(),
                            prefetch=max(self._p['prefetch_buffer'], self._workers()))
        return sampler, iter(loader)

    def _next_epoch_state(self):
        planner = self._state.copy()
        planner.before_first()
        return planner

    def reset(self):
        """Start the next epoch: with ``round_batch`` after the records the last batch
        borrowed, else from the start (reshuffled when ``shuffle``)."""
        self._first_batch = None
        if self._finished and self._ahead is not None:
            # the next epoch, being decoded since the last one ended
            self._state, (self._sampler, self._epoch) = self._ahead
        else:
            self._epoch = self._sampler = None      # dropping it stops its workers
            self._state = self._next_epoch_state()
        self._ahead = None
        self._finished = False

    def next(self):
        """The next ``DataBatch``; StopIteration at the end of the epoch."""
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            self._current = batch
            return batch
        if self._finished:
            raise StopIteration
        if self._epoch is None:
            self._sampler, self._epoch = self._start_epoch(self._state)
        try:
            data, label, ids = next(self._epoch)
        except StopIteration:
            self._state = self._sampler.end_state
            self._epoch = self._sampler = None
            self._finished = True
            # The next epoch's workers start decoding now, while the training loop ends
            # its epoch (evaluation, checkpoints), as MXNet's prefetching thread runs on.
            if self._workers():
                state = self._next_epoch_state()
                self._ahead = state, self._start_epoch(state)
            raise
        except BaseException:
            self._epoch = self._sampler = None
            raise
        pad, self._state = self._sampler.pending.popleft()
        label = label.reshape(self._label_shape)
        batch = DataBatch(data=[NDArray(data, cpu(0))], label=[NDArray(label, cpu(0))],
                          pad=pad, index=ids)
        self._current = batch
        return batch

    def iter_next(self):
        """Move to the next batch; False at the end of the epoch."""
        try:
            self.next()
        except StopIteration:
            return False
        return True

    def getdata(self):
        """The current batch's data (one NDArray, as MXNet's MXDataIter returns it)."""
        return self._current.data[0]

    def getlabel(self):
        """The current batch's labels (one NDArray)."""
        return self._current.label[0]

    def getindex(self):
        """The ids (``IRHeader.id``) of the current batch's records."""
        return self._current.index

    def getpad(self):
        """How many rows at the end of the current batch repeat the data or are empty."""
        return self._current.pad


class ImageRecordUInt8Iter(ImageRecordIter):
    """``ImageRecordIter`` with ``dtype='uint8'`` (MXNet's deprecated spelling): batches
    of the augmented pixels, no normalisation."""

    def __init__(self, **kwargs):
        kwargs['dtype'] = 'uint8'
        super().__init__(**kwargs)


class ImageRecordInt8Iter(ImageRecordIter):
    """``ImageRecordIter`` with ``dtype='int8'`` (MXNet's deprecated spelling): batches of
    ``pixel - round(mean)``, saturated to int8."""

    def __init__(self, **kwargs):
        kwargs['dtype'] = 'int8'
        super().__init__(**kwargs)
