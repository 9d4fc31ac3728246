"""mx.recordio: the record format byte for byte, the index, image records, processes,
clear errors, and the exchange of files with a real MXNet 1.9.1."""
import multiprocessing
import os
import pickle
import struct

import numpy as np
import pytest

import minigluon as mx
from minigluon import recordio

MAGIC = struct.pack('<I', 0xced7230a)


def part(flag, payload):
    """One record part built from the format's definition, independently of the writer."""
    pad = (-len(payload)) % 4
    return MAGIC + struct.pack('<I', (flag << 29) | len(payload)) + payload + b'\0' * pad


# Payloads holding the magic number at aligned and unaligned offsets, and the expected
# parts: the writer cuts at aligned magics only, and the reader joins with the magic.
FORMAT_CASES = [
    (b'', [part(0, b'')]),
    (b'a', [part(0, b'a')]),
    (b'abcd', [part(0, b'abcd')]),
    (b'abcde', [part(0, b'abcde')]),
    (MAGIC, [part(1, b''), part(3, b'')]),
    (b'xy' + MAGIC + b'zz', [part(0, b'xy' + MAGIC + b'zz')]),
    (b'abcd' + MAGIC + b'12', [part(1, b'abcd'), part(3, b'12')]),
    (MAGIC * 2 + b'tail', [part(1, b''), part(2, b''), part(3, b'tail')]),
]


@pytest.mark.parametrize('payload,parts', FORMAT_CASES)
def test_records_are_written_byte_for_byte_as_the_format_says(tmp_path, payload, parts):
    path = str(tmp_path / 'one.rec')
    with recordio.MXRecordIO(path, 'w') as writer:
        writer.write(payload)
    with open(path, 'rb') as f:
        assert f.read() == b''.join(parts)
    reader = recordio.MXRecordIO(path, 'r')
    assert reader.read() == payload
    assert reader.read() is None


def test_a_stream_of_records_reads_back_in_order(tmp_path):
    path = str(tmp_path / 'many.rec')
    writer = recordio.MXRecordIO(path, 'w')
    payloads = [bytes(chr(i), 'utf-8') for i in range(255)] + [os.urandom(1000), MAGIC * 5]
    for p in payloads:
        writer.write(p)
    writer.close()
    reader = recordio.MXRecordIO(path, 'r')
    assert [reader.read() for _ in payloads] == payloads
    assert reader.read() is None
    reader.reset()
    assert reader.read() == payloads[0]


def test_the_indexed_writer_records_offsets_and_reads_keys_in_any_order(tmp_path):
    idx, rec = str(tmp_path / 'a.idx'), str(tmp_path / 'a.rec')
    writer = recordio.MXIndexedRecordIO(idx, rec, 'w')
    offsets = []
    for i in range(5):
        offsets.append(writer.tell())
        writer.write_idx(i, b'record_%d' % i)
    writer.close()
    assert offsets == [0, 16, 32, 48, 64]       # 8 bytes of head + 8 of payload each
    with open(idx) as f:
        assert f.read() == ''.join('%d\t%d\n' % (i, 16 * i) for i in range(5))
    reader = recordio.MXIndexedRecordIO(idx, rec, 'r')
    assert reader.keys == list(range(5))
    for key in [3, 0, 4, 1, 2]:
        assert reader.read_idx(key) == b'record_%d' % key
    reader.seek(2)
    assert reader.read() == b'record_2' and reader.read() == b'record_3'


def test_string_keys(tmp_path):
    idx, rec = str(tmp_path / 's.idx'), str(tmp_path / 's.rec')
    writer = recordio.MXIndexedRecordIO(idx, rec, 'w', key_type=str)
    for name in ['cat', 'dog']:
        writer.write_idx(name, name.encode())
    writer.close()
    reader = recordio.MXIndexedRecordIO(idx, rec, 'r', key_type=str)
    assert reader.keys == ['cat', 'dog'] and reader.read_idx('dog') == b'dog'


