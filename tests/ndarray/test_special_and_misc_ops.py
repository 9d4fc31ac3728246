"""Special functions against scipy, the smaller nd ops (statistics, n-d gathers and
scatters, index conversion, losses, contrib) against numpy references, their error
cases, and one comparison of them all with MXNet 1.9.1."""
import math

import numpy as np
import pytest

from minigluon import autograd, nd
from minigluon.base import MXNetError

RNG = np.random.RandomState(0)


def _f64(values):
    return nd.array(values, dtype='float64')


def _rel_err(got, want):
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300))


# ---- special functions ----

def test_special_functions_match_scipy_to_1e_14_in_float64():
    special = pytest.importorskip('scipy.special', reason='scipy is the reference')
    x = np.concatenate([RNG.uniform(-6, 6, 2000), np.logspace(-300, 0.7, 200),
                        [0.46875, 0.5, 4.0, 26.0]])
    assert _rel_err(nd.erf(_f64(x)).asnumpy(), special.erf(x)) < 1e-14
    y = np.concatenate([RNG.uniform(-1, 1, 2000), 1 - np.logspace(-16, -1, 100),
                        -np.logspace(-300, -0.2, 100), [1 - 2 ** -53]])
    assert _rel_err(nd.erfinv(_f64(y)).asnumpy(), special.erfinv(y)) < 1e-14
    g = np.concatenate([RNG.uniform(0, 171.6, 2000), np.logspace(-300, 2, 200),
                        RNG.uniform(-170, 0, 1000)])
    g = g[np.abs(g - np.round(g)) > 1e-3]
    assert _rel_err(nd.gamma(_f64(g)).asnumpy(), special.gamma(g)) < 1e-14
    # scipy's gammaln loses digits near its zeros at 1 and 2 (checked below by series)
    p = g[(g > 0) & (np.abs(g - 1) > 0.05) & (np.abs(g - 2) > 0.05)]
    p = np.concatenate([p, np.logspace(2, 300, 50)])
    assert _rel_err(nd.gammaln(_f64(p)).asnumpy(), special.gammaln(p)) < 1e-14
    n = g[g < 0]
    np.testing.assert_allclose(nd.gammaln(_f64(n)).asnumpy(), special.gammaln(n),
                               rtol=1e-14, atol=1e-13)


def test_gammaln_is_exact_where_it_crosses_zero():
    """lgamma(1 + z) = -euler_gamma z + zeta(2)/2 z^2 - zeta(3)/3 z^3 + ... near 1, and
    lgamma(2 + z) = (1 - euler_gamma) z + (zeta(2) - 1)/2 z^2 - ... near 2: there a naive
    log(gamma(x)) keeps no digits (scipy's loses several)."""
    z = (1 + np.array([1e-8, -3e-7, 2e-5])) - 1  # as the input holds it
    near_one = -0.5772156649015329 * z + math.pi ** 2 / 12 * z ** 2 - 1.2020569031595942 / 3 * z ** 3
    got = nd.gammaln(_f64(1 + z)).asnumpy()
    np.testing.assert_allclose(got, near_one, rtol=1e-12)
    z = (2 + z) - 2
    near_two = (1 - 0.5772156649015329) * z + (math.pi ** 2 / 6 - 1) / 2 * z ** 2
    np.testing.assert_allclose(nd.gammaln(_f64(2 + z)).asnumpy(), near_two, rtol=1e-9)
    assert nd.gammaln(_f64([1, 2])).asnumpy().tolist() == [0.0, 0.0]


def test_special_functions_at_poles_infinities_and_for_integers():
    """MXNet's values at the edges, and integer inputs truncated to integers."""
    x = _f64([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, -2.0])
    got = nd.gamma(x).asnumpy()
    np.testing.assert_array_equal(got, [np.nan, np.inf, np.nan, np.inf, -np.inf, np.nan,
                                        np.nan])
    assert np.signbit(got[4])
    np.testing.assert_array_equal(nd.gammaln(x).asnumpy(),
                                  [np.nan, np.inf, np.inf, np.inf, np.inf, np.inf, np.inf])
    np.testing.assert_array_equal(nd.erf(x).asnumpy()[:3], [np.nan, 1, -1])
    np.testing.assert_array_equal(nd.erfinv(_f64([-1, 1, 1.5, np.nan])).asnumpy(),
                                  [-np.inf, np.inf, np.nan, np.nan])
    ints = nd.array([1, 3, 5], dtype='int32')
    assert nd.gamma(ints).asnumpy().tolist() == [1, 2, 24]
    assert nd.gammaln(ints).asnumpy().tolist() == [0, 0, 3]
    assert nd.gamma(ints).dtype == np.int32
    assert nd.erf(nd.array([0.5, 1.5])).dtype == np.float32


