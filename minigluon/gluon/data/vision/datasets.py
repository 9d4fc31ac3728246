"""Vision data sets: the classic ones read from their official binary files, and
images from folders, lists or RecordIO files.

Each sample is ``(image, label)``: the image an HWC uint8 NDArray on cpu(0) (a
read-only view into the data set, as Gluon's are views), the label a numpy int32.
Files are found in ``root`` or in the folder the official archive unpacks to; when
they are missing they are downloaded with their published checksums, and when that
fails the error lists the files expected. Files are checked while read: a truncated
or malformed file raises, it never gives wrong samples. No pickle is read.
"""
import gzip
import logging
import os
import shutil
import struct
import tarfile
import tempfile
import zlib

import numpy as np

from .... import recordio
from ....base import MXNetError, data_dir
from ....context import cpu
from ....ndarray import NDArray, array
from ....ndarray.image_codec import decode_raw
from ...utils import download
from ..dataset import Dataset, RecordFileDataset

__all__ = ['DatasetNotFoundError', 'CIFAR10', 'CIFAR100', 'MNIST', 'FashionMNIST',
           'ImageFolderDataset', 'ImageRecordDataset', 'ImageListDataset']

_log = logging.getLogger(__name__)
SYNTHETIC_MARKER = 'SYNTHETIC'  # written by datasets/make_synthetic.py beside its files
_synthetic_noted = set()        # folders already said to be synthetic: once per process


class DatasetNotFoundError(MXNetError, FileNotFoundError):
    """The files of a data set are missing and could not be downloaded."""


def default_root(name):
    """``$MINIGLUON_HOME/datasets/<name>`` (``~/.minigluon/datasets/<name>``)."""
    return os.path.join(data_dir(), 'datasets', name)


class _DownloadedDataset(Dataset):
    """Images and labels held in memory as numpy; samples are NDArray views."""

    def __init__(self, root, transform):
        self._root = os.path.expanduser(os.fspath(root))
        self._transform = transform
        images, labels = self._get_data()
        images.flags.writeable = False  # samples are views: they must not alter the data set
        self._data, self._label = images, labels
        self._ctx = cpu(0)

    def __getitem__(self, idx):
        image = NDArray(self._data[idx], self._ctx)
        if self._transform is not None:
            return self._transform(image, self._label[idx])
        return image, self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError

    # ---- finding and fetching files --------------------------------------------------
    def _find(self, names):
        """The folder holding every file of ``names`` (each a tuple of accepted names)."""
        for folder in self._search_folders():
            found = [next((os.path.join(folder, n) for n in choices
                           if os.path.isfile(os.path.join(folder, n))), None)
                     for choices in names]
            if all(found):
                return found
        return None

    def _search_folders(self):
        return [self._root]

    def _files(self, names):
        """Paths of ``names``, downloading what is missing; a clear error if that fails."""
        found = self._find(names)
        if found is None:
            try:
                self.fetch(self._root)
            except MXNetError as exc:
                raise DatasetNotFoundError(self._missing_message(names, exc)) from exc
            found = self._find(names)
            if found is None:
                raise DatasetNotFoundError(self._missing_message(names, None))
        return found

    def _missing_message(self, names, error):
        folders = ' or '.join(self._search_folders())
        lines = ['%s: the data set files are not in %s' % (type(self).__name__, folders),
                 'Expected files: %s' % ', '.join(' or '.join(c) for c in names)]
        if error is not None:
            lines.append('Downloading them failed: %s' % error)
        lines.append(self._how_to_fetch())
        return '\n'.join(lines)

    def _how_to_fetch(self):
        raise NotImplementedError

    @classmethod
    def fetch(cls, root=None):
        """Download (and unpack) the official files into ``root``, verifying checksums."""
        raise NotImplementedError


def _check_labels(labels, num_classes, path, what):
    bad = np.flatnonzero(labels >= num_classes)
    if bad.size:
        raise MXNetError('%s: record %d has %s label %d, but labels are 0..%d: the file is '
                         'corrupt or not in the expected format; delete it and fetch it again'
                         % (path, bad[0], what, labels[bad[0]], num_classes - 1))


