"""Higher-order gradients: ``autograd.grad(create_graph=True)`` against PyTorch's double
backward in float64, op by op and in two uses (a WGAN-GP gradient penalty, a MAML step)."""
import numpy as np
import pytest

from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.test_utils import assert_almost_equal

torch = pytest.importorskip('torch', reason='PyTorch is the oracle for double backward')
F = torch.nn.functional

RNG = np.random.RandomState(7)


def _rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape)


def _positive(*shape):
    return _rand(*shape, low=0.5, high=2.0)


def _const(values, ctx):
    return nd.array(values, ctx=ctx, dtype='float64')


# name -> (minigluon fn, torch fn, inputs (numpy, all differentiated))
CASES = {
    'sin': (nd.sin, torch.sin, [_rand(2, 3)]),
    'cos': (nd.cos, torch.cos, [_rand(2, 3)]),
    'tan': (nd.tan, torch.tan, [_rand(2, 3)]),
    'exp': (nd.exp, torch.exp, [_rand(2, 3)]),
    'log': (nd.log, torch.log, [_positive(2, 3)]),
    'log2': (nd.log2, torch.log2, [_positive(2, 3)]),
    'log10': (nd.log10, torch.log10, [_positive(2, 3)]),
    'sqrt': (nd.sqrt, torch.sqrt, [_positive(2, 3)]),
    'rsqrt': (nd.rsqrt, torch.rsqrt, [_positive(2, 3)]),
    'cbrt': (nd.cbrt, lambda x: x ** (1 / 3), [_positive(2, 3)]),
    'sigmoid': (nd.sigmoid, torch.sigmoid, [_rand(2, 3)]),
    'tanh': (nd.tanh, torch.tanh, [_rand(2, 3)]),
    'relu': (nd.relu, torch.relu, [_rand(2, 3)]),
    'softsign': (nd.softsign, F.softsign, [_rand(2, 3)]),
    'reciprocal': (nd.reciprocal, torch.reciprocal, [_positive(2, 3)]),
    'abs': (nd.abs, torch.abs, [_rand(2, 3)]),
    'square': (nd.square, torch.square, [_rand(2, 3)]),
    'negative': (nd.negative, torch.neg, [_rand(2, 3)]),
    'arctan': (nd.arctan, torch.atan, [_rand(2, 3)]),
    'arcsinh': (nd.arcsinh, torch.asinh, [_rand(2, 3)]),
    'power': (lambda a, b: a ** b, torch.pow, [_positive(2, 3), _rand(1, 3)]),
    'power_scalar': (lambda a: a ** 3, lambda a: a ** 3, [_rand(2, 3)]),
    'rpower_scalar': (lambda a: 2 ** a, lambda a: 2 ** a, [_rand(2, 3)]),
    'add': (lambda a, b: a + b, torch.add, [_rand(2, 3), _rand(3)]),
    'subtract': (lambda a, b: a - b, torch.sub, [_rand(2, 1), _rand(2, 3)]),
    'multiply': (lambda a, b: a * b, torch.mul, [_rand(2, 3), _rand(1, 3)]),
    'divide': (lambda a, b: a / b, torch.div, [_rand(2, 3), _positive(2, 1)]),
    'scalar_arith': (lambda a: (3 - a) * 2 / (a + 4) - 1 / (a + 3),
                     lambda a: (3 - a) * 2 / (a + 4) - 1 / (a + 3), [_rand(2, 3)]),
    'maximum': (nd.maximum, torch.maximum, [_rand(2, 3), _rand(2, 3)]),
    'dot': (nd.dot, torch.matmul, [_rand(2, 3), _rand(3, 4)]),
    'dot_tb': (lambda a, b: nd.dot(a, b, transpose_b=True), lambda a, b: a @ b.T,
               [_rand(2, 3), _rand(4, 3)]),
    'batch_dot': (nd.batch_dot, torch.bmm, [_rand(2, 2, 3), _rand(2, 3, 2)]),
    'FullyConnected': (lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=3),
                       lambda x, w, b: F.linear(x.reshape(2, -1), w, b),
                       [_rand(2, 2, 2), _rand(3, 4), _rand(3)]),
    'Convolution': (lambda x, w, b: nd.Convolution(x, w, b, kernel=(3, 3), stride=(2, 1),
                                                   pad=(1, 1), num_filter=4, num_group=2),
                    lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2),
                    [_rand(2, 2, 5, 4), _rand(4, 1, 3, 3), _rand(4)]),
    'Pooling_max': (lambda x: nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
                    lambda x: F.max_pool2d(x, 3, 2, 1), [_rand(1, 2, 5, 5)]),
    'Pooling_avg': (lambda x: nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='avg'),
                    lambda x: F.avg_pool2d(x, 2, 2), [_rand(1, 2, 4, 4)]),
    'softmax': (lambda x: nd.softmax(x, axis=1), lambda x: torch.softmax(x, 1),
                [_rand(2, 3)]),
    'log_softmax': (nd.log_softmax, lambda x: torch.log_softmax(x, -1), [_rand(2, 3)]),
    'BatchNorm': (lambda x, g, b: nd.BatchNorm(x, g, b, nd.zeros(2, dtype='float64'),
                                               nd.ones(2, dtype='float64'), fix_gamma=False),
                  lambda x, g, b: F.batch_norm(x, None, None, g, b, training=True, eps=1e-3),
                  [_rand(3, 2, 2), _positive(2), _rand(2)]),
    'sum_mean': (lambda x: nd.sum(x, axis=1, keepdims=True) * nd.mean(x, axis=(0, 2),
                                                                       keepdims=True),
                 lambda x: x.sum(1, keepdim=True) * x.mean((0, 2), keepdim=True),
                 [_rand(2, 3, 2)]),
    'shapes': (lambda x: nd.transpose(x.reshape((3, 2)), axes=(1, 0)).expand_dims(0)
               .broadcast_to((2, 2, 3)).flatten() ** 2,
               lambda x: (x.reshape(3, 2).T.unsqueeze(0).expand(2, 2, 3).reshape(2, -1)) ** 2,
               [_rand(2, 3)]),
    'slicing': (lambda x: x[1:, ::2] * nd.slice_axis(x, axis=0, begin=1, end=3)[:, 1:],
                lambda x: x[1:, ::2] * x[1:3][:, 1:], [_rand(3, 3)]),
    'Activation': (lambda x: nd.Activation(x, act_type='softrelu'), F.softplus, [_rand(2, 3)]),
    'LeakyReLU': (lambda x: nd.LeakyReLU(x, act_type='elu', slope=0.3),
                  lambda x: F.elu(x, 0.3), [_rand(2, 3)]),
    'clip': (lambda x: nd.clip(x, -0.5, 0.5) * x, lambda x: torch.clamp(x, -0.5, 0.5) * x,
             [_rand(2, 3)]),
    'where': (lambda a, b: nd.where(a > 0, a * b, b), lambda a, b: torch.where(a > 0, a * b, b),
              [_rand(2, 3), _rand(2, 3)]),
    'concat': (lambda a, b: nd.concat(a, b, dim=1) ** 2, lambda a, b: torch.cat([a, b], 1) ** 2,
               [_rand(2, 1), _rand(2, 2)]),
}


