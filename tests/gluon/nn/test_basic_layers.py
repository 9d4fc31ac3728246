"""Basic layers against numpy references, forward and backward."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.gluon import nn
from minigluon.test_utils import assert_almost_equal

rng = np.random.RandomState(0)


def _f64(layer, init=None):
    layer.initialize(init or mx.init.Uniform(0.5))
    layer.cast('float64')
    return layer


def _build(layer, x, init=None, ctx=mx.cpu()):
    """Initialize ``layer`` on ``ctx`` (deferred shapes settled by one forward of ``x``)."""
    layer.initialize(init or mx.init.Uniform(0.5), ctx=ctx)
    layer(nd.array(x, ctx=ctx))
    return layer


# ---- Dense ---------------------------------------------------------------------------------
def test_dense_matches_numpy(ctx):
    x = rng.normal(size=(3, 2, 2)).astype('float32')
    layer = _build(nn.Dense(5, activation='tanh'), x, ctx=ctx)
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    assert w.shape == (5, 4)  # in_units inferred from the flattened input
    out = layer(nd.array(x, ctx=ctx))
    assert_almost_equal(out, np.tanh(x.reshape(3, 4) @ w.T + b), rtol=1e-5, atol=1e-6)


def test_dense_without_flatten_acts_on_the_last_axis(ctx):
    x = rng.normal(size=(2, 3, 4)).astype('float32')
    layer = _build(nn.Dense(6, use_bias=False, flatten=False), x, ctx=ctx)
    assert layer.bias is None and list(layer.collect_params().keys()) == [layer.prefix + 'weight']
    out = layer(nd.array(x, ctx=ctx))
    assert out.shape == (2, 3, 6)
    assert_almost_equal(out, x @ layer.weight.data().asnumpy().T, rtol=1e-5, atol=1e-6)


def test_dense_gradients(block_gradient):
    block_gradient(_f64(nn.Dense(3, in_units=4, activation='sigmoid')), [rng.normal(size=(2, 4))])
    block_gradient(_f64(nn.Dense(2, in_units=3, flatten=False)), [rng.normal(size=(2, 2, 3))])


def test_dense_bad_units():
    with pytest.raises(mx.MXNetError, match='Dense: units must be an int >= 0, got -1'):
        nn.Dense(-1)
    layer = nn.Dense(0)  # accepted, as in MXNet (e.g. in a list comprehension) ...
    assert repr(layer) == 'Dense(None -> 0, linear)'
    layer.initialize()
    with pytest.raises(mx.MXNetError, match=r"'weight' still has unknown shape \(0, 3\)"):
        layer(nd.ones((2, 3)))  # ... and it fails at its first forward
    assert repr(nn.Embedding(0, 3)) == 'Embedding(0 -> 3, float32)'


# ---- Dropout -------------------------------------------------------------------------------
def test_dropout_scales_kept_values_while_training(ctx):
    x = nd.ones((200, 100), ctx=ctx)
    layer = nn.Dropout(0.3)
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward()
    out = y.asnumpy()
    kept = out != 0
    assert_almost_equal(out[kept], np.full(kept.sum(), 1 / 0.7), rtol=1e-6)
    assert abs(1 - kept.mean() - 0.3) < 0.02
    assert_almost_equal(x.grad, out)  # dy/dx = mask / (1 - p), here equal to the output


def test_dropout_is_off_when_predicting(ctx):
    x = nd.array(rng.normal(size=(4, 5)), ctx=ctx)
    layer = nn.Dropout(0.9)
    assert_almost_equal(layer(x), x)  # not recording: predict mode
    with autograd.record(train_mode=False):
        assert_almost_equal(layer(x), x)
    with autograd.predict_mode():
        assert_almost_equal(layer(x), x)
    with autograd.train_mode():
        assert (layer(x).asnumpy() == 0).mean() > 0.5


def test_dropout_axes_share_the_mask():
    x = nd.ones((8, 16, 3, 3))
    with autograd.record():
        y = nn.Dropout(0.5, axes=(2, 3))(x).asnumpy()
    per_channel = y.reshape(8, 16, 9)
    assert (per_channel == per_channel[:, :, :1]).all()
    assert 0 < (y == 0).mean() < 1


def test_dropout_gradient_with_a_fixed_mask(block_gradient):
    block_gradient(nn.Dropout(0.4), [rng.normal(size=(3, 4))], seed=5)


def test_dropout_rate_zero_and_bad_rate():
    x = nd.ones((2, 2))
    with autograd.record():
        assert (nn.Dropout(0)(x).asnumpy() == 1).all()
    with pytest.raises(mx.MXNetError, match=r'rate must be in \[0, 1\), got 1'):
        nn.Dropout(1)


# ---- BatchNorm -----------------------------------------------------------------------------
def _bn_reference(x, gamma, beta, mean, var, eps, axis=1):
    shape = [1] * x.ndim
    shape[axis] = -1
    r = lambda v: v.reshape(shape)
    return (x - r(mean)) / np.sqrt(r(var) + eps) * r(gamma) + r(beta)


def test_batchnorm_training_uses_batch_statistics_and_updates_running_ones(ctx):
    x = rng.normal(2.0, 3.0, size=(4, 3, 5, 5)).astype('float32')
    layer = nn.BatchNorm(momentum=0.8, epsilon=1e-3)
    layer.initialize(ctx=ctx)
    layer.gamma.set_data(nd.array([1.0, 2.0, 0.5]))
    layer.beta.set_data(nd.array([0.0, -1.0, 3.0]))
    with autograd.record():
        out = layer(nd.array(x, ctx=ctx))
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))  # biased variance
    assert_almost_equal(out, _bn_reference(x, np.array([1, 2, .5]), np.array([0, -1, 3.]),
                                           mean, var, 1e-3), rtol=1e-4, atol=1e-4)
    # as in MXNet 1.x, the running statistics change in the backward pass, not before
    assert (layer.running_mean.data().asnumpy() == 0).all()
    assert (layer.running_var.data().asnumpy() == 1).all()
    out.backward()
    assert_almost_equal(layer.running_mean.data(), 0.2 * mean, rtol=1e-5, atol=1e-6)
    assert_almost_equal(layer.running_var.data(), 0.8 + 0.2 * var, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('hybridize', [False, True])
def test_batchnorm_running_statistics_change_when_mxnets_do(hybridize):
    # MXNet 1.9.1's values (the layer's defaults, momentum 0.9): once per backward through
    # a training-mode forward; never after a forward alone, recorded or not.
    layer = nn.BatchNorm(in_channels=2)
    layer.initialize()
    if hybridize:
        layer.hybridize()
    x = nd.array([[1., 2.], [3., 6.]])

    def running():
        return np.concatenate([layer.running_mean.data().asnumpy(),
                               layer.running_var.data().asnumpy()]).tolist()
    with autograd.record():
        y = layer(x)
    assert running() == [0, 0, 1, 1]
    y.backward(retain_graph=True)
    assert_almost_equal(np.array(running()), np.array([0.2, 0.4, 1, 1.3]))
    y.backward()
    assert_almost_equal(np.array(running()), np.array([0.38, 0.76, 1, 1.57]))
    with autograd.train_mode():
        layer(x)
    with autograd.record():
        layer(x)
    with autograd.record(train_mode=False):
        y = layer(x)
    y.backward()
    assert_almost_equal(np.array(running()), np.array([0.38, 0.76, 1, 1.57]))


def test_batchnorm_keeps_the_channels_last_layout_of_conv_outputs(ctx):
    x = rng.normal(2.0, 3.0, size=(4, 5, 5, 3)).astype('float32')
    layer = nn.BatchNorm(in_channels=3)
    layer.initialize(ctx=ctx)
    with autograd.record():
        out = layer(nd.array(x, ctx=ctx).transpose((0, 3, 1, 2)))  # NCHW view, NHWC memory
    assert out._data.transpose(0, 2, 3, 1).flags.c_contiguous  # no copy for the next conv
    ref = np.moveaxis(x, 3, 1)
    assert_almost_equal(out, _bn_reference(ref, np.ones(3), np.zeros(3), ref.mean(axis=(0, 2, 3)),
                                           ref.var(axis=(0, 2, 3)), 1e-5), rtol=1e-4, atol=1e-4)


def test_batchnorm_inference_uses_running_statistics_and_leaves_them(ctx):
    x = rng.normal(size=(2, 3, 4)).astype('float32')
    layer = nn.BatchNorm(in_channels=3)
    layer.initialize(ctx=ctx)
    layer.running_mean.set_data(nd.array([0.5, -0.5, 1.0]))
    layer.running_var.set_data(nd.array([4.0, 1.0, 0.25]))
    expected = _bn_reference(x, np.ones(3), np.zeros(3), np.array([.5, -.5, 1.]),
                             np.array([4., 1., .25]), 1e-5)
    assert_almost_equal(layer(nd.array(x, ctx=ctx)), expected, rtol=1e-5, atol=1e-5)
    with autograd.record(train_mode=False):
        assert_almost_equal(layer(nd.array(x, ctx=ctx)), expected, rtol=1e-5, atol=1e-5)
    assert layer.running_mean.data().asnumpy().tolist() == [0.5, -0.5, 1.0]
    assert layer.running_var.data().asnumpy().tolist() == [4.0, 1.0, 0.25]


def test_batchnorm_use_global_stats_while_training():
    layer = nn.BatchNorm(use_global_stats=True, in_channels=2)
    layer.initialize()
    x = nd.array(rng.normal(3, 1, size=(4, 2)))
    with autograd.record():
        out = layer(x)
    assert_almost_equal(out, x.asnumpy() / np.sqrt(1 + 1e-5), rtol=1e-5)
    assert (layer.running_mean.data().asnumpy() == 0).all()


def test_batchnorm_without_scale_and_center_and_channels_last():
    layer = nn.BatchNorm(axis=-1, center=False, scale=False)
    layer.initialize()
    x = rng.normal(size=(6, 4)).astype('float32')
    with autograd.record():
        out = layer(nd.array(x))
    assert layer.gamma.shape == (4,) and layer.gamma.grad_req == 'null'
    assert layer.beta.grad_req == 'null'
    assert_almost_equal(out, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-5)
    assert 'fix_gamma=True' in repr(layer) and 'in_channels=4' in repr(layer)


def test_batchnorm_gradients(block_gradient):
    x = rng.normal(size=(3, 2, 2, 2))
    layer = _f64(nn.BatchNorm(in_channels=2), init='ones')
    layer.gamma.set_data(nd.array([1.5, 0.5], dtype='float64'))
    block_gradient(layer, [x], train=True)
    layer.running_var.set_data(nd.array([2.0, 0.5], dtype='float64'))
    block_gradient(layer, [x], train=False)


# ---- LayerNorm / InstanceNorm ----------------------------------------------------------------
def test_layernorm_matches_numpy(ctx, block_gradient):
    x = rng.normal(size=(2, 3, 4)).astype('float32')
    layer = _build(nn.LayerNorm(), x, ctx=ctx)
    g, b = layer.gamma.data().asnumpy(), layer.beta.data().asnumpy()
    assert g.shape == (4,) and (g == 1).all() and (b == 0).all()
    layer.gamma.set_data(nd.array([1., 2., 3., 4.]))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    assert_almost_equal(layer(nd.array(x, ctx=ctx)), ref * np.array([1, 2, 3, 4.]),
                        rtol=1e-4, atol=1e-5)
    mid = _f64(nn.LayerNorm(axis=1, in_channels=3))
    mid.beta.set_data(nd.array([0.1, 0.2, 0.3], dtype='float64'))
    block_gradient(mid, [rng.normal(size=(2, 3, 2))])


def test_instancenorm_matches_numpy(ctx, block_gradient):
    x = rng.normal(size=(2, 3, 4, 4)).astype('float32')
    layer = _build(nn.InstanceNorm(scale=True, epsilon=1e-3), x, ctx=ctx)
    layer.gamma.set_data(nd.array([1., 2., 3.]))
    layer.beta.set_data(nd.array([0., 1., 0.]))
    mean, var = x.mean(axis=(2, 3), keepdims=True), x.var(axis=(2, 3), keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-3) * np.array([1, 2, 3.]).reshape(1, 3, 1, 1) \
        + np.array([0, 1, 0.]).reshape(1, 3, 1, 1)
    assert_almost_equal(layer(nd.array(x, ctx=ctx)), ref, rtol=1e-4, atol=1e-4)
    channels_last = _build(nn.InstanceNorm(axis=-1), x.transpose(0, 2, 3, 1), ctx=ctx)
    out = channels_last(nd.array(x.transpose(0, 2, 3, 1), ctx=ctx)).asnumpy()
    assert_almost_equal(out.transpose(0, 3, 1, 2), (x - mean) / np.sqrt(var + 1e-5),
                        rtol=1e-4, atol=1e-4)
    block_gradient(_f64(nn.InstanceNorm(scale=True, in_channels=2)), [rng.normal(size=(2, 2, 3))])


def _group_norm_reference(x, groups, gamma, beta, eps):
    g = x.reshape(x.shape[0], groups, -1)
    mean, var = g.mean(axis=2, keepdims=True), g.var(axis=2, keepdims=True)
    out = (g - mean) / np.sqrt(var + eps) * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return out.reshape(x.shape)


def test_groupnorm_matches_numpy(ctx, block_gradient):
    x = rng.normal(size=(2, 6, 3, 2)).astype('float32') * 3 + 1
    layer = _build(nn.GroupNorm(num_groups=3, epsilon=1e-3), x, ctx=ctx)
    assert layer.gamma.shape == (3,) and layer.beta.shape == (3,)  # one per group, as MXNet 1.x
    layer.gamma.set_data(nd.array([1., 2., 0.5]))
    layer.beta.set_data(nd.array([0., 1., -1.]))
    ref = _group_norm_reference(x, 3, np.array([1, 2, 0.5]), np.array([0, 1, -1.]), 1e-3)
    assert_almost_equal(layer(nd.array(x, ctx=ctx)), ref, rtol=1e-4, atol=1e-4)
    # MXNet's documented example: one group over (3, 4) values 0..11
    docs = _build(nn.GroupNorm(), np.zeros((2, 3, 4)), ctx=ctx)
    out = docs(nd.arange(24, ctx=ctx).reshape((2, 3, 4))).asnumpy()
    assert_almost_equal(out[0, 0], [-1.5932543, -1.3035717, -1.0138891, -0.7242065], rtol=1e-5)
    assert repr(layer) == 'GroupNorm(eps=0.001, num_groups=3, center=True, scale=True)'
    net = _f64(nn.GroupNorm(num_groups=2))
    net.gamma.set_data(nd.array([1.5, 0.5], dtype='float64'))
    block_gradient(net, [rng.normal(size=(2, 4, 3))])


def test_groupnorm_errors_say_what_divides():
    layer = nn.GroupNorm(num_groups=4)
    layer.initialize()
    with pytest.raises(mx.MXNetError, match='C divisible by num_groups=4'):
        layer(nd.ones((2, 6, 3)))
    with pytest.raises(mx.MXNetError, match='num_groups must be at least 1'):
        nn.GroupNorm(num_groups=0)


def test_groupnorm_float32_matches_float64():
    x = rng.normal(size=(4, 8, 16, 16)) * 2 + 3
    outs, grads = [], []
    for dtype in ('float32', 'float64'):
        layer = nn.GroupNorm(num_groups=4)
        layer.initialize()
        layer.cast(dtype)
        xs = nd.array(x, dtype=dtype)
        xs.attach_grad()
        with autograd.record():
            out = layer(xs)
        out.backward(nd.array(np.cos(np.arange(x.size)).reshape(x.shape), dtype=dtype))
        outs.append(out.asnumpy())
        grads.append(xs.grad.asnumpy())
    assert np.abs(outs[0] - outs[1]).max() / np.abs(outs[1]).max() < 1e-5
    assert np.abs(grads[0] - grads[1]).max() / np.abs(grads[1]).max() < 1e-5


def test_batchnorm_relu_is_batchnorm_then_relu(block_gradient):
    x = rng.normal(size=(4, 3, 2))
    fused, plain = _f64(nn.BatchNormReLU(in_channels=3)), _f64(nn.BatchNorm(in_channels=3))
    with autograd.train_mode():
        assert_almost_equal(fused(nd.array(x, dtype='float64')),
                            np.maximum(plain(nd.array(x, dtype='float64')).asnumpy(), 0))
    assert repr(fused).startswith('BatchNormReLU(axis=1')
    fused.beta.set_data(nd.array([0.3, -0.2, 0.1], dtype='float64'))
    block_gradient(fused, [x], train=False)


# ---- Embedding, Flatten, Lambda ------------------------------------------------------------
def test_embedding_gathers_rows_with_dense_gradient(ctx):
    layer = nn.Embedding(5, 3)
    layer.initialize(ctx=ctx)
    idx = nd.array([[0, 4], [4, 2]], ctx=ctx)
    with autograd.record():
        out = layer(idx)
    out.backward()
    w = layer.weight.data().asnumpy()
    assert_almost_equal(out, w[[[0, 4], [4, 2]]])
    grad = layer.weight.grad().asnumpy()
    assert_almost_equal(grad[:, 0], [1, 0, 1, 0, 2])  # row 4 picked twice
    assert repr(layer) == 'Embedding(5 -> 3, float32)'


def test_flatten_and_lambdas():
    x = nd.array(rng.normal(size=(2, 3, 4)))
    assert nn.Flatten()(x).shape == (2, 12) and repr(nn.Flatten()) == 'Flatten'
    assert_almost_equal(nn.Lambda('tanh')(x), np.tanh(x.asnumpy()), rtol=1e-5)
    assert_almost_equal(nn.Lambda(lambda a: a * 2)(x), x.asnumpy() * 2)
    assert_almost_equal(nn.HybridLambda('relu')(x), np.maximum(x.asnumpy(), 0))
    double = nn.HybridLambda(lambda F, a, b: F.concat(a, b, dim=0))
    assert double(x, x).shape == (4, 3, 4)
    assert repr(nn.Lambda('tanh')) == 'Lambda(tanh)'
    with pytest.raises(mx.MXNetError, match='no function nd.not_an_op'):
        nn.Lambda('not_an_op')
    with pytest.raises(mx.MXNetError, match='expected a function'):
        nn.HybridLambda(3)


def test_sequential_of_hybrid_blocks_suggests_hybrid_sequential_and_slices_keep_the_name():
    net = nn.Sequential(prefix='seq_')
    with net.name_scope():
        net.add(nn.Dense(2), nn.Dense(3))
    with pytest.warns(UserWarning, match="All children of this Sequential layer 'seq_' are "
                                         "HybridBlocks"):
        net.hybridize()
    tail = net[1:]
    assert type(tail) is nn.Sequential and tail.name == 'seq' and tail[0] is net[1]
    assert list(tail.collect_params()) == ['seq_dense1_weight', 'seq_dense1_bias']


def test_sequential_passes_tuples_along():
    net = nn.HybridSequential()
    net.add(nn.HybridLambda(lambda F, x: (x, x * 2)), nn.HybridLambda(lambda F, a, b: a + b))
    assert net(nd.ones((2,))).asnumpy().tolist() == [3, 3]


def test_hybrid_concurrent_concatenates_its_children_outputs(ctx, block_gradient):
    net = nn.HybridConcurrent(axis=1)
    net.add(nn.Identity(), nn.Conv2D(3, 1), nn.HybridSequential().add(nn.Conv2D(2, 3, padding=1)))
    x = rng.normal(size=(2, 4, 5, 5)).astype('float32')
    _build(net, x, ctx=ctx)
    out = net(nd.array(x, ctx=ctx))
    assert out.shape == (2, 4 + 3 + 2, 5, 5)
    assert_almost_equal(out[:, :4], x)
    assert_almost_equal(out[:, 4:7], net[1](nd.array(x, ctx=ctx)))
    assert list(net._collect_params_with_prefix()) == ['1.weight', '1.bias', '2.0.weight',
                                                       '2.0.bias']
    assert net[1:].axis == 1 and len(net[1:]) == 2  # a slice keeps the axis
    net.cast('float64')
    net.reset_ctx(mx.cpu())  # the numeric check runs on the host
    block_gradient(net, [x.astype('float64')])


def test_concurrent_runs_any_blocks_side_by_side():
    net = nn.Concurrent(axis=1)
    net.add(nn.Lambda(lambda x: x * 2), nn.Dense(3, in_units=4), nn.Identity())
    net.initialize()
    x = nd.array(rng.normal(size=(2, 4)))
    out = net(x)
    assert isinstance(net, nn.Sequential) and not isinstance(net, nn.HybridBlock)
    assert out.shape == (2, 4 + 3 + 4)
    assert_almost_equal(out[:, :4], x.asnumpy() * 2)
    assert_almost_equal(out[:, 4:7], net[1](x))
    assert_almost_equal(out[:, 7:], x)
    assert net[:2].axis == 1
    with pytest.raises(mx.MXNetError, match='Concurrent: no children'):
        nn.Concurrent()(x)


def test_hybrid_concurrent_default_axis_is_the_last_and_empty_is_explained():
    net = nn.HybridConcurrent().add(nn.Identity(), nn.Identity())
    assert net(nd.ones((2, 3))).shape == (2, 6)
    with pytest.raises(mx.MXNetError, match='HybridConcurrent: no children'):
        nn.HybridConcurrent(axis=1)(nd.ones((2, 3)))


# ---- activations ---------------------------------------------------------------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    'relu': (nn.Activation('relu'), lambda x: np.maximum(x, 0)),
    'sigmoid': (nn.Activation('sigmoid'), _sigmoid),
    'tanh': (nn.Activation('tanh'), np.tanh),
    'softrelu': (nn.Activation('softrelu'), lambda x: np.log1p(np.exp(x))),
    'softsign': (nn.Activation('softsign'), lambda x: x / (1 + np.abs(x))),
    'leaky': (nn.LeakyReLU(0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    'elu': (nn.ELU(0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    'selu': (nn.SELU(), lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(x))),
    'swish': (nn.Swish(2.0), lambda x: x * _sigmoid(2 * x)),
}


@pytest.mark.parametrize('name', sorted(ACTIVATIONS))
def test_activation_matches_numpy(name, ctx, block_gradient):
    layer, ref = ACTIVATIONS[name]
    x = rng.uniform(0.1, 2, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))  # no kink at 0
    assert_almost_equal(layer(nd.array(x, ctx=ctx, dtype='float64')), ref(x), rtol=1e-6,
                        atol=1e-6)
    block_gradient(layer, [x])


def test_prelu_learns_a_slope_per_channel(block_gradient):
    layer = _f64(nn.PReLU(in_channels=3))
    assert (layer.alpha.data().asnumpy() == 0.25).all()
    layer.alpha.set_data(nd.array([0.1, 0.2, 0.3], dtype='float64'))
    x = rng.uniform(0.1, 2, size=(2, 3, 2)) * rng.choice([-1, 1], size=(2, 3, 2))
    slope = np.array([0.1, 0.2, 0.3]).reshape(1, 3, 1)
    assert_almost_equal(layer(nd.array(x, dtype='float64')), np.where(x > 0, x, slope * x))
    block_gradient(layer, [x])


def test_gelu_and_activation_errors():
    x = np.linspace(-3, 3, 7)
    from math import erf
    ref = np.array([v * 0.5 * (1 + erf(v / np.sqrt(2))) for v in x])
    assert_almost_equal(nn.GELU()(nd.array(x, dtype='float64')), ref, rtol=1e-6, atol=1e-6)
    with pytest.raises(mx.MXNetError, match="unknown activation 'gelu'; choose one of relu"):
        nn.Activation('gelu')
    with pytest.raises(mx.MXNetError, match='alpha must be >= 0'):
        nn.LeakyReLU(-1)
    assert repr(nn.LeakyReLU(0.1)) == 'LeakyReLU(0.1)'
