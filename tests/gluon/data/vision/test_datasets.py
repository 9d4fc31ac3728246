"""Vision data sets read back small files written here in the official formats."""
import gzip
import hashlib
import io
import os
import struct
import tarfile

import numpy as np
import pytest

from minigluon import nd
from minigluon.base import MXNetError
from minigluon.gluon.data import DataLoader
from minigluon.gluon.data.vision import (CIFAR10, CIFAR100, MNIST, DatasetNotFoundError,
                                         FashionMNIST, ImageFolderDataset)

CIFAR10_TRAIN = ['data_batch_%d.bin' % i for i in range(1, 6)]


def cifar_record_bytes(images, *label_columns):
    """Official layout, written independently: label byte(s), then R, G and B planes."""
    out = bytearray()
    for i, image in enumerate(images):
        for column in label_columns:
            out.append(int(column[i]))
        for channel in range(3):
            out += bytes(image[:, :, channel].flatten().tolist())
    return bytes(out)


def write_cifar10(folder, counts=(3, 2, 2, 1, 2), test=3, seed=0):
    rng = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    split = {}
    for name, n in list(zip(CIFAR10_TRAIN, counts)) + [('test_batch.bin', test)]:
        images = rng.randint(0, 256, size=(n, 32, 32, 3)).astype(np.uint8)
        labels = rng.randint(0, 10, size=n)
        with open(os.path.join(folder, name), 'wb') as f:
            f.write(cifar_record_bytes(images, labels))
        split[name] = (images, labels)
    train = [split[n] for n in CIFAR10_TRAIN]
    return ((np.concatenate([t[0] for t in train]), np.concatenate([t[1] for t in train])),
            split['test_batch.bin'])


@pytest.mark.parametrize('subfolder', ['', 'cifar-10-batches-bin'])
def test_cifar10_reads_the_official_layout(tmp_path, subfolder):
    (train_x, train_y), (test_x, test_y) = write_cifar10(os.path.join(tmp_path, subfolder))
    train = CIFAR10(str(tmp_path))
    assert len(train) == 10
    image, label = train[4]
    assert isinstance(image, nd.NDArray) and image.shape == (32, 32, 3)
    assert image.dtype == np.uint8 and isinstance(label, np.int32)
    for i in range(10):
        np.testing.assert_array_equal(train[i][0].asnumpy(), train_x[i])
        assert train[i][1] == train_y[i]
    test = CIFAR10(str(tmp_path), train=False)
    assert len(test) == 3 and test[2][1] == test_y[2]
    np.testing.assert_array_equal(test[2][0].asnumpy(), test_x[2])
    assert not train.synthetic


def test_cifar10_transform_and_data_loader(tmp_path):
    (train_x, train_y), _ = write_cifar10(str(tmp_path))
    ds = CIFAR10(str(tmp_path), transform=lambda x, y: (x.astype('float32') / 255, y + 1))
    x, y = ds[0]
    np.testing.assert_allclose(x.asnumpy(), train_x[0] / 255.0, rtol=1e-6)
    assert y == train_y[0] + 1
    data, label = next(iter(DataLoader(CIFAR10(str(tmp_path)), batch_size=4)))
    assert data.shape == (4, 32, 32, 3) and label.dtype == np.int32
    np.testing.assert_array_equal(label.asnumpy(), train_y[:4])


def test_a_synthetic_set_is_announced_once_per_process(tmp_path, caplog):
    write_cifar10(str(tmp_path))
    (tmp_path / 'SYNTHETIC').write_text('')
    with caplog.at_level('WARNING'):
        train = CIFAR10(str(tmp_path))
        test = CIFAR10(str(tmp_path), train=False)
        CIFAR10(str(tmp_path))
    assert train.synthetic and test.synthetic
    notes = [r for r in caplog.records if 'SYNTHETIC' in r.getMessage()]
    assert len(notes) == 1, [r.getMessage() for r in notes]


def test_samples_are_read_only_views(tmp_path):
    write_cifar10(str(tmp_path))
    image, _ = CIFAR10(str(tmp_path))[0]
    with pytest.raises(MXNetError, match='read-only'):
        image[0, 0, 0] = 1