def test_a_record_over_2_to_the_29_bytes_is_refused_clearly(tmp_path):
    writer = recordio.MXRecordIO(str(tmp_path / 'big.rec'), 'w')
    huge = np.zeros(1 << 29, np.uint8)   # calloc'd: no page is touched
    with pytest.raises(mx.MXNetError, match=r'at most 536870911 bytes.*split'):
        writer.write(huge)
    writer.close()
    assert os.path.getsize(str(tmp_path / 'big.rec')) == 0


def test_truncated_and_corrupt_files_name_the_file_and_the_offset(tmp_path):
    path = str(tmp_path / 'bad.rec')
    with recordio.MXRecordIO(path, 'w') as writer:
        writer.write(b'first record')
        writer.write(b'second record, longer')
    data = open(path, 'rb').read()
    with open(path, 'wb') as f:
        f.write(data[:-6])
    reader = recordio.MXRecordIO(path, 'r')
    assert reader.read() == b'first record'
    with pytest.raises(mx.MXNetError, match=r'bad\.rec.*offset 20.*file ends'):
        reader.read()
    with open(path, 'wb') as f:
        f.write(data[:20] + b'\x00' * 8 + data[28:])
    reader = recordio.MXRecordIO(path, 'r')
    reader.read()
    with pytest.raises(mx.MXNetError, match=r'offset 20.*magic number'):
        reader.read()
    with open(path, 'wb') as f:
        f.write(data[:23])
    reader = recordio.MXRecordIO(path, 'r')
    reader.read()
    with pytest.raises(mx.MXNetError, match=r'offset 20.*header \(3 of 8'):
        reader.read()


def test_an_index_that_does_not_belong_to_the_file_is_reported(tmp_path):
    idx, rec = str(tmp_path / 'x.idx'), str(tmp_path / 'x.rec')
    with recordio.MXIndexedRecordIO(idx, rec, 'w') as writer:
        writer.write_idx(0, b'zero')
    with open(idx, 'w') as f:
        f.write('0\t6\n1\tnot-a-number\n')
    with pytest.raises(mx.MXNetError, match=r'x\.idx, line 2.*key<TAB>offset'):
        recordio.MXIndexedRecordIO(idx, rec, 'r')
    with open(idx, 'w') as f:
        f.write('0\t6\n')
    reader = recordio.MXIndexedRecordIO(idx, rec, 'r')
    with pytest.raises(mx.MXNetError, match='offset 6'):
        reader.read_idx(0)
    with pytest.raises(mx.MXNetError, match='no record with key 7'):
        reader.read_idx(7)


def test_misuse_gets_clear_errors(tmp_path):
    path = str(tmp_path / 'm.rec')
    with pytest.raises(mx.MXNetError, match="flag must be 'r'"):
        recordio.MXRecordIO(path, 'a')
    with pytest.raises(mx.MXNetError, match='cannot open.*for reading'):
        recordio.MXRecordIO(str(tmp_path / 'missing.rec'), 'r')
    writer = recordio.MXRecordIO(path, 'w')
    with pytest.raises(mx.MXNetError, match='encode it first'):
        writer.write('text')
    with pytest.raises(mx.MXNetError, match='open for writing'):
        writer.read()
    writer.close()
    with pytest.raises(mx.MXNetError, match='open for reading'):
        recordio.MXRecordIO(path, 'r').write(b'x')


def _read_in_child(reader, key, queue):
    queue.put(reader.read_idx(key))


def test_a_reader_used_in_a_forked_or_spawned_process_reopens_the_file(tmp_path):
    idx, rec = str(tmp_path / 'p.idx'), str(tmp_path / 'p.rec')
    with recordio.MXIndexedRecordIO(idx, rec, 'w') as writer:
        for i in range(4):
            writer.write_idx(i, b'r%d' % i)
    reader = recordio.MXIndexedRecordIO(idx, rec, 'r')
    reader.seek(1)
    for method in ['fork', 'spawn']:
        ctx = multiprocessing.get_context(method)
        queue = ctx.Queue()
        child = ctx.Process(target=_read_in_child, args=(reader, 3, queue))
        child.start()
        assert queue.get(timeout=60) == b'r3'
        child.join(60)
    assert reader.read() == b'r1'            # the parent's position is its own
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.read() == b'r2' and copy.keys == [0, 1, 2, 3]