# ---- the other ops against numpy ----

def test_smooth_l1_and_hard_sigmoid_follow_their_formulas():
    x = np.array([-3.0, -0.5, 0.1, 0.2, 1.0, 2.0])
    for sigma in (1.0, 2.0):
        knee = 1 / sigma ** 2
        want = np.where(np.abs(x) < knee, 0.5 * (sigma * x) ** 2, np.abs(x) - 0.5 * knee)
        np.testing.assert_allclose(nd.smooth_l1(_f64(x), scalar=sigma).asnumpy(), want,
                                   rtol=1e-15)
    want = np.clip(float(np.float32(0.2)) * x + 0.5, 0, 1)
    np.testing.assert_array_equal(nd.hard_sigmoid(_f64(x)).asnumpy(), want)
    with pytest.raises(MXNetError, match='floating-point'):
        nd.hard_sigmoid(nd.array([1, 2], dtype='int32'))


def test_moments_and_cumsum():
    a = RNG.uniform(-1, 1, (3, 4, 2))
    mean, var = nd.moments(_f64(a), axes=(0, 2))
    np.testing.assert_allclose(mean.asnumpy(), a.mean(axis=(0, 2)), rtol=1e-14)
    np.testing.assert_allclose(var.asnumpy(), a.var(axis=(0, 2)), rtol=1e-13)
    mean, var = nd.moments(_f64(a), axes=(-1,), keepdims=True)
    assert mean.shape == var.shape == (3, 4, 1)
    with pytest.raises(MXNetError, match='empty axes'):
        nd.moments(_f64(a))
    np.testing.assert_allclose(nd.cumsum(_f64(a), axis=1).asnumpy(), np.cumsum(a, axis=1))
    np.testing.assert_allclose(nd.cumsum(_f64(a)).asnumpy(), np.cumsum(a))
    ints = nd.array([[1, 2], [3, 4]], dtype='int8')
    assert nd.cumsum(ints, axis=1).dtype == np.int8  # numpy would widen; MXNet keeps
    assert nd.cumsum(ints.astype('bool')).dtype == np.int64
    assert nd.cumsum(ints, axis=0, dtype='float64').dtype == np.float64


def test_histogram_counts_as_numpy():
    a = RNG.uniform(-1, 3, 50)
    counts, edges = nd.histogram(_f64(a), bins=7, range=(-0.5, 2.5))
    want_counts, want_edges = np.histogram(a, bins=7, range=(-0.5, 2.5))
    assert counts.dtype == np.int64 and counts.asnumpy().tolist() == want_counts.tolist()
    np.testing.assert_allclose(edges.asnumpy(), want_edges, rtol=1e-15)
    bins = np.array([-1.0, 0.0, 0.5, 2.0, 3.0])
    counts, edges = nd.histogram(_f64(a), bins=_f64(bins))
    assert counts.asnumpy().tolist() == np.histogram(a, bins=bins)[0].tolist()
    counts, edges = nd.histogram(nd.array([[0, 1], [2, 2], [3, 4]]), bins=3)
    assert counts.dtype == np.float32 and counts.asnumpy().tolist() == [2, 2, 2]
    with pytest.raises(MXNetError, match='low end'):
        nd.histogram(_f64(a), bins=2, range=(3, 2))