def test_cifar100_coarse_and_fine_labels(tmp_path):
    rng = np.random.RandomState(1)
    images = rng.randint(0, 256, size=(4, 32, 32, 3)).astype(np.uint8)
    coarse, fine = np.array([0, 19, 5, 7]), np.array([99, 3, 50, 0])
    folder = tmp_path / 'cifar-100-binary'
    folder.mkdir()
    (folder / 'train.bin').write_bytes(cifar_record_bytes(images, coarse, fine))
    (folder / 'test.bin').write_bytes(cifar_record_bytes(images[:1], coarse[:1], fine[:1]))
    ds = CIFAR100(str(tmp_path))
    assert [ds[i][1] for i in range(4)] == coarse.tolist()
    assert [CIFAR100(str(tmp_path), fine_label=True)[i][1] for i in range(4)] == fine.tolist()
    np.testing.assert_array_equal(ds[3][0].asnumpy(), images[3])
    assert len(CIFAR100(str(tmp_path), train=False)) == 1


def test_truncated_cifar_file_raises(tmp_path):
    write_cifar10(str(tmp_path))
    path = tmp_path / 'data_batch_3.bin'
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(MXNetError, match='data_batch_3.bin is truncated or not a CIFAR binary'):
        CIFAR10(str(tmp_path))


def test_cifar_file_with_impossible_label_raises(tmp_path):
    write_cifar10(str(tmp_path))
    path = tmp_path / 'test_batch.bin'
    raw = bytearray(path.read_bytes())
    raw[3073] = 42  # the label byte of the second record
    path.write_bytes(bytes(raw))
    with pytest.raises(MXNetError, match='record 1 has class label 42, but labels are 0..9'):
        CIFAR10(str(tmp_path), train=False)


def test_cifar100_file_read_as_cifar10_is_rejected(tmp_path):
    images = np.zeros((3, 32, 32, 3), np.uint8)
    (tmp_path / 'test_batch.bin').write_bytes(cifar_record_bytes(images, [1, 2, 3], [4, 5, 6]))
    with pytest.raises(MXNetError, match='truncated or not a CIFAR binary file'):
        CIFAR10(str(tmp_path), train=False)


def test_missing_cifar10_lists_expected_files_and_scripts(tmp_path, monkeypatch,
                                                         closed_port_url):
    class OfflineCIFAR10(CIFAR10):
        _archive_url = closed_port_url + 'cifar-10-binary.tar.gz'

    monkeypatch.setattr('minigluon.gluon.utils.RETRY_DELAY_S', 0.01)
    with pytest.raises(DatasetNotFoundError) as info:
        OfflineCIFAR10(str(tmp_path / 'nowhere'))
    text = str(info.value)
    for name in CIFAR10_TRAIN:
        assert name in text
    assert 'datasets/get_cifar10.py' in text and 'datasets/make_synthetic.py' in text
    assert 'Downloading them failed' in text
    assert isinstance(info.value, FileNotFoundError)


def test_default_root_follows_minigluon_home(tmp_path, monkeypatch, closed_port_url):
    class OfflineCIFAR10(CIFAR10):
        _archive_url = closed_port_url + 'cifar-10-binary.tar.gz'

    monkeypatch.setenv('MINIGLUON_HOME', str(tmp_path))
    monkeypatch.setattr('minigluon.gluon.utils.RETRY_DELAY_S', 0.01)
    with pytest.raises(DatasetNotFoundError, match=str(tmp_path / 'datasets' / 'cifar10')):
        OfflineCIFAR10(train=False)
    write_cifar10(str(tmp_path / 'datasets' / 'cifar10' / 'cifar-10-batches-bin'))
    assert len(OfflineCIFAR10(train=False)) == 3


