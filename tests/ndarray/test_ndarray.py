"""The NDArray API: creation, attributes, methods, ops, operators, indexing, printing.

Every value is checked against numpy computed in the test. Tests about ops take the
``ctx`` fixture (tests/conftest.py) so they also run on gpu(0) where one is visible.
"""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

DTYPES = ['float16', 'float32', 'float64', 'int8', 'int32', 'int64', 'uint8', 'bool']
rng = np.random.RandomState(42)


def rand(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, size=shape).astype(dtype)


def check(result, expected, rtol=1e-5, atol=1e-6, dtype=None):
    """Compare an NDArray with a numpy reference: shape, values and (optionally) dtype."""
    assert isinstance(result, nd.NDArray), type(result)
    got = result.asnumpy()
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    if got.dtype.kind in 'biu' and expected.dtype.kind in 'biu':
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------------------
def test_array_from_lists_is_float32(ctx):
    a = nd.array([[1, 2, 3], [4, 5, 6]], ctx=ctx)
    assert a.dtype == np.float32 and a.shape == (2, 3) and a.context == ctx
    check(a, np.array([[1, 2, 3], [4, 5, 6]], np.float32), dtype='float32')
    check(nd.array([True, False], ctx=ctx), np.array([1, 0], np.float32), dtype='float32')
    check(nd.array((1.5, 2.5), ctx=ctx), np.array([1.5, 2.5], np.float32), dtype='float32')
    check(nd.array([1, 2], ctx=ctx, dtype='int32'), np.array([1, 2], np.int32), dtype='int32')


def test_array_from_numpy_is_float32_unless_dtype_says(ctx):
    # MXNet 1.x: float32 for every source but an NDArray, numpy arrays of any dtype included
    for dt in DTYPES:
        src = (rand(3, 4) * 10).astype(dt)
        check(nd.array(src, ctx=ctx), src.astype(np.float32), dtype='float32')
        kept = nd.array(src, ctx=ctx, dtype=src.dtype)
        assert kept.dtype == np.dtype(dt).type, dt
        check(kept, src, dtype=dt)
    src = np.arange(6, dtype=np.float64)
    check(nd.array(src, ctx=ctx, dtype='float16'), src.astype(np.float16), dtype='float16')


def test_array_copies_its_source(ctx):
    src = np.arange(4, dtype=np.float32)
    a = nd.array(src, ctx=ctx)
    src[0] = 100
    check(a, np.arange(4, dtype=np.float32))
    b = nd.array(a)
    b[1] = 50
    check(a, np.arange(4, dtype=np.float32))


def test_array_from_scalars_is_0d(ctx):
    # as MXNet's nd.array: a scalar or 0-d source gives a 0-d float32 array
    a = nd.array(3, ctx=ctx)
    check(a, np.array(3, np.float32), dtype='float32')
    b = nd.array(np.float64(2.5), ctx=ctx)
    check(b, np.array(2.5, np.float32), dtype='float32')
    check(nd.array(np.ones(()), ctx=ctx), np.ones((), np.float32))
    assert (b + 1).shape == (1,) and b.asscalar() == 2.5


def test_array_from_ndarray(ctx):
    x = nd.array(np.arange(6, dtype=np.int32).reshape(2, 3), ctx=ctx,
                 dtype='int32')
    y = nd.array(x)
    assert y.dtype == np.int32 and y.context == mx.cpu(0)
    check(y, np.arange(6, dtype=np.int32).reshape(2, 3), dtype='int32')
    z = nd.array(x, ctx=ctx, dtype='float64')
    check(z, np.arange(6, dtype=np.float64).reshape(2, 3), dtype='float64')


def test_array_rejects_ragged_or_non_numeric():
    with pytest.raises(MXNetError):
        nd.array([[1, 2], [3]])
    with pytest.raises(MXNetError):
        nd.array(['a', 'b'])


def test_zeros_ones_empty_full(ctx):
    check(nd.zeros((2, 3), ctx=ctx), np.zeros((2, 3), np.float32), dtype='float32')
    check(nd.ones(4, ctx=ctx), np.ones(4, np.float32), dtype='float32')
    check(nd.zeros((2, 2), ctx=ctx, dtype='int64'), np.zeros((2, 2), np.int64), dtype='int64')
    check(nd.ones((3,), ctx=ctx, dtype=np.uint8), np.ones(3, np.uint8), dtype='uint8')
    e = nd.empty((3, 2), ctx=ctx)
    assert e.shape == (3, 2) and e.dtype == np.float32 and e.context == ctx
    e = nd.empty((3,), ctx=ctx, dtype='int8')
    assert e.dtype == np.int8
    check(nd.full((2, 2), 7.5, ctx=ctx), np.full((2, 2), 7.5, np.float32), dtype='float32')
    check(nd.full((3,), 4, ctx=ctx, dtype='int32'), np.full(3, 4, np.int32), dtype='int32')
    out = nd.zeros((2,), ctx=ctx)
    r = nd.full((2,), 3, ctx=ctx, out=out)
    assert r is out
    check(out, [3.0, 3.0])
    with mx.np_shape():  # outside it, as in MXNet, a 0 dimension is an unknown one
        check(nd.zeros((0, 3), ctx=ctx), np.zeros((0, 3), np.float32))
    with pytest.raises(MXNetError, match='negative'):
        nd.zeros((2, -1))


def test_arange(ctx):
    check(nd.arange(5, ctx=ctx), np.arange(5, dtype=np.float32), dtype='float32')
    check(nd.arange(2, 8, 2, ctx=ctx), np.arange(2, 8, 2, dtype=np.float32))
    check(nd.arange(0, 1, 0.25, ctx=ctx), np.arange(0, 1, 0.25, dtype=np.float32))
    check(nd.arange(0, 3, repeat=2, ctx=ctx), np.repeat(np.arange(3, dtype=np.float32), 2))
    check(nd.arange(5, 0, -1.5, ctx=ctx), np.arange(5, 0, -1.5).astype(np.float32))
    check(nd.arange(4, ctx=ctx, dtype='int32'), np.arange(4, dtype=np.int32), dtype='int32')


def test_like_linspace_eye(ctx):
    x = nd.array(rand(2, 3), ctx=ctx, dtype='float64')
    check(nd.zeros_like(x), np.zeros((2, 3)), dtype='float64')
    check(nd.ones_like(x), np.ones((2, 3)), dtype='float64')
    check(x.zeros_like(), np.zeros((2, 3)), dtype='float64')
    check(x.ones_like(), np.ones((2, 3)), dtype='float64')
    check(nd.linspace(0, 1, 5, ctx=ctx), np.linspace(0, 1, 5).astype(np.float32),
          dtype='float32')
    check(nd.linspace(0, 1, 4, endpoint=False, ctx=ctx),
          np.linspace(0, 1, 4, endpoint=False).astype(np.float32))
    check(nd.eye(3, ctx=ctx), np.eye(3, dtype=np.float32), dtype='float32')
    check(nd.eye(2, 4, 1, ctx=ctx), np.eye(2, 4, 1, dtype=np.float32))
    check(nd.eye(3, k=-1, ctx=ctx, dtype='int32'), np.eye(3, k=-1, dtype=np.int32),
          dtype='int32')


# ---------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize('dtype', DTYPES)
def test_every_supported_dtype(dtype, ctx):
    ref = (np.arange(6) % 3).reshape(2, 3).astype(dtype)
    for a in (nd.array(ref, ctx=ctx, dtype=dtype), nd.array(ref.tolist(), ctx=ctx, dtype=dtype),
              nd.zeros((2, 3), ctx=ctx, dtype=dtype) + nd.array(ref, ctx=ctx, dtype=dtype)):
        assert a.dtype == np.dtype(dtype).type
        check(a, ref, dtype=dtype)
    a = nd.array(ref, ctx=ctx, dtype=dtype)
    check(a.copy(), ref, dtype=dtype)
    check(a.reshape(3, 2), ref.reshape(3, 2), dtype=dtype)
    check(a.astype('float64'), ref.astype(np.float64), dtype='float64')
    check(nd.array(ref.astype(np.float64), ctx=ctx).astype(dtype), ref, dtype=dtype)
    check(a[1], ref[1], dtype=dtype)
    check(a.T, ref.T, dtype=dtype)
    check(nd.ones((2,), ctx=ctx, dtype=dtype), np.ones(2, dtype), dtype=dtype)


@pytest.mark.parametrize('dtype', ['complex64', 'int16', 'uint16', 'object', np.complex128])
def test_unsupported_dtype_errors(dtype):
    for make in (lambda: nd.zeros((2,), dtype=dtype),
                 lambda: nd.ones((2,), dtype=dtype),
                 lambda: nd.array([1, 2], dtype=dtype),
                 lambda: nd.array([1.0, 2.0]).astype(dtype),
                 lambda: nd.cast(nd.array([1.0, 2.0]), dtype=dtype)):
        with pytest.raises(MXNetError) as info:
            make()
        msg = str(info.value)
        assert 'dtype' in msg and 'float32' in msg  # says which dtypes are supported
    if dtype not in ('object',):
        with pytest.raises(MXNetError, match='dtype'):
            nd.array(np.zeros(2, dtype=dtype), dtype=dtype)


def test_unknown_dtype_name():
    with pytest.raises(MXNetError, match='dtype'):
        nd.zeros((2,), dtype='not_a_dtype')


# ---------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------
def test_attributes(ctx):
    ref = rand(2, 3, 4)
    a = nd.array(ref, ctx=ctx)
    assert a.shape == (2, 3, 4) and isinstance(a.shape, tuple)
    assert a.dtype == np.float32
    assert a.size == 24 and a.ndim == 3
    assert a.context == ctx and a.ctx == ctx
    assert a.stype == 'default'
    assert a.grad is None
    a.attach_grad()
    assert a.grad is not None and a.grad.shape == a.shape
    check(a.grad, np.zeros_like(ref))
    m = nd.array(ref[0], ctx=ctx)
    check(m.T, ref[0].T)
    check(a.T, ref.T)
    assert a.T.shape == (4, 3, 2)


# ---------------------------------------------------------------------------------------
# conversion and copies
# ---------------------------------------------------------------------------------------
def test_asnumpy_is_a_copy(ctx):
    ref = rand(3, 2)
    a = nd.array(ref, ctx=ctx)
    n = a.asnumpy()
    assert isinstance(n, np.ndarray) and n.dtype == np.float32
    np.testing.assert_array_equal(n, ref)
    n[:] = 0
    check(a, ref)
    a[:] = 1
    np.testing.assert_array_equal(n, np.zeros((3, 2)))


