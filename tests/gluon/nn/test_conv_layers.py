"""Convolution and pooling layers against direct-loop numpy references, forward and backward."""
import itertools
import math

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.gluon import nn
from minigluon.ndarray.ops import conv_winograd
from minigluon.test_utils import assert_almost_equal

rng = np.random.RandomState(0)


# ---- numpy references, written as plain loops over every index ------------------------------
def conv_reference(x, w, b, stride, pad, dilate, groups):
    """N-D convolution: out[n, f, o] = sum_{c, k} xpad[n, g*C_g + c, o*s + k*d] * w[f, c, k]."""
    n_batch, channels = x.shape[:2]
    filters, c_group, *kernel = w.shape
    dims = len(kernel)
    xpad = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out_sp = [(x.shape[2 + i] + 2 * pad[i] - dilate[i] * (kernel[i] - 1) - 1) // stride[i] + 1
              for i in range(dims)]
    out = np.zeros([n_batch, filters] + out_sp)
    f_group = filters // groups
    for n, f in itertools.product(range(n_batch), range(filters)):
        g = f // f_group
        for o in itertools.product(*map(range, out_sp)):
            total = 0.0 if b is None else b[f]
            for c in range(c_group):
                for k in itertools.product(*map(range, kernel)):
                    pos = tuple(o[i] * stride[i] + k[i] * dilate[i] for i in range(dims))
                    total += xpad[(n, g * c_group + c) + pos] * w[(f, c) + k]
            out[(n, f) + o] = total
    return out


def deconv_reference(x, w, b, stride, pad, dilate, groups, adj):
    """Transposed convolution: each input pixel scatters ``x * w`` into the output."""
    n_batch, channels = x.shape[:2]
    _, f_group, *kernel = w.shape
    dims = len(kernel)
    c_group = channels // groups
    full_sp = [(x.shape[2 + i] - 1) * stride[i] + dilate[i] * (kernel[i] - 1) + 1 + adj[i]
               for i in range(dims)]
    full = np.zeros([n_batch, f_group * groups] + full_sp)
    for n, c in itertools.product(range(n_batch), range(channels)):
        g = c // c_group
        for i in itertools.product(*map(range, x.shape[2:])):
            for f in range(f_group):
                for k in itertools.product(*map(range, kernel)):
                    pos = tuple(i[a] * stride[a] + k[a] * dilate[a] for a in range(dims))
                    full[(n, g * f_group + f) + pos] += x[(n, c) + i] * w[(c, f) + k]
    crop = tuple(slice(p, p + s - 2 * p) for p, s in zip(pad, full_sp))
    out = full[(slice(None), slice(None)) + crop]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * dims)
    return out


def pool_reference(x, kernel, stride, pad, pool_type, ceil_mode=False, count_include_pad=True):
    """Pooling by loops; padding never wins a max and counts in an average only if asked."""
    dims = len(kernel)
    size = x.shape[2:]
    rnd = math.ceil if ceil_mode else math.floor
    out_sp = [int(rnd((size[i] + 2 * pad[i] - kernel[i]) / stride[i])) + 1 for i in range(dims)]
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for n, c in itertools.product(*map(range, x.shape[:2])):
        for o in itertools.product(*map(range, out_sp)):
            start = [o[i] * stride[i] - pad[i] for i in range(dims)]
            stop = [min(start[i] + kernel[i], size[i] + pad[i]) for i in range(dims)]
            window_size = np.prod([stop[i] - start[i] for i in range(dims)])
            real = tuple(slice(max(start[i], 0), min(stop[i], size[i])) for i in range(dims))
            values = x[(n, c) + real]
            if pool_type == 'max':
                out[(n, c) + o] = values.max()
            else:
                out[(n, c) + o] = values.sum() / (window_size if count_include_pad
                                                  else values.size)
    return out


def _init64(layer, x_shape):
    layer.initialize(mx.init.Uniform(0.5))
    layer(nd.ones(x_shape))  # settle deferred shapes
    layer.cast('float64')
    if getattr(layer, 'bias', None) is not None:
        layer.bias.set_data(nd.array(rng.uniform(-1, 1, layer.bias.shape), dtype='float64'))
    return layer


def _params(layer):
    b = layer.bias.data().asnumpy() if layer.bias is not None else None
    return layer.weight.data().asnumpy(), b


# ---- convolution -------------------------------------------------------------------------
CONV_CASES = {
    'plain': dict(channels=3, kernel_size=3),
    'stride_pad': dict(channels=2, kernel_size=(3, 2), strides=(2, 1), padding=(1, 2)),
    'dilation': dict(channels=2, kernel_size=2, dilation=(2, 1), padding=1, use_bias=False),
    'groups': dict(channels=4, kernel_size=3, groups=2, padding=1, strides=2),
    'pointwise': dict(channels=3, kernel_size=1),
}


