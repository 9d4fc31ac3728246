"""mx.init: each initializer's distribution, the name registry and error messages."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd


def _filled(init, shape, name='weight', ctx=None):
    arr = nd.zeros(shape, ctx=ctx)
    init(mx.init.InitDesc(name, {'__init__': init}), arr)
    return arr.asnumpy()


def test_zero_one_constant(ctx):
    assert (_filled(mx.init.Zero(), (3, 4), ctx=ctx) == 0).all()
    assert (_filled(mx.init.One(), (3, 4), ctx=ctx) == 1).all()
    assert (_filled(mx.init.Constant(2.5), (3, 4), ctx=ctx) == 2.5).all()
    row = _filled(mx.init.Constant([1, 2, 3]), (2, 3), ctx=ctx)
    np.testing.assert_array_equal(row, [[1, 2, 3], [1, 2, 3]])


def test_constant_that_does_not_fit_names_the_parameter():
    with pytest.raises(mx.MXNetError, match='dense.weight'):
        _filled(mx.init.Constant([1, 2]), (3, 3), name='dense.weight')


def test_uniform_and_normal_statistics():
    mx.random.seed(0)
    u = _filled(mx.init.Uniform(0.5), (200, 100))
    assert -0.5 <= u.min() and u.max() <= 0.5
    assert abs(u.std() - 0.5 / np.sqrt(3)) < 0.01
    n = _filled(mx.init.Normal(0.2), (200, 100))
    assert abs(n.mean()) < 0.01 and abs(n.std() - 0.2) < 0.01


def test_seeding_makes_initialization_reproducible(ctx):
    mx.random.seed(7)
    a = _filled(mx.init.Xavier(), (8, 5), ctx=ctx)
    mx.random.seed(7)
    b = _filled(mx.init.Xavier(), (8, 5), ctx=ctx)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('factor_type,factor', [('avg', (32 * 9 + 64 * 9) / 2),
                                                ('in', 32 * 9), ('out', 64 * 9)])
def test_xavier_scale_uses_fans_with_receptive_field(factor_type, factor):
    mx.random.seed(1)
    w = _filled(mx.init.Xavier('uniform', factor_type, magnitude=3), (64, 32, 3, 3))
    bound = np.sqrt(3 / factor)
    assert np.abs(w).max() <= bound
    assert abs(np.abs(w).max() - bound) < 0.01 * bound
    g = _filled(mx.init.Xavier('gaussian', factor_type, magnitude=3), (64, 32, 3, 3))
    assert abs(g.std() - bound) < 0.05 * bound


def test_xavier_rejects_vectors_and_bad_options():
    with pytest.raises(mx.MXNetError, match='vector out.bias'):
        _filled(mx.init.Xavier(), (10,), name='out.bias')
    with pytest.raises(mx.MXNetError, match='rnd_type'):
        mx.init.Xavier(rnd_type='triangle')
    with pytest.raises(mx.MXNetError, match='factor_type'):
        mx.init.Xavier(factor_type='sum')


def test_msraprelu_is_he_normal():
    mx.random.seed(2)
    w = _filled(mx.init.MSRAPrelu(factor_type='in', slope=0), (256, 128))
    assert abs(w.std() - np.sqrt(2 / 128)) < 0.03 * np.sqrt(2 / 128)


@pytest.mark.parametrize('shape', [(6, 10), (10, 6), (4, 3, 2, 2)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    w = _filled(mx.init.Orthogonal(scale=1.0), shape).reshape(shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-5)


def test_mixed_picks_the_first_matching_pattern():
    init = mx.init.Mixed(['.*bias', '.*'], [mx.init.Constant(3), mx.init.One()])
    assert (_filled(init, (4,), name='fc.bias') == 3).all()
    assert (_filled(init, (2, 2), name='fc.weight') == 1).all()
    with pytest.raises(mx.MXNetError, match='matches none'):
        _filled(mx.init.Mixed(['.*bias'], [mx.init.Zero()]), (2, 2), name='fc.weight')


def test_called_with_a_plain_name_the_suffix_picks_the_rule():
    arr = nd.ones((3,))
    mx.init.Uniform()('dense.bias', arr)
    assert (arr.asnumpy() == 0).all()
    mx.init.Uniform()('bn.gamma', arr)
    assert (arr.asnumpy() == 1).all()
    w = nd.zeros((3, 3))
    mx.init.Uniform(1.0)('dense.weight', w)
    assert np.abs(w.asnumpy()).max() > 0
    with pytest.raises(mx.MXNetError, match='unknown initialization pattern'):
        mx.init.Uniform()('dense.scale', arr)


def test_registry_creates_by_name_case_insensitively():
    assert isinstance(mx.init.create('xavier'), mx.init.Xavier)
    assert isinstance(mx.init.create('Zeros'), mx.init.Zero)
    assert isinstance(mx.init.create('ones'), mx.init.One)
    assert mx.init.create('normal', sigma=0.5).sigma == 0.5
    init = mx.init.Uniform(0.1)
    assert mx.init.create(init) is init
    with pytest.raises(mx.MXNetError, match="unknown initializer 'glorot'.*xavier"):
        mx.init.create('glorot')
    with pytest.raises(mx.MXNetError, match='got int'):
        mx.init.create(3)


def test_register_adds_a_custom_initializer():
    @mx.init.register
    class Twos(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 2

    assert (_filled(mx.init.create('twos'), (2,)) == 2).all()


def test_float16_and_float64_targets_take_the_values():
    for dtype in ('float16', 'float64'):
        arr = nd.zeros((4, 4), dtype=dtype)
        mx.init.Constant(0.5)('w.weight', arr)
        assert arr.dtype == np.dtype(dtype) and (arr.asnumpy() == 0.5).all()


def test_bilinear_makes_upsampling_kernels():
    w = nd.zeros((2, 3, 4, 4))
    mx.init.Bilinear()._init_weight('up.weight', w)
    k = np.array([0.25, 0.75, 0.75, 0.25])
    for out in range(2):
        for inp in range(3):
            np.testing.assert_array_equal(w.asnumpy()[out, inp], np.outer(k, k))
    odd = nd.zeros((1, 1, 3, 3))   # f = 2, c = 0.75: taps 1 - |x/2 - 0.75|
    mx.init.Bilinear()._init_weight('up.weight', odd)
    np.testing.assert_allclose(odd.asnumpy()[0, 0], np.outer([.25, .75, .75], [.25, .75, .75]))
    with pytest.raises(mx.MXNetError, match='4-d'):
        mx.init.Bilinear()._init_weight('up.weight', nd.zeros((4, 4)))


def test_lstm_bias_sets_only_the_forget_gate():
    b = nd.ones((12,))
    mx.init.LSTMBias(forget_bias=2.0)(mx.init.InitDesc('lstm.i2h_bias',
                                                       {'__init__': mx.init.LSTMBias(2.0)}), b)
    np.testing.assert_array_equal(b.asnumpy(), [0] * 3 + [2] * 3 + [0] * 6)
    assert mx.init.LSTMBias(2.0).dumps() == '["lstmbias", {"forget_bias": 2.0}]'


def test_constant_with_an_array_dumps_it_as_a_list():
    init = mx.init.Constant(nd.array([[1, 2], [3, 4]]))
    assert init.dumps() == '["constant", {"value": [[1.0, 2.0], [3.0, 4.0]]}]'
    assert mx.init.Constant(np.arange(3)).dumps() == '["constant", {"value": [0, 1, 2]}]'
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'
    # and the dump creates the same initializer again
    clone = mx.init.create(init.dumps())
    assert (_filled(clone, (2, 2)) == [[1, 2], [3, 4]]).all()
    with pytest.raises(mx.MXNetError, match='dumps'):
        mx.init.create('["constant", 3')


def test_a_subclass_may_override_the_rule_for_each_suffix():
    class BiasOne(mx.init.Uniform):
        def _init_bias(self, _, arr):
            arr[:] = 1

    b = nd.zeros((3,))
    BiasOne()('dense0_bias', b)
    assert (b.asnumpy() == 1).all()
    mean = nd.ones((3,))
    BiasOne()('bn_moving_mean', mean)
    assert (mean.asnumpy() == 0).all()


def test_load_initializes_from_arrays_and_falls_back(tmp_path):
    fname = str(tmp_path / 'init.params')
    nd.save(fname, {'arg:fc_weight': nd.array([[1.0, 2.0]]), 'aux:bn_moving_var': nd.ones((2,))})
    init = mx.init.Load(fname, default_init=mx.init.Zero())
    w, b = nd.zeros((1, 2)), nd.ones((2,))
    init('fc_weight', w)
    init('fc_bias', b)
    assert (w.asnumpy() == [[1, 2]]).all() and (b.asnumpy() == 0).all()
    with pytest.raises(mx.MXNetError, match='shape mismatch'):
        init('fc_weight', nd.zeros((2, 2)))
    with pytest.raises(mx.MXNetError, match='no default_init'):
        mx.init.Load({'a': nd.zeros((1,))})('b', nd.zeros((1,)))
