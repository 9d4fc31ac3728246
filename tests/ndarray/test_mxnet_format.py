"""MXNet's binary NDArray list format: files built byte by byte from the format's definition
load exactly, nd.save writes exactly those bytes, and malformed files fail clearly.

The last tests exchange files with a real MXNet 1.x. They need an interpreter that can
``import mxnet``, named by the environment variable ``MINIGLUON_MXNET_PYTHON`` (for
example ``MINIGLUON_MXNET_PYTHON=$HOME/mxnet-env/bin/python``); without it they skip,
saying why. minigluon itself never imports MXNet.
"""
import json
import os
import struct
import subprocess
import textwrap

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

# The format's definition (MXNet src/ndarray/ndarray.cc, mshadow/base.h), restated here
# rather than imported so the tests check the reader against it.
LIST_MAGIC, V1, V2, V3 = 0x112, 0xF993FAC8, 0xF993FAC9, 0xF993FACA
FLAGS = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
         'int64': 6, 'bool': 7}
CPU, GPU = 1, 2
rng = np.random.RandomState(7)


def sample(dtype, shape=(2, 3)):
    if dtype == 'bool':
        return rng.rand(*shape) > 0.5
    if np.dtype(dtype).kind == 'f':
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.randint(max(info.min, -2**62), min(info.max, 2**62), size=shape,
                       dtype=np.int64).astype(dtype)


def body(a, dev=(CPU, 0), flag=None):
    flag = FLAGS[str(a.dtype)] if flag is None else flag
    data = a.astype(a.dtype.newbyteorder('<')).tobytes()
    return struct.pack('<iii', dev[0], dev[1], flag) + data


def shape64(shape):
    return struct.pack('<i%dq' % len(shape), len(shape), *shape)


def record_v0(a, **kw):
    return struct.pack('<I%dI' % a.ndim, a.ndim, *a.shape) + body(a, **kw)


def record_v1(a, **kw):
    return struct.pack('<I', V1) + shape64(a.shape) + body(a, **kw)


def record_v2(a, stype=0, **kw):
    return struct.pack('<Ii', V2, stype) + shape64(a.shape) + body(a, **kw)


def record_v3(a, stype=0, **kw):
    return struct.pack('<Ii', V3, stype) + shape64(a.shape) + body(a, **kw)


RECORDS = {'v0': record_v0, 'V1': record_v1, 'V2': record_v2, 'V3': record_v3}


def list_file(records, names=(), reserved=0):
    out = struct.pack('<QQQ', LIST_MAGIC, reserved, len(records)) + b''.join(records)
    out += struct.pack('<Q', len(names))
    for n in names:
        raw = n.encode('utf-8')
        out += struct.pack('<Q', len(raw)) + raw
    return out


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def load_bytes(tmp_path, data, name='f.params'):
    path = tmp_path / name
    path.write_bytes(data)
    return nd.load(str(path))


# ---- reading files built from the definition --------------------------------------------
@pytest.mark.parametrize('version', sorted(RECORDS))
@pytest.mark.parametrize('dtype', sorted(FLAGS))
def test_every_version_and_dtype_loads_as_list_and_dict(version, dtype, tmp_path):
    refs = [sample(dtype, (2, 3)), sample(dtype, (4,)), sample(dtype, (1, 2, 1, 2))]
    make = RECORDS[version]
    out = load_bytes(tmp_path, list_file([make(r) for r in refs]))
    assert isinstance(out, list) and len(out) == 3
    for o, r in zip(out, refs):
        same_bits(o.asnumpy(), r)
        assert o.context == mx.cpu(0)
    names = ['features.0.weight', 'arg:b', 'x' * 300]
    out = load_bytes(tmp_path, list_file([make(r) for r in refs], names))
    assert list(out) == names
    for n, r in zip(names, refs):
        same_bits(out[n].asnumpy(), r)


def test_v3_scalars_and_zero_size_arrays(tmp_path):
    refs = [np.array(1.5, np.float64), np.zeros((0, 4), np.float32), np.zeros((3, 0), np.int8)]
    for o, r in zip(load_bytes(tmp_path, list_file([record_v3(r) for r in refs])), refs):
        same_bits(o.asnumpy(), r)