def test_gather_nd_scatter_nd_and_the_scatter_add_gradient():
    data = _f64(np.arange(24).reshape(2, 3, 4))
    idx = nd.array([[1, 0, 1], [2, -1, 2]], dtype='float64')
    want = np.arange(24).reshape(2, 3, 4)[[1, 0, 1], [2, 2, 2]]
    np.testing.assert_array_equal(nd.gather_nd(data, idx).asnumpy(), want)
    data.attach_grad()
    with autograd.record():
        out = nd.gather_nd(data, idx)
    out.backward(_f64(np.ones((3, 4))))
    grad = data.grad.asnumpy()
    assert grad[1, 2].tolist() == [2] * 4 and grad[0, 2].tolist() == [1] * 4  # added
    assert grad.sum() == 12
    np.testing.assert_array_equal(
        nd._internal._backward_gather_nd(_f64(np.ones((3, 4))), idx, shape=(2, 3, 4)).asnumpy(),
        grad)
    with pytest.raises(IndexError, match='out of bounds'):
        nd.gather_nd(data, nd.array([[2], [0]]))
    scattered = nd.scatter_nd(_f64([2, 3, 5]), nd.array([[1, 0, 0], [0, 1, 0]]), shape=(2, 2))
    assert scattered.asnumpy().tolist() == [[5, 3], [2, 0]]
    with pytest.raises(MXNetError, match='do not fit'):
        nd.scatter_nd(_f64([[2, 3]]), nd.array([[1, 0]]), shape=(2, 3))


def test_ravel_and_unravel_index_as_numpy():
    multi = np.array([[3, 6, 6], [4, 5, 1]])
    flat = nd.ravel_multi_index(nd.array(multi), shape=(7, 6))
    assert flat.dtype == np.float32
    assert flat.asnumpy().tolist() == np.ravel_multi_index(multi, (7, 6)).tolist()
    back = nd.unravel_index(nd.array([22, 41, 37], dtype='int64'), shape=(7, 6))
    assert back.dtype == np.int64 and back.asnumpy().tolist() == multi.tolist()
    # MXNet's quirks: the first coordinate is not wrapped, negatives follow C division
    assert nd.unravel_index(nd.array([100, -1]), shape=(7, 6)).asnumpy().tolist() == \
        [[16, 0], [4, -1]]
    with pytest.raises(MXNetError, match='shape \\(2, N\\)'):
        nd.ravel_multi_index(nd.array(multi[:1]), shape=(7, 6))


def test_khatri_rao_softmax_cross_entropy_and_softmax_activation():
    a, b, c = RNG.uniform(size=(3, 2)), RNG.uniform(size=(2, 2)), RNG.uniform(size=(2, 2))
    want = np.stack([np.kron(np.kron(a[:, j], b[:, j]), c[:, j]) for j in range(2)], axis=1)
    np.testing.assert_allclose(nd.khatri_rao(_f64(a), _f64(b), _f64(c)).asnumpy(), want)
    with pytest.raises(MXNetError, match='one column count'):
        nd.khatri_rao(_f64(a), _f64(np.ones((2, 3))))
    x, label = RNG.uniform(-2, 2, (3, 4)), np.array([0, 3, 1])
    log_p = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    loss = nd.softmax_cross_entropy(_f64(x), _f64(label))
    assert loss.shape == (1,)
    np.testing.assert_allclose(loss.asnumpy(), [-log_p[[0, 1, 2], label].sum()], rtol=1e-14)
    y = RNG.uniform(size=(2, 3, 2))
    channel = np.exp(y) / np.exp(y).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(nd.SoftmaxActivation(_f64(y), mode='channel').asnumpy(),
                               channel, rtol=1e-14)
    instance = np.exp(y) / np.exp(y).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(nd.SoftmaxActivation(_f64(y)).asnumpy(), instance, rtol=1e-14)
    with pytest.raises(MXNetError, match='at least 3'):
        nd.SoftmaxActivation(_f64(x), mode='channel')