# ---- CIFAR ---------------------------------------------------------------------------------
def read_cifar_bin(path, label_fields):
    """Images (N, 32, 32, 3) uint8 and label columns of a CIFAR binary file.

    A record is one label byte per entry of ``label_fields`` (a list of
    ``(name, num_classes)``) followed by 3,072 pixel bytes: the 1,024 red values, then
    green, then blue, each row-major 32 x 32.
    """
    raw = np.fromfile(path, dtype=np.uint8)
    record = len(label_fields) + 3072
    if raw.size == 0 or raw.size % record:
        raise MXNetError('%s is truncated or not a CIFAR binary file: its %d bytes are not a '
                         'whole number of %d-byte records (%d label byte(s) + 3,072 pixel '
                         'bytes); delete it and fetch it again'
                         % (path, raw.size, record, len(label_fields)))
    raw = raw.reshape(-1, record)
    for column, (what, num_classes) in enumerate(label_fields):
        _check_labels(raw[:, column], num_classes, path, what)
    images = raw[:, len(label_fields):].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return images, raw[:, :len(label_fields)]


def extract_folder(archive, root, folder):
    """Unpack ``folder/`` of the tar archive into ``root``, file by file and atomically."""
    try:
        with tarfile.open(archive, 'r:*') as tar:
            members = [m for m in tar.getmembers()
                       if m.name.rstrip('/') == folder or m.name.startswith(folder + '/')]
            for m in members:
                parts = m.name.split('/')
                if not (m.isfile() or m.isdir()) or '..' in parts or os.path.isabs(m.name):
                    raise MXNetError('%s: refusing to extract the unsafe entry %r'
                                     % (archive, m.name))
            if not any(m.isfile() for m in members):
                raise MXNetError('%s does not contain the folder %s/' % (archive, folder))
            tmp = tempfile.mkdtemp(prefix='.extract-', dir=root)
            try:
                extra = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}
                tar.extractall(tmp, members=members, **extra)
                target = os.path.join(root, folder)
                os.makedirs(target, exist_ok=True)
                for dirpath, _, filenames in os.walk(os.path.join(tmp, folder)):
                    rel = os.path.relpath(dirpath, os.path.join(tmp, folder))
                    os.makedirs(os.path.join(target, rel), exist_ok=True)
                    for name in filenames:
                        os.replace(os.path.join(dirpath, name), os.path.join(target, rel, name))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise MXNetError('cannot unpack %s: %s: %s; delete it and download it again'
                         % (archive, type(exc).__name__, exc)) from exc


class _CIFAR(_DownloadedDataset):
    _archive_url = _archive_md5 = _folder = None
    _train_files = _test_files = ()
    _script = None

    def _search_folders(self):
        return [self._root, os.path.join(self._root, self._folder)]

    def _read(self, label_fields):
        names = [(n,) for n in (self._train_files if self._train else self._test_files)]
        paths = self._files(names)
        parts = [read_cifar_bin(p, label_fields) for p in paths]
        images = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        labels = np.concatenate([p[1] for p in parts])
        self.synthetic = os.path.exists(os.path.join(os.path.dirname(paths[0]),
                                                     SYNTHETIC_MARKER))
        if self.synthetic and os.path.dirname(paths[0]) not in _synthetic_noted:
            _synthetic_noted.add(os.path.dirname(paths[0]))
            _log.warning('%s: %s holds the SYNTHETIC stand-in written by '
                         'datasets/make_synthetic.py, not the real data set',
                         type(self).__name__, os.path.dirname(paths[0]))
        return np.ascontiguousarray(images), labels

    @classmethod
    def fetch(cls, root=None, url=None, md5=None, retries=1):
        """Download the official archive (or ``url``), check its MD5 and unpack it in ``root``.

        Returns the folder holding the files.
        """
        root = os.path.expanduser(root or default_root(cls._default_name))
        os.makedirs(root, exist_ok=True)
        archive = download(url or cls._archive_url, path=root, retries=retries,
                           md5_hash=md5 or cls._archive_md5)
        extract_folder(archive, root, cls._folder)
        os.remove(archive)
        return os.path.join(root, cls._folder)

    def _how_to_fetch(self):
        hint = ('Download %s (MD5 %s) and unpack it into %s'
                % (self._archive_url, self._archive_md5, self._root))
        if self._script:
            hint = ('Run `python datasets/%s --root %s` to fetch the real set, or '
                    '`python datasets/make_synthetic.py --root %s` for a synthetic stand-in '
                    'in the same format. (%s.)' % (self._script, self._root, self._root, hint))
        return hint


