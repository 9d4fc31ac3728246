"""nd.save / nd.load: exact round trips, atomic writes, files of earlier versions, clear
errors. The byte layout of MXNet's format itself is tested in test_mxnet_format.py."""
import json
import os
import pickle

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError
from minigluon.ndarray import mxnet_format

DTYPES = ['float16', 'float32', 'float64', 'int8', 'int32', 'int64', 'uint8', 'bool']
rng = np.random.RandomState(3)


def sample(dtype, shape=(3, 4)):
    if dtype == 'bool':
        return rng.rand(*shape) > 0.5
    if np.dtype(dtype).kind == 'f':
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.randint(info.min, info.max, size=shape, dtype=np.int64).astype(dtype) \
        if dtype != 'int64' else rng.randint(-2**62, 2**62, size=shape, dtype=np.int64)


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def test_single_array_loads_as_list(tmp_path):
    ref = sample('float32')
    f = tmp_path / 'one.params'
    nd.save(str(f), nd.array(ref, dtype=ref.dtype))
    out = nd.load(str(f))
    assert isinstance(out, list) and len(out) == 1
    assert isinstance(out[0], nd.NDArray)
    same_bits(out[0].asnumpy(), ref)


def test_list_round_trip(tmp_path):
    refs = [sample('float32', (2, 3)), sample('float64', (5,)), sample('int32', (1, 1, 2))]
    f = tmp_path / 'list.nd'
    nd.save(f, [nd.array(r, dtype=r.dtype) for r in refs])  # a path-like works too
    out = nd.load(f)
    assert isinstance(out, list) and len(out) == 3
    for o, r in zip(out, refs):
        assert o.context == mx.cpu(0)
        same_bits(o.asnumpy(), r)
    nd.save(str(f), (nd.array(refs[0], dtype=refs[0].dtype),))  # tuples are lists
    same_bits(nd.load(str(f))[0].asnumpy(), refs[0])


def test_dict_round_trip_keeps_names_and_order(tmp_path):
    refs = {'features.0.weight': sample('float32', (4, 3)), 'b': sample('float16', (4,)),
            'arg:z': sample('uint8', (2, 2)), 'aux:mean': sample('float64', (3,))}
    f = str(tmp_path / 'dict.params')
    nd.save(f, {k: nd.array(v, dtype=v.dtype) for k, v in refs.items()})
    out = nd.load(f)
    assert isinstance(out, dict)
    assert list(out) == list(refs)
    for k, v in refs.items():
        same_bits(out[k].asnumpy(), v)


@pytest.mark.parametrize('dtype', DTYPES)
def test_every_dtype_bit_identical(dtype, tmp_path):
    ref = sample(dtype, (3, 5))
    if dtype in ('float16', 'float32', 'float64'):
        ref.reshape(-1)[:4] = np.array([np.inf, -np.inf, -0.0, np.nan], dtype)
    f = str(tmp_path / ('%s.nd' % dtype))
    nd.save(f, {'x': nd.array(ref, dtype=ref.dtype), 'y': nd.array(ref[:0], dtype=ref.dtype)})
    out = nd.load(f)
    same_bits(out['x'].asnumpy(), ref)
    assert out['x'].dtype == np.dtype(dtype).type
    assert out['y'].shape == (0, 5) and out['y'].dtype == np.dtype(dtype).type


def test_empty_list_and_dict(tmp_path):
    f = str(tmp_path / 'e')
    nd.save(f, [])
    assert nd.load(f) == []
    nd.save(f, {})
    assert nd.load(f) == []  # as in MXNet: a file without names is a list


def test_scalars_and_zero_size_arrays(tmp_path):
    f = str(tmp_path / 'np_shape.nd')
    refs = [np.array(2.5, np.float32), np.zeros((0, 3), np.int64), sample('uint8', (2,))]
    arrays = [nd.full((), 2.5), nd.empty((0, 3), dtype='int64'), nd.array(refs[2], dtype='uint8')]
    nd.save(f, arrays)
    for o, r in zip(nd.load(f), refs):
        same_bits(o.asnumpy(), r)


