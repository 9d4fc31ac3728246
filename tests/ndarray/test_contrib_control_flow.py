"""``nd.contrib.foreach``, ``while_loop`` and ``cond``: the same values as a plain Python
loop, MXNet's output structures and padding, and gradients through the loops checked
against central differences in float64."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd

F64 = 'float64'


def _arr(*shape, seed=0):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, shape), dtype=F64)


def _numeric_grad(fn, arrays, eps=1e-6):
    """d sum(fn(*arrays) * weights) / d each array, by central differences."""
    grads = []
    for arr in arrays:
        grad = np.zeros(arr.shape)
        flat = arr.asnumpy().reshape(-1)
        for i in range(flat.size):
            for sign in (1, -1):
                moved = flat.copy()
                moved[i] += sign * eps
                arr[:] = moved.reshape(arr.shape)
                grad.reshape(-1)[i] += sign * fn().asscalar() / (2 * eps)
            arr[:] = flat.reshape(arr.shape)
        grads.append(grad)
    return grads


def _check_gradients(loss, arrays):
    for arr in arrays:
        arr.attach_grad()
    with autograd.record():
        out = loss()
    out.backward()
    analytic = [a.grad.asnumpy() for a in arrays]
    for got, want in zip(analytic, _numeric_grad(loss, arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_foreach_is_a_python_loop_with_stacked_outputs():
    data, state, w = _arr(4, 3), _arr(3, seed=1), _arr(3, seed=2)

    def step(x, states):
        h = nd.tanh(x * w + states[0])
        return [h, h * 2], [h]
    outs, states = nd.contrib.foreach(step, data, [state])
    expect_h, hs = state.asnumpy(), []
    for i in range(4):
        expect_h = np.tanh(data.asnumpy()[i] * w.asnumpy() + expect_h)
        hs.append(expect_h)
    assert isinstance(outs, list) and len(outs) == 2 and isinstance(states, list)
    np.testing.assert_allclose(outs[0].asnumpy(), np.stack(hs), rtol=1e-12)
    np.testing.assert_allclose(outs[1].asnumpy(), 2 * np.stack(hs), rtol=1e-12)
    np.testing.assert_allclose(states[0].asnumpy(), hs[-1], rtol=1e-12)


def test_foreach_structures_and_1d_data():
    # a list of data arrays gives the body a list of slices; the body's nesting comes back
    a, b = nd.arange(6).reshape((3, 2)), nd.arange(3)
    outs, states = nd.contrib.foreach(
        lambda xs, s: (xs[0] * xs[1], [s[0] + xs[1], [s[1][0] * 2]]), [a, b],
        [nd.zeros((1,)), [nd.ones((2,))]])
    assert outs.shape == (3, 2)  # a 1-D array's step is of shape (1,), as in MXNet
    np.testing.assert_array_equal(outs.asnumpy(), a.asnumpy() * b.asnumpy()[:, None])
    assert states[0].asscalar() == 3 and isinstance(states[1], list)
    np.testing.assert_array_equal(states[1][0].asnumpy(), [8, 8])
    # states only: the outputs are an empty list
    outs, state = nd.contrib.foreach(lambda x, s: ([], s + x), a, nd.zeros((2,)))
    assert outs == [] and state.asnumpy().tolist() == [6, 9]
    with pytest.raises(TypeError, match='NDArray'):
        nd.contrib.foreach(lambda x, s: (x, s), a.asnumpy(), [])


def test_foreach_gradients_in_float64():
    data, state, w = _arr(3, 2), _arr(2, seed=1), _arr(2, seed=2)
    weights = _arr(3, 2, seed=3)

    def loss():
        outs, states = nd.contrib.foreach(
            lambda x, s: (nd.tanh(x * w + s[0]), [nd.sigmoid(s[0] * w) + x]), data, [state])
        return (outs * weights).sum() + (states[0] * states[0]).sum()
    _check_gradients(loss, [data, state, w])


def test_while_loop_pads_to_max_iterations_and_returns_final_vars():
    i, s = nd.array([1], dtype='int64'), nd.array([0], dtype='int64')
    outs, (fi, fs) = nd.contrib.while_loop(lambda i, s: i <= 5,
                                           lambda i, s: ([i + s], [i + 1, s + i]),
                                           [i, s], max_iterations=10)
    assert fi.asscalar() == 6 and fs.asscalar() == 15
    assert isinstance(outs, list) and outs[0].shape == (10, 1) and outs[0].dtype == np.int64
    # the rows after the last step: undefined in MXNet, zeros here
    assert outs[0].asnumpy().ravel().tolist() == [1, 3, 6, 10, 15, 0, 0, 0, 0, 0]
    # stopped by max_iterations; one NDArray as loop_vars gives one back
    outs, final = nd.contrib.while_loop(lambda x: x < 100, lambda x: (x, x * 2),
                                        nd.array([1.0]), max_iterations=3)
    assert outs.shape == (3, 1) and final.asscalar() == 8
    # no step: no output can be stacked, the loop variables come back unchanged
    outs, final = nd.contrib.while_loop(lambda x: x > 5, lambda x: (x, x + 1),
                                        [nd.array([1.0])], max_iterations=3)
    assert outs == [] and final[0].asscalar() == 1
    # step_output None: only states
    outs, final = nd.contrib.while_loop(lambda x: x < 3, lambda x: (None, [x + 1]),
                                        [nd.array([0.0])], max_iterations=5)
    assert outs == [] and final[0].asscalar() == 3


def test_while_loop_errors():
    with pytest.raises(ValueError, match='max_iterations should be specified'):
        nd.contrib.while_loop(lambda x: x < 1, lambda x: (x, x), [nd.zeros((1,))])
    with pytest.raises(ValueError, match='length of loop_vars'):
        nd.contrib.while_loop(lambda x: x < 1, lambda x: (x, [x, x]), [nd.zeros((1,))],
                              max_iterations=2)
    with pytest.raises(ValueError, match='one element'):
        nd.contrib.while_loop(lambda x: x, lambda x: (x, x), [nd.ones((2,))],
                              max_iterations=2)


def test_while_loop_gradients_in_float64():
    x, w = _arr(2, 2), _arr(2, seed=1)
    weights = _arr(4, 2, 2, seed=2)

    def loss():
        outs, (_, h) = nd.contrib.while_loop(
            lambda i, h: i < 3,
            lambda i, h: ([nd.tanh(h * w)], [i + 1, nd.tanh(h * w) + x]),
            [nd.zeros((1,), dtype=F64), x], max_iterations=4)
        return (outs[0] * weights).sum() + h.sum()
    _check_gradients(loss, [x, w])


def test_cond_runs_one_branch_and_differentiates_it():
    a, b = _arr(2, 2), _arr(2, 2, seed=1)
    for pred, want in ((nd.array([1.0]), (a + 5) * (b + 5)), (nd.array([0.0]), a - b)):
        out = nd.contrib.cond(pred, lambda: [(a + 5) * (b + 5)], lambda: [a - b])
        np.testing.assert_array_equal(out[0].asnumpy(), want.asnumpy())

    def loss():
        return nd.contrib.cond((a * b).sum() < 100, lambda: nd.sin(a) * b,
                               lambda: a).sum()
    _check_gradients(loss, [a, b])
    with pytest.raises(ValueError, match='one element'):
        nd.contrib.cond(nd.ones((2,)), lambda: a, lambda: b)


def test_nd_contrib_is_on_the_namespaces():
    assert mx.nd.contrib.foreach is nd.contrib.foreach
    assert {'foreach', 'while_loop', 'cond'} <= set(mx.nd.contrib.__all__)
