"""tools/im2rec.py: image lists, packing into .rec/.idx, and files that move both ways
between minigluon and MXNet 1.9.1."""
import importlib.util
import io
import os
import random
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from minigluon import recordio
from minigluon.base import MXNetError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, 'tools', 'im2rec.py')

# (folder, file name, height, width): three classes, PNGs and JPEGs, both orientations.
IMAGES = [('cat', 'a.png', 12, 20), ('cat', 'b.jpg', 20, 12), ('cat', 'c.png', 16, 16),
          ('dog', 'a.jpg', 12, 20), ('dog', 'b.png', 20, 12), ('dog', 'c.jpg', 16, 16),
          ('emu', 'a.png', 12, 20), ('emu', 'b.png', 20, 12), ('emu', 'c.jpg', 16, 16)]
CLASSES = {'cat': 0, 'dog': 1, 'emu': 2}


@pytest.fixture(scope='module')
def im2rec():
    """tools/im2rec.py imported as a module, so most tests run it in-process."""
    spec = importlib.util.spec_from_file_location('im2rec_tool', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _picture(h, w, seed):
    """A smooth RGB image (JPEG keeps it close) with some noise (PNG must keep it exact)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    rgb = np.stack([x * 200 / w, y * 200 / h, (x + y) * 100 / (h + w)], axis=2) + seed * 7
    noise = np.random.RandomState(seed).randint(0, 8, size=(h, w, 3))
    return np.clip(rgb + noise, 0, 255).astype(np.uint8)


def _make_images(root):
    """Write IMAGES under ``root``; return {relative path: its RGB pixels as decoded}."""
    pixels = {}
    for seed, (folder, name, h, w) in enumerate(IMAGES):
        os.makedirs(root / folder, exist_ok=True)
        Image.fromarray(_picture(h, w, seed)).save(root / folder / name, quality=95)
        pixels[folder + '/' + name] = np.asarray(Image.open(root / folder / name))
    (root / 'cat' / 'notes.txt').write_text('not an image')
    return pixels


def _make_special_images(folder):
    """Images that OpenCV's imread treats specially: EXIF-rotated, 16-bit, 1-bit,
    palette with transparency, gray with alpha, RGBA. Returns their file names."""
    os.makedirs(folder, exist_ok=True)
    rgb = _picture(10, 14, 5)
    exif = Image.Exif()
    exif[0x0112] = 6    # stored 10x14, shown rotated 90 degrees clockwise: 14x10
    Image.fromarray(rgb).save(folder / 'turned.jpg', exif=exif, quality=95)
    Image.fromarray(rgb).save(folder / 'turned.png', exif=exif)
    deep = (np.arange(140).reshape(10, 14) * 450).astype(np.uint16)
    Image.fromarray(deep).save(folder / 'deep.png')
    Image.fromarray(rgb[:, :, 0] > 100).save(folder / 'bilevel.png')
    palette = Image.fromarray((np.arange(140).reshape(10, 14) % 5).astype(np.uint8), 'P')
    palette.putpalette([10, 20, 30, 200, 100, 50, 0, 255, 0, 255, 255, 255, 1, 2, 3])
    palette.save(folder / 'palette.png', transparency=2)
    Image.fromarray(np.dstack([rgb[:, :, 0], rgb[:, :, 1]]), 'LA').save(folder / 'la.png')
    Image.fromarray(np.dstack([rgb, rgb[:, :, :1]])).save(folder / 'rgba.png')
    Image.fromarray(rgb).save(folder / 'rgb.png')
    return sorted(os.listdir(folder))


@pytest.fixture
def images(tmp_path):
    root = tmp_path / 'images'
    pixels = _make_images(root)
    out = tmp_path / 'out'
    out.mkdir()
    return root, out, pixels


def _lst(path):
    return [line.rstrip('\n').split('\t') for line in open(path)]


def _records(prefix):
    """{key: (header, payload)} of ``prefix``.rec/.idx, and the keys in file order."""
    rec = recordio.MXIndexedRecordIO(str(prefix) + '.idx', str(prefix) + '.rec', 'r')
    try:
        found = {k: recordio.unpack(rec.read_idx(k)) for k in rec.keys}
        return found, list(rec.keys)
    finally:
        rec.close()


def _bgr(rgb):
    return np.ascontiguousarray(rgb[:, :, ::-1])


def test_list_recursive_numbers_sorted_folders_in_mxnet_layout(images, im2rec, capsys):
    root, out, _ = images
    written = im2rec.main(['--list', '--recursive', '--no-shuffle', str(out / 'data'),
                           str(root)])
    assert written == [str(out / 'data.lst')]
    expected = ['%d\t%f\t%s\n' % (i, CLASSES[folder], folder + '/' + name)
                for i, (folder, name, _, _) in enumerate(sorted(IMAGES))]
    assert open(out / 'data.lst').readlines() == expected
    assert capsys.readouterr().out.split('\n')[:3] == ['cat 0', 'dog 1', 'emu 2']

    # Shuffled (the default) with MXNet's seed: the same lines in that order.
    im2rec.main(['--list', '--recursive', str(out / 'shuffled'), str(root)])
    order = list(expected)
    random.Random(100).shuffle(order)
    assert open(out / 'shuffled.lst').readlines() == order != expected

    # Without --recursive only root's own files, label 0; --exts picks the suffixes.
    (root / 'top.PNG').write_bytes((root / 'cat' / 'a.png').read_bytes())
    im2rec.main(['--list', str(out / 'flat'), str(root), '--exts', 'png'])
    assert _lst(out / 'flat.lst') == [['0', '0.000000', 'top.PNG']]


def test_list_train_val_test_splits_and_chunks(images, im2rec):
    root, out, _ = images
    im2rec.main(['--list', '--recursive', '--train-ratio', '0.5', '--test-ratio', '0.25',
                 str(out / 'one'), str(root)])
    sizes = {part: len(_lst(out / ('one_%s.lst' % part))) for part in ('train', 'val', 'test')}
    # int(9 * 0.5) train, int(9 * 0.25) test, the rest val, as MXNet cuts them.
    assert sizes == {'train': 4, 'test': 2, 'val': 3}
    im2rec.main(['--list', '--recursive', '--train-ratio', '0.5', '--test-ratio', '0.25',
                 '--chunks', '2', str(out / 'two'), str(root)])
    seen = []
    for chunk, want in ((0, {'test': 1, 'val': 2, 'train': 2}),
                        (1, {'test': 1, 'val': 1, 'train': 2})):
        for part, n in want.items():
            rows = _lst(out / ('two_%d_%s.lst' % (chunk, part)))
            assert len(rows) == n, (chunk, part)
            seen += [row[-1] for row in rows]
    assert sorted(seen) == sorted(f + '/' + n for f, n, _, _ in IMAGES)
    im2rec.main(['--list', '--recursive', '--train-ratio', '0.8', str(out / 'tv'), str(root)])
    assert sorted(p.name for p in out.glob('tv*')) == ['tv_train.lst', 'tv_val.lst']


@pytest.mark.parametrize('threads', [1, 3])
def test_pack_png_reads_back_exactly_in_list_order(images, im2rec, threads, capsys):
    root, out, pixels = images
    prefix = str(out / 'data')
    im2rec.main(['--list', '--recursive', prefix, str(root)])
    im2rec.main(['--encoding', '.png', '--num-thread', str(threads), prefix, str(root)])
    rows = _lst(prefix + '.lst')
    found, keys = _records(prefix)
    assert keys == [int(row[0]) for row in rows]
    for row in rows:
        header, payload = found[int(row[0])]
        assert (header.flag, header.label, header.id, header.id2) == \
            (0, float(row[1]), int(row[0]), 0)
        _, img = recordio.unpack_img(recordio.pack(header, payload), 1)
        np.testing.assert_array_equal(img, _bgr(pixels[row[2]]))
    err = capsys.readouterr().err
    assert 'data.lst: 9/9 images' in err and 'images/s' in err


def test_pack_jpeg_is_close_and_quality_matters(images, im2rec):
    root, out, pixels = images
    im2rec.main(['--list', '--recursive', str(out / 'data'), str(root)])
    (out / 'low.lst').write_text((out / 'data.lst').read_text())
    im2rec.main([str(out / 'data'), str(root)])
    im2rec.main(['--quality', '20', str(out / 'low'), str(root)])
    high, _ = _records(out / 'data')
    low, _ = _records(out / 'low')
    for row in _lst(out / 'data.lst'):
        header, payload = high[int(row[0])]
        assert payload[:2] == b'\xff\xd8'
        img = recordio.unpack_img(recordio.pack(header, payload), 1)[1].astype(int)
        assert np.abs(img - _bgr(pixels[row[2]])).mean() < 3
        assert len(low[int(row[0])][1]) < len(payload)


def test_pass_through_keeps_the_file_bytes(images, im2rec):
    root, out, _ = images
    im2rec.main(['--list', '--recursive', str(out / 'data'), str(root)])
    im2rec.main(['--pass-through', '--num-thread', '2', str(out / 'data'), str(root)])
    found, _ = _records(out / 'data')
    for row in _lst(out / 'data.lst'):
        assert found[int(row[0])][1] == (root / row[2]).read_bytes()


@pytest.mark.parametrize('options, shapes', [
    (['--resize', '6'], {(12, 20): (6, 10, 3), (20, 12): (10, 6, 3), (16, 16): (6, 6, 3)}),
    (['--center-crop'], {(12, 20): (12, 12, 3), (20, 12): (12, 12, 3), (16, 16): (16, 16, 3)}),
    (['--center-crop', '--resize', '24'],
     {(12, 20): (24, 24, 3), (20, 12): (24, 24, 3), (16, 16): (24, 24, 3)}),
    (['--color', '0'], {(12, 20): (12, 20), (20, 12): (20, 12), (16, 16): (16, 16)}),
])
def test_resize_center_crop_and_color_shapes(images, im2rec, options, shapes):
    root, out, pixels = images
    im2rec.main(['--list', '--recursive', str(out / 'data'), str(root)])
    im2rec.main(options + ['--encoding', '.png', str(out / 'data'), str(root)])
    found, _ = _records(out / 'data')
    for row in _lst(out / 'data.lst'):
        header, payload = found[int(row[0])]
        img = recordio.unpack_img(recordio.pack(header, payload), -1)[1]
        assert img.shape == shapes[pixels[row[2]].shape[:2]], row
        if options == ['--center-crop']:
            h, w = pixels[row[2]].shape[:2]
            top, left = (h - min(h, w)) // 2, (w - min(h, w)) // 2
            if row[2].endswith('.png'):
                square = pixels[row[2]][top:top + min(h, w), left:left + min(h, w)]
                np.testing.assert_array_equal(img, _bgr(square))


def test_color_minus_one_keeps_alpha(tmp_path, im2rec):
    rgba = np.random.RandomState(0).randint(0, 256, size=(5, 7, 4)).astype(np.uint8)
    (tmp_path / 'img').mkdir()
    Image.fromarray(rgba).save(tmp_path / 'img' / 'x.png')
    (tmp_path / 'x.lst').write_text('7\t1.000000\tx.png\n')
    im2rec.main(['--color', '-1', '--encoding', '.png', str(tmp_path / 'x'),
                 str(tmp_path / 'img')])
    found, _ = _records(tmp_path / 'x')
    header, payload = found[7]
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(payload))), rgba)
    img = recordio.unpack_img(recordio.pack(header, payload), -1)[1]
    np.testing.assert_array_equal(img, rgba[:, :, [2, 1, 0, 3]])


def test_read_image_turns_by_exif_and_keeps_16_bits_as_imread(tmp_path, im2rec):
    folder = tmp_path / 'special'
    _make_special_images(folder)
    for flag, shape in ((1, (14, 10, 3)), (0, (14, 10)), (-1, (10, 14, 3))):
        assert im2rec.read_image(str(folder / 'turned.jpg'), flag).shape == shape
    stored = np.asarray(Image.open(folder / 'turned.png'))
    np.testing.assert_array_equal(im2rec.read_image(str(folder / 'turned.png'), 1),
                                  np.rot90(stored, -1)[:, :, ::-1])
    deep = np.asarray(Image.open(folder / 'deep.png')).astype(np.uint16)
    np.testing.assert_array_equal(im2rec.read_image(str(folder / 'deep.png'), -1), deep)
    np.testing.assert_array_equal(im2rec.read_image(str(folder / 'deep.png'), 0), deep >> 8)
    assert im2rec.read_image(str(folder / 'bilevel.png'), -1).shape == (10, 14)
    assert im2rec.read_image(str(folder / 'palette.png'), -1).shape == (10, 14, 4)


def test_pack_label_stores_every_label(images, im2rec):
    root, out, _ = images
    lines = ['%d\t%f\t%f\t%f\t%s\n' % (10 + i, i, -0.5 * i, 2.25, f + '/' + n)
             for i, (f, n, _, _) in enumerate(IMAGES[:4])]
    for name in ('multi', 'first'):
        (out / (name + '.lst')).write_text(''.join(lines))
    im2rec.main(['--pack-label', str(out / 'multi'), str(root)])
    im2rec.main([str(out / 'first'), str(root)])
    multi, keys = _records(out / 'multi')
    first, _ = _records(out / 'first')
    assert keys == [10, 11, 12, 13]
    for i, key in enumerate(keys):
        header = multi[key][0]
        assert header.flag == 3 and header.id == key
        np.testing.assert_array_equal(header.label, np.float32([i, -0.5 * i, 2.25]))
        assert first[key][0].flag == 0 and first[key][0].label == i
        assert multi[key][1] == first[key][1]   # the same image after the labels


def test_prefix_picks_every_matching_list(images, im2rec):
    root, out, _ = images
    im2rec.main(['--list', '--recursive', '--train-ratio', '0.6', str(out / 'data'),
                 str(root)])
    (out / 'other.lst').write_text('0\t0\tcat/a.png\n')
    assert im2rec.main([str(out / 'data'), str(root)]) == \
        [str(out / 'data_train.lst'), str(out / 'data_val.lst')]
    assert sorted(p.name for p in out.glob('*.rec')) == ['data_train.rec', 'data_val.rec']
    found, _ = _records(out / 'data_val')
    assert len(found) == len(_lst(out / 'data_val.lst')) == 4


def test_a_missing_image_is_skipped_and_reported(images, im2rec, capsys):
    root, out, _ = images
    (out / 'data.lst').write_text('0\t0\tcat/a.png\n1\t1\tdog/gone.jpg\n2\t2\temu/b.png\n')
    im2rec.main([str(out / 'data'), str(root)])
    assert _records(out / 'data')[1] == [0, 2]
    err = capsys.readouterr().err
    assert 'skipped' in err and 'gone.jpg' in err and '1 of 3 images' in err


def test_bad_input_gives_clear_errors(images, im2rec, tmp_path):
    root, out, _ = images
    with pytest.raises(MXNetError, match='is not a folder'):
        im2rec.main(['--list', str(out / 'data'), str(tmp_path / 'missing')])
    with pytest.raises(MXNetError, match='is not a folder'):
        im2rec.main([str(out / 'data'), str(tmp_path / 'missing')])
    with pytest.raises(MXNetError, match='no images with the extensions .* --recursive'):
        im2rec.main(['--list', str(out / 'data'), str(root)])
    with pytest.raises(MXNetError, match='no .lst file starts with the prefix'):
        im2rec.main([str(out / 'data'), str(root)])
    (out / 'data.lst').write_text('\n')
    with pytest.raises(MXNetError, match='list no images'):
        im2rec.main([str(out / 'data'), str(root)])
    (out / 'data.lst').write_text('0\t0\tcat/a.png\n1 1 cat/c.png\n')
    with pytest.raises(MXNetError, match='line 2: .*separated by tabs'):
        im2rec.main([str(out / 'data'), str(root)])
    (out / 'data.lst').write_text('0\t0\tcat/a.png\n')
    with pytest.raises(MXNetError, match='none of the 1 images'):
        im2rec.main([str(out / 'data'), str(out)])
    with pytest.raises(MXNetError, match='--train-ratio \\+ --test-ratio must be at most 1'):
        im2rec.main(['--list', '--train-ratio', '0.8', '--test-ratio', '0.3',
                     str(out / 'data'), str(root)])
    with pytest.raises(MXNetError, match='folder of prefix'):
        im2rec.main(['--list', str(out / 'nowhere' / 'data'), str(root)])


def test_the_old_shuffle_option_says_what_replaced_it(images, im2rec, capsys):
    root, out, _ = images
    with pytest.raises(SystemExit) as exit:
        im2rec.main(['--list', '--shuffle', 'False', str(out / 'data'), str(root)])
    assert exit.value.code == 2 and '--no-shuffle' in capsys.readouterr().err


def test_runs_from_a_checkout_as_a_script(images):
    root, out, _ = images
    env = dict(os.environ, PYTHONPATH='')
    run = [sys.executable, TOOL]
    done = subprocess.run(run + ['--list', '--recursive', 'data', str(root)], cwd=out,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(_lst(out / 'data.lst')) == len(IMAGES)
    done = subprocess.run(run + ['--num-thread', '2', 'data', str(root)], cwd=out, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'data.lst: 9/9 images' in done.stderr
    assert len(_records(out / 'data')[0]) == len(IMAGES)
    done = subprocess.run(run + ['data', str(out / 'missing')], cwd=out, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith('im2rec.py: error: root') and 'Traceback' not in done.stderr


def test_records_move_both_ways_with_mxnet(images, im2rec, run_mxnet):
    root, out, pixels = images
    im2rec.main(['--list', '--recursive', str(out / 'png'), str(root)])
    rows = _lst(out / 'png.lst')
    (out / 'jpg.lst').write_text((out / 'png.lst').read_text())
    (out / 'multi.lst').write_text(''.join('%s\t%s\t%f\t%s\n' % (r[0], r[1], 0.5 + int(r[0]),
                                                                 r[2]) for r in rows))
    im2rec.main(['--encoding', '.png', '--num-thread', '2', str(out / 'png'), str(root)])
    im2rec.main([str(out / 'jpg'), str(root)])
    im2rec.main(['--pack-label', '--encoding', '.png', str(out / 'multi'), str(root)])
    np.savez(out / 'expect.npz', **{r[0]: _bgr(pixels[r[2]]) for r in rows})
    # minigluon's decoding of its JPEG records, which MXNet's cv2 decoding must match.
    jpg, _ = _records(out / 'jpg')
    np.savez(out / 'mg_jpg.npz', **{str(k): recordio.unpack_img(recordio.pack(h, p), 1)[1]
                                    for k, (h, p) in jpg.items()})
    # How im2rec reads special images, which must be what OpenCV's imread gives.
    special = out.parent / 'special'
    np.savez(out / 'mg_read.npz', **{'%s|%d' % (name, flag): im2rec.read_image(
        str(special / name), flag) for name in _make_special_images(special)
        for flag in (1, 0, -1)})
    # MXNet reads minigluon's records, then writes its own from the same list as MXNet's
    # im2rec.py does (cv2.imread, pack_img, write_idx with the list's index).
    run_mxnet(out, '''
        import os, sys
        import cv2
        import numpy as np
        import mxnet as mx
        out = sys.argv[1]
        root = os.path.join(os.path.dirname(out), 'images')
        expect = np.load(os.path.join(out, 'expect.npz'), allow_pickle=False)
        mg_jpg = np.load(os.path.join(out, 'mg_jpg.npz'), allow_pickle=False)
        rows = [l.rstrip('\\n').split('\\t') for l in open(os.path.join(out, 'png.lst'))]
        def open_rec(name, flag='r'):
            p = os.path.join(out, name)
            return mx.recordio.MXIndexedRecordIO(p + '.idx', p + '.rec', flag)
        png, jpg, multi = open_rec('png'), open_rec('jpg'), open_rec('multi')
        assert png.keys == jpg.keys == multi.keys == [int(r[0]) for r in rows], png.keys
        for r in rows:
            k = int(r[0])
            header, img = mx.recordio.unpack_img(png.read_idx(k), 1)
            assert header.flag == 0 and header.label == float(r[1]), header
            assert header.id == k and header.id2 == 0, header
            assert np.array_equal(img, expect[r[0]]), r
            rgb = mx.image.imdecode(mx.recordio.unpack(png.read_idx(k))[1]).asnumpy()
            assert np.array_equal(rgb, expect[r[0]][:, :, ::-1]), r
            header, img = mx.recordio.unpack_img(jpg.read_idx(k), 1)
            assert header.label == float(r[1]) and header.id == k, header
            assert np.abs(img.astype(int) - mg_jpg[r[0]]).max() <= 1, r
            header, img = mx.recordio.unpack_img(multi.read_idx(k), 1)
            assert header.flag == 2 and header.id == k, header
            assert np.array_equal(header.label, np.float32([float(r[1]), 0.5 + k])), header
            assert np.array_equal(img, expect[r[0]]), r
        decoded = {}
        for fmt in ('png', 'jpg'):
            rec = open_rec('mx' + fmt, 'w')
            for r in rows:
                img = cv2.imread(os.path.join(root, r[2]), 1)
                header = mx.recordio.IRHeader(0, float(r[1]), int(r[0]), 0)
                s = mx.recordio.pack_img(header, img, quality=95, img_fmt='.' + fmt)
                rec.write_idx(int(r[0]), s)
                decoded[fmt + r[0]] = mx.recordio.unpack_img(s, 1)[1]
            rec.close()
        np.savez(os.path.join(out, 'mx_decoded.npz'), **decoded)
        mg_read = np.load(os.path.join(out, 'mg_read.npz'), allow_pickle=False)
        special = os.path.join(os.path.dirname(out), 'special')
        for key in mg_read.files:
            name, flag = key.split('|')
            img, mine = cv2.imread(os.path.join(special, name), int(flag)), mg_read[key]
            assert (img.shape, img.dtype) == (mine.shape, mine.dtype), (key, img.shape)
            assert np.abs(img.astype(int) - mine).max() <= (name.endswith('.jpg')), key
        ''')
    decoded = np.load(out / 'mx_decoded.npz', allow_pickle=False)
    ours, _ = _records(out / 'png')
    for fmt in ('png', 'jpg'):
        theirs, keys = _records(out / ('mx' + fmt))
        assert keys == [int(r[0]) for r in rows]
        for r in rows:
            header, payload = theirs[int(r[0])]
            assert header == (0, float(r[1]), int(r[0]), 0) == ours[int(r[0])][0]
            img = recordio.unpack_img(recordio.pack(header, payload), 1)[1]
            assert np.abs(img.astype(int) - decoded[fmt + r[0]]).max() <= 1, r
            if fmt == 'png':   # and the same pixels as minigluon's im2rec packed
                np.testing.assert_array_equal(img, _bgr(pixels[r[2]]))
                np.testing.assert_array_equal(
                    img, recordio.unpack_img(recordio.pack(*ours[int(r[0])]), 1)[1])
