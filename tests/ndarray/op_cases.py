"""The op table's test cases, shared by the float64 gradient check
(``test_op_gradients.py``) and the float32-against-float64 check
(``test_op_float32.py``).

``CASES`` maps each differentiable op to one or more cases: a function of NDArrays and
its inputs (float64 numpy arrays), chosen away from the op's kinks and ties so that
finite differences and a change of precision both leave its branches alone.
"""
import numpy as np

import minigluon as mx
from minigluon import nd
from minigluon.ndarray.ops import conv_winograd
from minigluon.ndarray.ops.rnn import param_layout

rng = np.random.RandomState(0)


def r(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


def away_from_zero(*shape):
    """Values in ±[0.2, 1]: no kinks of abs/relu/sign within the finite-difference step."""
    return rng.uniform(0.2, 1.0, size=shape) * rng.choice([-1, 1], size=shape)


def between_integers(*shape):
    """Values k + 0.2..0.4: away from the jumps of floor/ceil/round."""
    return rng.randint(-3, 3, size=shape) + rng.uniform(0.2, 0.4, size=shape)


def distinct(*shape):
    """A permutation of well-separated values, so max/sort/topk have no ties."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1


def weighted(x, *shape):
    """``x`` times fixed, non-uniform weights, so a permutation or softmax shows in the sum."""
    w = np.cos(np.arange(int(np.prod(shape)))).reshape(shape) + 1.5
    return x * nd.array(w, ctx=x.context, dtype=x.dtype)


def _winograd(fn):
    """``fn`` with Winograd for every 3x3 'same' convolution, however few its channels."""
    def run(*args):
        saved, conv_winograd.MIN_CHANNELS = conv_winograd.MIN_CHANNELS, 1
        try:
            return fn(*args)
        finally:
            conv_winograd.MIN_CHANNELS = saved
    return run


class Case:
    """``unit_head``: differentiate the output's plain sum (gradient ones), for loss layers
    whose backward is the gradient of their loss and ignores the gradient from above."""

    def __init__(self, fn, *inputs, grad_nodes=None, rtol=1e-4, atol=1e-6, unit_head=False):
        self.fn, self.inputs, self.grad_nodes = fn, inputs, grad_nodes
        self.rtol, self.atol, self.unit_head = rtol, atol, unit_head


def cross_entropy(x, label, axis=-1):
    """``-sum(log_softmax(x)[label])``, a loss's value beside a loss layer's gradient."""
    return -nd.pick(nd.log_softmax(x, axis=axis), label, axis=axis).sum()


def loss_layer(layer, loss):
    """A function whose value is ``loss`` (not differentiated) and whose gradient is the
    loss layer's own: such layers return probabilities and their backward is the
    loss's gradient, so ``loss`` stands for the value the numeric check differentiates."""
    return nd.BlockGrad(loss) + 0 * layer.sum()


C = Case
CASES = {
    # arithmetic, with broadcasting and scalars on either side
    'add': [C(lambda a, b: a + b, r(2, 3), r(3)), C(lambda a: 2 + a, r(2, 2)),
            C(lambda a, b: nd.add(a, b), r(2, 1, 3), r(4, 1))],
    'subtract': [C(lambda a, b: a - b, r(2, 3), r(2, 1)), C(lambda a: 1 - a, r(3))],
    'multiply': [C(lambda a, b: a * b, r(2, 3), r(3)), C(lambda a: a * 3, r(4))],
    'divide': [C(lambda a, b: a / b, r(2, 3), away_from_zero(2, 3)),
               C(lambda a: 2 / a, away_from_zero(3)), C(lambda a: a / 4, r(3))],
    'mod': [C(lambda a, b: a % b, r(3, low=0.1, high=0.9) + 3, np.full(3, 1.3), rtol=1e-3)],
    'power': [C(lambda a, b: a ** b, r(2, 3, low=0.5, high=2), r(2, 3)),
              C(lambda a: a ** 3, r(4)), C(lambda a: 2 ** a, r(4))],
    'maximum': [C(lambda a, b: nd.maximum(a, b), distinct(2, 3), distinct(2, 3) + 0.05),
                C(lambda a: nd.maximum(a, 0.1), away_from_zero(5))],
    'minimum': [C(lambda a, b: nd.minimum(a, b), distinct(2, 3), distinct(3) + 0.05)],
    'hypot': [C(lambda a, b: nd.hypot(a, b), away_from_zero(3), away_from_zero(3))],
    # unary maths
    'negative': [C(lambda a: -a, r(2, 3))],
    'abs': [C(lambda a: a.abs(), away_from_zero(2, 3))],
    'sign': [C(lambda a: a.sign() * a, away_from_zero(5))],
    'floor': [C(lambda a: a.floor() + a, between_integers(5))],
    'ceil': [C(lambda a: a.ceil() * a, between_integers(5))],
    'round': [C(lambda a: a.round() + a * a, between_integers(5))],
    'sqrt': [C(lambda a: a.sqrt(), r(2, 3, low=0.5, high=2))],
    'rsqrt': [C(lambda a: a.rsqrt(), r(2, 3, low=0.5, high=2))],
    'exp': [C(lambda a: a.exp(), r(2, 3))],
    'expm1': [C(lambda a: a.expm1(), r(2, 3))],
    'log': [C(lambda a: a.log(), r(2, 3, low=0.5, high=2))],
    'log1p': [C(lambda a: a.log1p(), r(2, 3, low=-0.5, high=2))],
    'square': [C(lambda a: a.square(), r(2, 3))],
    'reciprocal': [C(lambda a: a.reciprocal(), away_from_zero(2, 3))],
    'sin': [C(lambda a: a.sin(), r(4))],
    'cos': [C(lambda a: a.cos(), r(4))],
    'relu': [C(lambda a: a.relu(), away_from_zero(3, 4))],
    'sigmoid': [C(lambda a: a.sigmoid(), r(3, 4) * 4)],
    'tanh': [C(lambda a: a.tanh(), r(3, 4) * 2)],
    'softrelu': [C(lambda a: a.softrelu(), r(3, 4) * 4)],
    'softsign': [C(lambda a: nd.softsign(a), away_from_zero(3, 4))],
    'clip': [C(lambda a: a.clip(-0.5, 0.5), np.array([-0.9, -0.3, 0.1, 0.45, 0.8]))],
    'cast': [C(lambda a: a.astype('float32') * 1, r(5), rtol=1e-2, atol=1e-3)],
    'copy': [C(lambda a: a.copy() * a, r(5))],
    '_copyto': [C(lambda a: a.as_in_context(mx.cpu(1)) * 2, r(2, 3))],
    # reductions
    'sum': [C(lambda a: a.sum(), r(2, 3)), C(lambda a: a.sum(axis=1, keepdims=True), r(2, 3, 2)),
            C(lambda a: nd.sum(a, axis=(0, 2)), r(2, 3, 2)),
            C(lambda a: a.sum(axis=1, exclude=True), r(2, 3, 2))],
    'nansum': [C(lambda a: nd.nansum(a, axis=0), r(3, 2))],
    'mean': [C(lambda a: a.mean(), r(2, 3)), C(lambda a: a.mean(axis=-1), r(2, 3))],
    'prod': [C(lambda a: a.prod(axis=1), r(2, 4)), C(lambda a: a.prod(), r(2, 3)),
             C(lambda a: a.prod(axis=(0, 2)), r(2, 2, 3))],
    'max': [C(lambda a: a.max(axis=1), distinct(3, 4)), C(lambda a: a.max(), distinct(2, 3))],
    'min': [C(lambda a: a.min(axis=0, keepdims=True), distinct(3, 4))],
    'norm': [C(lambda a: a.norm(), r(2, 3)), C(lambda a: a.norm(axis=1), r(2, 3)),
             C(lambda a: a.norm(ord=1, axis=0), away_from_zero(2, 3))],
    # shapes
    'reshape': [C(lambda a: weighted(a.reshape((3, -1)), 3, 2), r(2, 3)),
                C(lambda a: a.reshape(0, -1), r(2, 3, 2)), C(lambda a: a.reshape(-3, 2), r(2, 3, 2))],
    'flatten': [C(lambda a: a.flatten(), r(2, 3, 2))],
    'transpose': [C(lambda a: a.T, r(2, 3)), C(lambda a: a.transpose((1, 2, 0)), r(2, 3, 4))],
    'swapaxes': [C(lambda a: a.swapaxes(0, 2), r(2, 3, 4))],
    'expand_dims': [C(lambda a: a.expand_dims(1), r(2, 3))],
    'squeeze': [C(lambda a: a.squeeze(), r(2, 1, 3)), C(lambda a: a.squeeze(axis=1), r(2, 1, 1))],
    'broadcast_to': [C(lambda a: a.broadcast_to((2, 3, 4)), r(3, 1)),
                     C(lambda a: a.broadcast_to((0, 4)), r(2, 1))],
    'broadcast_like': [C(lambda a, b: nd.broadcast_like(a, b), r(1, 3), r(2, 3), grad_nodes=[0])],
    'tile': [C(lambda a: a.tile((2, 3)), r(2, 2)), C(lambda a: a.tile(2), r(2, 3)),
             C(lambda a: a.tile((2, 1, 1)), r(2, 3))],
    'repeat': [C(lambda a: a.repeat(2, axis=1), r(2, 3)), C(lambda a: a.repeat(3), r(2, 2))],
    'concat': [C(lambda a, b: nd.concat(a, b), r(2, 2), r(2, 3)),
               C(lambda a, b, c: nd.concat(a, b, c, dim=0), r(1, 2), r(2, 2), r(1, 2))],
    'stack': [C(lambda a, b: nd.stack(a, b, axis=1), r(2, 3), r(2, 3))],
    'split': [C(lambda a: nd.split(a, 3, axis=1)[1] * 2 + nd.split(a, 3, axis=1)[2], r(2, 3)),
              C(lambda a: nd.split(a, 2, axis=0, squeeze_axis=True), r(2, 3)),
              C(lambda a: nd.split(a, 1), r(2, 3))],
    'slice_axis': [C(lambda a: nd.slice_axis(a, axis=1, begin=1, end=3), r(2, 4))],
    # indexing
    '_getitem': [C(lambda a: a[1], r(3, 2)), C(lambda a: a[:, ::2], r(2, 5)),
                 C(lambda a: a[None, ..., 1:], r(2, 3)),
                 C(lambda a: a[nd.array([0, 2, 0], ctx=a.context, dtype='int64')], r(3, 2)),
                 C(lambda a: a[[1, 1, 0], [0, 1, 1]], r(2, 2)),
                 C(lambda a: a[nd.array([True, False, True], ctx=a.context, dtype='bool')], r(3, 2))],
    '_setitem': [C(lambda a, b: _assign(a, b), r(3, 4), r(3, 4)),
                 C(lambda a, b: _assign(a, b), r(3, 4), r(4))],
    'take': [C(lambda a: nd.take(a, nd.array([0, 2, 2, 1], ctx=a.context)), r(3, 2)),
             C(lambda a: nd.take(a, nd.array([[0, 3], [1, 1]], ctx=a.context), axis=1, mode='wrap'), r(2, 3))],
    'pick': [C(lambda a: nd.pick(a, nd.array([0, 2, 1], ctx=a.context)), r(3, 3)),
             C(lambda a: nd.pick(a, nd.array([1, 0], ctx=a.context), axis=0, keepdims=True), r(2, 2))],
    'where': [C(lambda c, x, y: nd.where(c, x, y), np.array([[1, 0], [0, 1.]]), r(2, 2), r(2, 2),
                grad_nodes=[1, 2]),
              C(lambda c, x, y: nd.where(c, x, y), np.array([1, 0, 1.]), r(3, 2), r(3, 2),
                grad_nodes=[1, 2])],
    'sort': [C(lambda a: weighted(nd.sort(a), 2, 4), distinct(2, 4)),
             C(lambda a: weighted(nd.sort(a, axis=0, is_ascend=False), 3, 2), distinct(3, 2))],
    'topk': [C(lambda a: weighted(nd.topk(a, k=2, ret_typ='value'), 3, 2), distinct(3, 4)),
             C(lambda a: nd.topk(a, axis=0, k=1, ret_typ='both')[0], distinct(3, 4))],
    # products and normalisation
    'dot': [C(lambda a, b: nd.dot(a, b), r(2, 3), r(3, 4)),
            C(lambda a, b: nd.dot(a, b, transpose_a=True, transpose_b=True), r(3, 2), r(4, 3)),
            C(lambda a, b: nd.dot(a, b), r(3), r(3)), C(lambda a, b: nd.dot(a, b), r(2, 3), r(3)),
            C(lambda a, b: nd.dot(a, b), r(2, 2, 3), r(3, 2, 2))],
    'batch_dot': [C(lambda a, b: nd.batch_dot(a, b), r(2, 2, 3), r(2, 3, 4)),
                  C(lambda a, b: nd.batch_dot(a, b, transpose_a=True, transpose_b=True),
                    r(2, 3, 2), r(2, 4, 3))],
    'SoftmaxOutput': [
        C(lambda x: loss_layer(nd.SoftmaxOutput(x, _const([1, 4, 0], x)),
                               cross_entropy(x, _const([1, 4, 0], x))),
          r(3, 5), unit_head=True),
        C(lambda x: loss_layer(nd.SoftmaxOutput(x, _const([[1, 0, 2], [2, 2, 1]], x),
                                                multi_output=True, grad_scale=3.0),
                               cross_entropy(x, _const([[1, 0, 2], [2, 2, 1]], x),
                                             axis=1) * (3.0 / 3)),
          r(2, 3, 3), unit_head=True),
        C(lambda x: loss_layer(nd.SoftmaxOutput(x, _const([1, -1, 0], x),
                                                use_ignore=True, normalization='valid'),
                               cross_entropy(x[0:1], _const([1], x))
                               / 2 + cross_entropy(x[2:3], _const([0], x)) / 2),
          r(3, 4), unit_head=True)],
    '_identity_with_attr_like_rhs': [
        C(lambda a, b: nd._internal._identity_with_attr_like_rhs(a, b) * a, r(2, 3), r(2, 3),
          grad_nodes=[0])],
    'softmax': [C(lambda a: weighted(a.softmax(), 2, 5), r(2, 5)),
                C(lambda a: weighted(nd.softmax(a, axis=0, temperature=2.0), 3, 2), r(3, 2)),
                # only the first ``length`` positions along axis 1 (none in one column)
                C(lambda a: weighted(nd.softmax(
                    a, nd.array([[3, 1], [0, 2]], ctx=a.context, dtype='int32'), axis=1,
                    use_length=True), 2, 3, 2), r(2, 3, 2))],
    'log_softmax': [C(lambda a: weighted(a.log_softmax(), 2, 5), r(2, 5) * 3),
                    C(lambda a: weighted(nd.log_softmax(a, axis=0, temperature=0.5), 3, 2),
                      r(3, 2))],
    # layers
    'FullyConnected': [
        C(lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=3), r(2, 2, 2), r(3, 4), r(3)),
        C(lambda x, w: nd.FullyConnected(x, w, None, num_hidden=2, no_bias=True, flatten=False),
          r(2, 3, 4), r(2, 4))],
    'Convolution': [
        C(lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=2),
          r(2, 3, 5, 4), r(2, 3, 3, 3), r(2)),
        C(lambda x, w: nd.Convolution(x, w, None, kernel=(3, 2), stride=(2, 1), dilate=(1, 2),
                                      pad=(1, 0), num_filter=4, num_group=2, no_bias=True),
          r(1, 4, 6, 5), r(4, 2, 3, 2)),
        C(lambda x, w, b: nd.Convolution(x, w, b, kernel=(3,), stride=(2,), pad=(1,),
                                         num_filter=2, layout='NCW'), r(2, 2, 7), r(2, 2, 3), r(2)),
        C(lambda x, w: nd.Convolution(x, w, kernel=(1, 1), num_filter=3, no_bias=True),
          r(2, 2, 3, 3), r(3, 2, 1, 1)),
        # 3x3, stride 1, pad 1: Winograd F(2x2, 3x3), odd sizes cropped
        C(_winograd(lambda x, w: nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=3,
                                                no_bias=True)), r(2, 2, 3, 5), r(3, 2, 3, 3)),
        # stride-1 data gradient as a flipped convolution, with groups and dilation
        C(lambda x, w: nd.Convolution(x, w, kernel=(3, 3), pad=(2, 1), dilate=(2, 1),
                                      num_filter=4, num_group=2, no_bias=True),
          r(2, 4, 5, 4), r(4, 2, 3, 3)),
        # padding beyond the kernel: the data gradient crops through col2im
        C(lambda x, w: nd.Convolution(x, w, kernel=(1, 2), pad=(1, 1), num_filter=2,
                                      no_bias=True), r(1, 3, 2, 3), r(2, 3, 1, 2)),
        C(lambda x, w: nd.Convolution(x, w, kernel=(2, 2, 2), stride=(2, 1, 1), pad=(1, 0, 1),
                                      num_filter=2, no_bias=True), r(1, 2, 3, 3, 2),
          r(2, 2, 2, 2, 2)),
        # channels-last layouts: data (N, *spatial, C), weight (F, *kernel, C/g)
        C(lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 2), stride=(2, 1), pad=(1, 1),
                                         num_filter=4, num_group=2, layout='NHWC'),
          r(2, 5, 4, 4), r(4, 3, 2, 2), r(4)),
        C(lambda x, w: nd.Convolution(x, w, kernel=(3,), pad=(1,), num_filter=2, no_bias=True,
                                      layout='NWC'), r(2, 5, 3), r(2, 3, 3)),
        C(lambda x, w: nd.Convolution(x, w, kernel=(2, 2, 2), pad=(0, 1, 0), num_filter=2,
                                      no_bias=True, layout='NDHWC'), r(1, 3, 3, 2, 2),
          r(2, 2, 2, 2, 2)),
        # a kernel as large as the input: the data gradient scatters columns (col2im)
        C(lambda x, w: nd.Convolution(x, w, kernel=(4, 4), num_filter=6, no_bias=True),
          r(2, 2, 4, 4), r(6, 2, 4, 4)),
        # the input needs no gradient: backward computes the weight's only
        C(lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=2),
          r(2, 3, 4, 4), r(2, 3, 3, 3), r(2), grad_nodes=[1, 2])],
    'Deconvolution': [
        C(lambda x, w: nd.Deconvolution(x, w, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                        adj=(1, 1), num_filter=2), r(1, 3, 3, 2), r(3, 2, 3, 3)),
        C(lambda x, w, b: nd.Deconvolution(x, w, b, kernel=(2, 3), num_filter=4, num_group=2,
                                           no_bias=False), r(2, 2, 3, 3), r(2, 2, 2, 3), r(4)),
        C(_winograd(lambda x, w: nd.Deconvolution(x, w, kernel=(3, 3), pad=(1, 1),
                                                  num_filter=2)), r(1, 3, 2, 3), r(3, 2, 3, 3)),
        C(lambda x, w, b: nd.Deconvolution(x, w, b, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                           adj=(1, 0), num_filter=4, no_bias=False,
                                           layout='NHWC'), r(1, 3, 2, 2), r(2, 3, 3, 4), r(4)),
        C(lambda x, w: nd.Deconvolution(x, w, kernel=(2, 1, 2), stride=(2, 1, 1),
                                        num_filter=2), r(1, 2, 2, 3, 2), r(2, 2, 2, 1, 2)),
        # target_shape sets pad and adj (here pad (1, 1), adj (1, 0))
        C(lambda x, w: nd.Deconvolution(x, w, kernel=(3, 3), stride=(2, 2), target_shape=(6, 5),
                                        num_filter=2), r(1, 3, 3, 3), r(3, 2, 3, 3))],
    'Pooling': [
        C(lambda x: nd.Pooling(x, kernel=(2, 2), pool_type='max', stride=(2, 2)),
          distinct(2, 2, 4, 4)),
        C(lambda x: nd.Pooling(x, kernel=(3,), pool_type='max', stride=(2,),
                               pooling_convention='same'), distinct(2, 2, 7)),
        C(lambda x: nd.Pooling(x, kernel=(3,), pool_type='avg', stride=(2,),
                               pooling_convention='same'), r(2, 2, 7)),
        C(lambda x: nd.Pooling(x, kernel=(3, 3), pool_type='max', stride=(2, 2), pad=(1, 1),
                               pooling_convention='full'), distinct(1, 2, 5, 6)),
        C(lambda x: nd.Pooling(x, kernel=(3, 3), pool_type='avg', stride=(2, 2), pad=(1, 1)),
          r(2, 2, 5, 5)),
        C(lambda x: nd.Pooling(x, kernel=(3, 2), pool_type='avg', stride=(2, 2), pad=(1, 1),
                               count_include_pad=False, pooling_convention='full'), r(1, 2, 6, 5)),
        C(lambda x: nd.Pooling(x, kernel=(3,), pool_type='sum', stride=(1,)), r(2, 2, 5)),
        C(lambda x: nd.Pooling(x, pool_type='avg', global_pool=True), r(2, 3, 3, 2)),
        C(lambda x: nd.Pooling(x, pool_type='max', global_pool=True), distinct(2, 3, 3, 2)),
        C(lambda x: nd.Pooling(x, kernel=(2, 2, 2), pool_type='max', stride=(1, 2, 2)),
          distinct(1, 2, 3, 4, 4)),
        C(lambda x: nd.Pooling(x, kernel=(3, 2), pool_type='max', stride=(2, 1), pad=(1, 0),
                               layout='NHWC'), distinct(2, 5, 4, 3)),
        C(lambda x: nd.Pooling(x, kernel=(3,), pool_type='avg', stride=(2,), pad=(1,),
                               count_include_pad=False, layout='NWC'), r(2, 6, 3)),
        C(lambda x: nd.Pooling(x, kernel=(2, 2, 2), pool_type='avg', layout='NDHWC',
                               pooling_convention='full'), r(1, 3, 3, 2, 2)),
        C(lambda x: nd.Pooling(x, pool_type='avg', global_pool=True, layout='NHWC'),
          r(2, 3, 2, 4))],
    # fix_gamma=False where gamma's gradient is checked: MXNet's default (True) holds gamma
    # at 1 and gives it a zero gradient
    'BatchNorm': [
        C(lambda x, g, b, m, v: weighted(nd.BatchNorm(x, g, b, m, v, fix_gamma=False,
                                                      training=True), 4, 3, 2),
          r(4, 3, 2), r(3) + 1.5, r(3), r(3), r(3, low=0.5, high=1), grad_nodes=[0, 1, 2]),
        C(lambda x, g, b, m, v: weighted(nd.BatchNorm(x, g, b, m, v, axis=-1, fix_gamma=True,
                                                      training=True), 3, 2, 4),
          r(3, 2, 4), r(4) + 1.5, r(4), r(4), r(4, low=0.5, high=1), grad_nodes=[0, 2]),
        C(lambda x, g, b, m, v: nd.BatchNorm(x, g, b, m, v, fix_gamma=False, training=False),
          r(2, 3, 2, 2), r(3) + 1.5, r(3), r(3), r(3, low=0.5, high=1), grad_nodes=[0, 1, 2]),
        # channels-last memory, as convolution outputs have
        C(lambda x, g, b, m, v: weighted(nd.BatchNorm(x.transpose((0, 3, 1, 2)), g, b, m, v,
                                                      fix_gamma=False, training=True),
                                         2, 3, 2, 2),
          r(2, 2, 2, 3), r(3) + 1.5, r(3), r(3), r(3, low=0.5, high=1), grad_nodes=[0, 1, 2])],
    'LayerNorm': [
        C(lambda x, g, b: weighted(nd.LayerNorm(x, g, b), 2, 3, 4), r(2, 3, 4), r(4) + 1.5, r(4)),
        C(lambda x, g, b: weighted(nd.LayerNorm(x, g, b, axis=1), 2, 3, 2), r(2, 3, 2),
          r(3) + 1.5, r(3))],
    'InstanceNorm': [C(lambda x, g, b: weighted(nd.InstanceNorm(x, g, b), 2, 3, 2, 2),
                       r(2, 3, 2, 2), r(3) + 1.5, r(3))],
    'GroupNorm': [C(lambda x, g, b: weighted(nd.GroupNorm(x, g, b, num_groups=2), 2, 4, 3, 2),
                    r(2, 4, 3, 2), r(2) + 1.5, r(2)),
                  C(lambda x, g, b: weighted(nd.GroupNorm(x, g, b, num_groups=3, eps=1e-3),
                                             2, 3, 4), r(2, 3, 4), r(3) + 1.5, r(3)),
                  C(lambda x, g, b: weighted(nd.GroupNorm(x, g, b, output_mean_var=True)[0],
                                             1, 2, 2, 2, 2), r(1, 2, 2, 2, 2), r(1) + 1.5,
                    r(1))],
    'pad': [C(lambda x: weighted(nd.pad(x, mode='reflect', pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
                                 2, 2, 7, 9), r(2, 2, 4, 5)),
            C(lambda x: weighted(nd.pad(x, mode='edge', pad_width=(0, 0, 1, 0, 0, 2, 3, 1)),
                                 2, 3, 5, 7), r(2, 2, 3, 3)),
            C(lambda x: nd.pad(x, mode='constant', constant_value=0.5,
                               pad_width=(0, 0, 0, 0, 1, 2, 0, 1, 2, 2)), r(1, 2, 2, 3, 2))],
    # the blank last and first, label lengths by padding or given, unequal time steps
    'CTCLoss': [C(lambda x: nd.CTCLoss(x, _const([[1, 0, -1], [2, 2, 1]], x),
                                       blank_label='last'), r(6, 2, 4) * 2),
                C(lambda x: nd.CTCLoss(x, _const([[1, 2, 3, 1], [3, 3, 2, 0]], x),
                                       _const([7, 5], x), _const([3, 2], x),
                                       use_data_lengths=True, use_label_lengths=True),
                  r(7, 2, 4) * 2),
                C(lambda x: nd.CTCLoss(x, _const([[2, 2], [1, 0]], x)), r(5, 2, 3) * 2)],
    'Activation': [C(lambda x, t=t: nd.Activation(x, act_type=t), away_from_zero(2, 3))
                   for t in ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')],
    'LeakyReLU': [C(lambda x: nd.LeakyReLU(x, act_type='leaky', slope=0.1), away_from_zero(2, 3)),
                  C(lambda x, g: nd.LeakyReLU(x, g, act_type='prelu'), away_from_zero(2, 3, 2),
                    r(3)),
                  C(lambda x, g: nd.LeakyReLU(x, g, act_type='prelu'), away_from_zero(4), r(1)),
                  C(lambda x: nd.LeakyReLU(x, act_type='elu', slope=0.7), away_from_zero(2, 3)),
                  C(lambda x: nd.LeakyReLU(x, act_type='selu'), away_from_zero(2, 3)),
                  C(lambda x: nd.LeakyReLU(x, act_type='gelu'), r(2, 3) * 2, rtol=1e-3,
                    atol=1e-5)],
    'Dropout': [C(lambda x: _seeded(lambda: nd.Dropout(x, p=0.4, training=True)), r(4, 5)),
                C(lambda x: _seeded(lambda: nd.Dropout(x, p=0.5, axes=(1,), mode='always')),
                  r(3, 4, 2))],
    'Embedding': [C(lambda i, w: nd.Embedding(i, w, input_dim=4, output_dim=3),
                    np.array([[0, 2], [2, 3.]]), r(4, 3), grad_nodes=[1])],
}

# nd.image (ndarray/image.py): HWC images, CHW tensors
CASES.update({
    '_image_crop': [C(lambda a: weighted(nd.image.crop(a, 1, 0, 2, 3), 3, 2, 2), r(4, 5, 2)),
                    C(lambda a: weighted(nd.image.crop(a, 0, 1, 3, 2), 2, 2, 3, 1), r(2, 3, 4, 1))],
    '_image_flip_left_right': [C(lambda a: weighted(nd.image.flip_left_right(a), 3, 4, 2),
                                 r(3, 4, 2))],
    '_image_flip_top_bottom': [C(lambda a: weighted(nd.image.flip_top_bottom(a), 2, 3, 4, 1),
                                 r(2, 3, 4, 1))],
    '_image_normalize': [C(lambda a: nd.image.normalize(a, mean=(0.1, 0.2), std=(0.5, 2.0)),
                           r(2, 3, 4)),
                         C(lambda a: nd.image.normalize(a, mean=0.3, std=4.0), r(2, 1, 2, 2))],
})


def _const(values, like):
    """An array input that needs no gradient, on ``like``'s context."""
    return nd.array(values, ctx=like.context, dtype=like.dtype)


def _seeded(fn):
    """The same dropout mask on every evaluation of the finite differences."""
    mx.random.seed(7)
    return fn()


def _assign(a, b):
    out = nd.zeros(a.shape, ctx=a.context, dtype=a.dtype)  # not in the graph: may be written
    out[:] = b  # b needs a gradient, so this assignment is recorded as _setitem
    return out * a


# MXNet 1.x's other fluent ops and samplers with gradients
CASES.update({
    'tan': [C(lambda a: a.tan(), r(4))],
    'arcsin': [C(lambda a: a.arcsin(), r(4, low=-0.8, high=0.8))],
    'arccos': [C(lambda a: a.arccos(), r(4, low=-0.8, high=0.8))],
    'arctan': [C(lambda a: a.arctan(), r(4) * 3)],
    'degrees': [C(lambda a: a.degrees(), r(4))],
    'radians': [C(lambda a: a.radians(), r(4) * 90)],
    'sinh': [C(lambda a: a.sinh(), r(4) * 2)],
    'cosh': [C(lambda a: a.cosh(), r(4) * 2)],
    'arcsinh': [C(lambda a: a.arcsinh(), r(4) * 3)],
    'arccosh': [C(lambda a: a.arccosh(), r(4, low=1.2, high=3))],
    'arctanh': [C(lambda a: a.arctanh(), r(4, low=-0.8, high=0.8))],
    'log10': [C(lambda a: a.log10(), r(2, 3, low=0.5, high=2))],
    'log2': [C(lambda a: a.log2(), r(2, 3, low=0.5, high=2))],
    'cbrt': [C(lambda a: a.cbrt(), away_from_zero(5))],
    'rcbrt': [C(lambda a: a.rcbrt(), away_from_zero(5))],
    'rint': [C(lambda a: a.rint() * a, between_integers(5))],
    'fix': [C(lambda a: a.fix() + a * a, between_integers(5))],
    'trunc': [C(lambda a: a.trunc() * a, between_integers(5))],
    'softmin': [C(lambda a: weighted(a.softmin(), 2, 5), r(2, 5)),
                C(lambda a: weighted(nd.softmin(a, axis=0, temperature=2.0), 3, 2), r(3, 2))],
    'nanprod': [C(lambda a: a.nanprod(axis=1), r(2, 4)),
                C(lambda a, m: nd.nanprod(a + m), r(3), np.array([0, np.nan, 0]),
                  grad_nodes=[0])],
    'broadcast_axis': [C(lambda a: nd.broadcast_axis(a, axis=(0, 2), size=(2, 3)), r(1, 2, 1)),
                       C(lambda a: a.broadcast_axes(axis=1, size=4), r(3, 1))],
    'slice': [C(lambda a: nd.slice(a, begin=(1, None), end=(3, None)), r(4, 3)),
              C(lambda a: a.slice(begin=(None, 2), end=(None, 0), step=(2, -1)), r(4, 3)),
              C(lambda a: nd.crop(a, begin=(0, 1, 0), end=(2, 3, 2)), r(2, 3, 2))],
    'slice_like': [C(lambda a, b: nd.slice_like(a, b), r(3, 4), r(2, 3), grad_nodes=[0]),
                   C(lambda a, b: a.slice_like(b, axes=(-1,)), r(3, 4), r(1, 2),
                     grad_nodes=[0])],
    '_slice_assign': [C(lambda a, b: nd._internal._slice_assign(a, b, begin=(1, 0),
                                                                end=(3, 2)),
                        r(3, 4), r(2, 2)),
                      C(lambda a, b: nd._internal._crop_assign(a, b, begin=(0,), end=(3,),
                                                               step=(2,)),
                        r(3, 2), r(2, 2))],
    '_slice_assign_scalar': [C(lambda a: nd._internal._slice_assign_scalar(
        a, scalar=2.0, begin=(None, 1), end=(None, 3)), r(2, 4))],
    'reshape_like': [C(lambda a, b: weighted(nd.reshape_like(a, b), 3, 2), r(2, 3), r(3, 2),
                       grad_nodes=[0]),
                     C(lambda a, b: nd.reshape_like(a, b, lhs_begin=1, rhs_begin=0, rhs_end=2),
                       r(2, 6), r(3, 2, 5), grad_nodes=[0])],
    'flip': [C(lambda a: weighted(a.flip(axis=1), 2, 3), r(2, 3)),
             C(lambda a: weighted(nd.reverse(a, axis=(0, 1)), 2, 3), r(2, 3))],
    'pad': [C(lambda a: weighted(nd.pad(a, mode='constant', pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                        constant_value=0.5), 1, 2, 6, 6), r(1, 2, 3, 3)),
            C(lambda a: weighted(nd.pad(a, mode='edge', pad_width=(0, 0, 0, 0, 2, 1, 1, 2)),
                                 1, 1, 5, 6), r(1, 1, 2, 3)),
            C(lambda a: weighted(nd.pad(a, mode='reflect', pad_width=(0, 0, 0, 0, 1, 1, 2, 2)),
                                 2, 1, 5, 7), r(2, 1, 3, 3))],
    'split_v2': [C(lambda a: nd.split_v2(a, 3, axis=1)[1] * 2 + nd.split_v2(a, 3, axis=1)[2],
                   r(2, 6)),
                 C(lambda a: weighted(nd.split_v2(a, (1, 3), axis=0, squeeze_axis=False)[1],
                                      2, 3), r(4, 3))],
    'depth_to_space': [C(lambda a: weighted(nd.depth_to_space(a, 2), 1, 2, 4, 6),
                         r(1, 8, 2, 3))],
    'space_to_depth': [C(lambda a: weighted(nd.space_to_depth(a, 2), 1, 8, 2, 3),
                         r(1, 2, 4, 6))],
    'diag': [C(lambda a: weighted(nd.diag(a), 3, 3), r(3)),
             C(lambda a: nd.diag(a, k=1), r(3, 4)),
             C(lambda a: nd.diag(a, k=-1, axis1=1, axis2=2), r(2, 3, 3))],
    'fill_element_0index': [C(lambda a, v, i: nd.fill_element_0index(a, v, i), r(3, 4), r(3),
                              np.array([1.0, 3.0, 0.0]), grad_nodes=[0, 1])],
    # ordering over the flattened array (axis=None)
    'topk': CASES['topk'] + [C(lambda a: weighted(nd.topk(a, axis=None, k=3, ret_typ='value'), 3),
                               distinct(2, 3))],
    'sort': CASES['sort'] + [C(lambda a: weighted(nd.sort(a, axis=None), 6), distinct(2, 3))],
    '_sample_multinomial': [C(lambda p: _seeded(lambda: nd.random.multinomial(
        p / p.sum(axis=1, keepdims=True), shape=5, get_prob=True)[1]),
        r(2, 4, low=0.2, high=1.0))],
})


# MXNet's legacy output layers: the gradient of their loss, divided as MXNet divides
_LABEL_4 = r(4)
_LABEL_32 = r(3, 2)
_BITS_32 = rng.randint(0, 2, size=(3, 2)).astype(np.float64)
_CLASSES = [2, 0, 3]
_MAKE_LOSS_VALID = away_from_zero(3, 4)


def _hinge(x, classes, margin, squared):
    """The one-vs-rest hinge loss whose gradient SVMOutput gives: the label's score
    above ``margin``, the others below ``-margin``."""
    towards = 1 - 2 * nd.one_hot(_const(classes, x), x.shape[1], dtype=x.dtype)
    violation = nd.relu(margin + x * towards)
    return (violation * violation if squared else violation).sum()


CASES.update({
    'LinearRegressionOutput': [
        C(lambda x: loss_layer(nd.LinearRegressionOutput(x, _const(_LABEL_4, x)),
                               ((x.reshape(-1) - _const(_LABEL_4, x)) ** 2).sum() / 2),
          r(4, 1), unit_head=True),
        C(lambda x: loss_layer(nd.LinearRegressionOutput(x, _const(_LABEL_32, x),
                                                         grad_scale=0.5),
                               ((x - _const(_LABEL_32, x)) ** 2).sum() * (0.5 / 2 / 2)),
          r(3, 2), unit_head=True)],
    'LogisticRegressionOutput': [
        C(lambda x: loss_layer(nd.LogisticRegressionOutput(x, _const(_BITS_32, x),
                                                           grad_scale=3.0),
                               (nd.log1p(nd.exp(x)) - _const(_BITS_32, x) * x).sum()
                               * (3.0 / 2)),
          r(3, 2) * 2, unit_head=True)],
    'MAERegressionOutput': [
        C(lambda x: loss_layer(nd.MAERegressionOutput(x, _const(_LABEL_32, x)),
                               nd.abs(x - _const(_LABEL_32, x)).sum() / 2),
          _LABEL_32 + away_from_zero(3, 2), unit_head=True)],
    'SVMOutput': [
        C(lambda x: loss_layer(nd.SVMOutput(x, _const(_CLASSES, x)),
                               _hinge(x, _CLASSES, 1.0, True)),
          between_integers(3, 4), unit_head=True),
        C(lambda x: loss_layer(nd.SVMOutput(x, _const(_CLASSES, x), margin=0.5, use_linear=True,
                                            regularization_coefficient=2.0),
                               _hinge(x, _CLASSES, 0.5, False) * 2),
          between_integers(3, 4), unit_head=True)],
    'MakeLoss': [
        C(lambda x: loss_layer(nd.MakeLoss(x, grad_scale=2.0), x.sum() * 2), r(3, 2),
          unit_head=True),
        C(lambda x: loss_layer(nd.MakeLoss(x, normalization='batch'), x.sum() / 6), r(2, 3, 2),
          unit_head=True),
        C(lambda x: loss_layer(nd.MakeLoss(x, normalization='valid', valid_thresh=0.0),
                               x.sum() / int((_MAKE_LOSS_VALID > 0).sum())),
          _MAKE_LOSS_VALID, unit_head=True)],
    'make_loss': [C(lambda x: loss_layer(nd.make_loss(x), x.sum()), r(2, 3), unit_head=True)],
})

# variable-length sequences: time on axis 0 or 1, lengths given or not
CASES.update({
    'SequenceMask': [
        C(lambda x: nd.SequenceMask(x, _const([2, 4, 1], x), use_sequence_length=True,
                                    value=-1.5), r(4, 3, 2)),
        C(lambda x: nd.SequenceMask(x, _const([3, 1], x), use_sequence_length=True, axis=1),
          r(2, 3)),
        C(lambda x: nd.SequenceMask(x), r(2, 3))],
    'SequenceLast': [
        C(lambda x: nd.SequenceLast(x, _const([2, 4, 1], x), use_sequence_length=True),
          r(4, 3, 2)),
        C(lambda x: nd.SequenceLast(x, _const([3, 1], x), use_sequence_length=True, axis=1),
          r(2, 3, 2, 2)),
        C(lambda x: nd.SequenceLast(x, axis=1), r(2, 3))],
    'SequenceReverse': [
        C(lambda x: weighted(nd.SequenceReverse(x, _const([2, 4, 1], x),
                                                use_sequence_length=True), 4, 3, 2),
          r(4, 3, 2)),
        C(lambda x: weighted(nd.SequenceReverse(x), 3, 2), r(3, 2))],
})


def _rnn(mode, layers=1, bidirectional=False, projection_size=None, lengths=None,
         state_outputs=True, train=False, **kwargs):
    """An ``RNN`` case on (T, N, C) = (3, 2, 3), state size 2: data, flat parameters,
    states (and the lengths as a constant)."""
    dirs, hidden, out = 1 + bidirectional, 2, projection_size or 2
    size = param_layout(mode, layers, 3, hidden, bidirectional, projection_size)[1]
    states = [r(layers * dirs, 2, out)] + ([r(layers * dirs, 2, hidden)] if mode == 'lstm'
                                           else [])

    def fn(x, params, *states):
        extra = [_const(lengths, x)] if lengths is not None else []
        with mx.autograd.train_mode() if train else mx.autograd.predict_mode():
            return _seeded(lambda: nd.RNN(
                x, params, *(list(states) + extra), mode=mode, state_size=hidden,
                num_layers=layers, bidirectional=bidirectional, state_outputs=state_outputs,
                projection_size=projection_size, use_sequence_length=lengths is not None,
                **kwargs))
    return C(fn, r(3, 2, 3), r(size), *states)


# the fused recurrent op: every mode, stacked, both directions, and its options
CASES.update({
    'RNN': [_rnn('lstm', layers=2, bidirectional=True), _rnn('gru', bidirectional=True),
            _rnn('rnn_tanh', layers=2, state_outputs=False), _rnn('rnn_relu'),
            _rnn('lstm', projection_size=1, lengths=[3, 1]),
            _rnn('gru', layers=2, bidirectional=True, lengths=[2, 0]),
            _rnn('lstm', lstm_state_clip_min=-0.3, lstm_state_clip_max=0.3),
            _rnn('rnn_tanh', layers=2, p=0.5, train=True)],
    '_rnn_param_concat': [C(lambda a, b: weighted(nd._internal._rnn_param_concat(a, b, dim=0),
                                                  5), r(2), r(3))],
})


def _spd(*shape):
    """Well-conditioned symmetric positive definite matrices."""
    x = r(*shape)
    return x @ x.swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])