def test_load_onto_a_context(tmp_path):
    ref = sample('float32')
    f = str(tmp_path / 'ctx.nd')
    nd.save(f, [nd.array(ref, ctx=mx.cpu(2), dtype=ref.dtype)])
    out = nd.load(f, ctx=mx.cpu(1))
    assert out[0].context == mx.cpu(1)
    same_bits(out[0].asnumpy(), ref)
    with mx.cpu(3):
        assert nd.load(f)[0].context == mx.cpu(3)


def test_file_is_mxnet_format_not_a_pickle(tmp_path):
    f = str(tmp_path / 'x.params')
    nd.save(f, {'w': nd.array(sample('float32', (2, 2)))})
    with open(f, 'rb') as stream:
        assert stream.read(8) == (0x112).to_bytes(8, 'little')
    with open(f, 'rb') as stream, pytest.raises(pickle.UnpicklingError):
        pickle.load(stream)


def _saved(tmp_path, name='good.params'):
    f = str(tmp_path / name)
    refs = {'a': sample('float32', (8, 8)), 'b': sample('int64', (16,))}
    nd.save(f, {k: nd.array(v, dtype=v.dtype) for k, v in refs.items()})
    return f, refs


def _expect_bad(path, *words):
    with pytest.raises(MXNetError) as info:
        nd.load(path)
    msg = str(info.value)
    assert os.path.basename(str(path)) in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def test_truncated_file(tmp_path):
    good = open(_saved(tmp_path)[0], 'rb').read()
    for cut in (len(good) - 1, len(good) // 2, 30, 20, 12, 8):
        bad = tmp_path / ('trunc%d' % cut)
        bad.write_bytes(good[:cut])
        _expect_bad(str(bad), 'not a valid MXNet NDArray file', 'truncated')
    bad = tmp_path / 'trunc3'
    bad.write_bytes(good[:3])
    _expect_bad(str(bad), 'not an NDArray file')


def test_corrupted_bytes(tmp_path):
    """Flip every byte of a small file in turn: each load either fails with MXNetError or,
    where the byte was data, a name or the unused reserved word or device id, loads arrays
    of the saved shapes and dtypes. Nothing else is raised."""
    f = str(tmp_path / 'small.params')
    refs = {'a': sample('float32', (2, 2)), 'b': sample('int64', (3,))}
    nd.save(f, {k: nd.array(v, dtype=v.dtype) for k, v in refs.items()})
    good = open(f, 'rb').read()
    bad_path = str(tmp_path / 'corrupt.params')
    failures = 0
    for pos in range(len(good)):
        for flip in (0x01, 0xFF):
            bad = bytearray(good)
            bad[pos] ^= flip
            with open(bad_path, 'wb') as out_file:
                out_file.write(bytes(bad))
            try:
                out = nd.load(bad_path)
            except MXNetError as exc:
                assert 'corrupt.params' in str(exc), str(exc)
                failures += 1
            else:
                assert len(out) == len(refs), pos
                for o, v in zip(out.values(), refs.values()):
                    assert o.shape == v.shape and o.dtype == v.dtype, pos
    assert failures > 100  # headers, shapes, counts and type flags are checked


def test_random_bytes_and_empty_file(tmp_path):
    bad = tmp_path / 'random.bin'
    bad.write_bytes(np.random.RandomState(1).bytes(1000))
    _expect_bad(str(bad), 'not an NDArray file', '0x112')
    empty = tmp_path / 'empty.params'
    empty.write_bytes(b'')
    _expect_bad(str(empty), 'not an NDArray file')
    text = tmp_path / 'text.params'
    text.write_text('hello, not an array file\n')
    _expect_bad(str(text), 'not an NDArray file', 'hello')


def test_plain_npy_is_rejected(tmp_path):
    f = tmp_path / 'plain.npy'
    np.save(str(f), np.arange(5, dtype=np.float32))
    _expect_bad(str(f), '.npy', 'numpy.load')


def _old_minigluon_file(path, arrays, names):
    """A file as minigluon wrote it before it adopted MXNet's format."""
    meta = {'format': 'minigluon.ndarray', 'version': 1, 'kind': 'list' if names is None
            else 'dict', 'names': names, 'count': len(arrays)}
    entries = {'arr_%d' % i: a for i, a in enumerate(arrays)}
    with open(str(path), "wb") as f:
        np.savez(f, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8), **entries)


