"""nd.random: seeding, shapes, dtypes, ranges, moments, the laws of the samplers
(chi-square tests) and shuffle."""
import math

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd, test_utils
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


# ---- the other samplers, checked with the chi-square test of test_utils ----------------
def _chi_square(draw, buckets, probs, n=20000):
    mx.random.seed(17)
    test_utils.verify_generator(lambda k: draw(k).asnumpy(), buckets, probs, nsamples=n,
                                nrepeat=3, success_rate=0.6)


def _cdf_buckets(cdf, edges):
    """Buckets between ``edges`` (the first and last open-ended) and their probabilities."""
    buckets = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    return buckets, [cdf(hi) - cdf(lo) for lo, hi in buckets]


def _poisson_cdf(lam, x):
    if x == np.inf:
        return 1.0
    return sum(math.exp(-lam) * lam ** k / math.factorial(k) for k in range(int(np.floor(x)) + 1))


@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_exponential_gamma_poisson_follow_their_laws(dtype, ctx):
    # exponential of mean 2: P(X <= x) = 1 - exp(-x / 2)
    buckets, probs = _cdf_buckets(lambda x: 1 - math.exp(-x / 2) if x > 0 else 0.0,
                                  [0, 0.5, 1, 2, 4, np.inf])
    _chi_square(lambda n: nd.random.exponential(2, shape=n, ctx=ctx, dtype=dtype), buckets,
                probs)
    # gamma of shape 1 and scale 2 is the same law (MXNet's beta is the scale)
    _chi_square(lambda n: nd.random.gamma(1, 2, shape=n, ctx=ctx, dtype=dtype), buckets, probs)
    # poisson of rate 3
    buckets, probs = _cdf_buckets(lambda x: _poisson_cdf(3, x), [-1, 0.5, 1.5, 2.5, 4.5, np.inf])
    _chi_square(lambda n: nd.random.poisson(3, shape=n, ctx=ctx, dtype=dtype), buckets, probs)
    assert nd.random.poisson(3, shape=(2, 3), ctx=ctx, dtype=dtype).dtype == np.dtype(dtype)


def test_gamma_moments(ctx):
    mx.random.seed(4)
    x = nd.random.gamma(9.0, 0.5, shape=(40000,), ctx=ctx).asnumpy().astype(np.float64)
    assert abs(x.mean() - 4.5) < 0.05 and abs(x.var() - 9 * 0.25) < 0.1  # k theta, k theta^2


def test_negative_binomials(ctx):
    # failures before 2 successes at p = 0.2: P(X = k) = (k + 1) 0.2^2 0.8^k
    pmf = [(k + 1) * 0.04 * 0.8 ** k for k in range(9)]
    probs = [sum(pmf[:3]), sum(pmf[3:6]), sum(pmf[6:9]), 1 - sum(pmf)]
    buckets = [(-1.0, 2.5), (2.5, 5.5), (5.5, 8.5), (8.5, np.inf)]
    _chi_square(lambda n: nd.random.negative_binomial(2, 0.2, shape=n, ctx=ctx), buckets, probs)
    # the same law as a gamma-poisson mixture: mean mu = k (1-p)/p = 8, alpha = 1/k
    _chi_square(lambda n: nd.random.generalized_negative_binomial(8, 0.5, shape=n, ctx=ctx),
                buckets, probs)
    mx.random.seed(5)  # alpha = 0 is a plain Poisson
    x = nd.random.generalized_negative_binomial(4, 0, shape=(20000,), ctx=ctx).asnumpy()
    assert abs(x.mean() - 4) < 0.1 and abs(x.var() - 4) < 0.2


def test_ndarray_parameters_give_one_set_of_draws_per_element(ctx):
    mx.random.seed(6)
    loc = nd.array([[0.0, 10.0], [-10.0, 100.0]], ctx=ctx)
    scale = nd.array([[1.0, 0.1], [2.0, 0.5]], ctx=ctx)
    x = nd.random.normal(loc, scale, shape=5000)
    assert x.shape == (2, 2, 5000) and x.context == ctx
    np.testing.assert_allclose(x.asnumpy().mean(axis=-1), loc.asnumpy(), atol=0.1)
    np.testing.assert_allclose(x.asnumpy().std(axis=-1), scale.asnumpy(), rtol=0.05)
    assert nd.random.uniform(loc, loc + 1).shape == (2, 2)  # no shape: one draw each
    with pytest.raises(MXNetError, match='all be NDArrays or all be numbers'):
        nd.random.normal(loc, 1.0)