def test_pack_and_unpack_keep_scalar_and_vector_labels():
    header = recordio.IRHeader(0, 2.5, 7, 9)
    h, payload = recordio.unpack(recordio.pack(header, b'payload'))
    assert h == header and payload == b'payload'
    rng = np.random.RandomState(0)
    for width in [1, 2, 17]:
        label = rng.uniform(size=width).astype(np.float32)
        s = recordio.pack((0, label, 3, 0), b'content')
        assert len(s) == 24 + 4 * width + len(b'content')
        h, payload = recordio.unpack(s)
        assert h.flag == width and (h.label == label).all() and payload == b'content'
    with pytest.raises(mx.MXNetError, match='24-byte header'):
        recordio.unpack(b'short')


def test_pack_img_and_unpack_img_in_opencvs_layout():
    rng = np.random.RandomState(1)
    bgr = rng.randint(0, 256, size=(9, 7, 3)).astype(np.uint8)
    h, img = recordio.unpack_img(recordio.pack_img((0, 1.0, 2, 0), bgr, img_fmt='.png'))
    assert h.label == 1.0 and h.id == 2
    assert img.dtype == np.uint8 and (img == bgr).all()
    gray = rng.randint(0, 256, size=(5, 4)).astype(np.uint8)
    _, img = recordio.unpack_img(recordio.pack_img((0, 0, 0, 0), gray, img_fmt='.png'))
    assert img.shape == (5, 4) and (img == gray).all()
    _, img = recordio.unpack_img(recordio.pack_img((0, 0, 0, 0), gray, img_fmt='.png'), 1)
    assert img.shape == (5, 4, 3) and (img == gray[:, :, None]).all()
    smooth = np.tile(np.linspace(0, 255, 16, dtype=np.uint8)[None, :, None], (16, 1, 3))
    _, img = recordio.unpack_img(recordio.pack_img((0, 0, 0, 0), smooth, quality=95))
    assert img.shape == (16, 16, 3) and np.abs(img.astype(int) - smooth).max() <= 4
    bigger = recordio.pack_img((0, 0, 0, 0), bgr, quality=100)
    assert len(recordio.pack_img((0, 0, 0, 0), bgr, quality=10)) < len(bigger)
    with pytest.raises(mx.MXNetError, match="'.bmp'"):
        recordio.pack_img((0, 0, 0, 0), bgr, img_fmt='.bmp')
    with pytest.raises(mx.MXNetError, match='cannot decode'):
        recordio.unpack_img(recordio.pack((0, 0, 0, 0), b'not an image'))


WRITE_WITH_MXNET = '''
import struct, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
magic = struct.pack('<I', 0xced7230a)
w = mx.recordio.MXIndexedRecordIO(folder + '/mx.idx', folder + '/mx.rec', 'w')
for i, payload in enumerate([b'', b'a', magic, b'abcd' + magic + b'12', magic * 3 + b'x',
                             np.random.RandomState(0).bytes(1001)]):
    w.write_idx(i, payload)
w.close()
bgr = np.random.RandomState(1).randint(0, 256, size=(12, 10, 3)).astype(np.uint8)
w = mx.recordio.MXRecordIO(folder + '/mx_img.rec', 'w')
w.write(mx.recordio.pack_img((0, 3.0, 7, 0), bgr, img_fmt='.png'))
w.write(mx.recordio.pack_img((0, [1.0, 2.0], 8, 5), bgr, quality=90, img_fmt='.jpg'))
w.write(mx.recordio.pack_img((0, 4.0, 9, 0), bgr[:, :, 0], img_fmt='.jpg'))
w.close()
np.save(folder + '/bgr.npy', bgr)
# What MXNet decodes from its own JPEG records, for minigluon to match.
r = mx.recordio.MXRecordIO(folder + '/mx_img.rec', 'r')
r.read()
jpeg = r.read()
decoded = [mx.recordio.unpack_img(jpeg, flag)[1] for flag in (-1, 1, 0)]
np.savez(folder + '/mx_decoded.npz', *decoded)
'''