def test_context_in_the_file_is_not_where_arrays_go(tmp_path):
    ref = sample('float32')
    data = list_file([record_v2(ref, dev=(GPU, 3))], ['w'])
    out = load_bytes(tmp_path, data)
    assert out['w'].context == mx.cpu(0)
    same_bits(out['w'].asnumpy(), ref)
    (tmp_path / 'g.params').write_bytes(data)
    assert nd.load(str(tmp_path / 'g.params'), ctx=mx.cpu(2))['w'].context == mx.cpu(2)


def test_reserved_word_is_ignored_and_bools_read_any_nonzero_byte(tmp_path):
    ref = np.array([0, 1, 2, 255], np.uint8)
    rec = struct.pack('<Ii', V2, 0) + shape64((4,)) + body(ref, flag=FLAGS['bool'])
    out = load_bytes(tmp_path, list_file([rec], reserved=12345))
    same_bits(out[0].asnumpy(), np.array([False, True, True, True]))


# ---- writing ---------------------------------------------------------------------------
def test_save_writes_v2_records_byte_for_byte(tmp_path):
    refs = {'w': sample('float32', (2, 3)), 'b': sample('int64', (3,)), 'm': sample('bool', (5,))}
    f = tmp_path / 'w.params'
    nd.save(str(f), {k: nd.array(v, dtype=v.dtype, ctx=mx.cpu(2)) for k, v in refs.items()})
    assert f.read_bytes() == list_file([record_v2(v, dev=(CPU, 2)) for v in refs.values()],
                                       list(refs))
    nd.save(str(f), [nd.array(refs['w'])])
    assert f.read_bytes() == list_file([record_v2(refs['w'])])


def test_save_writes_v3_records_when_a_shape_needs_numpy_semantics(tmp_path):
    refs = [sample('float32', (2,)), np.zeros((0, 2), np.float16), np.array(3.0, np.float32)]
    f = tmp_path / 'v3.params'
    nd.save(str(f), [nd.array(refs[0]), nd.empty((0, 2), dtype='float16'), nd.full((), 3.0)])
    assert f.read_bytes() == list_file([record_v3(r) for r in refs])


@pytest.mark.parametrize('dtype', sorted(FLAGS))
def test_round_trip_every_dtype(dtype, tmp_path):
    ref = sample(dtype, (3, 4))
    if dtype.startswith('float'):
        ref.reshape(-1)[:4] = np.array([np.inf, -np.inf, -0.0, np.nan], dtype)
    f = str(tmp_path / 'r.params')
    nd.save(f, {'a': nd.array(ref, dtype=dtype), 'b': nd.array(ref[:1], dtype=dtype)})
    out = nd.load(f)
    same_bits(out['a'].asnumpy(), ref)
    same_bits(out['b'].asnumpy(), ref[:1])


# ---- malformed files ---------------------------------------------------------------------
def expect_error(tmp_path, data, *words):
    path = tmp_path / 'bad.params'
    path.write_bytes(data)
    with pytest.raises(MXNetError) as info:
        nd.load(str(path))
    msg = str(info.value)
    assert 'bad.params' in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


GOOD = [sample('float32', (2, 2)), sample('int32', (3,))]


def test_bad_list_magic(tmp_path):
    data = list_file([record_v2(GOOD[0])])
    expect_error(tmp_path, struct.pack('<Q', 0x113) + data[8:], 'not an NDArray file', '0x112')


def test_bad_record_magic(tmp_path):
    rec = struct.pack('<I', 0xF993FACB) + record_v2(GOOD[0])[4:]
    expect_error(tmp_path, list_file([rec]), 'array #0', '0xf993facb', 'magic')


def test_truncated_at_every_byte(tmp_path):
    data = list_file([record_v2(g) for g in GOOD], ['a', 'bb'])
    for cut in range(8, len(data)):
        expect_error(tmp_path, data[:cut], 'not a valid MXNet NDArray file', 'truncated')
    for cut in range(8):
        expect_error(tmp_path, data[:cut], 'not an NDArray file')


@pytest.mark.parametrize('make', [record_v2, record_v1, record_v3])
def test_forged_huge_shape_is_refused_before_allocating(make, tmp_path):
    rec = bytearray(make(GOOD[0]))
    dims_at = len(rec) - len(body(GOOD[0])) - 16  # the two int64 dims
    struct.pack_into('<qq', rec, dims_at, 2**30, 2**30)  # 2**60 elements
    expect_error(tmp_path, list_file([bytes(rec)]), 'truncated', 'float32 data of array #0',
                 '(1073741824, 1073741824)')