def test_randn_like_and_aliases(ctx):
    assert nd.random.randn(2, 3, ctx=ctx).shape == (2, 3)
    mx.random.seed(7)
    x = nd.random.randn(20000, loc=5, scale=2, ctx=ctx).asnumpy()
    assert abs(x.mean() - 5) < 0.05 and abs(x.std() - 2) < 0.05
    like = nd.zeros((3, 4), ctx=ctx, dtype='float64')
    for sampler in (nd.random.uniform_like, nd.random.normal_like, nd.random.gamma_like,
                    nd.random.exponential_like, nd.random.poisson_like,
                    nd.random.negative_binomial_like,
                    nd.random.generalized_negative_binomial_like):
        y = sampler(like)
        assert y.shape == (3, 4) and y.dtype == np.float64 and y.context == ctx
    mx.random.seed(8)
    a = nd.uniform(shape=(4,)).asnumpy()
    mx.random.seed(8)
    np.testing.assert_array_equal(a, mx.random.uniform(shape=(4,)).asnumpy())
    assert nd.normal(shape=(2,)).shape == (2,)
    assert mx.random.poisson(shape=(2, 2)).shape == (2, 2)  # lam defaults to 1


def test_negative_seeds_are_accepted():
    mx.random.seed(-12345)
    a = nd.random.uniform(shape=(3,)).asnumpy()
    mx.random.seed(-12345)
    np.testing.assert_array_equal(nd.random.uniform(shape=(3,)).asnumpy(), a)


def test_multinomial_draws_indices_with_the_given_probabilities(ctx):
    probs = [0.1, 0.2, 0.3, 0.05, 0.15, 0.2]
    _chi_square(lambda n: nd.random.multinomial(nd.array(probs, ctx=ctx), shape=n),
                list(range(6)), probs)
    data = nd.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]], ctx=ctx)
    s = nd.random.multinomial(data, shape=(4, 5), dtype='uint8')
    assert s.shape == (2, 4, 5) and s.dtype == np.uint8
    assert (s.asnumpy()[0] == 1).all() and set(np.unique(s.asnumpy()[1])) <= {0, 2}
    assert nd.random.multinomial(data).shape == (2,)
    with pytest.raises(MXNetError, match='do not fit in dtype float16'):
        nd.random.multinomial(nd.zeros((4096,), ctx=ctx), dtype='float16')


def test_multinomial_log_probability_and_its_gradient(ctx):
    p = nd.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], ctx=ctx)
    p.attach_grad()
    with mx.autograd.record():
        samples, log_prob = nd.random.multinomial(p, shape=50, get_prob=True)
        (log_prob * 2).backward()
    idx = samples.asnumpy().astype(int)
    ref = p.asnumpy()
    picked = np.take_along_axis(ref, idx, axis=1)
    np.testing.assert_allclose(log_prob.asnumpy(), np.log(picked), rtol=1e-6)
    # d/dp of sum(2 log p[i, idx]) is 2 / p per draw of that category
    expected = np.stack([np.bincount(row, minlength=4) for row in idx]) * 2 / ref
    np.testing.assert_allclose(p.grad.asnumpy(), expected, rtol=1e-5)


def test_unique_zipfian_classes_are_distinct_and_log_uniform():
    mx.random.seed(9)
    classes, trials = nd._internal._sample_unique_zipfian(1000, shape=(3, 200))
    assert classes.shape == (3, 200) and classes.dtype == np.int64 and trials.shape == (3,)
    c = classes.asnumpy()
    assert all(len(set(row)) == 200 for row in c) and c.min() >= 0 and c.max() < 1000
    assert (trials.asnumpy() >= 200).all()
    # small classes are the likeliest: P(0) = log 2 / log 1001, every row has class 0 or 1
    assert all({0, 1} & set(row) for row in c)
    # without uniqueness the draws follow the law: check the first draws of a big sample
    mx.random.seed(10)
    many, _ = nd._internal._sample_unique_zipfian(10 ** 6, shape=(1, 2000))
    frac_small = (many.asnumpy() < 1000).mean()
    assert 0.2 < frac_small < 0.9