READ_WITH_MXNET = '''
import sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
r = mx.recordio.MXIndexedRecordIO(folder + '/mg.idx', folder + '/mg.rec', 'r')
payloads = [r.read_idx(k) for k in r.keys]
with open(folder + '/mg_read_by_mx.bin', 'wb') as f:
    f.write(b''.join(len(p).to_bytes(4, 'little') + p for p in payloads))
r = mx.recordio.MXRecordIO(folder + '/mg_img.rec', 'r')
headers, images = [], []
while True:
    s = r.read()
    if s is None:
        break
    h, img = mx.recordio.unpack_img(s)
    headers.append([h.flag, float(np.sum(h.label)), h.id, h.id2])
    images.append(img)
np.save(folder + '/mg_headers.npy', np.array(headers))
np.savez(folder + '/mg_images.npz', *images)
'''


def test_files_written_by_mxnet_read_back_the_same(tmp_path, run_mxnet):
    run_mxnet(tmp_path, WRITE_WITH_MXNET)
    magic = MAGIC
    expected = [b'', b'a', magic, b'abcd' + magic + b'12', magic * 3 + b'x',
                np.random.RandomState(0).bytes(1001)]
    reader = recordio.MXIndexedRecordIO(str(tmp_path / 'mx.idx'), str(tmp_path / 'mx.rec'), 'r')
    assert [reader.read_idx(k) for k in reader.keys] == expected
    # The same payloads written by minigluon are the same bytes on disk.
    with recordio.MXIndexedRecordIO(str(tmp_path / 'mg.idx'), str(tmp_path / 'mg.rec'),
                                    'w') as writer:
        for i, payload in enumerate(expected):
            writer.write_idx(i, payload)
    for ext in ['.rec', '.idx']:
        assert (tmp_path / ('mg' + ext)).read_bytes() == (tmp_path / ('mx' + ext)).read_bytes()
    bgr = np.load(str(tmp_path / 'bgr.npy'))
    decoded = np.load(str(tmp_path / 'mx_decoded.npz'))
    reader = recordio.MXRecordIO(str(tmp_path / 'mx_img.rec'), 'r')
    h, img = recordio.unpack_img(reader.read())
    assert tuple(h) == (0, 3.0, 7, 0) and (img == bgr).all()
    s = reader.read()
    for flag, mx_img in zip((-1, 1, 0), decoded.values()):
        h, img = recordio.unpack_img(s, flag)
        assert h.flag == 2 and list(h.label) == [1.0, 2.0] and (h.id, h.id2) == (8, 5)
        assert img.shape == mx_img.shape
        # Both decode with libjpeg; the gray conversion of a colour JPEG is libjpeg's luma.
        assert np.abs(img.astype(int) - mx_img).max() <= 1, flag
    h, img = recordio.unpack_img(reader.read())
    assert h.label == 4.0 and img.shape == bgr.shape[:2]