def _triangular(*shape):
    """Matrices whose triangles are well-conditioned triangular matrices (a diagonal in
    [1.5, 2.5]); the linalg ops read one triangle and must ignore the other."""
    return r(*shape) * 0.5 + 2 * np.eye(shape[-1])


def _separated(*shape):
    """Symmetric matrices with well-separated eigenvalues (1, 2.5, 4, ...)."""
    q = np.linalg.qr(r(*shape))[0]
    values = 1 + 1.5 * np.arange(shape[-1])
    return (q * values[..., None, :]) @ q.swapaxes(-1, -2)


def _sym(a):
    """The symmetric part of ``a``: potrf and syevd read a symmetric matrix, and their
    gradient is the symmetric one."""
    return (a + a.swapaxes(a.ndim - 2, a.ndim - 1)) / 2


# MXNet's linalg family, batched over the leading axes
CASES.update({
    '_linalg_gemm': [
        C(lambda a, b, c: nd.linalg.gemm(a, b, c, alpha=2.0, beta=0.5), r(2, 3), r(3, 4),
          r(2, 4)),
        C(lambda a, b, c: nd.linalg_gemm(a, b, c, transpose_a=True, transpose_b=True),
          r(2, 3, 2), r(2, 4, 3), r(2, 2, 4)),
        C(lambda a, b, c: nd.linalg.gemm(a, b, c, axis=1, transpose_b=True, alpha=-1.5),
          r(2, 3, 2, 2), r(2, 4, 2, 2), r(2, 3, 2, 4))],
    '_linalg_gemm2': [
        C(lambda a, b: nd.linalg.gemm2(a, b, transpose_a=True, alpha=0.5), r(3, 2), r(3, 4)),
        C(lambda a, b: nd.linalg_gemm2(a, b, axis=0, transpose_b=True), r(3, 2, 2),
          r(4, 2, 2))],
    '_linalg_potrf': [C(lambda a: nd.linalg.potrf(_sym(a)), _spd(3, 3)),
                      C(lambda a: nd.linalg.potrf(_sym(a), lower=False), _spd(2, 3, 3))],
    '_linalg_potri': [C(lambda a: nd.linalg.potri(a), _triangular(3, 3)),
                      C(lambda a: nd.linalg.potri(a, lower=False), _triangular(2, 3, 3))],
    '_linalg_trsm': [
        C(lambda a, b: nd.linalg.trsm(a, b, alpha=2.0), _triangular(3, 3), r(3, 2)),
        C(lambda a, b: nd.linalg.trsm(a, b, transpose=True, rightside=True, lower=False,
                                      alpha=-0.5), _triangular(2, 3, 3), r(2, 4, 3)),
        C(lambda a, b: nd.linalg.trsm(a, b, rightside=True), _triangular(3, 3), r(2, 3)),
        C(lambda a, b: nd.linalg.trsm(a, b, transpose=True, lower=False), _triangular(3, 3),
          r(3, 2))],
    '_linalg_trmm': [
        C(lambda a, b: nd.linalg.trmm(a, b, alpha=2.0), r(3, 3), r(3, 2)),
        C(lambda a, b: nd.linalg.trmm(a, b, transpose=True, rightside=True, lower=False,
                                      alpha=-0.5), r(2, 3, 3), r(2, 4, 3)),
        C(lambda a, b: nd.linalg.trmm(a, b, rightside=True), r(3, 3), r(2, 3)),
        C(lambda a, b: nd.linalg.trmm(a, b, transpose=True, lower=False), r(3, 3), r(3, 2))],
    '_linalg_syrk': [C(lambda a: nd.linalg.syrk(a, alpha=0.5), r(2, 3)),
                     C(lambda a: nd.linalg.syrk(a, transpose=True), r(2, 3, 2))],
    '_linalg_gelqf': [C(lambda a: nd.linalg.gelqf(a), r(2, 3)),
                      C(lambda a: nd.linalg.gelqf(a), _triangular(2, 3, 3))],
    '_linalg_syevd': [C(lambda a: nd.linalg.syevd(_sym(a)), _separated(3, 3)),
                      C(lambda a: nd.linalg.syevd(_sym(a)), _separated(2, 3, 3))],
    '_linalg_sumlogdiag': [C(lambda a: nd.linalg.sumlogdiag(a), _triangular(3, 3)),
                           C(lambda a: nd.linalg.sumlogdiag(a), _triangular(2, 2, 2))],
    '_linalg_extractdiag': [C(lambda a: nd.linalg.extractdiag(a), r(3, 3)),
                            C(lambda a: nd.linalg.extractdiag(a, offset=1), r(2, 3, 3)),
                            C(lambda a: nd.linalg.extractdiag(a, offset=-2), r(3, 3))],
    '_linalg_makediag': [C(lambda a: nd.linalg.makediag(a), r(3)),
                         C(lambda a: nd.linalg.makediag(a, offset=-1), r(2, 2))],
    '_linalg_extracttrian': [
        C(lambda a: nd.linalg.extracttrian(a), r(3, 3)),
        C(lambda a: nd.linalg.extracttrian(a, offset=1), r(2, 3, 3)),
        C(lambda a: nd.linalg.extracttrian(a, offset=-1), r(3, 3)),
        C(lambda a: nd.linalg.extracttrian(a, lower=False), r(3, 3))],
    '_linalg_maketrian': [C(lambda a: nd.linalg.maketrian(a), r(6)),
                          C(lambda a: nd.linalg.maketrian(a, offset=1), r(2, 3)),
                          C(lambda a: nd.linalg.maketrian(a, offset=-1), r(3)),
                          C(lambda a: nd.linalg.maketrian(a, lower=False), r(3))],
    '_linalg_inverse': [C(lambda a: nd.linalg.inverse(a), _triangular(3, 3)),
                        C(lambda a: nd.linalg.inverse(a), _triangular(2, 2, 2))],
    '_linalg_det': [C(lambda a: nd.linalg.det(a), _triangular(3, 3)),
                    C(lambda a: nd.linalg.det(a), _triangular(2, 2, 2) * [[1], [-1]])],
    '_linalg_slogdet': [C(lambda a: nd.linalg.slogdet(a), _triangular(3, 3) * [[1], [-1], [1]]),
                        C(lambda a: nd.linalg.slogdet(a), _triangular(2, 2, 2))],
})