def test_asscalar(ctx):
    assert nd.array([2.5], ctx=ctx).asscalar() == 2.5
    assert isinstance(nd.array([3], ctx=ctx, dtype='int32').asscalar(), (int, np.integer))
    assert nd.array([[7]], ctx=ctx).asscalar() == 7.0
    assert nd.array([1, 2, 3], ctx=ctx).sum().asscalar() == 6.0
    with pytest.raises(MXNetError):
        nd.array([1, 2], ctx=ctx).asscalar()
    with pytest.raises(MXNetError):
        nd.empty((0,), ctx=ctx).asscalar()


def test_astype(ctx):
    ref = np.array([-1.7, 0.2, 2.9], np.float32)
    a = nd.array(ref, ctx=ctx)
    check(a.astype('int32'), ref.astype(np.int32), dtype='int32')
    check(a.astype(np.float64), ref.astype(np.float64), dtype='float64')
    check(a.astype('bool'), ref.astype(bool), dtype='bool')
    b = a.astype('float32')
    assert b is not a
    b[0] = 5
    check(a, ref)
    assert a.astype('float32', copy=False) is a


def test_copy_does_not_share(ctx):
    ref = rand(2, 2)
    a = nd.array(ref, ctx=ctx)
    b = a.copy()
    b[:] = 0
    check(a, ref)
    check(b, np.zeros((2, 2)))


def test_copyto_context_and_ndarray(ctx):
    ref = rand(2, 3)
    a = nd.array(ref, ctx=ctx)
    b = a.copyto(mx.cpu(0))
    assert b.context == mx.cpu(0)
    check(b, ref)
    b[:] = 0
    check(a, ref)
    dst = nd.zeros((2, 3), ctx=ctx)
    r = a.copyto(dst)
    assert r is dst
    check(dst, ref)
    dst64 = nd.zeros((2, 3), ctx=ctx, dtype='float64')
    a.copyto(dst64)
    check(dst64, ref.astype(np.float64), dtype='float64')  # destination keeps its dtype
    with pytest.raises(MXNetError) as info:
        a.copyto(nd.zeros((3, 2), ctx=ctx))
    assert '(2, 3)' in str(info.value) and '(3, 2)' in str(info.value)
    with pytest.raises(MXNetError):
        a.copyto('cpu')


def test_as_in_context(ctx):
    a = nd.array(rand(2), ctx=ctx)
    assert a.as_in_context(ctx) is a
    assert a.as_in_ctx(ctx) is a


def test_multi_cpu_copies_do_not_share_memory():
    ref = rand(3, 2)
    a = nd.array(ref, ctx=mx.cpu(0))
    b = a.copyto(mx.cpu(1))
    c = a.as_in_context(mx.cpu(1))
    assert b.context == mx.cpu(1) and c.context == mx.cpu(1)
    check(b, ref)
    check(c, ref)
    assert not np.shares_memory(a.handle, b.handle)
    assert not np.shares_memory(a.handle, c.handle)
    b[:] = 1
    c += 1
    check(a, ref)
    d = nd.zeros((3, 2), ctx=mx.cpu(1))
    a.copyto(d)
    assert d.context == mx.cpu(1)
    a[:] = 0
    check(d, ref)
    back = b.as_in_context(mx.cpu(0))
    assert back.context == mx.cpu(0)
    check(back, np.ones((3, 2)))


@pytest.mark.skipif(mx.num_gpus() == 0, reason='needs a GPU: CPU contexts mix, as in MXNet')
def test_mixing_cpu_and_gpu_is_an_error_naming_both():
    a = nd.ones((2,), ctx=mx.cpu(0))
    b = nd.ones((2,), ctx=mx.gpu(0))
    for op in (lambda: a + b, lambda: nd.dot(a, b), lambda: nd.concat(a, b, dim=0),
               lambda: nd.maximum(a, b), lambda: nd.where(a, a, b)):
        with pytest.raises(MXNetError) as info:
            op()
        assert 'cpu(0)' in str(info.value) and 'gpu(0)' in str(info.value)
    with pytest.raises(MXNetError) as info:
        a[:] = b
    assert 'cpu(0)' in str(info.value) and 'gpu(0)' in str(info.value)
    with pytest.raises(MXNetError) as info:
        a[nd.array([0], ctx=mx.gpu(0))]
    assert 'cpu(0)' in str(info.value) and 'gpu(0)' in str(info.value)
    # explicit moves fix it
    check(a + b.as_in_context(mx.cpu(0)), [2.0, 2.0])


def test_cpu_contexts_mix_as_in_mxnet():
    a = nd.arange(3, ctx=mx.cpu(0))
    assert a[nd.array([0, 2], ctx=mx.cpu(1))].asnumpy().tolist() == [0, 2]
    check(nd.where(a, a, nd.ones((3,), ctx=mx.cpu(1))), [1, 1, 2])


def test_shape_mismatch_errors_name_the_shapes(ctx):
    a = nd.ones((2, 3), ctx=ctx)
    b = nd.ones((4,), ctx=ctx)
    for op in (lambda: a + b, lambda: a * b, lambda: nd.broadcast_sub(a, b),
               lambda: nd.elemwise_add(a, b), lambda: a == b):
        with pytest.raises(MXNetError) as info:
            op()
        msg = str(info.value)
        assert ('2x3' in msg or '(2, 3)' in msg or '(2,3)' in msg) and '4' in msg, msg
    with pytest.raises(MXNetError) as info:
        nd.dot(a, nd.ones((4, 5), ctx=ctx))
    msg = str(info.value)
    assert '(2, 3)' in msg and '(4, 5)' in msg
    with pytest.raises(MXNetError) as info:
        nd.batch_dot(nd.ones((2, 3, 4), ctx=ctx), nd.ones((2, 5, 6), ctx=ctx))
    assert '(2, 3, 4)' in str(info.value) and '(2, 5, 6)' in str(info.value)
    with pytest.raises(MXNetError) as info:
        a += nd.ones((3, 2, 3), ctx=ctx)
    assert '(2, 3)' in str(info.value)


def test_error_classes_are_the_same():
    assert mx.MinigluonError is mx.base.MXNetError is mx.MXNetError
    assert mx.base.MinigluonError is MXNetError


# ---------------------------------------------------------------------------------------
# shape manipulation
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize('src,target,expected', [
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (-1, 4), (6, 4)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
])
def test_reshape_codes(src, target, expected, ctx):
    ref = np.arange(int(np.prod(src)), dtype=np.float32).reshape(src)
    a = nd.array(ref, ctx=ctx)
    check(a.reshape(target), ref.reshape(expected))
    check(a.reshape(*target), ref.reshape(expected))
    check(a.reshape(shape=target), ref.reshape(expected))
    check(nd.reshape(a, shape=target), ref.reshape(expected))


def test_reshape_reverse(ctx):
    ref = np.arange(200, dtype=np.float32).reshape(10, 5, 4)
    a = nd.array(ref, ctx=ctx)
    check(a.reshape((-1, 0)), ref.reshape(40, 5))                # codes read left to right
    check(a.reshape((-1, 0), reverse=True), ref.reshape(50, 4))  # ... or right to left


def test_reshape_errors_and_view(ctx):
    a = nd.array(np.arange(6, dtype=np.float32), ctx=ctx)
    with pytest.raises(MXNetError, match='reshape'):
        a.reshape(4, 2)
    with pytest.raises(MXNetError):
        a.reshape(-1, -1)
    with pytest.raises(MXNetError):
        a.reshape(-4, 4, -1)
    v = a.reshape(2, 3)
    a[:] = 7  # reshape shares memory, as in MXNet
    check(v, np.full((2, 3), 7, np.float32))
    check(a.reshape_like(nd.zeros((3, 2), ctx=ctx)), np.full((3, 2), 7, np.float32))


def test_transpose_and_friends(ctx):
    ref = rand(2, 3, 4)
    a = nd.array(ref, ctx=ctx)
    check(a.transpose(), ref.transpose())
    check(a.transpose((1, 0, 2)), ref.transpose(1, 0, 2))
    check(a.transpose(2, 0, 1), ref.transpose(2, 0, 1))
    check(a.transpose(axes=(0, 2, 1)), ref.transpose(0, 2, 1))
    check(nd.transpose(a, axes=(1, 2, 0)), ref.transpose(1, 2, 0))
    check(a.expand_dims(axis=1), np.expand_dims(ref, 1))
    check(a.expand_dims(-1), np.expand_dims(ref, -1))
    check(nd.expand_dims(a, axis=0), ref[None])
    s = nd.array(rand(1, 3, 1, 2), ctx=ctx)
    check(s.squeeze(), s.asnumpy().squeeze())
    check(s.squeeze(axis=2), s.asnumpy().squeeze(axis=2))
    check(s.squeeze(axis=(0, 2)), s.asnumpy().reshape(3, 2))
    check(a.flatten(), ref.reshape(2, 12))
    check(nd.flatten(a), ref.reshape(2, 12))
    check(nd.Flatten(a), ref.reshape(2, 12))
    check(nd.array(ref[0, 0], ctx=ctx).flatten(), ref[0, 0].reshape(4, 1))
    check(a.swapaxes(0, 2), ref.swapaxes(0, 2))
    check(nd.swapaxes(a, dim1=1, dim2=2), ref.swapaxes(1, 2))
    check(nd.moveaxis(a, 0, -1), np.moveaxis(ref, 0, -1))


def test_broadcast_tile_repeat(ctx):
    ref = rand(1, 3)
    a = nd.array(ref, ctx=ctx)
    check(a.broadcast_to((4, 3)), np.broadcast_to(ref, (4, 3)))
    check(nd.broadcast_to(a, shape=(2, 0)), np.broadcast_to(ref, (2, 3)))  # 0 keeps the dim
    check(nd.broadcast_axis(a, axis=0, size=5), np.broadcast_to(ref, (5, 3)))
    check(a.broadcast_like(nd.zeros((2, 3), ctx=ctx)), np.broadcast_to(ref, (2, 3)))
    with pytest.raises(MXNetError):
        a.broadcast_to((4, 2))
    b = nd.array(rand(2, 3), ctx=ctx)
    check(b.tile(reps=(2, 3)), np.tile(b.asnumpy(), (2, 3)))
    check(b.tile((2, 1, 2)), np.tile(b.asnumpy(), (2, 1, 2)))
    check(nd.tile(b, reps=2), np.tile(b.asnumpy(), 2))
    check(b.repeat(repeats=2, axis=0), np.repeat(b.asnumpy(), 2, axis=0))
    check(b.repeat(3, axis=-1), np.repeat(b.asnumpy(), 3, axis=-1))
    check(nd.repeat(b, repeats=2), np.repeat(b.asnumpy(), 2))


