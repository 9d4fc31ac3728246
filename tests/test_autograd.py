"""autograd: scopes, composite expressions against hand-derived gradients, errors."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError
from minigluon.test_utils import assert_almost_equal


def _var(values, ctx, grad_req='write'):
    x = nd.array(np.asarray(values, dtype=np.float64), ctx=ctx, dtype='float64')
    x.attach_grad(grad_req)
    return x


def test_scope_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert not autograd.is_recording() and autograd.is_training()
    assert autograd.set_recording(True) is False
    assert autograd.set_training(True) is False
    assert autograd.set_recording(False) is True
    assert autograd.set_training(False) is True


def test_flags_restored_after_exception():
    with pytest.raises(ValueError):
        with autograd.record():
            raise ValueError('boom')
    assert not autograd.is_recording() and not autograd.is_training()


def test_broadcast_fanout_composite(ctx):
    a_np = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    b_np = np.array([0.3, -0.2, 0.9])
    a, b = _var(a_np, ctx), _var(b_np, ctx)
    with autograd.record():
        c = a * b            # b broadcast over rows
        d = c + a            # a used twice (fan-out)
        y = (d * d).sum() + (b.exp() * a).mean()
    y.backward()
    d_np = a_np * b_np + a_np
    # dy/da = 2 d (b + 1) + exp(b)/6 ; dy/db = sum_rows 2 d a + sum_rows a exp(b)/6
    ga = 2 * d_np * (b_np + 1) + np.exp(b_np) / 6
    gb = (2 * d_np * a_np).sum(axis=0) + (a_np * np.exp(b_np) / 6).sum(axis=0)
    assert_almost_equal(a.grad, ga)
    assert_almost_equal(b.grad, gb)


def test_indexing_accumulates_repeated_rows(ctx):
    x_np = np.arange(6.0).reshape(3, 2)
    x = _var(x_np, ctx)
    with autograd.record():
        rows = x[nd.array([0, 2, 0], ctx=ctx, dtype='int64')]   # row 0 twice
        y = (rows * rows).sum() + x[1, 1] * 3 + x[:, 0].sum()
    y.backward()
    expected = np.zeros((3, 2))
    expected[0] += 2 * 2 * x_np[0]
    expected[2] += 2 * x_np[2]
    expected[1, 1] += 3
    expected[:, 0] += 1
    assert_almost_equal(x.grad, expected)


def test_head_grads_and_multiple_heads(ctx):
    x = _var([1.0, 2.0, 3.0], ctx)
    with autograd.record():
        y1 = x * 2
        y2 = x * x
    head = nd.array([1.0, 0.5, -1.0], ctx=ctx, dtype='float64')
    autograd.backward([y1, y2], [head, None])
    assert_almost_equal(x.grad, 2 * np.array([1.0, 0.5, -1.0]) + 2 * np.array([1.0, 2.0, 3.0]))


def test_grad_req_add_accumulates_and_write_overwrites(ctx):
    x = _var([1.0, -2.0], ctx, grad_req='add')
    z = _var([1.0, -2.0], ctx)
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum() + (z * z).sum()
        y.backward()
    assert_almost_equal(x.grad, 3 * 2 * np.array([1.0, -2.0]))
    assert_almost_equal(z.grad, 2 * np.array([1.0, -2.0]))


def test_grad_req_null_leaves_no_gradient(ctx):
    x = _var([1.0, 2.0], ctx, grad_req='null')
    w = _var([3.0, 4.0], ctx)
    with autograd.record():
        y = (x * w).sum()
    y.backward()
    assert_almost_equal(w.grad, [1.0, 2.0])
    assert_almost_equal(x.grad, [0.0, 0.0])


def test_ops_that_ask_are_told_which_inputs_need_gradients(ctx):
    from minigluon.ndarray.registry import get_op
    op, seen = get_op('Convolution'), []
    forward = op.forward

    def spy(xp, *args, **kwargs):
        seen.append(kwargs['needs_grad'])
        return forward(xp, *args, **kwargs)
    op.forward = spy
    try:
        x = nd.ones((1, 2, 4, 4), ctx=ctx)  # the data: no gradient wanted
        w = _var(np.ones((3, 2, 3, 3)), ctx)
        nd.Convolution(x, w, kernel=(3, 3), num_filter=3, no_bias=True)
        with autograd.record():
            y = nd.Convolution(x, w, kernel=(3, 3), num_filter=3, no_bias=True)
        y.backward()
    finally:
        op.forward = forward
    assert seen == [(False, False, False), (False, True, False)]  # data, weight, bias
    assert_almost_equal(w.grad, np.full((3, 2, 3, 3), 4.0))  # 2x2 outputs of ones


def test_backward_without_record_raises(ctx):
    x = _var([1.0], ctx)
    y = x * 2
    with pytest.raises(MXNetError, match='record'):
        y.backward()


def test_backward_twice_needs_retain_graph(ctx):
    x = _var([1.0, 2.0], ctx)
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_almost_equal(x.grad, [2.0, 4.0])  # 'write': the second pass overwrote the first
    with pytest.raises(MXNetError, match='retain_graph'):
        y.backward()


def test_inplace_on_graph_arrays_raises_while_recording(ctx):
    x = _var([1.0, 2.0], ctx)
    with autograd.record():
        with pytest.raises(MXNetError, match='in place'):
            x += 1
        y = x * 2
        with pytest.raises(MXNetError, match='in place'):
            y[0] = 5
        with pytest.raises(MXNetError, match='in place'):
            y *= 3
    x += 1  # outside record: allowed, as an optimizer update is
    assert_almost_equal(x, [2.0, 3.0])


def test_inplace_into_fresh_array_is_recorded(ctx):
    x = _var([1.0, 2.0], ctx)
    acc = nd.zeros((2,), ctx=ctx, dtype='float64')
    with autograd.record():
        acc += x * 3  # acc was not in the graph: the write is recorded and acc joins it
        y = (acc * x).sum()
        with pytest.raises(MXNetError, match='in place'):
            acc *= 2  # ...after which it is a graph array like any other
    y.backward()
    # y = sum(3 x^2) -> dy/dx = 6 x
    assert_almost_equal(x.grad, [6.0, 12.0])


def test_detach_stops_gradient(ctx):
    x = _var([1.0, 2.0], ctx)
    with autograd.record():
        y = x * x.detach() + x
    y.backward()
    assert_almost_equal(x.grad, [2.0, 3.0])


def test_autograd_grad_returns_without_touching_buffers(ctx):
    x = _var([1.0, 2.0], ctx)
    with autograd.record():
        h = x * x
        y = (h * x).sum()
    gx, gh = autograd.grad(y, [x, h], retain_graph=True)
    assert_almost_equal(gx, 3 * np.array([1.0, 4.0]))
    assert_almost_equal(gh, [1.0, 2.0])
    assert_almost_equal(x.grad, [0.0, 0.0])
    single = autograd.grad(y, x)  # a list all the same, as MXNet 1.x returns
    assert isinstance(single, list) and len(single) == 1
    assert_almost_equal(single[0], 3 * np.array([1.0, 4.0]))


def test_mark_variables_uses_given_buffers(ctx):
    x = nd.array([1.0, 2.0], ctx=ctx)
    g = nd.zeros((2,), ctx=ctx)
    autograd.mark_variables([x], [g], grad_reqs='write')
    with autograd.record():
        y = (x * 5).sum()
    y.backward()
    assert x.grad is g
    assert_almost_equal(g, [5.0, 5.0])


def test_attach_grad_on_intermediate_starts_new_graph(ctx):
    x = _var([2.0], ctx)
    with autograd.record():
        h = x * 3
    h.attach_grad()
    with autograd.record():
        y = h * h
    y.backward()
    assert_almost_equal(h.grad, [12.0])
    assert_almost_equal(x.grad, [0.0])


def test_custom_function(ctx):
    class Sigmoid(autograd.Function):
        def forward(self, x):
            y = 1 / (1 + nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            y, = self.saved_tensors
            return dy * y * (1 - y)

    x_np = np.array([-1.0, 0.0, 2.0])
    x = _var(x_np, ctx)
    with autograd.record():
        y = Sigmoid()(x) * 2
    y.backward()
    s = 1 / (1 + np.exp(-x_np))
    assert_almost_equal(x.grad, 2 * s * (1 - s))


def test_custom_function_with_two_outputs(ctx):
    class SplitScale(autograd.Function):
        def forward(self, x, w):
            self.save_for_backward(x, w)
            return x * w, x + w

        def backward(self, d_prod, d_sum):
            x, w = self.saved_tensors
            return d_prod * w + d_sum, d_prod * x + d_sum

    x, w = _var([1.0, 2.0], ctx), _var([3.0, -1.0], ctx)
    with autograd.record():
        p, s = SplitScale()(x, w)
        y = (p * 2).sum() + s.sum()
    y.backward()
    assert_almost_equal(x.grad, 2 * np.array([3.0, -1.0]) + 1)
    assert_almost_equal(w.grad, 2 * np.array([1.0, 2.0]) + 1)


def test_gradient_flows_across_devices():
    x = _var([1.0, 2.0], mx.cpu(0))
    with autograd.record():
        y = x.as_in_context(mx.cpu(1)) * 3
        z = (y.copyto(mx.cpu(0)) * x).sum()
    assert y.context == mx.cpu(1)
    z.backward()
    assert x.grad.context == mx.cpu(0)
    assert_almost_equal(x.grad, 6 * np.array([1.0, 2.0]))


@pytest.mark.skipif(mx.num_gpus() == 0, reason='needs a GPU: CPU contexts mix, as in MXNet')
def test_context_mismatch_in_recorded_op_names_both():
    a = _var([1.0], mx.cpu(0))
    b = nd.array([1.0], ctx=mx.gpu(0))
    with autograd.record():
        with pytest.raises(MXNetError, match=r'cpu\(0\).*gpu\(0\)'):
            a + b


def test_nonscalar_head_uses_ones(ctx):
    x = _var([[1.0, 2.0], [3.0, 4.0]], ctx)
    with autograd.record():
        y = x * x
    y.backward()
    assert_almost_equal(x.grad, 2 * x.asnumpy())


def test_gradients_keep_float32(ctx):
    x = nd.array([1.0, 2.0], ctx=ctx)
    x.attach_grad()
    with autograd.record():
        y = (x * 0.5 + x.astype('float64')).sum()
    y.backward()
    assert x.grad.dtype == np.float32
    assert_almost_equal(x.grad, [1.5, 1.5])


def test_nodes_release_saved_arrays_after_backward(ctx):
    x = _var([1.0, 2.0], ctx)
    with autograd.record():
        y = (x.exp() * x).sum()
    node = y._node
    y.backward()
    assert node.backward is None and node.parents is None


def test_thread_local_recording():
    import threading
    seen = []
    with autograd.record():
        t = threading.Thread(target=lambda: seen.append(autograd.is_recording()))
        t.start()
        t.join()
    assert seen == [False]


def test_fresh_grad_says_whether_backward_wrote_the_gradient():
    x, y = nd.ones((2,)), nd.ones((2,))
    autograd.mark_variables([x, y], [nd.zeros((2,)), nd.zeros((2,))])
    assert not x._fresh_grad and not y._fresh_grad
    with autograd.record():
        z = (x + 2) * y
    z.backward()
    assert x._fresh_grad and y._fresh_grad
    x._fresh_grad = y._fresh_grad = False  # as MXNet's Trainer resets it
    with autograd.record():
        z = (x + 2).detach() * y
    z.backward()
    assert y._fresh_grad and not x._fresh_grad  # no gradient reached x