# nd.contrib detection (ndarray/ops/detection.py): box_nms passes gradients to kept rows.
# Class ids 0.5 and 1.5 stay in their class (truncated) when the check nudges them; the
# second box overlaps the first (IoU 0.9) and is suppressed, the third is of another class.
# (A change of box format passes gradients unchanged, as in MXNet: no case for it here.)
_NMS_BOXES = np.array([[[0.5, 0.9, 0.1, 0.1, 0.5, 0.5], [0.5, 0.8, 0.12, 0.1, 0.52, 0.5],
                        [1.5, 0.7, 0.1, 0.1, 0.5, 0.5], [0.5, 0.6, 0.6, 0.6, 0.9, 0.9]]])
CASES.update({
    '_contrib_box_nms': [
        C(lambda a: weighted(nd.contrib.box_nms(a, id_index=0), 1, 4, 6), _NMS_BOXES),
        C(lambda a: weighted(nd.contrib.box_nms(a, force_suppress=True, topk=3), 2, 4, 6),
          np.concatenate([_NMS_BOXES, _NMS_BOXES[:, ::-1]]))],
})

# Vision ops (ndarray/ops/vision.py, nd.image.adjust_lighting). Sampling points sit
# between pixels (away from the kinks of bilinear interpolation) and ROIPooling's data has
# no ties; the rois are constants (they get no gradient).
_ROIS = [[0, 0.4, 0.6, 4.2, 3.9], [0, 2.5, 1.5, 5.4, 5.4], [0, -1, 3, 2, 9]]
_ALIGN_ROIS = [[0, 1.2, 0.5, 9.7, 8.3], [0, -2, -1, 4, 3], [0, 3, 3, 3.5, 3.2]]