# ---------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize('name', ['sum', 'mean', 'max', 'min', 'prod'])
def test_reductions(name, ctx):
    ref = rand(2, 3, 4, low=0.5, high=1.5)
    a = nd.array(ref, ctx=ctx)
    f = getattr(np, name)
    method, function = getattr(a, name), getattr(nd, name)
    check(method(), np.array([f(ref)]), rtol=1e-5)  # full reduction: shape (1,) as MXNet
    assert method().shape == (1,)
    check(method(axis=1), f(ref, axis=1), rtol=1e-5)
    check(method(axis=-1), f(ref, axis=-1), rtol=1e-5)
    check(method(axis=(0, 2)), f(ref, axis=(0, 2)), rtol=1e-5)
    check(method(axis=1, keepdims=True), f(ref, axis=1, keepdims=True), rtol=1e-5)
    check(method(keepdims=True), f(ref, keepdims=True), rtol=1e-5)
    check(method(axis=1, exclude=True), f(ref, axis=(0, 2)), rtol=1e-5)
    check(method(axis=(0, 2), exclude=True, keepdims=True), f(ref, axis=1, keepdims=True),
          rtol=1e-5)
    check(function(a, axis=0), f(ref, axis=0), rtol=1e-5)
    check(function(a, 2), f(ref, axis=2), rtol=1e-5)  # positional axis
    check(function(data=a, axis=1), f(ref, axis=1), rtol=1e-5)
    with pytest.raises(MXNetError, match='out of range'):
        method(axis=3)


@pytest.mark.parametrize('dtype', ['int8', 'int32', 'int64', 'uint8', 'float16', 'float64'])
def test_reductions_keep_dtype(dtype, ctx):
    # MXNet's legacy reductions return the input dtype (numpy would widen integers)
    ref = (np.arange(12) % 5 + 1).reshape(3, 4).astype(dtype)
    a = nd.array(ref, ctx=ctx, dtype=dtype)
    for name in ('sum', 'mean', 'max', 'min', 'prod', 'nansum'):
        f = getattr(np, name)
        check(getattr(a, name)(axis=0), f(ref, axis=0).astype(dtype), rtol=1e-3, dtype=dtype)
        check(getattr(a, name)(), np.array([f(ref)]).astype(dtype), rtol=1e-3, dtype=dtype)
    if dtype == 'uint8':
        big = nd.array(np.full(4, 200, np.uint8), ctx=ctx, dtype='uint8')
        check(big.sum(), np.array([800 % 256], np.uint8), dtype='uint8')  # C-type wrap-around
    b = nd.array(ref > 2, ctx=ctx, dtype='bool')
    check(b.sum(axis=1), (ref > 2).sum(axis=1))  # bool: counted, not or-ed


def test_argmax_argmin(ctx):
    ref = rand(3, 5)
    a = nd.array(ref, ctx=ctx)
    for name in ('argmax', 'argmin'):
        f = getattr(np, name)
        for axis in (0, 1, -1):
            check(getattr(a, name)(axis=axis), f(ref, axis=axis).astype(np.float32),
                  dtype='float32')
        check(getattr(a, name)(axis=1, keepdims=True),
              f(ref, axis=1)[:, None].astype(np.float32), dtype='float32')
        check(getattr(nd, name)(a, axis=0), f(ref, axis=0).astype(np.float32), dtype='float32')
        full = getattr(a, name)()
        check(full, np.array([f(ref)], np.float32), dtype='float32')
    i = nd.array(np.array([[1, 9, 3], [7, 2, 8]], np.int32), ctx=ctx)
    check(i.argmax(axis=1), np.array([1, 2], np.float32), dtype='float32')


def test_norm(ctx):
    ref = rand(3, 4)
    a = nd.array(ref, ctx=ctx)
    check(a.norm(), np.array([np.linalg.norm(ref)]), rtol=1e-5)
    check(nd.norm(a), np.array([np.sqrt((ref ** 2).sum())]), rtol=1e-5)
    check(a.norm(axis=1), np.linalg.norm(ref, axis=1), rtol=1e-5)
    check(a.norm(ord=1, axis=0), np.abs(ref).sum(axis=0), rtol=1e-5)
    check(a.norm(axis=0, keepdims=True), np.linalg.norm(ref, axis=0, keepdims=True), rtol=1e-5)
    check(a.norm(ord=1), np.array([np.abs(ref).sum()]), rtol=1e-5)
    with pytest.raises(MXNetError, match='ord'):
        a.norm(ord=3)


def test_nansum(ctx):
    ref = np.array([[1, np.nan, 2], [np.nan, 3, 4]], np.float32)
    a = nd.array(ref, ctx=ctx)
    check(a.nansum(), np.array([np.nansum(ref)]))
    check(a.nansum(axis=1), np.nansum(ref, axis=1))


# ---------------------------------------------------------------------------------------
# elementwise maths
# ---------------------------------------------------------------------------------------
def _softrelu(x):
    return np.log1p(np.exp(x))


UNARY = [
    ('abs', np.abs, None), ('sign', np.sign, None), ('sqrt', np.sqrt, 'positive'),
    ('rsqrt', lambda x: 1 / np.sqrt(x), 'positive'), ('exp', np.exp, None),
    ('expm1', np.expm1, None), ('log', np.log, 'positive'), ('log1p', np.log1p, 'positive'),
    ('square', np.square, None), ('reciprocal', lambda x: 1 / x, 'positive'),
    ('floor', np.floor, None), ('ceil', np.ceil, None), ('round', np.round, None),
    ('relu', lambda x: np.maximum(x, 0), None),
    ('sigmoid', lambda x: 1 / (1 + np.exp(-x)), None), ('tanh', np.tanh, None),
    ('softrelu', _softrelu, None), ('sin', np.sin, None), ('cos', np.cos, None),
    ('negative', np.negative, None), ('softsign', lambda x: x / (1 + np.abs(x)), None),
]


@pytest.mark.parametrize('name,ref_fn,domain', UNARY, ids=[u[0] for u in UNARY])
def test_unary_math(name, ref_fn, domain, ctx):
    x = rand(3, 4, low=0.1, high=3.0) if domain == 'positive' else rand(3, 4, low=-3, high=3)
    if name == 'round':
        x = np.array([[-2.7, -1.2, -0.3, 0.2], [0.7, 1.4, 2.6, 3.1], [-3.6, 4.4, 5.7, -5.8]],
                     np.float32)  # no .5 ties: MXNet rounds halves away from zero
    a = nd.array(x, ctx=ctx)
    expected = ref_fn(x.astype(np.float64))
    check(getattr(nd, name)(a), expected, rtol=1e-5, atol=1e-6, dtype='float32')
    if hasattr(nd.NDArray, name):
        check(getattr(a, name)(), expected, rtol=1e-5, atol=1e-6, dtype='float32')
    check(getattr(nd, name)(data=a), expected, rtol=1e-5, atol=1e-6)


def test_unary_float64_and_large_inputs(ctx):
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    a = nd.array(x, ctx=ctx, dtype='float64')
    with np.errstate(over='ignore'):
        check(a.sigmoid(), 1 / (1 + np.exp(-x)), dtype='float64')
        check(a.softrelu(), np.logaddexp(0, x), dtype='float64')
    assert np.isfinite(a.sigmoid().asnumpy()).all()
    assert np.isfinite(a.softrelu().asnumpy()).all()
    check(-a, -x)
    check(abs(a), np.abs(x))
    assert (+a) is a


def test_power_clip_maximum_minimum(ctx):
    x = rand(3, 4, low=0.5, high=2.0)
    y = rand(3, 4, low=-1.0, high=2.0)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    check(nd.power(a, b), np.power(x, y), rtol=1e-5)
    check(a.power(2), x ** 2, rtol=1e-5)
    check(nd.power(a, 3), x ** 3, rtol=1e-5)
    check(nd.broadcast_power(a, nd.array(y[:1], ctx=ctx)), x ** y[:1], rtol=1e-5)
    check(a.clip(0.8, 1.5), np.clip(x, 0.8, 1.5))
    check(nd.clip(a, a_min=1.0, a_max=1.2), np.clip(x, 1.0, 1.2))
    i = nd.array(np.array([-5, 0, 7]), ctx=ctx, dtype='int32')
    check(i.clip(-1, 3), np.array([-1, 0, 3], np.int32), dtype='int32')
    check(nd.maximum(a, b), np.maximum(x, y))
    check(nd.minimum(a, b), np.minimum(x, y))
    check(a.maximum(b), np.maximum(x, y))
    check(nd.maximum(a, 1.0), np.maximum(x, 1.0), dtype='float32')
    check(nd.minimum(1.0, a), np.minimum(x, 1.0), dtype='float32')
    check(nd.broadcast_maximum(a, nd.array(y[:, :1], ctx=ctx)), np.maximum(x, y[:, :1]))
    check(nd.broadcast_minimum(a, nd.array(y[:1], ctx=ctx)), np.minimum(x, y[:1]))
    check(nd.hypot(a, b), np.hypot(x, y), rtol=1e-5)


# ---------------------------------------------------------------------------------------
# softmax, dot, concat and friends
# ---------------------------------------------------------------------------------------
def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_log_softmax(ctx):
    x = rand(3, 4, 5, low=-5, high=5)
    a = nd.array(x, ctx=ctx)
    for axis in (-1, 0, 1):
        check(a.softmax(axis=axis), _np_softmax(x, axis), rtol=1e-5)
        check(nd.log_softmax(a, axis=axis), np.log(_np_softmax(x.astype(np.float64), axis)),
              rtol=1e-4, atol=1e-5)
    check(nd.softmax(a), _np_softmax(x), rtol=1e-5)
    check(nd.softmax(data=a, axis=0), _np_softmax(x, 0), rtol=1e-5)
    check(a.log_softmax(), np.log(_np_softmax(x.astype(np.float64))), rtol=1e-4, atol=1e-5)
    check(nd.softmax(a, temperature=2.0), _np_softmax(x / 2.0), rtol=1e-5)
    big = nd.array([[1000.0, 1000.0, -1000.0]], ctx=ctx)
    check(big.softmax(), [[0.5, 0.5, 0.0]])
    check(big.log_softmax(), [[np.log(0.5), np.log(0.5), -2000 - np.log(2)]], rtol=1e-5)


