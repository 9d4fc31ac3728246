"""The tape's backward walk: a node handing a variable's complete gradient over before
its backward returns (``take_final``), and only when the gradient is complete."""
import numpy as np
import pytest

from minigluon import autograd, nd
from minigluon.base import MXNetError
from minigluon.ndarray import dispatch, tape


def _record(inputs, backward):
    out = nd.array(np.zeros(3))
    dispatch.attach_node(backward, inputs, [out], 'test_node')
    return out


def test_a_node_hands_over_the_final_gradient_of_its_own_variable_at_once():
    x = nd.array(np.zeros(3))
    x.attach_grad()
    seen = []

    def backward(dy):
        taken = tape.take_final(x, dy * 2)
        seen.append((taken, x._grad_writes, x.grad.asnumpy().tolist()))
        return (None,) if taken else (dy * 2,)

    _record([x], backward).backward()
    assert seen == [(True, 1, [2.0, 2.0, 2.0])]
    assert x.grad.asnumpy().tolist() == [2.0, 2.0, 2.0] and x._grad_writes == 1


def test_a_variable_twice_among_the_inputs_or_read_later_is_not_final_early():
    x = nd.array(np.zeros(3))
    x.attach_grad()
    taken = []

    def twice(dy):
        taken.append(tape.take_final(x, dy))
        return dy, dy
    _record([x, x], twice).backward()
    assert taken == [False] and x.grad.asnumpy().tolist() == [2.0, 2.0, 2.0]

    del taken[:]
    # the top node reads x and y; y's node, below it, is x's last reader: the final
    # gradient it hands over holds the top node's part too
    y = _record([x], lambda dy: (None if taken.append(tape.take_final(x, dy)) or taken[-1]
                                 else dy,))
    z = nd.array(np.zeros(3))
    dispatch.attach_node(lambda dz: (dz, dz * 3), [y, x], [z], 'top')
    z.backward()
    assert taken == [True] and x.grad.asnumpy().tolist() == [4.0, 4.0, 4.0]


def test_a_node_returning_a_gradient_it_handed_over_is_an_error():
    x = nd.array(np.zeros(3))
    x.attach_grad()
    out = _record([x], lambda dy: (dy if tape.take_final(x, dy) else None,))
    with pytest.raises(MXNetError, match='handed over'):
        out.backward()


def test_outside_a_backward_that_writes_gradients_nothing_is_taken():
    x = nd.array(np.zeros(3))
    x.attach_grad()
    taken = []
    out = _record([x], lambda dy: (taken.append(tape.take_final(x, dy)) or dy,))
    (grad,) = autograd.grad(out, [x], head_grads=nd.array(np.ones(3)))
    assert taken == [False] and grad.asnumpy().tolist() == [1.0, 1.0, 1.0]
    assert tape.take_final(x, grad._data) is False