def _cifar_archive(tmp_path):
    """A .tar.gz laid out like the official one, and its MD5."""
    source = tmp_path / 'source'
    expected = write_cifar10(str(source / 'cifar-10-batches-bin'))
    (source / 'cifar-10-batches-bin' / 'batches.meta.txt').write_text('airplane\n')
    served = tmp_path / 'served'
    served.mkdir()
    archive = served / 'cifar-10-binary.tar.gz'
    with tarfile.open(archive, 'w:gz') as tar:
        tar.add(source / 'cifar-10-batches-bin', arcname='cifar-10-batches-bin')
    return served, hashlib.md5(archive.read_bytes()).hexdigest(), expected


def test_missing_files_are_downloaded_verified_and_unpacked(tmp_path, http_server):
    served, md5, ((train_x, _), _) = _cifar_archive(tmp_path)
    server = http_server(served)

    class LocalCIFAR10(CIFAR10):
        _archive_url = server.url + 'cifar-10-binary.tar.gz'
        _archive_md5 = md5

    root = tmp_path / 'root'
    ds = LocalCIFAR10(str(root))
    assert len(ds) == 10 and len(LocalCIFAR10(str(root))) == 10
    assert server.requests == 1
    np.testing.assert_array_equal(ds[9][0].asnumpy(), train_x[9])
    assert sorted(os.listdir(root)) == ['cifar-10-batches-bin']  # archive removed after use


def test_download_with_wrong_checksum_is_refused(tmp_path, http_server):
    served, md5, _ = _cifar_archive(tmp_path)
    server = http_server(served)

    class BadCIFAR10(CIFAR10):
        _archive_url = server.url + 'cifar-10-binary.tar.gz'
        _archive_md5 = '0' * 32

    with pytest.raises(DatasetNotFoundError, match='MD5 checksum mismatch'):
        BadCIFAR10(str(tmp_path / 'root'))
    assert os.listdir(tmp_path / 'root') == []


def test_unsafe_archive_entries_are_refused(tmp_path):
    archive = tmp_path / 'evil.tar.gz'
    with tarfile.open(archive, 'w:gz') as tar:
        info = tarfile.TarInfo('cifar-10-batches-bin/../../escaped.bin')
        info.size = 3
        tar.addfile(info, io.BytesIO(b'bad'))
    from minigluon.gluon.data.vision.datasets import extract_folder
    with pytest.raises(MXNetError, match='unsafe entry'):
        extract_folder(str(archive), str(tmp_path), 'cifar-10-batches-bin')
    assert not (tmp_path.parent / 'escaped.bin').exists()


# ---- MNIST ---------------------------------------------------------------------------------
def idx_bytes(array):
    """IDX: two zero bytes, type 0x08 (ubyte), ndim, big-endian dims, then the data."""
    header = bytes([0, 0, 8, array.ndim]) + b''.join(struct.pack('>I', d) for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_mnist(folder, n_train=5, n_test=3, gz=True, seed=0):
    rng = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    out = {}
    for prefix, n in (('train', n_train), ('t10k', n_test)):
        images = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, size=n).astype(np.uint8)
        for kind, arr in (('images-idx3', images), ('labels-idx1', labels)):
            name = os.path.join(folder, '%s-%s-ubyte' % (prefix, kind))
            if gz:
                with gzip.open(name + '.gz', 'wb') as f:
                    f.write(idx_bytes(arr))
            else:
                with open(name, 'wb') as f:
                    f.write(idx_bytes(arr))
        out[prefix] = (images, labels)
    return out


@pytest.mark.parametrize('cls', [MNIST, FashionMNIST])
@pytest.mark.parametrize('gz', [True, False])
def test_mnist_reads_idx_files_plain_and_gzipped(tmp_path, cls, gz):
    expected = write_mnist(str(tmp_path), gz=gz)
    train, test = cls(str(tmp_path)), cls(str(tmp_path), train=False)
    assert len(train) == 5 and len(test) == 3
    image, label = test[2]
    assert image.shape == (28, 28, 1) and image.dtype == np.uint8
    assert isinstance(label, np.int32) and label == expected['t10k'][1][2]
    np.testing.assert_array_equal(image.asnumpy()[:, :, 0], expected['t10k'][0][2])


def test_truncated_gzip_raises(tmp_path):
    write_mnist(str(tmp_path))
    path = tmp_path / 'train-images-idx3-ubyte.gz'
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(MXNetError, match='truncated or corrupt'):
        MNIST(str(tmp_path))