def test_forged_shapes(tmp_path):
    rec = struct.pack('<Ii', V2, 0) + struct.pack('<i', 2**30)
    expect_error(tmp_path, list_file([rec]), 'array #0 has 1073741824 dimensions')
    v0 = struct.pack('<I', 1000) + b'\0' * 64
    expect_error(tmp_path, list_file([v0]), 'neither an NDArray magic number')
    rec = struct.pack('<Ii', V2, 0) + shape64((2, -3)) + body(GOOD[0])
    expect_error(tmp_path, list_file([rec]), 'negative or unknown dimension')
    rec = struct.pack('<Ii', V2, 0) + struct.pack('<i', -5)
    expect_error(tmp_path, list_file([rec]), 'negative dimension count -5')


def test_an_empty_array_of_dimensions_numpy_cannot_describe_is_refused(tmp_path):
    empty = np.zeros((0,), dtype=np.float32)
    rec = struct.pack('<Ii', V3, 0) + shape64((0, 2**62, 2**62)) + body(empty)
    expect_error(tmp_path, list_file([rec]), 'array #0 has shape (0, %d, %d)' % (2**62, 2**62),
                 'too large')


def test_empty_ndarray_records(tmp_path):
    for rec in (struct.pack('<Iii', V2, 0, 0), struct.pack('<Iii', V3, 0, -1),
                struct.pack('<I', 0), struct.pack('<Ii', V1, 0)):
        expect_error(tmp_path, list_file([rec]), 'array #0 is an empty NDArray')


@pytest.mark.parametrize('stype, name', [(1, 'row_sparse'), (2, 'csr')])
def test_sparse_storage_is_refused(stype, name, tmp_path):
    rec = record_v2(GOOD[0], stype=stype)
    msg = expect_error(tmp_path, list_file([record_v2(GOOD[1]), rec]), 'array #1', name,
                       'tostype("default")')
    assert 'dense' in msg
    expect_error(tmp_path, list_file([record_v2(GOOD[0], stype=9)]), 'unknown storage type 9')


def test_unknown_type_flags_and_devices(tmp_path):
    expect_error(tmp_path, list_file([record_v2(GOOD[0], flag=12)]),
                 'type flag 12 (bfloat16)', '0 float32', '.astype')
    expect_error(tmp_path, list_file([record_v2(GOOD[0], flag=99)]), 'type flag 99')
    expect_error(tmp_path, list_file([record_v2(GOOD[0], dev=(7, 0))]), 'device type 7')


def test_trailing_bytes(tmp_path):
    data = list_file([record_v2(g) for g in GOOD], ['a', 'b'])
    expect_error(tmp_path, data + b'\0', '1 unexpected bytes', 'offset %d' % len(data))


def test_bad_names(tmp_path):
    recs = [record_v2(g) for g in GOOD]
    expect_error(tmp_path, list_file(recs, ['only one']), '2 arrays but 1 names')
    expect_error(tmp_path, list_file(recs, ['a', 'a']), "name 'a' appears more than once")
    data = list_file(recs, ['a', 'b'])
    expect_error(tmp_path, data[:-1] + b'\xff', 'name #1 is not UTF-8')
    huge = data[:-(8 + 1)] + struct.pack('<Q', 2**62) + b'b'
    expect_error(tmp_path, huge, 'truncated', 'name #1')


def test_forged_array_count(tmp_path):
    data = bytearray(list_file([record_v2(GOOD[0])]))
    struct.pack_into('<Q', data, 16, 2**63)
    expect_error(tmp_path, bytes(data), 'array #1')  # the names' bytes read as a record


# ---- with a real MXNet -----------------------------------------------------------------
def test_mxnet_writes_minigluon_reads(tmp_path, run_mxnet):
    refs = {dtype: sample(dtype, (3, 2)) for dtype in FLAGS}
    for dtype, ref in refs.items():
        np.save(str(tmp_path / ('%s.npy' % dtype)), ref)
    run_mxnet(tmp_path, '''
        import sys, os, numpy as np, mxnet as mx
        folder = sys.argv[1]
        names = %r
        arrays = {n: mx.nd.array(np.load(os.path.join(folder, n + '.npy')), dtype=n)
                  for n in names}
        mx.nd.save(os.path.join(folder, 'dict.params'), arrays)
        mx.nd.save(os.path.join(folder, 'list.params'), [arrays[n] for n in names])
        with mx.util.np_shape(True):
            mx.nd.save(os.path.join(folder, 'np_shape.params'),
                       [mx.nd.array(np.array(2.5)), mx.nd.zeros((0, 3), dtype='int64')])
    ''' % list(refs))
    out = nd.load(str(tmp_path / 'dict.params'))
    assert list(out) == list(refs)
    for dtype, ref in refs.items():
        same_bits(out[dtype].asnumpy(), ref)
    out = nd.load(str(tmp_path / 'list.params'))
    for o, ref in zip(out, refs.values()):
        same_bits(o.asnumpy(), ref)
    scalar, empty = nd.load(str(tmp_path / 'np_shape.params'))
    same_bits(scalar.asnumpy(), np.array(2.5, np.float32))
    same_bits(empty.asnumpy(), np.zeros((0, 3), np.int64))


