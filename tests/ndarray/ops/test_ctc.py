"""CTCLoss with data lengths: the steps past a sample's length take no part, whatever
they hold (MXNet's tests put NaN there), and ``nd.contrib.CTCLoss`` is the same op."""
import numpy as np
import pytest

from minigluon import autograd, nd


@pytest.mark.parametrize('op', [nd.CTCLoss, nd.contrib.CTCLoss, nd.contrib.ctc_loss])
def test_steps_past_the_data_length_may_hold_nan(op):
    rng = np.random.RandomState(0)
    finite = rng.uniform(-1, 1, size=(4, 2, 5))
    padded = np.concatenate([finite, np.full((2, 2, 5), np.nan)])
    losses, grads = [], []
    for data in (finite, padded):
        x = nd.array(data)
        x.attach_grad()
        with autograd.record():
            loss = op(x, nd.array([[1, 2], [3, 0]]), nd.array([4, 4]), use_data_lengths=True)
        loss.backward()
        losses.append(loss.asnumpy())
        grads.append(x.grad.asnumpy())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)
    np.testing.assert_allclose(grads[1][:4], grads[0], rtol=1e-5, atol=1e-7)
    assert not grads[1][4:].any()