def test_dot(ctx):
    x, y = rand(3, 4), rand(4, 5)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    check(nd.dot(a, b), x @ y, rtol=1e-5, atol=1e-5)
    check(a.dot(b), x @ y, rtol=1e-5, atol=1e-5)
    check(nd.dot(nd.array(x.T, ctx=ctx), b, transpose_a=True), x @ y, rtol=1e-5, atol=1e-5)
    check(nd.dot(a, nd.array(y.T, ctx=ctx), transpose_b=True), x @ y, rtol=1e-5, atol=1e-5)
    check(nd.dot(nd.array(x.T, ctx=ctx), nd.array(y.T, ctx=ctx), transpose_a=True,
                 transpose_b=True), x @ y, rtol=1e-5, atol=1e-5)
    v, w = rand(4), rand(4)
    check(nd.dot(nd.array(v, ctx=ctx), nd.array(w, ctx=ctx)), np.array([v @ w]), rtol=1e-5)
    check(nd.dot(a, nd.array(w, ctx=ctx)), x @ w, rtol=1e-5, atol=1e-5)
    # N-D: contract the last axis of lhs with the first axis of rhs
    p, q = rand(2, 3, 4), rand(4, 2, 5)
    P, Q = nd.array(p, ctx=ctx), nd.array(q, ctx=ctx)
    check(nd.dot(P, Q), np.tensordot(p, q, axes=1), rtol=1e-5, atol=1e-5)
    assert nd.dot(P, Q).shape == (2, 3, 2, 5)
    # N-D with transpose flags, as MXNet: the input is viewed as 2-D and transposed, so
    # transpose_a contracts lhs's first axis, transpose_b rhs's last axis, order kept
    l, r = rand(4, 2, 3), rand(5, 6, 4)
    L, R = nd.array(l, ctx=ctx), nd.array(r, ctx=ctx)
    check(nd.dot(L, nd.array(q, ctx=ctx), transpose_a=True),
          np.tensordot(l, q, axes=([0], [0])), rtol=1e-5, atol=1e-5)
    assert nd.dot(L, nd.array(q, ctx=ctx), transpose_a=True).shape == (2, 3, 2, 5)
    check(nd.dot(P, R, transpose_b=True), np.tensordot(p, r, axes=([2], [2])),
          rtol=1e-5, atol=1e-5)
    assert nd.dot(P, R, transpose_b=True).shape == (2, 3, 5, 6)
    check(nd.dot(L, R, transpose_a=True, transpose_b=True),
          np.tensordot(l, r, axes=([0], [2])), rtol=1e-5, atol=1e-5)
    lf = l.reshape(4, 6)
    check(nd.dot(L, R, transpose_a=True, transpose_b=True).reshape(6, 30),
          lf.T @ r.reshape(30, 4).T, rtol=1e-5, atol=1e-5)


def test_batch_dot(ctx):
    x, y = rand(2, 3, 4), rand(2, 4, 5)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    check(nd.batch_dot(a, b), np.matmul(x, y), rtol=1e-5, atol=1e-5)
    xt = nd.array(x.transpose(0, 2, 1), ctx=ctx)
    yt = nd.array(y.transpose(0, 2, 1), ctx=ctx)
    check(nd.batch_dot(xt, b, transpose_a=True), np.matmul(x, y), rtol=1e-5, atol=1e-5)
    check(nd.batch_dot(a, yt, transpose_b=True), np.matmul(x, y), rtol=1e-5, atol=1e-5)
    with pytest.raises(MXNetError, match='3-D'):
        nd.batch_dot(nd.array(x[0], ctx=ctx), nd.array(y[0], ctx=ctx))


def test_concat_stack(ctx):
    x, y = rand(2, 3), rand(2, 4)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    check(nd.concat(a, b), np.concatenate([x, y], axis=1))  # default dim=1
    check(nd.Concat(a, b, dim=1), np.concatenate([x, y], axis=1))
    z = rand(5, 3)
    check(nd.concat(a, nd.array(z, ctx=ctx), dim=0), np.concatenate([x, z], axis=0))
    check(nd.concat(a, a, a, dim=-1), np.concatenate([x, x, x], axis=-1))
    with pytest.raises(MXNetError):
        nd.concat(a, b, dim=0)
    check(nd.stack(a, a), np.stack([x, x]))
    check(nd.stack(a, a * 2, axis=1), np.stack([x, x * 2], axis=1))
    check(nd.stack(a, a, axis=-1), np.stack([x, x], axis=-1))


def test_split(ctx):
    x = rand(2, 6, 4)
    a = nd.array(x, ctx=ctx)
    parts = nd.split(a, num_outputs=3)  # default axis=1
    assert isinstance(parts, list) and len(parts) == 3
    for p, r in zip(parts, np.split(x, 3, axis=1)):
        check(p, r)
    parts = a.split(num_outputs=2, axis=0, squeeze_axis=True)
    for p, r in zip(parts, [x[0], x[1]]):
        check(p, r)
    parts = nd.split(a, 4, axis=-1)
    for p, r in zip(parts, np.split(x, 4, axis=-1)):
        check(p, r)
    parts = nd.SliceChannel(a, num_outputs=2, axis=2)
    for p, r in zip(parts, np.split(x, 2, axis=2)):
        check(p, r)
    one = nd.split(a, num_outputs=1, axis=0)
    check(one, x)  # a single output is returned as an array
    with pytest.raises(MXNetError, match='split'):
        nd.split(a, num_outputs=4)


def test_slice_axis(ctx):
    x = rand(3, 5)
    a = nd.array(x, ctx=ctx)
    check(a.slice_axis(axis=1, begin=1, end=4), x[:, 1:4])
    check(nd.slice_axis(a, axis=0, begin=-2, end=None), x[-2:])


def test_one_hot_pick_take(ctx):
    idx = np.array([1, 0, 3, 2], np.float32)
    i = nd.array(idx, ctx=ctx)
    check(nd.one_hot(i, depth=4), np.eye(4, dtype=np.float32)[idx.astype(int)],
          dtype='float32')
    check(i.one_hot(5, on_value=3, off_value=-1),
          np.where(np.eye(5)[idx.astype(int)] == 1, 3, -1))
    check(nd.one_hot(nd.array([[0, 2], [1, 5]], ctx=ctx), depth=3, dtype='int32'),
          np.array([[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 0, 0]]], np.int32), dtype='int32')

    x = rand(4, 5)
    a = nd.array(x, ctx=ctx)
    check(nd.pick(a, i), x[np.arange(4), idx.astype(int)])  # default axis=-1
    check(a.pick(i, axis=1, keepdims=True), x[np.arange(4), idx.astype(int)][:, None])
    j = nd.array([0, 3, 1, 2, 3], ctx=ctx)
    check(nd.pick(a, j, axis=0), x[[0, 3, 1, 2, 3], np.arange(5)])
    check(nd.pick(a, nd.array([7, -1, 0, 4], ctx=ctx)), x[np.arange(4), [4, 0, 0, 4]])  # clip
    check(nd.pick(a, nd.array([6, -1, 0, 4], ctx=ctx), mode='wrap'),
          x[np.arange(4), [1, 4, 0, 4]])

    check(nd.take(a, nd.array([2, 0], ctx=ctx)), x[[2, 0]])
    check(a.take(nd.array([[1, 1], [3, 0]], ctx=ctx)), x[np.array([[1, 1], [3, 0]])])
    check(nd.take(a, nd.array([4, -1], ctx=ctx), axis=1), x[:, [4, 0]])
    check(nd.take(a, nd.array([5, -1, 9], ctx=ctx), mode='clip'), x[[3, 0, 3]])
    check(nd.take(a, nd.array([5, -1, 9], ctx=ctx), mode='wrap'), x[[1, 3, 1]])
    with pytest.raises(MXNetError, match='mode'):
        nd.take(a, nd.array([0], ctx=ctx), mode='nearest')


def test_where(ctx):
    c = np.array([[1, 0, 1], [0, 0, 1]], np.float32)
    x, y = rand(2, 3), rand(2, 3)
    C, X, Y = (nd.array(v, ctx=ctx) for v in (c, x, y))
    check(nd.where(C, X, Y), np.where(c != 0, x, y))
    check(nd.where(condition=C, x=X, y=Y), np.where(c != 0, x, y))
    rows = nd.array([0, 1], ctx=ctx)  # a 1-D condition selects whole rows
    check(nd.where(rows, X, Y), np.stack([y[0], x[1]]))


def test_sort_argsort_topk(ctx):
    x = np.array([[3, 1, 4, 1.5, 5], [9, 2, 6, 5.5, 3.5]], np.float32)
    a = nd.array(x, ctx=ctx)
    check(a.sort(), np.sort(x, axis=-1))
    check(nd.sort(a, axis=0), np.sort(x, axis=0))
    check(a.sort(is_ascend=False), -np.sort(-x, axis=-1))
    check(a.argsort(), np.argsort(x, axis=-1).astype(np.float32), dtype='float32')
    check(nd.argsort(a, axis=0, is_ascend=False), np.argsort(-x, axis=0).astype(np.float32))
    check(a.argsort(dtype='int32'), np.argsort(x, axis=-1).astype(np.int32), dtype='int32')
    top2 = np.argsort(-x, axis=-1)[:, :2]
    check(a.topk(), top2[:, :1].astype(np.float32), dtype='float32')  # k=1, indices
    check(a.topk(k=2), top2.astype(np.float32), dtype='float32')
    check(a.topk(k=2, ret_typ='indices'), top2.astype(np.float32))
    check(a.topk(k=2, ret_typ='value'), np.take_along_axis(x, top2, -1))
    vals, inds = a.topk(k=2, ret_typ='both')
    check(vals, np.take_along_axis(x, top2, -1))
    check(inds, top2.astype(np.float32))
    mask = np.zeros_like(x)
    np.put_along_axis(mask, top2, 1, -1)
    check(a.topk(k=2, ret_typ='mask'), mask, dtype='float32')
    low2 = np.argsort(x, axis=-1)[:, :2]
    check(a.topk(k=2, is_ascend=True), low2.astype(np.float32))
    check(nd.topk(a, axis=0, k=1, ret_typ='value'), np.max(x, axis=0, keepdims=True))
    check(a.topk(k=3, dtype='int64'), np.argsort(-x, axis=-1)[:, :3], dtype='int64')
    with pytest.raises(MXNetError, match='ret_typ'):
        a.topk(ret_typ='values')
    with pytest.raises(MXNetError, match='k='):
        a.topk(k=6)


@pytest.mark.parametrize('dtype', ['uint8', 'int8', 'int32', 'bool'])
def test_descending_order_of_integer_dtypes(dtype, ctx):
    if dtype == 'bool':
        x = np.array([False, True, False, True, True])
    elif dtype == 'int8':
        x = np.array([-128, 5, 0, 127, -3], np.int8)
    else:
        x = np.array([0, 3, 255 if dtype == 'uint8' else 1000, 1, 7]).astype(dtype)
    a = nd.array(x, ctx=ctx, dtype=dtype)
    desc = np.argsort(-x.astype(np.int64), kind='stable')
    check(a.argsort(is_ascend=False), desc.astype(np.float32))
    check(a.sort(is_ascend=False), np.sort(x)[::-1], dtype=dtype)
    check(a.topk(k=2, ret_typ='value'), np.sort(x)[::-1][:2], dtype=dtype)
    check(a.topk(k=2, is_ascend=True, ret_typ='value'), np.sort(x)[:2], dtype=dtype)