def test_minigluon_writes_mxnet_reads(tmp_path, run_mxnet):
    refs = {dtype: sample(dtype, (2, 5)) for dtype in FLAGS}
    nd.save(str(tmp_path / 'dict.params'), {k: nd.array(v, dtype=k) for k, v in refs.items()})
    nd.save(str(tmp_path / 'list.params'), [nd.array(v, dtype=k) for k, v in refs.items()])
    nd.save(str(tmp_path / 'np_shape.params'), [nd.full((), 2.5), nd.empty((0, 3), dtype='int64')])
    run_mxnet(tmp_path, '''
        import sys, os, json, numpy as np, mxnet as mx
        folder = sys.argv[1]
        loaded = mx.nd.load(os.path.join(folder, 'dict.params'))
        for name, a in loaded.items():
            np.save(os.path.join(folder, 'dict_%s.npy' % name), a.asnumpy())
        listed = mx.nd.load(os.path.join(folder, 'list.params'))
        for i, a in enumerate(listed):
            np.save(os.path.join(folder, 'list_%d.npy' % i), a.asnumpy())
        with mx.util.np_shape(True):
            shapes = [a.shape for a in mx.nd.load(os.path.join(folder, 'np_shape.params'))]
        with open(os.path.join(folder, 'seen.json'), 'w') as f:
            json.dump({'names': list(loaded), 'count': len(listed), 'shapes': shapes}, f)
    ''')
    seen = json.loads((tmp_path / 'seen.json').read_text())
    assert seen == {'names': list(refs), 'count': len(refs), 'shapes': [[], [0, 3]]}
    for i, (dtype, ref) in enumerate(refs.items()):
        same_bits(np.load(str(tmp_path / ('dict_%s.npy' % dtype))), ref)
        same_bits(np.load(str(tmp_path / ('list_%d.npy' % i))), ref)


def test_parameters_move_both_ways_with_mxnet_gluon(tmp_path, run_mxnet):
    from minigluon.gluon import nn

    def net():
        seq = nn.HybridSequential()
        seq.add(nn.Dense(4, in_units=3, activation='relu'), nn.Dense(2, in_units=4))
        return seq
    x = sample('float32', (5, 3))
    np.save(str(tmp_path / 'x.npy'), x)
    ours = net()
    ours.initialize(mx.init.Normal(1.0))
    ours.save_parameters(str(tmp_path / 'ours.params'))
    run_mxnet(tmp_path, '''
        import sys, os, numpy as np, mxnet as mx
        from mxnet.gluon import nn
        folder = sys.argv[1]
        def net():
            seq = nn.HybridSequential()
            seq.add(nn.Dense(4, in_units=3, activation='relu'), nn.Dense(2, in_units=4))
            return seq
        x = mx.nd.array(np.load(os.path.join(folder, 'x.npy')))
        loaded = net()
        loaded.load_parameters(os.path.join(folder, 'ours.params'))
        np.save(os.path.join(folder, 'y_ours.npy'), loaded(x).asnumpy())
        theirs = net()
        theirs.initialize(mx.init.Normal(1.0))
        theirs.save_parameters(os.path.join(folder, 'theirs.params'))
        np.save(os.path.join(folder, 'y_theirs.npy'), theirs(x).asnumpy())
    ''')
    np.testing.assert_allclose(np.load(str(tmp_path / 'y_ours.npy')),
                               ours(nd.array(x)).asnumpy(), rtol=1e-5, atol=1e-6)
    theirs = net()
    theirs.load_parameters(str(tmp_path / 'theirs.params'))
    np.testing.assert_allclose(theirs(nd.array(x)).asnumpy(),
                               np.load(str(tmp_path / 'y_theirs.npy')), rtol=1e-5, atol=1e-6)
