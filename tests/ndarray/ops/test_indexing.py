"""where and pick as MXNet 1.9.1 has them: where's shape rules, pick's clip and wrap of
out-of-range and negative indices."""
import numpy as np
import pytest

from minigluon import nd
from minigluon.base import MXNetError

X = nd.array([[2, 3], [4, 5], [6, 7]])
Y = nd.array([[8, 9], [10, 11], [12, 13]])


def test_where_takes_a_full_or_per_row_condition():
    assert nd.where(nd.array([1, 0, 1]), X, Y).asnumpy().tolist() == [[2, 3], [10, 11], [6, 7]]
    cond = nd.array([[1, 0], [0, 1], [1, 1]])
    assert nd.where(cond, X, Y).asnumpy().tolist() == [[2, 9], [10, 5], [6, 7]]


@pytest.mark.parametrize('cond, y', [
    (nd.array([1, 0]), Y), (nd.ones((3, 1)), Y), (nd.ones((3, 2)), nd.ones((1, 2)))])
def test_where_does_not_broadcast(cond, y):
    with pytest.raises(MXNetError, match='where'):
        nd.where(cond, X, y)


def test_pick_clips_or_wraps_indices():
    """MXNet 1.9.1's answers, negative and too large indices included."""
    data = nd.arange(12).reshape((3, 4))
    index = nd.array([-5, 1, 6])
    assert nd.pick(data, index, axis=1, mode='clip').asnumpy().tolist() == [0, 5, 11]
    assert nd.pick(data, index, axis=1, mode='wrap').asnumpy().tolist() == [3, 5, 10]
    assert nd.pick(data, nd.array([[-1, 2, 7, 4]]), axis=0, keepdims=True,
                   mode='wrap').asnumpy().tolist() == [[8, 9, 6, 7]]
    np.testing.assert_array_equal(nd.pick(data, index.astype('int32'), mode='wrap').asnumpy(),
                                  [3, 5, 10])


@pytest.mark.parametrize('axis', [0, 1, 2, -1])
def test_pick_along_any_axis_of_3d_data_and_its_gradient(axis):
    from minigluon import autograd
    rng = np.random.RandomState(axis % 3)
    data = rng.randn(2, 3, 4)
    shape = list(data.shape)
    shape[axis] = 1
    index = rng.randint(0, data.shape[axis], shape)
    x = nd.array(data)
    x.attach_grad()
    with autograd.record():
        out = nd.pick(x, nd.array(index.squeeze(axis)), axis=axis)
    weights = rng.randn(*out.shape)
    out.backward(nd.array(weights))
    expected = np.take_along_axis(data, index, axis=axis).squeeze(axis)
    np.testing.assert_array_equal(out.asnumpy(), expected.astype(np.float32))
    grad = np.zeros(data.shape)
    np.put_along_axis(grad, index, np.expand_dims(weights, axis), axis=axis)
    np.testing.assert_array_equal(x.grad.asnumpy(), grad.astype(np.float32))


def test_take_raise_mode_rejects_out_of_range_indices():
    data = nd.arange(6).reshape((3, 2))
    assert nd.take(data, nd.array([2, 0]), mode='raise').asnumpy().tolist() == [[4, 5], [0, 1]]
    for index in ([3], [-1]):  # MXNet's range is [0, size) in this mode
        with pytest.raises(MXNetError, match='out of range'):
            nd.take(data, nd.array(index), mode='raise')
