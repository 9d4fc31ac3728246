"""datasets/make_synthetic.py writes a learnable CIFAR-10 stand-in in the real layout;
datasets/get_cifar10.py fetches, verifies and unpacks the archive (from a local server)."""
import hashlib
import importlib.util
import os
import tarfile

import numpy as np
import pytest

from minigluon.gluon.data import DataLoader
from minigluon.gluon.data.vision import CIFAR10

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _script(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'datasets',
                                                                     name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_synthetic = _script('make_synthetic')
get_cifar10 = _script('get_cifar10')


@pytest.fixture(scope='module')
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp('synthetic')
    assert make_synthetic.main(['--root', str(root), '--train', '1003', '--test', '400']) == 0
    return root


def test_files_are_in_the_official_layout(synthetic):
    folder = synthetic / 'cifar-10-batches-bin'
    names = sorted(os.listdir(folder))
    assert names == sorted(['SYNTHETIC', 'batches.meta.txt', 'test_batch.bin'] +
                           ['data_batch_%d.bin' % i for i in range(1, 6)])
    sizes = [os.path.getsize(folder / ('data_batch_%d.bin' % i)) // 3073 for i in range(1, 6)]
    assert sum(sizes) == 1003 and max(sizes) - min(sizes) <= 1
    assert os.path.getsize(folder / 'test_batch.bin') == 400 * 3073
    assert (folder / 'batches.meta.txt').read_text().split() == list(make_synthetic.CLASSES)


def test_cifar10_reads_it_and_knows_it_is_synthetic(synthetic):
    train, test = CIFAR10(str(synthetic)), CIFAR10(str(synthetic), train=False)
    assert len(train) == 1003 and len(test) == 400 and train.synthetic
    counts = np.bincount(train._label, minlength=10)
    assert counts.min() >= 100 and counts.max() <= 101
    data, label = next(iter(DataLoader(train, batch_size=16)))
    assert data.shape == (16, 32, 32, 3) and label.dtype == np.int32
    assert 20 < data.asnumpy().std() < 120


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    def batch(seed, where):
        make_synthetic.make_cifar10(str(tmp_path / where), 20, 10, seed=seed)
        return (tmp_path / where / 'cifar-10-batches-bin' / 'data_batch_2.bin').read_bytes()
    assert batch(3, 'a') == batch(3, 'b')
    assert batch(3, 'a') != batch(4, 'c')


def test_it_is_learnable_well_above_chance(synthetic):
    train, test = CIFAR10(str(synthetic)), CIFAR10(str(synthetic), train=False)
    x = train._data.reshape(len(train), -1).astype(np.float32)
    means = np.stack([x[train._label == c].mean(axis=0) for c in range(10)])
    xt = test._data.reshape(len(test), -1).astype(np.float32)
    distances = (xt ** 2).sum(1)[:, None] - 2 * xt @ means.T + (means ** 2).sum(1)[None]
    accuracy = (distances.argmin(axis=1) == test._label).mean()
    assert accuracy > 0.5  # chance is 0.1


def test_flipping_keeps_the_class_templates():
    templates = make_synthetic.class_templates(np.random.default_rng(0))
    np.testing.assert_allclose(templates, templates[:, :, ::-1])


def test_too_small_sizes_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        make_synthetic.main(['--root', str(tmp_path), '--train', '3'])
    assert 'need at least 5 training images' in capsys.readouterr().err


def test_get_cifar10_fetches_verifies_and_unpacks(tmp_path, synthetic, http_server, capsys):
    served = tmp_path / 'served'
    served.mkdir()
    with tarfile.open(served / 'cifar-10-binary.tar.gz', 'w:gz') as tar:
        tar.add(synthetic / 'cifar-10-batches-bin', arcname='cifar-10-batches-bin')
    md5 = hashlib.md5((served / 'cifar-10-binary.tar.gz').read_bytes()).hexdigest()
    server = http_server(served)
    url = server.url + 'cifar-10-binary.tar.gz'
    root = tmp_path / 'root'
    assert get_cifar10.main(['--root', str(root), '--url', url, '--md5', md5]) == 0
    assert len(CIFAR10(str(root), train=False)) == 400
    assert get_cifar10.main(['--root', str(tmp_path / 'bad'), '--url', url, '--md5', '0' * 32,
                             '--retries', '0']) == 1
    err = capsys.readouterr().err
    assert 'MD5 checksum mismatch' in err and 'make_synthetic.py' in err
