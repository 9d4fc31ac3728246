"""Convolution, pooling and padding layers against direct-loop numpy references, forward and
backward, in channels-first and channels-last layouts."""
import itertools
import math

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.gluon import nn
from minigluon.ndarray.ops import conv_winograd
from minigluon.ndarray.ops.conv import Geometry
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


def test_conv2d_winograd_layers_match_direct_loops(block_gradient, cpu_kernels, monkeypatch):
    # 3x3 'same' kernels take the Winograd path (at any width here); odd sizes crop tiles;
    # the transforms compiled by numba and numpy's
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
    with pytest.raises(mx.MXNetError, match="layout 'NCDHW' is not supported; use 'NCHW' or "
                                            "'NHWC'"):
        nn.Conv2D(2, 3, layout='NCDHW')
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
    with pytest.raises(mx.MXNetError, match="layout 'NHWC' is not supported; use 'NCW' or "
                                            "'NWC'"):
        nn.MaxPool1D(layout='NHWC')
    assert repr(nn.GlobalAvgPool3D(layout='NDHWC')) == (
        'GlobalAvgPool3D(size=(1, 1, 1), stride=(1, 1, 1), padding=(0, 0, 0), ceil_mode=True, '
        'global_pool=True, pool_type=avg, layout=NDHWC)')
    with pytest.raises(mx.MXNetError, match="Pooling: layout 'NCHW' does not fit data of "
                                            r"shape \(1, 2, 3\); use one of NCW, NWC"):
        nd.Pooling(nd.ones((1, 2, 3)), kernel=(2,), layout='NCHW')


# ---- 3-D layers --------------------------------------------------------------------------
def test_conv3d_matches_direct_loops(block_gradient):
    x = rng.normal(size=(1, 4, 3, 4, 3))
    layer = _init64(nn.Conv3D(4, (2, 3, 2), strides=(1, 2, 1), padding=(1, 1, 0), groups=2),
                    x.shape)
    w, b = _params(layer)
    assert w.shape == (4, 2, 2, 3, 2)
    out = block_gradient(layer, [x], samples=12)
    ref = conv_reference(x, w, b, (1, 2, 1), (1, 1, 0), (1, 1, 1), 2)
    assert_almost_equal(out, ref, rtol=1e-10, atol=1e-12)


def test_conv3d_transpose_matches_scatter_loops(block_gradient):
    x = rng.normal(size=(1, 2, 2, 3, 2))
    layer = _init64(nn.Conv3DTranspose(3, (2, 2, 3), strides=(2, 1, 1), padding=(0, 1, 1),
                                       output_padding=(1, 0, 0)), x.shape)
    w, b = _params(layer)
    assert w.shape == (2, 3, 2, 2, 3)
    out = block_gradient(layer, [x], samples=12)
    ref = deconv_reference(x, w, b, (2, 1, 1), (0, 1, 1), (1, 1, 1), 1, (1, 0, 0))
    assert_almost_equal(out, ref, rtol=1e-10, atol=1e-12)


def test_pool3d_matches_loops(block_gradient):
    x = _distinct((1, 2, 4, 5, 3))
    layer = nn.MaxPool3D((2, 3, 2), (2, 2, 1), (1, 1, 0))
    ref = pool_reference(x, (2, 3, 2), (2, 2, 1), (1, 1, 0), 'max')
    assert_almost_equal(block_gradient(layer, [x]), ref)
    layer = nn.AvgPool3D(2, ceil_mode=True, count_include_pad=False)
    ref = pool_reference(x, (2, 2, 2), (2, 2, 2), (0, 0, 0), 'avg', ceil_mode=True,
                         count_include_pad=False)
    assert_almost_equal(block_gradient(layer, [x]), ref)
    assert_almost_equal(block_gradient(nn.GlobalMaxPool3D(), [x]),
                        x.max(axis=(2, 3, 4), keepdims=True))
    assert_almost_equal(block_gradient(nn.GlobalAvgPool3D(), [x]),
                        x.mean(axis=(2, 3, 4), keepdims=True))