# ---------------------------------------------------------------------------------------
# arithmetic and comparison operators
# ---------------------------------------------------------------------------------------
BINOPS = [
    ('+', lambda p, q: p + q), ('-', lambda p, q: p - q), ('*', lambda p, q: p * q),
    ('/', lambda p, q: p / q), ('%', lambda p, q: p % q), ('**', lambda p, q: p ** q),
]


@pytest.mark.parametrize('sym,fn', BINOPS, ids=[b[0] for b in BINOPS])
def test_arithmetic_operators(sym, fn, ctx):
    x = rand(2, 3, low=0.5, high=3.0)
    y = rand(2, 3, low=0.5, high=3.0) * np.where(rng.rand(2, 3) > 0.5, 1, -1).astype(np.float32)
    if sym == '**':
        y = np.abs(y)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    check(fn(a, b), fn(xd, yd), rtol=1e-5, atol=1e-5, dtype='float32')
    check(fn(a, 2.0), fn(xd, 2.0), rtol=1e-5, atol=1e-5, dtype='float32')
    check(fn(a, 2), fn(xd, 2), rtol=1e-5, atol=1e-5, dtype='float32')
    check(fn(1.5, a), fn(1.5, xd), rtol=1e-5, atol=1e-5, dtype='float32')
    check(fn(a, np.float64(1.5)), fn(xd, 1.5), rtol=1e-5, atol=1e-5, dtype='float32')
    check(fn(np.float64(1.5), a), fn(1.5, xd), rtol=1e-5, atol=1e-5, dtype='float32')
    # broadcasting both ways
    row, col = nd.array(y[:1], ctx=ctx), nd.array(x[:, :1], ctx=ctx)
    check(fn(a, row), fn(xd, yd[:1]), rtol=1e-5, atol=1e-5)
    check(fn(col, row), fn(xd[:, :1], yd[:1]), rtol=1e-5, atol=1e-5)
    assert fn(col, row).shape == (2, 3)


def test_arithmetic_functions_and_aliases(ctx):
    x, y = rand(2, 3), rand(1, 3, low=0.5, high=2)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    for names, ref in ((('add', 'broadcast_add', 'elemwise_add', 'plus'), x + y),
                       (('subtract', 'broadcast_sub', 'elemwise_sub', 'minus',
                         'broadcast_minus'), x - y),
                       (('multiply', 'broadcast_mul', 'elemwise_mul'), x * y),
                       (('divide', 'broadcast_div', 'elemwise_div', 'true_divide'), x / y),
                       (('mod', 'broadcast_mod'), np.mod(x, y))):
        for name in names:
            check(getattr(nd, name)(a, b), ref, rtol=1e-5, atol=1e-5)
    check(nd.broadcast_equal(a, nd.array(x[:1], ctx=ctx)), (x == x[:1]).astype(np.float32))


def test_add_n(ctx):
    xs = [rand(2, 3) for _ in range(4)]
    arrs = [nd.array(v, ctx=ctx) for v in xs]
    check(nd.add_n(*arrs), sum(xs), rtol=1e-5)
    check(nd.ElementWiseSum(*arrs[:2]), xs[0] + xs[1], rtol=1e-5)
    single = nd.add_n(arrs[0])
    check(single, xs[0])
    single[:] = 0
    check(arrs[0], xs[0])  # a copy, not the input
    out = nd.zeros((2, 3), ctx=ctx)
    assert nd.add_n(*arrs, out=out) is out
    check(out, sum(xs), rtol=1e-5)
    with pytest.raises(MXNetError):
        nd.add_n()


def test_out_argument(ctx):
    a = nd.array(rand(2, 2), ctx=ctx)
    out = nd.zeros((2, 2), ctx=ctx)
    r = nd.relu(a, out=out)
    assert r is out
    check(out, np.maximum(a.asnumpy(), 0))


def test_integer_arithmetic_keeps_dtype(ctx):
    x = np.array([7, -8, 9, 10], np.int32)
    y = np.array([2, 3, -4, 5], np.int32)
    a, b = nd.array(x, ctx=ctx, dtype='int32'), nd.array(y, ctx=ctx, dtype='int32')
    check(a + b, x + y, dtype='int32')
    check(a * 3, x * 3, dtype='int32')
    check(a - 1, x - 1, dtype='int32')
    check(a / b, np.trunc(x / y).astype(np.int32), dtype='int32')  # C-style integer division
    check(a % b, np.mod(x, y), dtype='int32')  # sign of the divisor, as Python
    check(a ** 2, x ** 2, dtype='int32')
    u = nd.array([250, 3], ctx=ctx, dtype='uint8')
    check(u + 10, np.array([4, 13], np.uint8), dtype='uint8')  # wraps like the C type


def test_mixed_dtype_arithmetic_promotes(ctx):
    a = nd.array(np.array([1.5, 2.5], np.float32), ctx=ctx)
    b = nd.array([1.0, 2.0], ctx=ctx, dtype='float64')
    check(a + b, np.array([2.5, 4.5]), dtype='float64')
    c = nd.array([1, 2], ctx=ctx, dtype='int32')
    check(a * c, np.array([1.5, 5.0]), dtype=np.result_type(np.float32, np.int32))


COMPARISONS = [('==', np.equal), ('!=', np.not_equal), ('>', np.greater),
               ('>=', np.greater_equal), ('<', np.less), ('<=', np.less_equal)]


@pytest.mark.parametrize('sym,ref', COMPARISONS, ids=[c[0] for c in COMPARISONS])
def test_comparison_operators(sym, ref, ctx):
    op = {'==': lambda p, q: p == q, '!=': lambda p, q: p != q, '>': lambda p, q: p > q,
          '>=': lambda p, q: p >= q, '<': lambda p, q: p < q, '<=': lambda p, q: p <= q}[sym]
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    y = np.array([[3, 2, 1], [4, 0, 9]], np.float32)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    # 0/1 in the input dtype, as MXNet (not bool)
    check(op(a, b), ref(x, y).astype(np.float32), dtype='float32')
    check(op(a, 3), ref(x, 3).astype(np.float32), dtype='float32')
    check(op(a, nd.array(y[:1], ctx=ctx)), ref(x, y[:1]).astype(np.float32))
    i = a.astype('int32')
    check(op(i, 3), ref(x, 3).astype(np.int32), dtype='int32')
    check(op(a.astype('float64'), b.astype('float64')), ref(x, y).astype(np.float64),
          dtype='float64')
    reflected = op(3, a)  # Python swaps to the mirrored comparison on the NDArray
    check(reflected, ref(3, x).astype(np.float32), dtype='float32')


def test_comparison_functions(ctx):
    x, y = rand(3, 3), rand(3, 3)
    a, b = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    for name, ref in (('equal', np.equal), ('not_equal', np.not_equal),
                      ('greater', np.greater), ('greater_equal', np.greater_equal),
                      ('lesser', np.less), ('lesser_equal', np.less_equal),
                      ('broadcast_greater', np.greater), ('broadcast_lesser', np.less)):
        check(getattr(nd, name)(a, b), ref(x, y).astype(np.float32), dtype='float32')
    p = nd.array([0, 1, 1, 0], ctx=ctx)
    q = nd.array([0, 0, 1, 1], ctx=ctx)
    check(nd.logical_and(p, q), [0, 0, 1, 0])
    check(nd.logical_or(p, q), [0, 1, 1, 1])
    check(nd.logical_xor(p, q), [0, 1, 0, 1])


def test_inplace_operators_mutate_the_buffer(ctx):
    x = rand(2, 3, low=0.5, high=2)
    a = nd.array(x, ctx=ctx)
    view = a[1]              # basic indexing shares memory, as in MXNet
    flat = a.reshape(-1)     # reshape shares memory too
    buf = a.handle
    ref = x.copy()
    for op, r in ((lambda t: t.__iadd__(1), lambda t: t + 1),
                  (lambda t: t.__isub__(0.5), lambda t: t - 0.5),
                  (lambda t: t.__imul__(3), lambda t: t * 3),
                  (lambda t: t.__itruediv__(2), lambda t: t / 2)):
        result = op(a)
        ref = r(ref)
        assert result is a
        assert a.handle is buf
        check(a, ref, rtol=1e-5)
        check(view, ref[1], rtol=1e-5)
        check(flat, ref.reshape(-1), rtol=1e-5)
    b = nd.array(np.ones((1, 3), np.float32), ctx=ctx)
    ref2 = ref + 1
    a += b  # broadcasting right-hand side
    check(a, ref2, rtol=1e-5)
    a -= a
    check(view, np.zeros(3))
    c = nd.array([5.0, 7.0], ctx=ctx)
    alias = c
    c *= nd.array([2.0, 3.0], ctx=ctx)
    c %= 4
    c **= 2
    assert alias is c
    check(c, np.array([4.0, 1.0]))
    v = view
    view += 10  # writes through the view into the parent
    assert view is v
    check(a[1], np.full(3, 10.0))
    check(a[0], np.zeros(3))


# ---------------------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------------------
def test_getitem_basic(ctx):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    a = nd.array(x, ctx=ctx)
    for key in (1, -1, (1, 2), (0, 1, 2), slice(1, 3), (slice(None), 2),
                (slice(None, None, 2), slice(1, None, 2)), (slice(None, None, -1),),
                (Ellipsis, 1), (1, Ellipsis, slice(0, 2)), (None, 1), (slice(0, 2), None, 3),
                (slice(-2, None), slice(None, 3), slice(4, 0, -2)), ()):
        ref = x[key]
        got = a[key]
        check(got, ref.reshape(1) if ref.ndim == 0 else ref)
    assert a[1, 2, 3].shape == (1,)  # MXNet has no 0-d arrays
    assert a[1, 2, 3].asscalar() == x[1, 2, 3]
    v = nd.array([1.0, 2.0, 3.0], ctx=ctx)
    second, last = v[1], v[-1]
    check(second, [2.0])
    check(last, [3.0])
    v[:] = 9  # as MXNet, an integer index on a 1-D array gives a (1,) view
    check(second, [9.0])
    check(last, [9.0])
    with pytest.raises(MXNetError):
        v[3]
    with pytest.raises(MXNetError):
        v[-4]


def test_getitem_advanced(ctx):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = nd.array(x, ctx=ctx)
    check(a[[0, 2]], x[[0, 2]])
    check(a[[3, 0, 3]], x[[3, 0, 3]])
    check(a[np.array([1, 3])], x[[1, 3]])
    check(a[nd.array([2, 1], ctx=ctx)], x[[2, 1]])                  # float32 index array
    check(a[nd.array([2, 1], ctx=ctx, dtype='int32')], x[[2, 1]])
    check(a[[0, 1], [4, 2]], x[[0, 1], [4, 2]])
    check(a[:, [1, 3]], x[:, [1, 3]])
    check(a[1:, np.array([0, 4])], x[1:, [0, 4]])
    mask = x % 3 == 0
    check(a[mask], x[mask])
    check(a[nd.array(mask, ctx=ctx, dtype='bool')], x[mask])         # bool NDArray mask
    rows = np.array([True, False, True, False])
    check(a[rows], x[rows])
    check(a[[True, False, True, True]], x[[True, False, True, True]])