@pytest.mark.parametrize('name', sorted(CONV_CASES))
def test_conv2d_matches_direct_loops(name, block_gradient):
    kwargs = CONV_CASES[name]
    x = rng.normal(size=(2, 4, 5, 6))
    layer = _init64(nn.Conv2D(**kwargs), x.shape)
    w, b = _params(layer)
    k = layer._kwargs
    out = block_gradient(layer, [x])
    ref = conv_reference(x, w, b, k['stride'], k['pad'], k['dilate'], k['num_group'])
    assert_almost_equal(out, ref, rtol=1e-10, atol=1e-12)


def test_conv2d_winograd_layers_match_direct_loops(block_gradient, monkeypatch):
    # 3x3 'same' kernels take the Winograd path (at any width here); odd sizes crop tiles
    monkeypatch.setattr(conv_winograd, 'MIN_CHANNELS', 1)
    x = rng.normal(size=(2, 4, 5, 6))
    layer = _init64(nn.Conv2D(3, 3, padding=1), x.shape)
    w, b = _params(layer)
    out = block_gradient(layer, [x])
    ref = conv_reference(x, w, b, (1, 1), (1, 1), (1, 1), 1)
    assert_almost_equal(out, ref, rtol=1e-10, atol=1e-12)
    layer.cast('float32')  # and in float32 it differs from the exact result by rounding only
    out32 = layer(nd.array(x, dtype='float32'))
    assert_almost_equal(out32, ref, rtol=1e-5, atol=1e-5)


def test_conv_output_is_channels_last_and_keeps_its_values():
    x = rng.normal(size=(2, 3, 4, 5)).astype('float32')
    layer = nn.Conv2D(6, 3, padding=1, in_channels=3)
    layer.initialize(mx.init.Xavier())
    out = layer(nd.array(x))
    # channels-last memory, so the next convolution reads it without a copy
    assert np.moveaxis(out._data, 1, -1).flags.c_contiguous
    assert out.asnumpy().flags.c_contiguous
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    assert_almost_equal(out, conv_reference(x, w, b, (1, 1), (1, 1), (1, 1), 1), rtol=1e-4,
                        atol=1e-5)


def test_conv2d_on_every_context_and_with_activation(ctx):
    x = rng.normal(size=(1, 2, 4, 4)).astype('float32')
    layer = nn.Conv2D(3, 3, padding=1, activation='relu', in_channels=2)
    layer.initialize(mx.init.Xavier(), ctx=ctx)
    out = layer(nd.array(x, ctx=ctx))
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    ref = np.maximum(conv_reference(x, w, b, (1, 1), (1, 1), (1, 1), 1), 0)
    assert out.context == ctx
    assert_almost_equal(out, ref, rtol=1e-4, atol=1e-5)


def test_conv1d_matches_direct_loops(block_gradient):
    x = rng.normal(size=(2, 3, 7))
    layer = _init64(nn.Conv1D(4, 3, strides=2, padding=1, dilation=1), x.shape)
    w, b = _params(layer)
    out = block_gradient(layer, [x])
    assert_almost_equal(out, conv_reference(x, w, b, (2,), (1,), (1,), 1), rtol=1e-10)


def test_conv_infers_in_channels_and_reads_well():
    layer = nn.Conv2D(8, (3, 5), strides=2, groups=2, use_bias=False)
    assert layer.weight.shape == (8, 0, 3, 5)
    assert repr(layer) == 'Conv2D(None -> 8, kernel_size=(3, 5), stride=(2, 2), groups=2, ' \
                          'bias=False)'
    layer.initialize()
    layer(nd.ones((1, 6, 9, 9)))
    assert layer.weight.shape == (8, 3, 3, 5)
    assert repr(layer).startswith('Conv2D(6 -> 8,')
    dilated = nn.Conv2D(2, 3, dilation=2, padding=2, in_channels=3, activation='relu')
    assert repr(dilated) == 'Conv2D(3 -> 2, kernel_size=(3, 3), stride=(1, 1), ' \
                            'padding=(2, 2), dilation=(2, 2), Activation(relu))'


def test_conv_bad_arguments_are_explained():
    with pytest.raises(mx.MXNetError, match="layout 'NHWC' is not supported; use 'NCHW'"):
        nn.Conv2D(2, 3, layout='NHWC')
    with pytest.raises(mx.MXNetError, match=r'kernel_size=\(3, 3, 3\) needs 2 entries'):
        nn.Conv2D(2, (3, 3, 3))
    with pytest.raises(mx.MXNetError, match='must divide by groups=2'):
        nn.Conv2D(3, 3, groups=2)
    with pytest.raises(mx.MXNetError, match='channels must be a positive int'):
        nn.Conv1D(0, 3)


DECONV_CASES = {
    'plain': dict(channels=2, kernel_size=3),
    'stride_pad_adj': dict(channels=3, kernel_size=3, strides=2, padding=1, output_padding=1),
    'groups_dilation': dict(channels=4, kernel_size=2, groups=2, dilation=2, use_bias=False),
}