def _between_pixels(n, c, h, w, size_h, size_w):
    """A BilinearSampler grid (n, 2, h, w) whose points fall 0.2..0.8 between pixels of a
    ``size_h x size_w`` input (some of them outside it)."""
    x = rng.randint(-1, size_w, size=(n, h, w)) + rng.uniform(0.2, 0.8, size=(n, h, w))
    y = rng.randint(-1, size_h, size=(n, h, w)) + rng.uniform(0.2, 0.8, size=(n, h, w))
    return np.stack([x * 2 / (size_w - 1) - 1, y * 2 / (size_h - 1) - 1], axis=1)


def _bilinear_kernel(channels, scale):
    k = 2 * scale - scale % 2
    f = np.ceil(k / 2.0)
    taps = 1 - np.abs(np.arange(k) / f - (2 * f - 1 - f % 2) / (2.0 * f))
    return np.tile(np.outer(taps, taps), (channels, 1, 1, 1)) + r(channels, 1, k, k) * 0.1


CASES.update({
    'UpSampling': [
        C(lambda x: nd.UpSampling(x, scale=2, sample_type='nearest'), r(1, 2, 2, 3)),
        C(lambda a, b: nd.UpSampling(a, b, scale=2, sample_type='nearest', num_args=2),
          r(1, 2, 1, 2), r(1, 1, 2, 4)),
        C(lambda a, b: nd.UpSampling(a, b, scale=3, sample_type='nearest',
                                     multi_input_mode='sum', num_args=2),
          r(1, 2, 1, 1), r(1, 2, 3, 3)),
        C(lambda x, w: nd.UpSampling(x, w, scale=2, sample_type='bilinear', num_filter=2,
                                     num_args=2), r(1, 2, 2, 3), _bilinear_kernel(2, 2))],
    'ROIPooling': [
        C(lambda x: nd.ROIPooling(x, _const(_ROIS, x), pooled_size=(2, 2), spatial_scale=1.0),
          distinct(1, 2, 6, 6)),
        C(lambda x: nd.ROIPooling(x, _const(_ROIS, x), pooled_size=(3, 2), spatial_scale=0.7),
          distinct(1, 2, 6, 6))],
    'LRN': [C(lambda x: nd.LRN(x, nsize=3, alpha=0.5, beta=0.75, knorm=1.5), r(2, 5, 2, 2)),
            C(lambda x: nd.LRN(x, nsize=5, alpha=0.3), r(1, 4, 3))],
    'L2Normalization': [C(lambda x: nd.L2Normalization(x, mode=m), away_from_zero(2, 3, 2, 2))
                        for m in ('instance', 'channel', 'spatial')],
    'GridGenerator': [
        C(lambda t: nd.GridGenerator(t, transform_type='affine', target_shape=(3, 4)), r(2, 6)),
        C(lambda f: nd.GridGenerator(f, transform_type='warp'), r(2, 2, 3, 4))],
    'BilinearSampler': [C(lambda d, g: nd.BilinearSampler(d, g), r(2, 2, 4, 5),
                          _between_pixels(2, 2, 3, 3, 4, 5))],
    'SpatialTransformer': [
        C(lambda d, loc: nd.SpatialTransformer(d, loc, target_shape=(3, 4),
                                               transform_type='affine', sampler_type='bilinear'),
          r(1, 2, 5, 6), np.array([[0.7, 0.1, 0.05, -0.08, 0.75, 0.06]]))],
    '_contrib_BilinearResize2D': [
        C(lambda x: nd.contrib.BilinearResize2D(x, height=5, width=3), r(1, 2, 3, 4)),
        C(lambda x: nd.contrib.BilinearResize2D(x, height=2, width=7, align_corners=False),
          r(1, 2, 3, 4)),
        C(lambda x, like: nd.contrib.BilinearResize2D(x, like, mode='like'), r(2, 1, 3, 3),
          r(2, 1, 4, 2))],
    '_contrib_ROIAlign': [
        C(lambda x: nd.contrib.ROIAlign(x, _const(_ALIGN_ROIS, x), pooled_size=(2, 3),
                                        spatial_scale=0.5), r(1, 2, 5, 6)),
        C(lambda x: nd.contrib.ROIAlign(x, _const(_ALIGN_ROIS, x), pooled_size=(2, 2),
                                        spatial_scale=0.5, sample_ratio=2, aligned=True,
                                        position_sensitive=True), r(1, 8, 5, 6))],
    '_image_adjust_lighting': [C(lambda x: nd.image.adjust_lighting(x, alpha=(0.1, -0.2, 0.3)),
                                 r(3, 2, 3))],
})