def test_getitem_errors(ctx):
    a = nd.zeros((2, 3), ctx=ctx)
    with pytest.raises(MXNetError):
        a[5]
    with pytest.raises(MXNetError):
        a[0, 0, 0]


def test_setitem(ctx):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd.array(x, ctx=ctx)
    ref = x.copy()
    buf = a.handle

    def both(key, value, ref_value=None, ref_key=None):
        a[key] = value
        ref[key if ref_key is None else ref_key] = value if ref_value is None else ref_value
        check(a, ref)

    both(0, 100)
    both((1, 2), -5.5)
    both(slice(None), np.float32(1))
    both((slice(None), 1), nd.array([7, 8, 9], ctx=ctx), np.array([7, 8, 9]))
    both((slice(None, None, 2), slice(1, None, 2)), np.array([[1, 2], [3, 4]], np.float32))
    both(2, nd.array([1, 2, 3, 4], ctx=ctx), np.array([1, 2, 3, 4]))
    both((Ellipsis, -1), 0.25)
    both(slice(0, 2), nd.array([[10], [20]], ctx=ctx), np.array([[10], [20]]))  # broadcast
    both([0, 2], 42)
    both(nd.array([1], ctx=ctx), 3, ref_key=[1])
    both(np.array([True, False, True]), -1)
    mask = ref > 5
    both(mask, 0)
    both(nd.array([2, 0], ctx=ctx, dtype='int32'), np.array([5, 6, 7, 8], np.float32),
         ref_key=[2, 0])
    assert a.handle is buf  # every write went into the same buffer
    view = a[1]
    a[1] = 77
    check(view, np.full(4, 77))
    # dtype of the target is kept
    i = nd.zeros((3,), ctx=ctx, dtype='int32')
    i[:] = nd.array([1.7, 2.2, 3.9], ctx=ctx)
    check(i, np.array([1, 2, 3], np.int32), dtype='int32')
    with pytest.raises(MXNetError):
        a[0] = nd.ones((5,), ctx=ctx)
    with pytest.raises(MXNetError):
        a[0] = 'text'
    with pytest.raises(MXNetError):
        a[10] = 1


def test_setitem_whole_array_from_numpy(ctx):
    a = nd.zeros((2, 2), ctx=ctx)
    src = rand(2, 2)
    a[:] = src
    check(a, src)
    src[:] = 0  # no aliasing of the numpy source
    assert (a.asnumpy() != 0).any()


# ---------------------------------------------------------------------------------------
# synchronisation, printing, Python protocols
# ---------------------------------------------------------------------------------------
def test_wait_to_read_and_waitall(ctx):
    a = nd.array(rand(3), ctx=ctx)
    b = a * 2
    assert b.wait_to_read() is None
    assert nd.waitall() is None
    check(b, a.asnumpy() * 2)


def test_repr_matches_mxnet(ctx):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    a = nd.array(x, ctx=ctx)
    assert repr(a) == '\n%s\n<NDArray 2x3 @%s>' % (str(x), ctx)
    assert repr(a).endswith('\n<NDArray 2x3 @%s>' % ctx)
    assert repr(a).splitlines()[1:3] == ['[[1. 2. 3.]', ' [4. 5. 6.]]']
    assert str(a) == repr(a)
    i = nd.array(np.arange(4), ctx=ctx, dtype='int32')
    assert repr(i) == '\n[0 1 2 3]\n<NDArray 4 @%s>' % ctx
    assert repr(nd.zeros((2, 1, 2), ctx=ctx)).endswith('<NDArray 2x1x2 @%s>' % ctx)
    assert repr(nd.ones((1,), ctx=ctx)) == '\n[1.]\n<NDArray 1 @%s>' % ctx
    assert repr(nd.empty((0,), ctx=ctx)) == '\n[]\n<NDArray 0 @%s>' % ctx
    assert repr(nd.zeros((3,), ctx=mx.cpu(1))) == '\n[0. 0. 0.]\n<NDArray 3 @cpu(1)>'


def test_len_iter_and_scalar_conversions(ctx):
    x = rand(3, 2)
    a = nd.array(x, ctx=ctx)
    assert len(a) == 3
    rows = list(a)
    assert len(rows) == 3
    for r, ref in zip(rows, x):
        check(r, ref)
    items = list(nd.array([4, 5], ctx=ctx))
    assert [it.shape for it in items] == [(1,), (1,)]
    assert [float(it) for it in items] == [4.0, 5.0]
    assert float(nd.array([2.5], ctx=ctx)) == 2.5
    assert int(nd.array([3.7], ctx=ctx)) == 3
    assert isinstance(int(nd.array([3], ctx=ctx, dtype='int64')), int)
    assert bool(nd.array([1], ctx=ctx)) is True
    assert bool(nd.array([0], ctx=ctx)) is False
    assert bool(nd.empty((0,), ctx=ctx)) is False  # as MXNet: an empty array is falsy
    with pytest.raises(MXNetError):
        bool(a)
    with pytest.raises(MXNetError):
        float(a)
    idx = nd.array([2], ctx=ctx, dtype='int32')
    assert [10, 11, 12][idx] == 12  # __index__ for integer arrays
    with pytest.raises(MXNetError):
        [10, 11, 12][nd.array([1.0], ctx=ctx)]


def test_pickle_round_trip_in_mxnet_raw_bytes():
    import copy
    import pickle
    for dtype in DTYPES:
        a = nd.array((np.arange(6) % 4).reshape(2, 3), ctx=mx.cpu(1), dtype=dtype)
        b = pickle.loads(pickle.dumps(a))
        assert b.context == mx.cpu(1) and b.dtype == a.dtype
        check(b, a.asnumpy(), dtype=dtype)
    # the state is MXNet's: {'handle': one V2 record}, so pickles move between the two
    state = nd.array([1.0, 2.0]).__getstate__()
    assert bytes(state['handle'][:4]) == b'\xc9\xfa\x93\xf9'
    # an MXNet GPU array's state (mx.nd.arange(1, ctx=mx.gpu()).__getstate__()) loads on
    # a machine without GPUs, on the CPU
    gpu_state = {'handle': bytearray(
        b'\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00'
        b'\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00')}
    c = nd.zeros((3,))
    c.__setstate__(gpu_state)
    assert c.shape == (1,) and c.asscalar() == 0.0
    with pytest.raises(MXNetError, match='truncated'):
        c.__setstate__({'handle': state['handle'][:-1]})
    d = nd.array([1.0, 2.0])
    shallow, deep = copy.copy(d), copy.deepcopy(d)
    d[0] = 5
    assert shallow[0].asscalar() == 5 and deep[0].asscalar() == 1


def test_tostype():
    a = nd.ones((2,))
    b = a.tostype('default')  # a dense copy, as MXNet's cast_storage gives
    assert b is not a and b.stype == 'default'
    check(b, [1.0, 1.0])
    with pytest.raises(MXNetError, match='sparse'):
        a.tostype('csr')


# ---------------------------------------------------------------------------------------
# nd.* functions generated from the op table
# ---------------------------------------------------------------------------------------
def test_generated_functions(ctx):
    from minigluon.ndarray.registry import all_ops
    public = [n for n in all_ops() if not n.startswith('_')]
    for name in public:
        f = getattr(nd, name)
        assert callable(f) and f.__name__ == name
        assert f.__doc__, name
    x = rand(2, 3)
    a = nd.array(x, ctx=ctx)
    check(nd.relu(a), np.maximum(x, 0))
    check(nd.softmax(data=a, axis=0), _np_softmax(x, 0), rtol=1e-5)
    check(nd.clip(a, -0.5, 0.5), np.clip(x, -0.5, 0.5))
    check(nd.cast(a, dtype='float64'), x.astype(np.float64), dtype='float64')
    check(nd.copy(a), x)
    check(nd.transpose(a), x.T)
    check(nd.sum(data=a, axis=1, keepdims=True), x.sum(axis=1, keepdims=True), rtol=1e-5)
    with pytest.raises(MXNetError, match='missing'):
        nd.relu()
    with pytest.raises(MXNetError, match='at most'):
        nd.clip(a, 0, 1, 2, 3)
    with pytest.raises(MXNetError, match='NDArray'):
        nd.relu(x)  # a numpy array, not an NDArray


def test_random_aliases_in_nd():
    mx.random.seed(7)
    u = nd.random_uniform(-1, 1, shape=(200,))
    assert u.shape == (200,) and u.dtype == np.float32
    un = u.asnumpy()
    assert un.min() >= -1 and un.max() < 1
    n = nd.random_normal(5, 0.1, shape=(2, 100))
    assert n.shape == (2, 100)
    assert abs(n.asnumpy().mean() - 5) < 0.1
    mx.random.seed(7)
    np.testing.assert_array_equal(nd.random_uniform(-1, 1, shape=(200,)).asnumpy(), un)


# ---------------------------------------------------------------------------------------
# MXNet 1.x's fluent methods and nd functions beyond the basics
# ---------------------------------------------------------------------------------------
UNARY_NUMPY = [('tan', np.tan, (-1, 1)), ('arcsin', np.arcsin, (-0.9, 0.9)),
               ('arccos', np.arccos, (-0.9, 0.9)), ('arctan', np.arctan, (-3, 3)),
               ('degrees', np.degrees, (-3, 3)), ('radians', np.radians, (-200, 200)),
               ('sinh', np.sinh, (-2, 2)), ('cosh', np.cosh, (-2, 2)),
               ('arcsinh', np.arcsinh, (-3, 3)), ('arccosh', np.arccosh, (1, 3)),
               ('arctanh', np.arctanh, (-0.9, 0.9)), ('log10', np.log10, (0.1, 3)),
               ('log2', np.log2, (0.1, 3)), ('cbrt', np.cbrt, (-3, 3)),
               ('rcbrt', lambda v: 1 / np.cbrt(v), (0.5, 3)), ('rint', np.rint, (-3, 3)),
               ('fix', np.fix, (-3, 3)), ('trunc', np.trunc, (-3, 3))]


@pytest.mark.parametrize('name,ref,bounds', UNARY_NUMPY, ids=[u[0] for u in UNARY_NUMPY])
def test_more_unary_maths(name, ref, bounds, ctx):
    x = rand(3, 4, low=bounds[0], high=bounds[1])
    a = nd.array(x, ctx=ctx)
    check(getattr(a, name)(), ref(x), rtol=1e-5, dtype='float32')
    check(getattr(nd, name)(a), ref(x), rtol=1e-5, dtype='float32')