def _second_order(fn, inputs, head, weights, stack):
    """Gradients of sum(weights * d<fn(inputs), head>/d inputs) by the inputs and head."""
    out = fn(*inputs)
    firsts = stack.first(out, inputs, head)
    total = sum((f * w).sum() for f, w in zip(firsts, weights))
    return stack.second(total, list(inputs) + [head])


class _Minigluon:
    @staticmethod
    def first(out, inputs, head):
        return autograd.grad(out, inputs, head_grads=head, create_graph=True)

    @staticmethod
    def second(total, variables):
        total.backward()
        return [v.grad.asnumpy() for v in variables]


class _Torch:
    @staticmethod
    def first(out, inputs, head):
        return torch.autograd.grad(out, inputs, grad_outputs=head, create_graph=True)

    @staticmethod
    def second(total, variables):
        return [g.numpy(force=True) for g in torch.autograd.grad(
            total, variables, allow_unused=True, materialize_grads=True)]


@pytest.mark.parametrize('name', sorted(CASES))
def test_second_order_matches_torch(name, ctx):
    fn, torch_fn, arrays = CASES[name]
    with autograd.record():
        shape = fn(*[_const(a, ctx) for a in arrays]).shape
    head = RNG.uniform(-1, 1, shape)
    weights = [RNG.uniform(-1, 1, a.shape) for a in arrays]

    xs = [_const(a, ctx) for a in arrays] + [_const(head, ctx)]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        got = _second_order(fn, xs[:-1], xs[-1], [_const(w, ctx) for w in weights],
                            _Minigluon)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays + [head]]
    want = _second_order(torch_fn, ts[:-1], ts[-1], [torch.tensor(w) for w in weights],
                         _Torch)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_almost_equal(g, w.reshape(g.shape), rtol=1e-7, atol=1e-9,
                            names=('minigluon d/d input %d' % i, 'torch'))