def _both(outputs, *weights):
    """Both outputs of a two-output op, weighted so each shows in the sum."""
    return outputs[0] * weights[0] + outputs[1] * weights[1]


# special functions, statistics, n-d gathers and scatters, and smaller ops (incl. contrib)
CASES.update({
    'erf': [C(lambda a: nd.erf(a), r(2, 3) * 2)],
    'erfinv': [C(lambda a: nd.erfinv(a), r(2, 3, low=-0.9, high=0.9))],
    'gamma': [C(lambda a: nd.gamma(a), r(2, 3, low=0.3, high=4)),
              C(lambda a: nd.gamma(a), np.array([-2.5, -0.6, -1.3]))],
    'gammaln': [C(lambda a: nd.gammaln(a), r(2, 3, low=0.3, high=12)),
                C(lambda a: nd.gammaln(a), np.array([-2.5, -0.6, -1.3]))],
    'smooth_l1': [C(lambda a: nd.smooth_l1(a), np.array([-2.0, -0.5, 0.3, 0.9, 1.7])),
                  C(lambda a: nd.smooth_l1(a, scalar=2.0), np.array([-0.6, -0.1, 0.2, 0.4]))],
    'hard_sigmoid': [C(lambda a: nd.hard_sigmoid(a), np.array([-3.0, -1.0, 0.2, 2.0, 3.1])),
                     C(lambda a: nd.hard_sigmoid(a, alpha=0.5, beta=0.1),
                       np.array([-1.0, 0.3, 1.5]))],
    'moments': [C(lambda a: _both(nd.moments(a, axes=(1,)), 1.5, 2.5), r(2, 4)),
                C(lambda a: weighted(_both(nd.moments(a, axes=(0, 2), keepdims=True), 1.0, -3.0),
                                     1, 3, 1), r(2, 3, 2))],
    'cumsum': [C(lambda a: weighted(nd.cumsum(a, axis=1), 2, 3), r(2, 3)),
               C(lambda a: weighted(nd.cumsum(a), 6), r(2, 3))],
    'gather_nd': [C(lambda a: weighted(nd.gather_nd(a, _const([[0, 1, 1], [2, 0, 2]], a)), 3, 2),
                    r(2, 3, 2)),
                  C(lambda a: weighted(nd.gather_nd(a, _const([[1, -1], [0, 0]], a)), 2), r(2, 2))],
    '_backward_gather_nd': [C(lambda a: weighted(nd._internal._backward_gather_nd(
        a, _const([[0, 1, 0], [1, 0, 1]], a), shape=(2, 2)), 2, 2), r(3))],
    'scatter_nd': [C(lambda a: weighted(nd.scatter_nd(a, _const([[0, 1], [2, 0]], a),
                                                      shape=(2, 3, 2)), 2, 3, 2), r(2, 2))],
    '_contrib_boolean_mask': [
        C(lambda a: weighted(nd.contrib.boolean_mask(a, _const([0, 1, 1], a)), 2, 2), r(3, 2)),
        C(lambda a: weighted(nd.contrib.boolean_mask(a, _const([1, 0, 1], a), axis=1), 2, 2),
          r(2, 3))],
    '_contrib_index_copy': [C(lambda a, b: weighted(nd.contrib.index_copy(
        a, _const([2, 0], a), b), 3, 2), r(3, 2), r(2, 2))],
    '_contrib_quadratic': [C(lambda a: nd.contrib.quadratic(a, a=1.5, b=-2.0, c=0.5), r(2, 3))],
    # the numeric gradient of gradientmultiplier(a, s) is 1 and its own is s: adding
    # (s - 1) * BlockGrad(a) makes both s
    '_contrib_gradientmultiplier': [
        C(lambda a: nd.contrib.gradientmultiplier(a, scalar=-0.7) - 1.7 * nd.BlockGrad(a),
          r(2, 3))],
    '_contrib_div_sqrt_dim': [C(lambda a: weighted(nd.contrib.div_sqrt_dim(a), 2, 3), r(2, 3))],
    'softmax_cross_entropy': [C(lambda a: nd.softmax_cross_entropy(a, _const([0, 2, 1], a)),
                                r(3, 4) * 2)],
    'SoftmaxActivation': [C(lambda a: weighted(nd.SoftmaxActivation(a), 2, 3), r(2, 3)),
                          C(lambda a: weighted(nd.SoftmaxActivation(a, mode='channel'),
                                               2, 3, 2), r(2, 3, 2))],
})