def test_rounding_keeps_integers_exact(ctx):
    big = 50000001  # not a float32: rounding through floats would change it
    a = nd.array([big, -7], ctx=ctx, dtype='int32')
    for name in ('floor', 'ceil', 'round', 'rint', 'fix', 'trunc'):
        check(getattr(a, name)(), np.array([big, -7], np.int32), dtype='int32')


def test_softmin_nanprod_argmax_channel(ctx):
    x = rand(2, 5)
    a = nd.array(x, ctx=ctx)
    e = np.exp(-x - (-x).max(axis=-1, keepdims=True))
    check(a.softmin(), e / e.sum(axis=-1, keepdims=True))
    y = x.copy()
    y[0, 1] = np.nan
    check(nd.nanprod(nd.array(y, ctx=ctx), axis=1), np.nanprod(y, axis=1), rtol=1e-5)
    check(a.argmax_channel(), x.argmax(axis=-1).astype(np.float32), dtype='float32')


def test_slice_crop_and_slice_like(ctx):
    x = rand(4, 5, 3)
    a = nd.array(x, ctx=ctx)
    check(a.slice(begin=(1, 0), end=(3, 4)), x[1:3, 0:4])
    check(nd.slice(a, begin=(None, 4, 2), end=(None, 0, None), step=(2, -2, 1)),
          x[::2, 4:0:-2, 2:])
    check(nd.crop(a, begin=(0, 1, 0), end=(2, 3, 2)), x[0:2, 1:3, 0:2])
    check(a.slice_like(nd.zeros((2, 3, 3), ctx=ctx)), x[:2, :3, :3])
    check(a.slice_like(nd.zeros((2, 2), ctx=ctx), axes=(0, -1)), x[:2, :, :2])
    with pytest.raises(MXNetError, match='step cannot be 0'):
        a.slice(begin=(0,), end=(2,), step=(0,))
    s = a.slice(begin=(0,), end=(2,))
    a[:] = 0
    check(s, x[:2])  # an op gives a new array, not a view


def test_slice_assign_and_crop_assign(ctx):
    x = rand(3, 4)
    a = nd.array(x, ctx=ctx)
    z = nd.zeros((2, 2), ctx=ctx)
    out = nd._internal._crop_assign(a, z, begin=(1, 1), end=(3, 3))
    ref = x.copy()
    ref[1:3, 1:3] = 0
    check(out, ref)
    check(a, x)  # without out= the input is untouched
    nd._internal._crop_assign_scalar(a, scalar=7, begin=(0, 0), end=(1, 4), out=a)
    ref = x.copy()
    ref[0] = 7
    check(a, ref)
    assert a.slice_assign(z, (0, 2), (2, 4)) is a
    ref[0:2, 2:4] = 0
    check(a, ref)
    a.slice_assign_scalar(-1, (2,), (3,))
    ref[2] = -1
    check(a, ref)


def test_inplace_shape_methods_share_memory(ctx):
    x = np.arange(30, dtype=np.float32).reshape(2, 3, 5)
    for method, kwargs, shape in [('flatten', {}, (2, 15)), ('expand_dims', {'axis': 1},
                                                           (2, 1, 3, 5))]:
        a = nd.array(x, ctx=ctx)
        copy, view = getattr(a, method)(**kwargs), getattr(a, method)(inplace=True, **kwargs)
        assert copy.shape == shape and view.shape == shape
        a[0] = -1
        check(copy, x.reshape(shape))
        check(view, a.asnumpy().reshape(shape))
    a = nd.array(x.reshape(2, 1, 15, 1), ctx=ctx)
    copy, view = a.squeeze(axis=(1, 3)), a.squeeze(axis=(1, 3), inplace=True)
    a[0] = -1
    check(copy, x.reshape(2, 15))
    check(view, a.asnumpy().reshape(2, 15))
    assert nd.ones((1, 1, 1), ctx=ctx).squeeze(inplace=True).shape == (1,)  # MXNet: no 0-d
    with pytest.raises(ValueError):
        a.squeeze(axis=0, inplace=True)
    r = a.reshape(30)
    r[:] = 3
    assert (a.asnumpy() == 3).all()  # NDArray.reshape is a view, as in MXNet


def test_reshape_errors_are_value_errors(ctx):
    a = nd.zeros((2, 3, 5), ctx=ctx)
    with pytest.raises(ValueError):
        a.reshape((2, 3))
    with pytest.raises(MXNetError):
        a.reshape((4, -1))
    with pytest.raises(TypeError, match='unknown keyword'):
        a.reshape((30,), order='F')
    check(a.reshape(-1, 0, reverse=True), np.zeros((6, 5)))


def test_broadcast_like_axes_and_broadcast_axis(ctx):
    lhs = nd.array(rand(1, 2, 1, 3), ctx=ctx)
    rhs = nd.zeros((5, 6, 7, 8), ctx=ctx)
    out = nd.broadcast_like(lhs, rhs, lhs_axes=(0, 2), rhs_axes=(1, 3))
    check(out, np.broadcast_to(lhs.asnumpy(), (6, 2, 8, 3)))
    assert nd.broadcast_like(nd.zeros((2, 1), ctx=ctx), nd.zeros((1, 7, 9, 1, 1), ctx=ctx),
                             lhs_axes=(1,), rhs_axes=(-3,)).shape == (2, 9)
    with pytest.raises(MXNetError, match='non-empty'):
        nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())
    b = nd.array(rand(2, 1, 1), ctx=ctx)
    check(b.broadcast_axes(axis=(1, 2), size=(3, 4)), np.broadcast_to(b.asnumpy(), (2, 3, 4)))
    with pytest.raises(MXNetError, match='length-1'):
        nd.broadcast_axis(b, axis=0, size=5)


def test_pad_modes_match_numpy(ctx):
    x = rand(1, 2, 3, 4)
    a = nd.array(x, ctx=ctx)
    widths = ((0, 0), (0, 0), (1, 2), (2, 1))
    flat = (0, 0, 0, 0, 1, 2, 2, 1)
    check(a.pad(mode='constant', pad_width=flat, constant_value=1.5),
          np.pad(x, widths, constant_values=1.5))
    check(nd.pad(a, mode='edge', pad_width=flat), np.pad(x, widths, mode='edge'))
    check(nd.pad(a, mode='reflect', pad_width=flat), np.pad(x, widths, mode='reflect'))
    with pytest.raises(MXNetError, match='per axis'):
        nd.pad(a, mode='constant', pad_width=(1, 1))


def test_split_v2_flip_diag_and_space_depth(ctx):
    x = rand(4, 6)
    a = nd.array(x, ctx=ctx)
    for got, ref in zip(a.split_v2(3, axis=1), np.split(x, 3, axis=1)):
        check(got, ref)
    for got, ref in zip(nd.split_v2(a, (1, 3), axis=0), np.split(x, (1, 3), axis=0)):
        check(got, ref)
    check(a.flip(axis=1), x[:, ::-1])
    check(nd.reverse(a, axis=(0, 1)), x[::-1, ::-1])
    check(nd.diag(a, k=1), np.diag(x, k=1))
    check(nd.diag(nd.array([1.0, 2.0], ctx=ctx), k=-1), np.diag([1.0, 2.0], k=-1))
    # MXNet's documented example
    d = nd.array(np.arange(24).reshape(1, 4, 2, 3), ctx=ctx)
    ref = [[[[0, 6, 1, 7, 2, 8], [12, 18, 13, 19, 14, 20], [3, 9, 4, 10, 5, 11],
             [15, 21, 16, 22, 17, 23]]]]
    check(nd.depth_to_space(d, 2), np.array(ref, np.float32))
    check(nd.space_to_depth(nd.depth_to_space(d, 2), 2), d.asnumpy())
    check(a.shape_array(), np.array([4, 6]), dtype='int64')
    check(a.size_array(), np.array([24]), dtype='int64')


def test_reshape_like(ctx):
    a = nd.array(rand(2, 6), ctx=ctx)
    check(a.reshape_like(nd.zeros((3, 4), ctx=ctx)), a.asnumpy().reshape(3, 4))
    check(nd.reshape_like(a, nd.zeros((3, 2, 5), ctx=ctx), lhs_begin=1, rhs_begin=0, rhs_end=2),
          a.asnumpy().reshape(2, 3, 2))


def test_methods_and_functions_take_out(ctx):
    x = rand(3, 4)
    a = nd.array(x, ctx=ctx)
    out = nd.zeros((3,), ctx=ctx)
    assert a.argmax(axis=1, out=out) is out
    check(out, x.argmax(axis=1).astype(np.float32))
    nd.argmin(a, axis=1, out=out)
    check(out, x.argmin(axis=1).astype(np.float32))
    full = nd.zeros((2, 2), ctx=ctx)
    assert nd.ones((2, 2), out=full) is full
    check(full, np.ones((2, 2)))
    nd.arange(0, 4, out=nd.zeros((4,), ctx=ctx))
    check(a.pick(index=nd.array([0, 1, 2], ctx=ctx), axis=1), x[[0, 1, 2], [0, 1, 2]])