def test_contrib_ops():
    data = nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert nd.contrib.boolean_mask(data, nd.array([0, 1, 1])).asnumpy().tolist() == \
        [[4, 5, 6], [7, 8, 9]]
    assert nd.contrib.boolean_mask(data, nd.array([0, 0, 0])).shape == (0, 3)
    with pytest.raises(MXNetError, match='one value per slice'):
        nd.contrib.boolean_mask(data, nd.array([0, 1]))
    copied = nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 4, 2]), data)
    assert copied.asnumpy().tolist() == [[1, 2, 3], [0, 0, 0], [7, 8, 9], [0, 0, 0],
                                         [4, 5, 6]]
    with pytest.raises(MXNetError, match='indices must be in'):
        nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 5, 2]), data)
    assert nd.contrib.arange_like(data, start=1.5, step=0.5, repeat=2).asnumpy().tolist() \
        == [[1.5, 1.5, 2], [2, 2.5, 2.5], [3, 3, 3.5]]
    assert nd.contrib.arange_like(nd.ones((2, 7)), repeat=3, axis=1).asnumpy().tolist() == \
        [0, 0, 0, 1, 1, 1, 2]
    np.testing.assert_allclose(nd.contrib.div_sqrt_dim(_f64(np.ones((2, 3)))).asnumpy(),
                               np.full((2, 3), 1 / np.sqrt(3)))
    assert nd.contrib.quadratic(nd.array([1, 2, 3]), 1, 2, 3).asnumpy().tolist() == \
        [6, 11, 18]
    assert nd.contrib.quadratic(nd.array([1, 2, 3], dtype='int32'), a=0.5, b=1.5,
                                c=0.7).asnumpy().tolist() == [2, 5, 9]


def test_gradientmultiplier_scales_only_the_gradient():
    x = nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = nd.contrib.gradientmultiplier(x * x, scalar=-0.5)
    y.backward()
    assert y.asnumpy().tolist() == [1, 4, 9]
    assert x.grad.asnumpy().tolist() == [-1, 2, -3]  # -0.5 * 2x


def test_stop_gradient_and_blockgrad_stop_the_gradient():
    x = nd.array([1.0, 7.0])
    x.attach_grad()
    for block in (nd.stop_gradient, nd.BlockGrad):
        with autograd.record():
            y = block(x) * x
        y.backward()
        assert x.grad.asnumpy().tolist() == [1.0, 7.0]


# ---- the same calls in MXNet 1.9.1 ----

_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
nd = mx.nd
out = {}
def put(name, arrays):
    arrays = arrays if isinstance(arrays, (list, tuple)) else [arrays]
    out[name] = [[str(a.dtype), list(a.shape), a.asnumpy().astype('float64').tolist()]
                 for a in arrays]
def grad(name, fn, *xs):
    xs = [nd.array(x, dtype='float64') for x in xs]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        y = fn(*xs)
        if isinstance(y, (list, tuple)):
            y = sum((o * (i + 1.5)).sum() for i, o in enumerate(y))
    y.backward()
    put(name, [x.grad for x in xs])
x = nd.array([-2.0, -0.5, 0.3, 1.5, 3.7])
for f in ('erf', 'gamma', 'gammaln', 'smooth_l1', 'hard_sigmoid'):
    put(f, getattr(nd, f)(x))
    put(f + '64', getattr(nd, f)(x.astype('float64')))
    grad(f + ' grad', getattr(nd, f), [-2.5, -0.5, 0.3, 1.5, 3.7])
put('erfinv', nd.erfinv(nd.array([-0.9, -0.2, 0.0, 0.5, 0.99])))
grad('erfinv grad', nd.erfinv, [-0.9, -0.2, 0.5])
put('int gamma', nd.gamma(nd.array([1, 3, 5], dtype='int32')))
put('smooth_l1 s', nd.smooth_l1(x.astype('float64'), scalar=1.7))
put('hard_sigmoid ab', nd.hard_sigmoid(x.astype('float64'), alpha=0.3, beta=0.1))
a = nd.array(np.arange(12).reshape(3, 4) % 5)
put('moments', nd.moments(a, axes=(0,), keepdims=True))
grad('moments grad', lambda t: nd.moments(t, axes=(1,)), [[1, 2, 4.0], [0, 3, 1]])
put('cumsum', [nd.cumsum(a), nd.cumsum(a, axis=1, dtype='float64'),
               nd.cumsum(a.astype('int8'), axis=0), nd.cumsum(a.astype('bool'), axis=1)])
grad('cumsum grad', lambda t: nd.cumsum(t, axis=0) * nd.array([[1, 2, 3], [4, 5, 6]],
     dtype='float64'), [[1, 2, 4.0], [0, 3, 1]])
put('histogram', nd.histogram(nd.array([0.5, 1, 2, 2, 3, 4, 7]), bins=4, range=(0, 5)))
put('histogram bins', nd.histogram(nd.array([0.5, 1, 2, 2, 3, 4, 7]),
                                   bins=nd.array([0, 2, 2.5, 4])))