# correlation, im2col/col2im and the interleaved attention matmuls
_ATT = nd.contrib
CASES.update({
    'Correlation': [
        C(lambda a, b: weighted(nd.Correlation(a, b, kernel_size=3, max_displacement=1,
                                               pad_size=1), 1, 9, 3, 3),
          r(1, 2, 5, 5), r(1, 2, 5, 5)),
        # a > b everywhere: |a - b| has no kink; a width the stride does not divide
        C(lambda a, b: weighted(nd.Correlation(a, b, kernel_size=1, max_displacement=2,
                                               stride1=2, stride2=2, pad_size=2,
                                               is_multiply=False), 1, 9, 3, 4),
          r(1, 1, 6, 7, low=2, high=3), r(1, 1, 6, 7, low=-1, high=0))],
    'im2col': [
        C(lambda x: weighted(nd.im2col(x, kernel=(2, 3), stride=(2, 1), dilate=(1, 2),
                                       pad=(1, 1)), 2, 12, 12), r(2, 2, 5, 6)),
        C(lambda x: weighted(nd.im2col(x, kernel=(3,), stride=(2,)), 1, 6, 3), r(1, 2, 7))],
    'col2im': [C(lambda c: weighted(nd.col2im(c, (5, 6), kernel=(2, 3), stride=(2, 1),
                                              dilate=(1, 2), pad=(1, 1)), 2, 2, 5, 6),
                 r(2, 12, 12))],
    '_contrib_interleaved_matmul_selfatt_qk': [
        C(lambda x: weighted(_ATT.interleaved_matmul_selfatt_qk(x, heads=2), 6, 4, 4),
          r(4, 3, 12))],
    '_contrib_interleaved_matmul_selfatt_valatt': [
        C(lambda x, att: weighted(_ATT.interleaved_matmul_selfatt_valatt(x, att, heads=2),
                                  4, 3, 4), r(4, 3, 12), r(6, 4, 4))],
    '_contrib_interleaved_matmul_encdec_qk': [
        C(lambda q, kv: weighted(_ATT.interleaved_matmul_encdec_qk(q, kv, heads=2), 4, 3, 5),
          r(3, 2, 4), r(5, 2, 8))],
    '_contrib_interleaved_matmul_encdec_valatt': [
        C(lambda kv, att: weighted(_ATT.interleaved_matmul_encdec_valatt(kv, att, heads=2),
                                   3, 2, 4), r(5, 2, 8), r(4, 3, 5))],
})