def test_third_order_and_grad_of_grad(ctx):
    x = _const([0.3, -1.2, 2.0], ctx)
    x.attach_grad()
    with autograd.record():
        y = nd.sigmoid(x) * nd.sin(x)
        g1 = autograd.grad(y, x, create_graph=True)[0]
        g2 = autograd.grad(g1, x, create_graph=True)[0]
    g2.backward()
    t = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    ty = torch.sigmoid(t) * torch.sin(t)
    t1, = torch.autograd.grad(ty.sum(), t, create_graph=True)
    t2, = torch.autograd.grad(t1.sum(), t, create_graph=True)
    t3, = torch.autograd.grad(t2.sum(), t)
    assert_almost_equal(g1, t1.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_almost_equal(g2, t2.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_almost_equal(x.grad, t3.numpy(), rtol=1e-10, atol=1e-12)


def _dense_critic(weights, ctx):
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(4, activation='tanh', dtype='float64'),
            gluon.nn.Dense(1, dtype='float64'))
    net.initialize(ctx=ctx)
    net(_const(np.zeros((1, 3)), ctx))
    for param, value in zip(net.collect_params().values(), weights):
        param.set_data(_const(value, ctx))
    return net


def test_wgan_gradient_penalty_matches_torch(ctx):
    weights = [_rand(4, 3), _rand(4), _rand(1, 4), _rand(1)]
    real, fake, eps = _rand(5, 3), _rand(5, 3), RNG.uniform(0, 1, (5, 1))
    critic = _dense_critic(weights, ctx)
    x_hat = _const(eps * real + (1 - eps) * fake, ctx)
    x_hat.attach_grad()
    with autograd.record():
        score = critic(x_hat)
        grad_x, = autograd.grad(score, [x_hat], head_grads=nd.ones_like(score),
                                create_graph=True)
        norm = nd.sqrt(nd.sum(grad_x * grad_x, axis=1))
        penalty = nd.mean((norm - 1) ** 2)
    penalty.backward()
    got = [p.grad().asnumpy() for p in critic.collect_params().values()]

    tw = [torch.tensor(w, requires_grad=True) for w in weights]
    tx = torch.tensor(eps * real + (1 - eps) * fake, requires_grad=True)
    tscore = F.linear(torch.tanh(F.linear(tx, tw[0], tw[1])), tw[2], tw[3])
    tg, = torch.autograd.grad(tscore.sum(), tx, create_graph=True)
    tpen = ((tg.norm(dim=1) - 1) ** 2).mean()
    want = torch.autograd.grad(tpen, tw, allow_unused=True, materialize_grads=True)
    assert_almost_equal(penalty, tpen.detach().numpy().reshape(1), rtol=1e-10)
    for g, w in zip(got, want):
        assert_almost_equal(g, w.numpy(), rtol=1e-8, atol=1e-12)


def test_maml_inner_step_matches_torch(ctx):
    w0, x_in, y_in, x_out, y_out = _rand(3, 2), _rand(4, 3), _rand(4, 2), _rand(4, 3), \
        _rand(4, 2)
    lr = 0.3
    w = _const(w0, ctx)
    w.attach_grad()
    with autograd.record():
        inner = nd.mean(nd.square(nd.tanh(nd.dot(_const(x_in, ctx), w)) - _const(y_in, ctx)))
        g, = autograd.grad(inner, [w], create_graph=True)
        adapted = w - lr * g
        outer = nd.mean(nd.square(nd.tanh(nd.dot(_const(x_out, ctx), adapted))
                                  - _const(y_out, ctx)))
    outer.backward()

    tw = torch.tensor(w0, requires_grad=True)
    tin = ((torch.tanh(torch.tensor(x_in) @ tw) - torch.tensor(y_in)) ** 2).mean()
    tg, = torch.autograd.grad(tin, tw, create_graph=True)
    tout = ((torch.tanh(torch.tensor(x_out) @ (tw - lr * tg)) - torch.tensor(y_out)) ** 2).mean()
    want, = torch.autograd.grad(tout, tw)
    assert_almost_equal(w.grad, want.numpy(), rtol=1e-8, atol=1e-12)


def test_op_without_rule_names_it(ctx):
    x = _const([3.0, 1.0, 2.0], ctx)
    x.attach_grad()
    with autograd.record():
        y = nd.sort(x) * x
        with pytest.raises(MXNetError, match="op 'sort' has no higher-order gradient"):
            autograd.grad(y, [x], create_graph=True)


def test_first_order_unchanged_and_graph_retained(ctx):
    x = _const([0.5, 2.0], ctx)
    x.attach_grad()
    with autograd.record():
        y = nd.exp(x) * x
        g, = autograd.grad(y, [x], create_graph=True)  # retain_graph follows create_graph
    y.backward(retain_graph=True)  # the forward graph is still there (g's graph uses it)
    assert_almost_equal(x.grad, np.exp([0.5, 2.0]) * (1 + np.array([0.5, 2.0])))
    assert_almost_equal(g, x.grad)
    with autograd.record():
        z = (g * g).sum()
    z.backward()
    xs = np.array([0.5, 2.0])
    assert_almost_equal(x.grad, 2 * np.exp(xs) * (1 + xs) * np.exp(xs) * (2 + xs))


def test_constant_gradient_gives_zeros_as_mxnet(ctx):
    # the gradient of a linear op does not depend on its input; differentiating it again
    # gives zeros, not an error (MXNet's backward node keeps the input)
    x = _const([1.0, 2.0], ctx)
    x.attach_grad()
    with autograd.record():
        g, = autograd.grad(nd.radians(x), [x], create_graph=True)
        gg, = autograd.grad(g, [x])
    assert_almost_equal(g, np.full(2, np.pi / 180))
    assert_almost_equal(gg, np.zeros(2))