def test_files_written_by_minigluon_are_read_by_mxnet(tmp_path, run_mxnet):
    magic = MAGIC
    payloads = [b'', b'xyz', magic, magic * 2 + b'!', b'1234' + magic, os.urandom(777)]
    with recordio.MXIndexedRecordIO(str(tmp_path / 'mg.idx'), str(tmp_path / 'mg.rec'),
                                    'w') as writer:
        for i, payload in enumerate(payloads):
            writer.write_idx(i, payload)
    bgr = np.random.RandomState(2).randint(0, 256, size=(11, 13, 3)).astype(np.uint8)
    with recordio.MXRecordIO(str(tmp_path / 'mg_img.rec'), 'w') as writer:
        writer.write(recordio.pack_img((0, 5.0, 1, 2), bgr, img_fmt='.png'))
        writer.write(recordio.pack_img((0, [1.5, 2.5, 3.0], 2, 0), bgr, img_fmt='.png'))
        writer.write(recordio.pack_img((0, 6.0, 3, 0), bgr, quality=80))
    run_mxnet(tmp_path, READ_WITH_MXNET)
    blob, seen = (tmp_path / 'mg_read_by_mx.bin').read_bytes(), []
    while blob:
        n = int.from_bytes(blob[:4], 'little')
        seen.append(blob[4:4 + n])
        blob = blob[4 + n:]
    assert seen == payloads
    headers = np.load(str(tmp_path / 'mg_headers.npy'))
    assert headers.tolist() == [[0, 5.0, 1, 2], [3, 7.0, 2, 0], [0, 6.0, 3, 0]]
    images = list(np.load(str(tmp_path / 'mg_images.npz')).values())
    assert (images[0] == bgr).all() and (images[1] == bgr).all()
    mine = recordio.unpack_img(recordio.pack_img((0, 6.0, 3, 0), bgr, quality=80))[1]
    assert images[2].shape == bgr.shape and np.abs(images[2].astype(int) - mine).max() <= 1


def test_record_starts_next_record_start_and_read_at(tmp_path):
    path = str(tmp_path / 'scan.rec')
    payloads = [b'one', MAGIC + b'in the middle' + MAGIC, b'', b'x' * 37]
    with recordio.MXRecordIO(path, 'w') as writer:
        offsets = []
        for p in payloads:
            offsets.append(writer.tell())
            writer.write(p)
    assert recordio.record_starts(path) == offsets
    assert recordio.record_starts(path, offsets[1], offsets[3]) == offsets[1:3]
    # A part boundary inside a record (its escaped magic) is not a record start.
    assert recordio.next_record_start(path, offsets[1] + 4) == offsets[2]
    assert recordio.next_record_start(path, 0) == 0
    assert recordio.next_record_start(path, offsets[3] + 4) == os.path.getsize(path)
    reader = recordio.MXRecordIO(path, 'r')
    assert [reader.read_at(o) for o in reversed(offsets)] == payloads[::-1]
    assert reader.read() == payloads[1]          # reading goes on after the record
    reader.read_at(offsets[3])
    assert reader.read() is None
    with pytest.raises(mx.MXNetError, match='no record starts there'):
        reader.read_at(os.path.getsize(path))
    with open(path, 'ab') as f:
        f.write(MAGIC + struct.pack('<I', 100) + b'short')
    with pytest.raises(mx.MXNetError, match=r'offset %d.*holds 100 bytes' % (offsets[3] + 48)):
        recordio.record_starts(path)


def test_read_index_takes_tabs_or_any_whitespace(tmp_path):
    path = tmp_path / 'x.idx'
    path.write_text('3\t0\n\n7 16\n1\t32\n')
    assert recordio.read_index(str(path)) == [(3, 0), (7, 16), (1, 32)]
    with pytest.raises(mx.MXNetError, match='cannot read the RecordIO index'):
        recordio.read_index(str(tmp_path / 'missing.idx'))


def test_read_list_parses_im2rec_lists(tmp_path):
    path = tmp_path / 'x.lst'
    path.write_text('0\t3.000000\ta/0.jpg\n\n7\t1.5\t2.000000\tb/7.png\n')
    entries = recordio.read_list(str(path))
    assert [(i, labels.tolist(), name) for i, labels, name in entries] == \
        [(0, [3.0], 'a/0.jpg'), (7, [1.5, 2.0], 'b/7.png')]
    path.write_text('0\t1\ta.jpg\nx\t1\tb.jpg\n')
    with pytest.raises(mx.MXNetError, match=r'x\.lst, line 2: expected "index<TAB>label'):
        recordio.read_list(str(path))