# contrib's adaptive pooling, PSROIPooling and deformable convolutions
# (ndarray/ops/adaptive_pooling.py, psroi_pooling.py, deformable_conv.py). The rois are
# constants (no gradient); sampling points of the deformable convolutions sit 0.2..0.4
# past an integer, away from the kinks of bilinear interpolation and the borders.
_PS_ROIS = [[0, 1, 2, 60, 70], [0, 10, 5, 40, 30], [0, 30, 30, 33, 32]]


def _offsets(*shape):
    return rng.randint(-1, 2, size=shape) + rng.uniform(0.2, 0.4, size=shape)


CASES.update({
    '_contrib_AdaptiveAvgPooling2D': [
        C(lambda x: weighted(nd.contrib.AdaptiveAvgPooling2D(x, output_size=(3, 4)),
                             2, 2, 3, 4), r(2, 2, 5, 7)),
        C(lambda x: weighted(nd.contrib.AdaptiveAvgPooling2D(x, output_size=2), 1, 3, 2, 2),
          r(1, 3, 3, 2))],
    '_contrib_PSROIPooling': [
        C(lambda x: weighted(nd.contrib.PSROIPooling(
            x, _const(_PS_ROIS, x), spatial_scale=0.1, output_dim=2, pooled_size=2),
            3, 2, 2, 2), r(1, 8, 6, 7)),
        C(lambda x: weighted(nd.contrib.PSROIPooling(
            x, _const(_PS_ROIS, x), spatial_scale=0.1, output_dim=2, pooled_size=3,
            group_size=2), 3, 2, 3, 3), r(1, 8, 6, 7))],
    '_contrib_DeformableConvolution': [
        C(lambda x, off, w, b: weighted(nd.contrib.DeformableConvolution(
            x, off, w, b, kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=2,
            num_deformable_group=2), 1, 4, 4, 5),
          r(1, 4, 4, 5), _offsets(1, 36, 4, 5), r(4, 2, 3, 3), r(4)),
        C(lambda x, off, w: weighted(nd.contrib.DeformableConvolution(
            x, off, w, kernel=(2, 2), stride=(2, 1), dilate=(1, 2), num_filter=3,
            no_bias=True), 2, 3, 2, 3), r(2, 2, 4, 5), _offsets(2, 8, 2, 3), r(3, 2, 2, 2))],
    '_contrib_ModulatedDeformableConvolution': [
        C(lambda x, off, m, w, b: weighted(nd.contrib.ModulatedDeformableConvolution(
            x, off, m, w, b, kernel=(3, 3), pad=(1, 1), num_filter=3,
            num_deformable_group=2), 1, 3, 4, 5),
          r(1, 4, 4, 5), _offsets(1, 36, 4, 5), r(1, 18, 4, 5), r(3, 4, 3, 3), r(3))],
})