@pytest.mark.parametrize('name', sorted(DECONV_CASES))
def test_conv2d_transpose_matches_scatter_loops(name, block_gradient):
    kwargs = DECONV_CASES[name]
    x = rng.normal(size=(2, 4, 3, 4))
    layer = _init64(nn.Conv2DTranspose(**kwargs), x.shape)
    w, b = _params(layer)
    assert w.shape[0] == 4  # weight (in_channels, channels / groups, kh, kw)
    k = layer._kwargs
    out = block_gradient(layer, [x])
    ref = deconv_reference(x, w, b, k['stride'], k['pad'], k['dilate'], k['num_group'],
                           k['adj'])
    assert_almost_equal(out, ref, rtol=1e-10, atol=1e-12)


def test_conv_transpose_inverts_the_shape_of_a_strided_conv():
    conv = nn.Conv2D(6, 3, strides=2, padding=1, in_channels=3)
    up = nn.Conv2DTranspose(3, 3, strides=2, padding=1, output_padding=1, in_channels=6)
    for layer in (conv, up):
        layer.initialize()
    x = nd.ones((1, 3, 8, 8))
    assert up(conv(x)).shape == x.shape
    assert repr(up) == 'Conv2DTranspose(6 -> 3, kernel_size=(3, 3), stride=(2, 2), ' \
                       'padding=(1, 1), output_padding=(1, 1))'
    assert nn.Conv1DTranspose(2, 3, in_channels=1).weight.shape == (1, 2, 3)


# ---- pooling -----------------------------------------------------------------------------
POOL_CASES = {
    'max': (nn.MaxPool2D(), dict(pool_type='max')),
    'max_stride_pad': (nn.MaxPool2D(3, 2, 1), dict(pool_type='max')),
    'max_ceil': (nn.MaxPool2D((2, 3), (2, 2), ceil_mode=True), dict(pool_type='max',
                                                                    ceil_mode=True)),
    'avg_pad': (nn.AvgPool2D(3, 2, 1), dict(pool_type='avg')),
    'avg_pad_exclude': (nn.AvgPool2D(3, 2, 1, count_include_pad=False),
                        dict(pool_type='avg', count_include_pad=False)),
    'avg_ceil_pad': (nn.AvgPool2D(2, 2, 1, ceil_mode=True), dict(pool_type='avg',
                                                                 ceil_mode=True)),
    'avg_ceil_exclude': (nn.AvgPool2D(3, 2, 1, ceil_mode=True, count_include_pad=False),
                         dict(pool_type='avg', ceil_mode=True, count_include_pad=False)),
}


def _distinct(shape):
    """Well-separated values: no ties for max, no kink within the difference step."""
    return rng.permutation(np.arange(int(np.prod(shape)))).reshape(shape) * 0.1 - 3.0


@pytest.mark.parametrize('name', sorted(POOL_CASES))
def test_pool2d_matches_loops(name, ctx, block_gradient):
    layer, ref_kwargs = POOL_CASES[name]
    x = _distinct((2, 3, 5, 6))
    k = layer._kwargs
    ref = pool_reference(x, k['kernel'], k['stride'], k['pad'], **ref_kwargs)
    assert_almost_equal(layer(nd.array(x, ctx=ctx, dtype='float64')), ref, rtol=1e-10)
    if ctx == mx.cpu():
        block_gradient(layer, [x])


def test_pool1d_and_global_pools(block_gradient):
    x = _distinct((2, 3, 7))
    ref = pool_reference(x, (3,), (2,), (1,), 'max')
    assert_almost_equal(block_gradient(nn.MaxPool1D(3, 2, 1), [x]), ref)
    ref = pool_reference(x, (2,), (2,), (0,), 'avg', ceil_mode=True)
    assert_almost_equal(block_gradient(nn.AvgPool1D(ceil_mode=True), [x]), ref)
    x2 = _distinct((2, 3, 4, 5))
    assert_almost_equal(block_gradient(nn.GlobalAvgPool2D(), [x2]),
                        x2.mean(axis=(2, 3), keepdims=True))
    assert_almost_equal(block_gradient(nn.GlobalMaxPool2D(), [x2]),
                        x2.max(axis=(2, 3), keepdims=True))
    assert_almost_equal(nn.GlobalAvgPool1D()(nd.array(x)), x.mean(axis=2, keepdims=True))
    assert_almost_equal(nn.GlobalMaxPool1D()(nd.array(x)), x.max(axis=2, keepdims=True))


def test_pool_repr_and_errors():
    assert repr(nn.MaxPool2D(3, 2, 1, ceil_mode=True)) == (
        'MaxPool2D(size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, '
        'global_pool=False, pool_type=max, layout=NCHW)')
    assert nn.AvgPool2D((2, 3))._kwargs['stride'] == (2, 3)  # strides default to pool_size
    with pytest.raises(mx.MXNetError, match="layout 'NWC' is not supported; use 'NCW'"):
        nn.MaxPool1D(layout='NWC')
