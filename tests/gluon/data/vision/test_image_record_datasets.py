"""RecordFileDataset, ImageRecordDataset and ImageListDataset: records and images in
the index's order, read by the DataLoader's worker processes, and as MXNet 1.9.1 reads
the same files."""
import numpy as np
import pytest
from PIL import Image

import minigluon as mx
from minigluon import recordio
from minigluon.gluon.data import DataLoader, RecordFileDataset
from minigluon.gluon.data.vision import ImageListDataset, ImageRecordDataset


def images(n, seed=0, size=(6, 5)):
    rng = np.random.RandomState(seed)
    return [rng.randint(0, 256, size=size + (3,)).astype(np.uint8) for _ in range(n)]


def write_rec(folder, rgb_images, labels):
    """A .rec/.idx of PNG-packed images with the given labels, keys in reverse order."""
    rec, idx = str(folder / 'data.rec'), str(folder / 'data.idx')
    with recordio.MXIndexedRecordIO(idx, rec, 'w') as writer:
        for i, (img, label) in enumerate(zip(rgb_images, labels)):
            header = recordio.IRHeader(0, label, i, 0)
            writer.write_idx(100 - i, recordio.pack_img(header, img[:, :, ::-1],
                                                        img_fmt='.png'))
    return rec


def test_record_file_dataset_reads_records_in_index_order(tmp_path):
    rec, idx = str(tmp_path / 'r.rec'), str(tmp_path / 'r.idx')
    with recordio.MXIndexedRecordIO(idx, rec, 'w') as writer:
        for key in [5, 3, 9]:
            writer.write_idx(key, b'payload %d' % key)
    dataset = RecordFileDataset(rec)
    assert len(dataset) == 3
    assert [dataset[i] for i in range(3)] == [b'payload 5', b'payload 3', b'payload 9']
    (tmp_path / 'r.idx').unlink()
    with pytest.raises(mx.MXNetError, match=r'r\.rec has no index .*r\.idx.*im2rec'):
        RecordFileDataset(rec)


def test_image_record_dataset_decodes_images_and_keeps_labels(tmp_path):
    rgb = images(5)
    labels = [0.0, 1.0, [2.0, 3.5], 4.0, 5.0]
    dataset = ImageRecordDataset(write_rec(tmp_path, rgb, labels))
    assert len(dataset) == 5
    for i in range(5):
        image, label = dataset[i]
        assert image.dtype == np.uint8 and image.shape == (6, 5, 3)
        assert (image.asnumpy() == rgb[i]).all()
        assert np.array_equal(np.atleast_1d(label), np.atleast_1d(labels[i]))
    gray, _ = ImageRecordDataset(write_rec(tmp_path, rgb, labels), flag=0)[0]
    expected = (rgb[0].astype(np.int64) @ [9797, 19234, 3737]) >> 15   # OpenCV's PNG gray
    assert gray.shape == (6, 5, 1) and (gray.asnumpy()[:, :, 0] == expected).all()
    doubled = ImageRecordDataset(write_rec(tmp_path, rgb, labels),
                                 transform=lambda x, y: (x.astype('float32') * 2, y))
    assert (doubled[1][0].asnumpy() == rgb[1] * 2.0).all()
    with pytest.raises(mx.MXNetError, match='flag must be 1'):
        ImageRecordDataset(write_rec(tmp_path, rgb, labels), flag=3)


def _to_float(image, label):
    return image.astype('float32') / 255, label


@pytest.mark.parametrize('num_workers', [0, 2])
def test_data_loader_workers_read_the_record_file(tmp_path, num_workers):
    rgb = images(9, seed=1)
    dataset = ImageRecordDataset(write_rec(tmp_path, rgb, [float(i) for i in range(9)]))
    dataset[0]   # the main process has the file open before the workers fork
    loader = DataLoader(dataset.transform(_to_float), batch_size=4,
                        num_workers=num_workers)
    for epoch in range(2):
        seen_images, seen_labels = [], []
        for data, label in loader:
            seen_images.append(data.asnumpy())
            seen_labels.append(label.asnumpy())
        assert np.concatenate(seen_labels).tolist() == list(range(9))
        np.testing.assert_allclose(np.concatenate(seen_images),
                                   np.stack(rgb).astype(np.float32) / 255, rtol=1e-6)


def test_image_list_dataset_from_a_lst_file_and_from_a_list(tmp_path):
    rgb = images(3, seed=2)
    (tmp_path / 'a').mkdir()
    for i, img in enumerate(rgb):
        Image.fromarray(img).save(str(tmp_path / 'a' / ('%d.png' % i)))
    (tmp_path / 'x.lst').write_text('0\t1.000000\ta/0.png\n1\t0.000000\ta/1.png\n'
                                    '2\t2.000000\t3.500000\ta/2.png\n')
    dataset = ImageListDataset(str(tmp_path), 'x.lst')
    assert len(dataset) == 3
    image, label = dataset[2]
    assert (image.asnumpy() == rgb[2]).all() and label.asnumpy().tolist() == [2.0, 3.5]
    assert dataset[0][1].asnumpy().tolist() == [1.0]
    listed = ImageListDataset(str(tmp_path), [[4, 'a/1.png'], [1, 2, 'a/0.png'],
                                              [[7, 8], 'a/2.png']], flag=0)
    assert listed[0][0].shape == (6, 5, 1) and listed[0][1].asnumpy().tolist() == [4.0]
    assert listed[1][1].asnumpy().tolist() == [1.0, 2.0]
    assert listed[2][1].asnumpy().tolist() == [7.0, 8.0]
    (tmp_path / 'bad.lst').write_text('0\ta/0.png\n')
    with pytest.raises(mx.MXNetError, match=r'bad\.lst, line 1.*index<TAB>label'):
        ImageListDataset(str(tmp_path), 'bad.lst')
    with pytest.raises(mx.MXNetError, match=r'entry 0 of imglist'):
        ImageListDataset(str(tmp_path), [['a/0.png']])
    with pytest.raises(mx.MXNetError, match=r'cannot read .*missing\.png'):
        ImageListDataset(str(tmp_path), [[0, 'missing.png']])[0]


READ_WITH_MXNET = '''
import sys
import numpy as np
import mxnet as mx
dataset = mx.gluon.data.vision.ImageRecordDataset(sys.argv[1] + '/data.rec')
np.savez(sys.argv[1] + '/mx.npz', images=np.stack([dataset[i][0].asnumpy() for i in
                                                   range(len(dataset))]),
         labels=np.array([float(dataset[i][1]) for i in range(len(dataset))]))
'''


def test_mxnet_reads_the_same_samples(tmp_path, run_mxnet):
    rgb = images(4, seed=3)
    write_rec(tmp_path, rgb, [3.0, 1.0, 4.0, 1.5])
    run_mxnet(tmp_path, READ_WITH_MXNET)
    expected = np.load(str(tmp_path / 'mx.npz'))
    dataset = ImageRecordDataset(str(tmp_path / 'data.rec'))
    assert [float(dataset[i][1]) for i in range(4)] == expected['labels'].tolist()
    assert (np.stack([dataset[i][0].asnumpy() for i in range(4)]) == expected['images']).all()