class CIFAR10(_CIFAR):
    """CIFAR-10: 32 x 32 colour images in 10 classes, 50,000 for training, 10,000 for test.

    Parameters
    ----------
    root : str, default ``$MINIGLUON_HOME/datasets/cifar10``
        Folder holding ``data_batch_1.bin`` .. ``data_batch_5.bin`` and
        ``test_batch.bin``, directly or in ``cifar-10-batches-bin/``.
    train : bool, default True
        The training set, else the test set.
    transform : callable, optional
        ``transform(image, label)`` returning the sample, applied on access.
    """
    _default_name = 'cifar10'
    _archive_url = 'https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz'
    _archive_md5 = 'c32a1d4ab5d03f1434e2b2c0e0f2e6c1'
    _folder = 'cifar-10-batches-bin'
    _train_files = tuple('data_batch_%d.bin' % i for i in range(1, 6))
    _test_files = ('test_batch.bin',)
    _script = 'get_cifar10.py'

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        super().__init__(root or default_root(self._default_name), transform)

    def _get_data(self):
        images, labels = self._read([('class', 10)])
        return images, labels[:, 0].astype(np.int32)


class CIFAR100(_CIFAR):
    """CIFAR-100: like CIFAR-10 with 100 fine classes grouped into 20 coarse ones.

    Parameters
    ----------
    root : str, default ``$MINIGLUON_HOME/datasets/cifar100``
        Folder holding ``train.bin`` and ``test.bin``, directly or in
        ``cifar-100-binary/``.
    fine_label : bool, default False
        Labels of the 100 fine classes, else of the 20 coarse classes.
    train : bool, default True
    transform : callable, optional
    """
    _default_name = 'cifar100'
    _archive_url = 'https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz'
    _archive_md5 = '03b5dce01913d631647c71ecec9e9cb8'
    _folder = 'cifar-100-binary'
    _train_files = ('train.bin',)
    _test_files = ('test.bin',)

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._train = train
        self._fine_label = fine_label
        super().__init__(root or default_root(self._default_name), transform)

    def _get_data(self):
        images, labels = self._read([('coarse', 20), ('fine', 100)])
        return images, labels[:, 1 if self._fine_label else 0].astype(np.int32)


