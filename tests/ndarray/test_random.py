"""nd.random: seeding, shapes, dtypes, ranges, rough moments and shuffle."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError


@pytest.mark.parametrize('seed_fn', [nd.random.seed, mx.random.seed])
def test_seed_reproducibility(seed_fn, ctx):
    def draw():
        return [nd.random.uniform(-1, 1, shape=(3, 4), ctx=ctx).asnumpy(),
                nd.random.normal(0, 1, shape=(5,), ctx=ctx).asnumpy(),
                nd.random.randint(0, 100, shape=(6,), ctx=ctx).asnumpy(),
                nd.random.shuffle(nd.arange(10, ctx=ctx)).asnumpy()]
    seed_fn(123)
    first = draw()
    seed_fn(123)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    seed_fn(124)
    third = draw()
    assert not np.array_equal(first[0], third[0])
    assert not np.array_equal(first[1], third[1])


def test_seed_is_shared_between_mx_and_nd():
    mx.random.seed(5)
    a = nd.random.uniform(shape=(8,)).asnumpy()
    nd.random.seed(5)
    b = mx.random.uniform(shape=(8,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    nd.random.seed(5, ctx=mx.cpu(0))
    np.testing.assert_array_equal(nd.random.uniform(shape=(8,)).asnumpy(), a)


def test_seed_rejects_non_int():
    with pytest.raises(MXNetError, match='seed'):
        mx.random.seed(1.5)


def test_uniform(ctx):
    mx.random.seed(0)
    u = nd.random.uniform(2, 5, shape=(100, 100), ctx=ctx)
    assert u.shape == (100, 100) and u.dtype == np.float32 and u.context == ctx
    x = u.asnumpy().astype(np.float64)
    assert x.min() >= 2 and x.max() < 5
    assert abs(x.mean() - 3.5) < 0.05                 # mean (a+b)/2
    assert abs(x.var() - 9 / 12) < 0.05               # variance (b-a)^2/12
    hist = np.histogram(x, bins=6, range=(2, 5))[0] / x.size
    assert np.all(np.abs(hist - 1 / 6) < 0.02)
    d = nd.random.uniform(shape=(4,), dtype='float64', ctx=ctx)
    assert d.dtype == np.float64 and d.shape == (4,)
    assert ((d.asnumpy() >= 0) & (d.asnumpy() < 1)).all()
    assert nd.random.uniform(ctx=ctx).shape == (1,)   # no shape: one value, as MXNet
    h = nd.random.uniform(-1, 1, shape=7, dtype='float16', ctx=ctx)
    assert h.shape == (7,) and h.dtype == np.float16


def test_normal(ctx):
    mx.random.seed(1)
    n = nd.random.normal(loc=-2, scale=3, shape=(200, 100), ctx=ctx)
    assert n.shape == (200, 100) and n.dtype == np.float32 and n.context == ctx
    x = n.asnumpy().astype(np.float64)
    assert abs(x.mean() + 2) < 0.05
    assert abs(x.std() - 3) < 0.05
    skew = ((x - x.mean()) ** 3).mean() / x.std() ** 3
    assert abs(skew) < 0.1
    within = np.mean(np.abs(x + 2) < 3)
    assert abs(within - 0.6827) < 0.02                # one-sigma mass
    d = nd.random.normal(shape=(2, 3), dtype='float64', ctx=ctx)
    assert d.dtype == np.float64 and d.shape == (2, 3)


def test_randint(ctx):
    mx.random.seed(2)
    r = nd.random.randint(-3, 4, shape=(5000,), ctx=ctx)
    assert r.shape == (5000,) and r.dtype == np.int32 and r.context == ctx
    x = r.asnumpy()
    assert x.min() == -3 and x.max() == 3             # high is exclusive; every value hit
    counts = np.bincount(x + 3, minlength=7) / x.size
    assert np.all(np.abs(counts - 1 / 7) < 0.03)
    r64 = nd.random.randint(0, 2 ** 40, shape=(3, 2), dtype='int64', ctx=ctx)
    assert r64.dtype == np.int64 and r64.shape == (3, 2)
    assert ((r64.asnumpy() >= 0) & (r64.asnumpy() < 2 ** 40)).all()
    u8 = nd.random.randint(0, 256, shape=(100,), dtype='uint8', ctx=ctx)
    assert u8.dtype == np.uint8


def test_out_argument(ctx):
    out = nd.zeros((3, 3), ctx=ctx, dtype='float64')
    r = nd.random.uniform(10, 11, out=out)
    assert r is out and out.dtype == np.float64
    assert ((out.asnumpy() >= 10) & (out.asnumpy() < 11)).all()
    r = nd.random.normal(0, 1, out=out)
    assert r is out and np.abs(out.asnumpy()).max() > 0


def test_sampling_respects_default_context():
    with mx.cpu(1):
        assert nd.random.uniform(shape=(2,)).context == mx.cpu(1)
        assert nd.random.normal(shape=(2,)).context == mx.cpu(1)


def test_shuffle_permutes_rows(ctx):
    mx.random.seed(3)
    ref = np.arange(40, dtype=np.float32).reshape(10, 4)
    a = nd.array(ref, ctx=ctx)
    s = nd.random.shuffle(a)
    assert s.shape == a.shape and s.dtype == a.dtype and s.context == ctx
    got = s.asnumpy()
    # rows are intact and form a permutation of the input rows
    order = np.argsort(got[:, 0])
    np.testing.assert_array_equal(got[order], ref)
    np.testing.assert_array_equal(got[:, 1:] - got[:, :1], ref[:, 1:] - ref[:, :1])
    np.testing.assert_array_equal(a.asnumpy(), ref)   # the input is untouched
    orders = {tuple(nd.random.shuffle(a).asnumpy()[:, 0]) for _ in range(5)}
    assert len(orders) > 1                            # it really shuffles
    one_d = nd.random.shuffle(nd.arange(20, ctx=ctx)).asnumpy()
    np.testing.assert_array_equal(np.sort(one_d), np.arange(20, dtype=np.float32))


def test_nd_aliases_match_random_module():
    mx.random.seed(11)
    a = nd.random_uniform(0, 1, shape=(5,)).asnumpy()
    b = nd.random_normal(0, 1, shape=(5,)).asnumpy()
    c = nd.random_randint(0, 9, shape=(5,)).asnumpy()
    mx.random.seed(11)
    np.testing.assert_array_equal(nd.random.uniform(0, 1, shape=(5,)).asnumpy(), a)
    np.testing.assert_array_equal(nd.random.normal(0, 1, shape=(5,)).asnumpy(), b)
    np.testing.assert_array_equal(nd.random.randint(0, 9, shape=(5,)).asnumpy(), c)