def test_idx_size_must_match_its_header(tmp_path):
    write_mnist(str(tmp_path), gz=False)
    path = tmp_path / 't10k-images-idx3-ubyte'
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(MXNetError, match=r'is truncated: its header announces shape \(3, 28, 28'):
        MNIST(str(tmp_path), train=False)
    path.write_bytes(idx_bytes(np.zeros((3, 28, 28))) + b'\0')
    with pytest.raises(MXNetError, match='is malformed'):
        MNIST(str(tmp_path), train=False)


def test_idx_magic_and_counts_are_checked(tmp_path):
    write_mnist(str(tmp_path), gz=False)
    (tmp_path / 't10k-labels-idx1-ubyte').write_bytes(b'\0\0\x0d\x01' + b'\0' * 8)
    with pytest.raises(MXNetError, match='not an IDX file of unsigned bytes with 1 dimension'):
        MNIST(str(tmp_path), train=False)
    (tmp_path / 't10k-labels-idx1-ubyte').write_bytes(idx_bytes(np.zeros(2)))
    with pytest.raises(MXNetError, match='holds 3 images but .* holds 2 labels'):
        MNIST(str(tmp_path), train=False)
    (tmp_path / 't10k-labels-idx1-ubyte').write_bytes(idx_bytes(np.array([1, 10, 2])))
    with pytest.raises(MXNetError, match='record 1 has class label 10'):
        MNIST(str(tmp_path), train=False)


def test_missing_mnist_lists_files(tmp_path, monkeypatch, closed_port_url):
    class OfflineMNIST(MNIST):
        _base_url = closed_port_url

    monkeypatch.setattr('minigluon.gluon.utils.RETRY_DELAY_S', 0.01)
    with pytest.raises(DatasetNotFoundError, match='t10k-images-idx3-ubyte or '
                                                   't10k-images-idx3-ubyte.gz'):
        OfflineMNIST(str(tmp_path), train=False)


# ---- image folders -------------------------------------------------------------------------
def test_image_folder_dataset(tmp_path):
    from PIL import Image
    rng = np.random.RandomState(0)
    pictures = {}
    for cls in ('dog', 'cat'):
        (tmp_path / cls).mkdir()
        for k in range(2):
            arr = rng.randint(0, 256, size=(6, 5, 3)).astype(np.uint8)
            Image.fromarray(arr).save(tmp_path / cls / ('%d.png' % k))
            pictures[(cls, k)] = arr
    (tmp_path / 'cat' / 'notes.txt').write_text('not an image')
    (tmp_path / 'README').write_text('not a class')
    ds = ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ['cat', 'dog'] and len(ds) == 4
    assert [label for _, label in ds.items] == [0, 0, 1, 1]
    image, label = ds[3]
    assert isinstance(label, np.int32) and label == 1
    np.testing.assert_array_equal(image.asnumpy(), pictures[('dog', 1)])
    gray, _ = ImageFolderDataset(str(tmp_path), flag=0)[0]
    assert gray.shape == (6, 5, 1)
    expected = np.asarray(Image.fromarray(pictures[('cat', 0)]).convert('L'))
    np.testing.assert_array_equal(gray.asnumpy()[:, :, 0], expected)
    flipped = ImageFolderDataset(str(tmp_path), transform=lambda x, y: (x[:, ::-1], y))
    np.testing.assert_array_equal(flipped[0][0].asnumpy(), pictures[('cat', 0)][:, ::-1])


def test_image_folder_errors(tmp_path):
    with pytest.raises(DatasetNotFoundError, match='is not a folder'):
        ImageFolderDataset(str(tmp_path / 'missing'))
    (tmp_path / 'empty_class').mkdir()
    with pytest.raises(DatasetNotFoundError, match='no images under'):
        ImageFolderDataset(str(tmp_path))
    (tmp_path / 'empty_class' / 'broken.jpg').write_bytes(b'not a jpeg')
    with pytest.raises(MXNetError, match='cannot decode .*broken.jpg'):
        ImageFolderDataset(str(tmp_path))[0]