# ---- MNIST ---------------------------------------------------------------------------------
def read_idx(path, ndim):
    """The uint8 array of an IDX file (plain, or gzip when ``path`` ends in ``.gz``)."""
    try:
        if path.endswith('.gz'):
            with gzip.open(path, 'rb') as f:
                content = f.read()
        else:
            with open(path, 'rb') as f:
                content = f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise MXNetError('cannot read %s: %s: %s; the file is truncated or corrupt, delete it '
                         'and fetch it again' % (path, type(exc).__name__, exc)) from exc
    header = 4 + 4 * ndim
    if len(content) < header or content[:2] != b'\0\0' or content[2] != 0x08 \
            or content[3] != ndim:
        raise MXNetError('%s is not an IDX file of unsigned bytes with %d dimension(s) (its '
                         'header is %r)' % (path, ndim, content[:4]))
    shape = struct.unpack('>%dI' % ndim, content[4:header])
    expected = header + int(np.prod(shape, dtype=np.int64))
    if len(content) != expected:
        raise MXNetError('%s is %s: its header announces shape %s (%d bytes in all) but it has '
                         '%d bytes; delete it and fetch it again'
                         % (path, 'truncated' if len(content) < expected else 'malformed',
                            shape, expected, len(content)))
    return np.frombuffer(content, dtype=np.uint8, offset=header).reshape(shape)


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits: 28 x 28 x 1 images, 10 classes (60,000 train, 10,000 test).

    Parameters
    ----------
    root : str, default ``$MINIGLUON_HOME/datasets/mnist``
        Folder holding the four IDX files (``train-images-idx3-ubyte`` ...), plain or
        ``.gz``.
    train : bool, default True
    transform : callable, optional
        ``transform(image, label)`` returning the sample, applied on access.
    """
    _default_name = 'mnist'
    _base_url = 'https://ossci-datasets.s3.amazonaws.com/mnist/'
    _md5 = {'train-images-idx3-ubyte.gz': 'f68b3c2dcbeaaa9fbdd348bbdeb94873',
            'train-labels-idx1-ubyte.gz': 'd53e105ee54ea40749a09fcbcd1e9432',
            't10k-images-idx3-ubyte.gz': '9fb629c4189551a2d022fa330f9573f3',
            't10k-labels-idx1-ubyte.gz': 'ec29112dd5afa0611ce80d1b7f02629c'}

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        super().__init__(root or default_root(self._default_name), transform)

    def _names(self):
        prefix = 'train' if self._train else 't10k'
        return [('%s-images-idx3-ubyte' % prefix, '%s-images-idx3-ubyte.gz' % prefix),
                ('%s-labels-idx1-ubyte' % prefix, '%s-labels-idx1-ubyte.gz' % prefix)]

    def _get_data(self):
        image_path, label_path = self._files(self._names())
        images = read_idx(image_path, 3)
        labels = read_idx(label_path, 1)
        if len(images) != len(labels):
            raise MXNetError('%s holds %d images but %s holds %d labels; one of them is corrupt'
                             % (image_path, len(images), label_path, len(labels)))
        _check_labels(labels, 10, label_path, 'class')
        return images[..., np.newaxis], labels.astype(np.int32)

    @classmethod
    def fetch(cls, root=None):
        root = os.path.expanduser(root or default_root(cls._default_name))
        for name, md5 in cls._md5.items():
            download(cls._base_url + name, path=os.path.join(root, name), md5_hash=md5,
                     retries=1)
        return root

    def _how_to_fetch(self):
        return 'Download them from %s (MD5s: %s) into %s' % (
            self._base_url, ', '.join('%s %s' % kv for kv in self._md5.items()), self._root)


class FashionMNIST(MNIST):
    """Fashion-MNIST: Zalando's article images in MNIST's format, 10 classes.

    Parameters
    ----------
    root : str, default ``$MINIGLUON_HOME/datasets/fashion-mnist``
    train : bool, default True
    transform : callable, optional
    """
    _default_name = 'fashion-mnist'
    _base_url = 'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/'
    _md5 = {'train-images-idx3-ubyte.gz': '8d4fb7e6c68d591d4c3dfef9ec88bf0d',
            'train-labels-idx1-ubyte.gz': '25c81989df183df01b3e8a0aad5dffbe',
            't10k-images-idx3-ubyte.gz': 'bef4ecab320f06d8554ea6380940ec79',
            't10k-labels-idx1-ubyte.gz': 'bb300cfdad3c16e7a12a480ee83cd310'}


# ---- image folders -------------------------------------------------------------------------
class ImageFolderDataset(Dataset):
    """Images stored as ``root/<class name>/<image>``, read with Pillow on access.

    Classes are the sub-folders of ``root`` in sorted order (``synsets``); ``items``
    lists ``(path, label)``. Files other than .jpg, .jpeg and .png are ignored.

    Parameters
    ----------
    root : str
    flag : {0, 1}, default 1
        1 decodes to RGB (H x W x 3), 0 to grayscale (H x W x 1).
    transform : callable, optional
        ``transform(image, label)`` returning the sample, applied on access.
    """
    _exts = ('.jpg', '.jpeg', '.png')

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(os.fspath(root))
        if flag not in (0, 1):
            raise MXNetError('ImageFolderDataset: flag must be 1 (colour) or 0 (grayscale), '
                             'got %r' % (flag,))
        self._flag = flag
        self._transform = transform
        if not os.path.isdir(self._root):
            raise DatasetNotFoundError('ImageFolderDataset: %s is not a folder; expected '
                                       'root/<class name>/<image>.jpg|.jpeg|.png' % self._root)
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                _log.warning('ImageFolderDataset: ignoring %s, which is not a folder', path)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                if os.path.splitext(name)[1].lower() in self._exts:
                    self.items.append((os.path.join(path, name), label))
                else:
                    _log.warning('ImageFolderDataset: ignoring %s (only %s are read)',
                                 os.path.join(path, name), ', '.join(self._exts))
        if not self.items:
            raise DatasetNotFoundError('ImageFolderDataset: no images under %s; expected '
                                       'root/<class name>/<image>.jpg|.jpeg|.png' % self._root)

    def __getitem__(self, idx):
        from PIL import Image, UnidentifiedImageError
        path, label = self.items[idx]
        try:
            with Image.open(path) as img:
                data = np.asarray(img.convert('RGB' if self._flag else 'L'))
        except (OSError, UnidentifiedImageError, SyntaxError) as exc:
            raise MXNetError('ImageFolderDataset: cannot decode %s: %s' % (path, exc)) from exc
        if data.ndim == 2:
            data = data[:, :, np.newaxis]
        image, label = NDArray(data, cpu(0)), np.int32(label)
        if self._transform is not None:
            return self._transform(image, label)
        return image, label

    def __len__(self):
        return len(self.items)


def _check_flag(cls, flag):
    if flag not in (0, 1):
        raise MXNetError('%s: flag must be 1 (colour) or 0 (grayscale), got %r'
                         % (cls.__name__, flag))
    return flag


class ImageRecordDataset(RecordFileDataset):
    """Images and labels from a RecordIO file (``.rec`` with its ``.idx``), as written
    by ``tools/im2rec.py`` or ``recordio.pack_img``.

    Each sample is ``(image, label)``: the image decoded to an HWC uint8 NDArray (RGB,
    or one gray channel), the label the record header's (a float, or a float32 numpy
    array for several labels).

    Parameters
    ----------
    filename : str
        Path of the ``.rec`` file; its ``.idx`` must be beside it.
    flag : {0, 1}, default 1
        1 decodes to three channels, 0 to grayscale.
    transform : callable, optional
        ``transform(image, label)`` returning the sample, applied on access.
    """

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = _check_flag(type(self), flag)
        self._transform = transform

    def __getitem__(self, idx):
        header, encoded = recordio.unpack(super().__getitem__(idx))
        what = 'record %d of %s' % (idx, self.filename)
        image = array(decode_raw(encoded, self._flag, True, what), dtype=np.uint8)
        if self._transform is not None:
            return self._transform(image, header.label)
        return image, header.label


class ImageListDataset(Dataset):
    """Image files named by a list, with their labels.

    Parameters
    ----------
    root : str, default '.'
        The folder the image paths are relative to.
    imglist : str or list
        A ``.lst`` file under ``root`` (tab-separated ``index, label(s)..., path`` lines,
        as ``tools/im2rec.py --list`` writes), or a list of ``[label, path]`` or
        ``[label_1, ..., label_k, path]`` entries (a label may also be a list).
    flag : {0, 1}, default 1
        1 decodes to three channels, 0 to grayscale.

    Each sample is ``(image, label)``: an HWC uint8 NDArray and a float32 NDArray of
    the entry's labels.
    """

    def __init__(self, root='.', imglist=None, flag=1):
        self._root = os.path.expanduser(os.fspath(root))
        self._flag = _check_flag(type(self), flag)
        self.items = []
        if isinstance(imglist, (str, os.PathLike)):
            self._read_list(os.path.join(self._root, os.fspath(imglist)))
        elif isinstance(imglist, (list, tuple)):
            for number, entry in enumerate(imglist):
                if not isinstance(entry, (list, tuple)) or len(entry) < 2 \
                        or not isinstance(entry[-1], str):
                    raise MXNetError('ImageListDataset: entry %d of imglist is %r; each '
                                     'entry must be [label(s)..., path]' % (number, entry))
                labels = entry[:-1] if len(entry) > 2 else entry[0]
                self.items.append((os.path.join(self._root, entry[-1]),
                                   np.atleast_1d(np.asarray(labels, dtype=np.float32))))
        else:
            raise MXNetError('ImageListDataset: imglist must be a .lst file name or a list '
                             'of [label(s)..., path] entries, got %s' % type(imglist).__name__)

    def _read_list(self, path):
        for _, labels, name in recordio.read_list(path):
            self.items.append((os.path.join(self._root, name), labels.astype(np.float32)))

    def __getitem__(self, idx):
        path, labels = self.items[idx]
        try:
            with open(path, 'rb') as f:
                data = decode_raw(f, self._flag, True, path)
        except OSError as exc:
            raise MXNetError('ImageListDataset: cannot read %s: %s'
                             % (path, exc.strerror or exc)) from None
        return array(data, dtype=np.uint8), array(labels)

    def __len__(self):
        return len(self.items)