def test_files_of_earlier_minigluon_still_load(tmp_path):
    refs = [sample(dtype, (2, 3)) for dtype in DTYPES] + [sample('float32', (0, 2))]
    f = tmp_path / 'old_list.npz'
    _old_minigluon_file(f, refs, None)
    out = nd.load(str(f))
    assert isinstance(out, list) and len(out) == len(refs)
    for o, r in zip(out, refs):
        same_bits(o.asnumpy(), r)
    g = tmp_path / 'old_dict.params'
    _old_minigluon_file(g, refs[:2], ['features.0.weight', 'b'])
    out = nd.load(str(g))
    assert list(out) == ['features.0.weight', 'b']
    same_bits(out['b'].asnumpy(), refs[1])
    h = tmp_path / 'old_empty.params'
    _old_minigluon_file(h, [], [])
    assert nd.load(str(h)) == {}


def test_foreign_npz_is_rejected(tmp_path):
    f = tmp_path / 'foreign.npz'
    np.savez(str(f), a=np.arange(3))
    _expect_bad(str(f), 'not a valid minigluon array file')
    g = tmp_path / 'pickled.npz'
    np.savez(str(g), __meta__=np.frombuffer(b'{"format": "minigluon.ndarray", "version": 1, '
                                            b'"kind": "list", "names": null, "count": 1}',
                                            dtype=np.uint8),
             arr_0=np.array([{'evil': 1}], dtype=object))
    _expect_bad(str(g), 'not a valid minigluon array file')
    h = tmp_path / 'int16.npz'
    np.savez(str(h), __meta__=np.frombuffer(b'{"format": "minigluon.ndarray", "version": 1, '
                                            b'"kind": "list", "names": null, "count": 1}',
                                            dtype=np.uint8),
             arr_0=np.arange(3, dtype=np.int16))
    _expect_bad(str(h), 'int16')


def test_missing_file(tmp_path):
    missing = str(tmp_path / 'nope.params')
    with pytest.raises(MXNetError) as info:
        nd.load(missing)
    assert 'no such file' in str(info.value) and 'nope.params' in str(info.value)


def test_save_rejects_bad_data(tmp_path):
    f = str(tmp_path / 'bad')
    with pytest.raises(MXNetError, match='NDArray'):
        nd.save(f, np.zeros(3))
    with pytest.raises(MXNetError, match='item 1'):
        nd.save(f, [nd.zeros((1,)), np.zeros(1)])
    with pytest.raises(MXNetError, match='keys'):
        nd.save(f, {1: nd.zeros((1,))})
    assert os.listdir(str(tmp_path)) == []


def test_atomic_write_leaves_no_temp_files(tmp_path):
    f = tmp_path / 'model.params'
    for i in range(3):
        nd.save(str(f), [nd.full((4,), i)])
    assert os.listdir(str(tmp_path)) == ['model.params']
    np.testing.assert_array_equal(nd.load(str(f))[0].asnumpy(), np.full(4, 2, np.float32))


def test_failed_write_keeps_old_file(tmp_path, monkeypatch):
    f = tmp_path / 'model.params'
    nd.save(str(f), [nd.ones((3,))])
    before = f.read_bytes()

    def broken_write(f, *args, **kwargs):
        f.write(b'partial garbage')
        raise OSError('disk full')
    monkeypatch.setattr(mxnet_format, 'write', broken_write)
    with pytest.raises(OSError, match='disk full'):
        nd.save(str(f), [nd.zeros((3,))])
    monkeypatch.undo()
    assert os.listdir(str(tmp_path)) == ['model.params']
    assert f.read_bytes() == before
    np.testing.assert_array_equal(nd.load(str(f))[0].asnumpy(), np.ones(3, np.float32))