d = nd.array(np.arange(24).reshape(2, 3, 4))
idx = nd.array([[1, 0, 1], [2, -1, 2]])
put('gather_nd', nd.gather_nd(d, idx))
grad('gather_nd grad', lambda t: nd.gather_nd(t, nd.array([[0, 0, 1], [1, 1, 2]],
     dtype='float64')) * nd.array([1, 2, 3], dtype='float64'), [[1, 2, 4.0], [0, 3, 1]])
put('backward_gather_nd', nd._internal._backward_gather_nd(nd.array([2, 3, 5]),
    nd.array([[1, 1, 0], [0, 0, 1]]), shape=(2, 2)))
put('scatter_nd', nd.scatter_nd(nd.array([2, 3, 0]), nd.array([[1, 1, 0], [0, 1, 0]]),
                                shape=(2, 2)))
grad('scatter_nd grad', lambda t: nd.scatter_nd(t, nd.array([[0, 1, 1], [1, 0, 2]],
     dtype='float64'), shape=(2, 3)) * nd.arange(6, dtype='float64').reshape(2, 3), [1, 2, 3.0])
put('ravel', nd.ravel_multi_index(nd.array([[3, 6, 6], [4, 5, 1]]), shape=(7, 6)))
put('unravel', nd.unravel_index(nd.array([22, 41, 37, 100], dtype='int64'), shape=(7, 6)))
put('khatri_rao', nd.khatri_rao(nd.array([[1, 2], [3, 4], [5, 6]]), nd.array([[1, 2], [3, 4]])))
put('sce', nd.softmax_cross_entropy(nd.array([[1, 2, 4.0], [0, 3, 1]]), nd.array([0, 2])))
grad('sce grad', lambda t: nd.softmax_cross_entropy(t, nd.array([0, 2], dtype='float64')),
     [[1, 2, 4.0], [0, 3, 1]])
s = nd.arange(12).reshape(2, 3, 2) / 5
put('softmax activation', [nd.SoftmaxActivation(s), nd.SoftmaxActivation(s, mode='channel')])
c = nd.contrib
m = nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
put('boolean_mask', c.boolean_mask(m, nd.array([0, 1, 1])))
grad('boolean_mask grad', lambda t: c.boolean_mask(t, nd.array([0, 1, 1], dtype='float64'))
     * nd.arange(4, dtype='float64').reshape(2, 2), [[1, 2], [3, 4], [5, 6.0]])
put('index_copy', c.index_copy(nd.zeros((5, 3)), nd.array([0, 4, 2]), m))
grad('index_copy grad', lambda t, u: c.index_copy(t, nd.array([2, 0], dtype='float64'), u)
     * nd.arange(6, dtype='float64').reshape(3, 2), [[1, 2], [3, 4], [5, 6.0]], [[7, 8], [9, 10.0]])
put('arange_like', [c.arange_like(m, start=1.5, step=0.5, repeat=2),
                    c.arange_like(m.astype('int32'), axis=1)])
put('div_sqrt_dim', [c.div_sqrt_dim(m), c.div_sqrt_dim(m.astype('int32'))])
put('quadratic', [c.quadratic(m, a=0.1, b=0.2, c=0.3),
                  c.quadratic(m.astype('float64'), a=0.1, b=0.2, c=0.3)])
grad('quadratic grad', lambda t: c.quadratic(t, a=2, b=3, c=4), [[1, 2, 4.0], [0, 3, 1]])
json.dump(out, open(sys.argv[1] + '/ops.json', 'w'))
'''


def test_values_dtypes_and_gradients_match_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'ops.json')
    assert sorted(theirs) == sorted(ours)
    for name in sorted(theirs):
        assert len(theirs[name]) == len(ours[name]), name
        for k, ((dtype, shape, value), (our_dtype, our_shape, our_value)) in enumerate(
                zip(theirs[name], ours[name])):
            assert (dtype, shape) == (our_dtype, our_shape), (name, k)
            rtol = 1e-12 if 'float64' in dtype else 1e-6
            if name.endswith('grad'):  # MXNet's float64 backwards use float32 constants
                rtol = 1e-5  # and a digamma good to 2e-6 (minigluon's: to 1e-14)
            np.testing.assert_allclose(np.array(our_value), np.array(value), rtol=rtol,
                                       atol=1e-30, err_msg='%s output %d' % (name, k))