# ---- channels-last layouts ---------------------------------------------------------------
def _last(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


# channels-last layer, its channels-first twin, input shape (channels first)
LAYOUT_CASES = {
    'Conv1D': (lambda: nn.Conv1D(4, 3, padding=1, layout='NWC'),
               lambda: nn.Conv1D(4, 3, padding=1), (2, 3, 6)),
    'Conv2D': (lambda: nn.Conv2D(4, (3, 2), strides=(2, 1), padding=1, groups=2,
                                 layout='NHWC'),
               lambda: nn.Conv2D(4, (3, 2), strides=(2, 1), padding=1, groups=2),
               (2, 4, 5, 4)),
    'Conv3D': (lambda: nn.Conv3D(3, 2, padding=(1, 0, 0), layout='NDHWC'),
               lambda: nn.Conv3D(3, 2, padding=(1, 0, 0)), (1, 2, 3, 3, 4)),
    'Conv2DTranspose': (lambda: nn.Conv2DTranspose(3, 3, strides=2, padding=1,
                                                   output_padding=1, layout='NHWC'),
                        lambda: nn.Conv2DTranspose(3, 3, strides=2, padding=1,
                                                   output_padding=1), (1, 2, 3, 2)),
    'Conv3DTranspose': (lambda: nn.Conv3DTranspose(2, (2, 1, 2), strides=(2, 1, 1),
                                                   layout='NDHWC'),
                        lambda: nn.Conv3DTranspose(2, (2, 1, 2), strides=(2, 1, 1)),
                        (1, 2, 2, 3, 2)),
    'MaxPool1D': (lambda: nn.MaxPool1D(3, 2, 1, layout='NWC'),
                  lambda: nn.MaxPool1D(3, 2, 1), (2, 3, 7)),
    'AvgPool2D': (lambda: nn.AvgPool2D(3, 2, 1, count_include_pad=False, layout='NHWC'),
                  lambda: nn.AvgPool2D(3, 2, 1, count_include_pad=False), (2, 3, 5, 6)),
    'MaxPool3D': (lambda: nn.MaxPool3D(2, ceil_mode=True, layout='NDHWC'),
                  lambda: nn.MaxPool3D(2, ceil_mode=True), (1, 2, 3, 4, 5)),
    'GlobalAvgPool2D': (lambda: nn.GlobalAvgPool2D(layout='NHWC'),
                        lambda: nn.GlobalAvgPool2D(), (2, 3, 4, 5)),
    'GlobalMaxPool1D': (lambda: nn.GlobalMaxPool1D(layout='NWC'),
                        lambda: nn.GlobalMaxPool1D(), (2, 3, 5)),
}


@pytest.mark.parametrize('name', sorted(LAYOUT_CASES))
def test_channels_last_layout_matches_channels_first(name, block_gradient):
    """A channels-last layer computes its channels-first twin's result with the channel
    axis moved, the weight's channel axis moved last too; gradients by differences."""
    make_last, make_first, shape = LAYOUT_CASES[name]
    x = _distinct(shape)
    first = make_first()
    first.initialize(mx.init.Uniform(0.5))
    first.cast('float64')
    expected = first(nd.array(x, dtype='float64')).asnumpy()
    last = make_last()
    last.initialize()
    last.cast('float64')
    last(nd.array(_last(x), dtype='float64'))  # settle deferred shapes
    if getattr(first, 'weight', None) is not None:
        assert last.weight.shape == _last(first.weight.data().asnumpy()).shape
        last.weight.set_data(nd.array(_last(first.weight.data().asnumpy()), dtype='float64'))
        last.bias.set_data(first.bias.data())
    out = block_gradient(last, [_last(x)], samples=20)
    assert_almost_equal(out, _last(expected), rtol=1e-10, atol=1e-12)


def test_channels_last_conv_infers_in_channels_and_reads_well():
    layer = nn.Conv2D(8, 3, groups=2, layout='NHWC')
    assert layer.weight.shape == (8, 3, 3, 0)
    layer.initialize()
    assert layer(nd.ones((2, 5, 5, 6))).shape == (2, 3, 3, 8)
    assert layer.weight.shape == (8, 3, 3, 3)
    assert repr(layer).startswith('Conv2D(6 -> 8, kernel_size=(3, 3)')
    up = nn.Conv2DTranspose(4, 2, strides=2, layout='NHWC')
    up.initialize()
    assert up(nd.ones((1, 3, 3, 5))).shape == (1, 6, 6, 4)
    assert up.weight.shape == (5, 2, 2, 4)


def test_huge_kernel_data_gradient_scatters_columns():
    """A kernel as large as its 224x224 input: the flipped convolution would need 50,000x
    the columns col2im does (gigabytes), so the data gradient takes col2im."""
    geo = Geometry((224, 224), 1, 0, 1, 1)
    assert geo.transposed() is not None
    assert geo.transposed((224, 224), 3, 16) is None
    assert Geometry((3, 3), 1, 1, 1, 1).transposed((8, 8), 16, 32) is not None
    x = nd.array(rng.normal(size=(2, 3, 224, 224)), dtype='float32')
    w = nd.array(rng.normal(size=(4, 3, 224, 224)) * 1e-3, dtype='float32')
    x.attach_grad()
    with autograd.record():
        y = nd.Convolution(x, w, kernel=(224, 224), num_filter=4, no_bias=True)
    head = rng.normal(size=(2, 4, 1, 1))
    y.backward(nd.array(head, dtype='float32'))
    expected = np.einsum('nf,fchw->nchw', head[:, :, 0, 0], w.asnumpy())
    assert_almost_equal(x.grad, expected, rtol=1e-4, atol=1e-6)


# ---- reflection padding ------------------------------------------------------------------
def test_reflection_pad2d_matches_numpy(block_gradient):
    x = rng.normal(size=(2, 3, 4, 5))
    layer = nn.ReflectionPad2D(2)
    out = block_gradient(layer, [x])
    assert_almost_equal(out, np.pad(x, [(0, 0), (0, 0), (2, 2), (2, 2)], mode='reflect'))
    uneven = nn.ReflectionPad2D((0, 0, 0, 0, 1, 3, 0, 2))
    assert_almost_equal(block_gradient(uneven, [x]),
                        np.pad(x, [(0, 0), (0, 0), (1, 3), (0, 2)], mode='reflect'))
    assert repr(layer) == 'ReflectionPad2D(padding=(0, 0, 0, 0, 2, 2, 2, 2))'


def test_reflection_pad2d_errors_say_what_fits():
    with pytest.raises(mx.MXNetError, match='zero for N and C'):
        nn.ReflectionPad2D((1, 1, 0, 0, 1, 1, 1, 1))
    with pytest.raises(mx.MXNetError, match='reflection padding \\(3, 3\\) of axis 2 must be '
                                            'smaller than its size 3'):
        nn.ReflectionPad2D(3)(nd.ones((1, 1, 3, 5)))