def _sum_of_multicast(a, b):
    first, second = nd.amp_multicast(a, b, num_outputs=2)
    return first * 2 + second * 3


CASES.update({
    'amp_cast': [C(lambda a: nd.amp_cast(a, dtype='float32') * 1, r(5))],
    'amp_multicast': [C(_sum_of_multicast, r(2, 3), r(2, 3))],
    'BatchNorm_v1': [
        C(lambda x, g, b, m, v: weighted(nd.BatchNorm_v1(x, g, b, m, v, fix_gamma=False,
                                                         training=True), 4, 3, 2),
          r(4, 3, 2), r(3) + 1.5, r(3), r(3), r(3, low=0.5, high=1), grad_nodes=[0, 1, 2])],
    '_contrib_SyncBatchNorm': [
        C(lambda x, g, b, m, v: weighted(nd.contrib.SyncBatchNorm(
            x, g, b, m, v, fix_gamma=False, training=True, key='bn'), 2, 3, 2, 2),
          r(2, 3, 2, 2), r(3) + 1.5, r(3), r(3), r(3, low=0.5, high=1), grad_nodes=[0, 1, 2])],
})
# gamma per sample and channel, broadcast over the spatial axes
CASES['LeakyReLU'].append(C(lambda x, g: nd.LeakyReLU(x, g, act_type='prelu'),
                            away_from_zero(2, 3, 2, 2), r(2, 3)))