def test_setitem_lists_and_single_values(ctx):
    dst = nd.zeros((1, 3, 1), ctx=ctx)
    dst[0, :2, 0] = [1, 2]
    check(dst, np.array([1, 2, 0], np.float32).reshape(1, 3, 1))
    b = nd.zeros(1, ctx=ctx)
    b[0] = np.array([47.844944], dtype=np.float32)
    assert b.asscalar() == np.float32(47.844944)
    m = nd.zeros((2, 3), ctx=ctx)
    m[1] = [4.0, 5.0, 6.0]
    m[0] = nd.array([1.0, 2.0, 3.0], ctx=ctx)
    check(m, [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(TypeError):
        m[0] = 'abc'


def test_setitem_while_recording(ctx):
    x = nd.zeros((3, 2), ctx=ctx)
    y = nd.ones((3, 2), ctx=ctx)
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(MXNetError, match='Inplace operations'):
            x[1] = y[0]
        x[:] = y * 3  # the whole array: a recorded copy, as MXNet's copyto
        z = (x * x).sum()
    z.backward()
    check(y.grad, np.full((3, 2), 18.0))


def test_concatenate_onehot_reset_and_element_0index(ctx):
    xs = [rand(2, k, 3) for k in (1, 2, 3)]
    check(nd.concatenate([nd.array(v, ctx=ctx) for v in xs], axis=1), np.concatenate(xs, 1))
    single = nd.array(xs[0], ctx=ctx)
    assert nd.concatenate([single], always_copy=False) is single
    idx = np.array([2, 0, 3])
    out = nd.zeros((3, 4), ctx=ctx)
    nd.onehot_encode(nd.array(idx, ctx=ctx), out)
    check(out, np.eye(4)[idx])
    a, b = nd.ones((2,), ctx=ctx), nd.ones((3, 3), ctx=ctx)
    nd.reset_arrays(a, b, num_arrays=2)
    assert a.asnumpy().sum() == 0 and b.asnumpy().sum() == 0
    m = np.arange(12.0).reshape(3, 4)
    check(nd.choose_element_0index(nd.array(m, ctx=ctx), nd.array(idx, ctx=ctx)),
          m[np.arange(3), idx])
    filled = m.copy()
    filled[np.arange(3), idx] = [-1, -2, -3]
    check(nd.fill_element_0index(nd.array(m, ctx=ctx), nd.array([-1, -2, -3], ctx=ctx),
                                 nd.array(idx, ctx=ctx)), filled)


def test_moveaxis_sequences_and_errors(ctx):
    x = nd.zeros((4, 1, 2, 3), ctx=ctx)
    assert nd.moveaxis(x, [0, 1], [2, 3]).shape == (2, 3, 4, 1)
    assert nd.moveaxis(x, [3, 0], [1, 0]).shape == (4, 3, 1, 2)
    assert nd.moveaxis(x, range(4), range(4)).shape == (4, 1, 2, 3)
    v = rand(2, 3, 4)
    check(nd.moveaxis(nd.array(v, ctx=ctx), 0, -1), np.moveaxis(v, 0, -1))
    for source, destination in [(4, 0), (0, [0, 1]), ([0, 0], [0, 1]), ([0, 1], [1, 1])]:
        with pytest.raises(ValueError):
            nd.moveaxis(x, source, destination)


def test_scalars_truth_and_numpy_protocol(ctx):
    a = nd.array([2.5], ctx=ctx)
    s = a.asscalar()
    assert isinstance(s, np.float32) and s.shape == () and a.item() == 2.5
    with pytest.raises(ValueError):
        nd.zeros((2,), ctx=ctx).asscalar()
    with pytest.raises(ValueError):
        bool(nd.ones((2, 3), ctx=ctx))
    assert np.all(nd.array([3, 3], ctx=ctx) == 3)
    np.testing.assert_array_equal(np.asarray(nd.array([[1, 2]], ctx=ctx)), [[1, 2]])
    assert a.stype == 'default'


def test_basic_indexing_contiguity():
    check_contiguous = nd.NDArray._basic_indexing_slice_is_contiguous
    x = np.zeros((6, 7, 8))
    for key in [(slice(None), slice(None), slice(None)), (slice(1, 2), slice(2, 5), slice(None)),
                (slice(1, 3), slice(None), slice(None)), (slice(None), slice(1, 3), slice(None)),
                (slice(None, None, 2), slice(None), slice(None)), (slice(2, 3), slice(None),
                                                                   slice(None, None, -1))]:
        assert check_contiguous(key, x.shape) == x[key].flags.contiguous, key


def test_from_numpy_shares_memory():
    x = np.arange(6, dtype=np.float64).reshape(3, 2)
    a = nd.from_numpy(x)
    assert a.dtype == np.float64 and a.context == mx.cpu(0)
    with pytest.raises(ValueError):
        x[0, 0] = 5  # the NDArray owns the memory now
    a[2, 1] = 100
    assert x[2, 1] == 100
    copied = nd.from_numpy(np.ones(3, np.int32), zero_copy=False)
    assert copied.dtype == np.int32
    with pytest.raises(ValueError, match='C-contiguous'):
        nd.from_numpy(np.ones((2, 3)).T)
    assert nd.from_numpy(np.zeros((1, 0, 2))).shape == (1, 0, 2)


def test_dlpack_round_trip(ctx):
    a = nd.array(rand(2, 3), ctx=ctx)
    for make in (a.to_dlpack_for_read, lambda: nd.to_dlpack_for_read(a)):
        check(nd.from_dlpack(make()), a.asnumpy())
    b = a.copy()
    c = nd.from_dlpack(nd.to_dlpack_for_write(b))
    check(c, a.asnumpy())
    check(nd.from_dlpack(np.arange(4.0)), np.arange(4.0))  # any object with __dlpack__
    with pytest.raises(TypeError):
        nd.from_dlpack([1, 2])


def test_load_frombuffer_and_utils(tmp_path):
    arrays = {'a': nd.array([1.0, 2.0]), 'b': nd.array([[3]], dtype='int32')}
    fname = str(tmp_path / 'x.params')
    nd.save(fname, arrays)
    data = open(fname, 'rb').read()
    loaded = nd.load_frombuffer(data)
    assert sorted(loaded) == ['a', 'b'] and loaded['b'].dtype == np.int32
    check(loaded['a'], [1.0, 2.0])
    assert len(nd.utils.load_frombuffer(data)) == 2  # MXNet also has it in nd.utils
    with pytest.raises(MXNetError, match='truncated'):
        nd.load_frombuffer(data[:-10])


# ---------------------------------------------------------------------------------------
# fused optimizer updates (nd.sgd_update, ...): MXNet's formulas, states updated in place
# ---------------------------------------------------------------------------------------
def _update_inputs(n, ctx):
    values = [rand(2, 3, low=-1, high=1) for _ in range(n)]
    values[2:] = [np.abs(v) + 0.1 for v in values[2:]]  # states that must stay positive
    return values, [nd.array(v, ctx=ctx) for v in values]


def test_sgd_nag_and_sign_updates(ctx):
    kw = dict(lr=0.1, wd=0.01, rescale_grad=0.5, clip_gradient=0.2)
    (w, g), (W, G) = _update_inputs(2, ctx)
    nd.sgd_update(W, G, out=W, **kw)
    check(W, (1 - 0.001) * w - 0.1 * np.clip(0.5 * g, -0.2, 0.2))
    check(G, g)  # the gradient is read, never written
    (w, g, m), (W, G, M) = _update_inputs(3, ctx)
    nd.sgd_mom_update(W, G, M, momentum=0.9, out=W, **kw)
    m_new = 0.9 * m - 0.1 * 0.01 * w - 0.1 * np.clip(0.5 * g, -0.2, 0.2)
    check(M, m_new)
    check(W, w + m_new)
    (w, g, m), (W, G, M) = _update_inputs(3, ctx)
    out = nd.nag_mom_update(W, G, M, lr=0.1, momentum=0.9, wd=0.01)
    step = 0.1 * (g + 0.01 * w)
    check(out, w - 0.9 * m + 1.9 * (0.9 * m - step), rtol=1e-5)
    check(M, 0.9 * m - step)
    check(W, w)  # without out= the weight is not written
    (w, g), (W, G) = _update_inputs(2, ctx)
    check(nd.signsgd_update(W, G, lr=0.1, wd=0.01), 0.999 * w - 0.1 * np.sign(g))
    (w, g, m), (W, G, M) = _update_inputs(3, ctx)
    out = nd.signum_update(W, G, M, lr=0.1, momentum=0.9, wd=0.01, wd_lh=0.02)
    m_new = 0.9 * m - 0.1 * (0.01 * w + g)
    check(M, m_new)
    check(out, (1 - 0.002) * w + 0.1 * np.sign(m_new))


def test_adaptive_updates(ctx):
    (w, g, mean, var), (W, G, MEAN, VAR) = _update_inputs(4, ctx)
    out = nd.adam_update(W, G, MEAN, VAR, lr=0.01, wd=0.1)
    gr = g + 0.1 * w
    mean, var = 0.9 * mean + 0.1 * gr, 0.999 * var + 0.001 * gr * gr
    check(MEAN, mean)
    check(VAR, var)
    check(out, w - 0.01 * mean / (np.sqrt(var) + 1e-8))
    (w, g, n), (W, G, N) = _update_inputs(3, ctx)
    out = nd.rmsprop_update(W, G, N, lr=0.01, clip_weights=0.5)
    n = 0.95 * n + 0.05 * g * g
    check(N, n)
    check(out, np.clip(w - 0.01 * g / np.sqrt(n + 1e-8), -0.5, 0.5))
    (w, g, n, gm, delta), (W, G, N, GM, DELTA) = _update_inputs(5, ctx)
    gm = gm * 0.1  # keep n - g^2 positive
    GM[:] = gm
    out = nd.rmspropalex_update(W, G, N, GM, DELTA, lr=0.01)
    n, gm = 0.95 * n + 0.05 * g * g, 0.95 * gm + 0.05 * g
    delta = 0.9 * delta - 0.01 * g / np.sqrt(n - gm * gm + 1e-8)
    check(DELTA, delta, rtol=1e-4)
    check(out, w + delta, rtol=1e-4)
    (w, g, z, n), (W, G, Z, N) = _update_inputs(4, ctx)
    out = nd.ftrl_update(W, G, Z, N, lr=0.1, lamda1=0.5, wd=0.01)
    z = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / 0.1
    n = n + g * g
    check(Z, z, rtol=1e-4)
    check(out, (np.sign(z) * 0.5 - z) / ((1 + np.sqrt(n)) / 0.1 + 0.01) * (np.abs(z) > 0.5),
          rtol=1e-4)
    (w, g, d, v, z), (W, G, D, V, Z) = _update_inputs(5, ctx)
    out = nd.ftml_update(W, G, D, V, Z, lr=0.1, t=3)
    v = 0.999 * v + 0.001 * g * g
    d_t = (1 - 0.6 ** 3) / 0.1 * (np.sqrt(v / (1 - 0.999 ** 3)) + 1e-8)
    z = 0.6 * z + 0.4 * g - (d_t - 0.6 * d) * w
    check(D, d_t, rtol=1e-4)
    check(out, -z / d_t, rtol=1e-4)


def test_ordering_over_the_flattened_array(ctx):
    x = rng.permutation(12).reshape(3, 4).astype(np.float32)
    a = nd.array(x, ctx=ctx)
    flat = x.reshape(-1)
    check(nd.sort(a, axis=None), np.sort(flat))
    check(nd.argsort(a, axis=None, is_ascend=False), np.argsort(-flat).astype(np.float32))
    check(nd.topk(a, axis=None, k=3), np.argsort(-flat)[:3].astype(np.float32))
    check(a.topk(axis=None, k=2, ret_typ='value', is_ascend=True), np.sort(flat)[:2])
    mask = nd.topk(a, axis=None, k=4, ret_typ='mask')
    check(mask, (x >= 8).astype(np.float32))


def test_setitem_with_a_full_slice_fills_a_zero_dim_array():
    with mx.np_shape():
        a = nd.ones(())
        a[:] = 5  # MXNet takes ':' on a 0-d array as the whole array
        assert a.asnumpy() == 5
