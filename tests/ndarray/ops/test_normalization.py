"""BatchNorm's statistics outputs, and the two ops MXNet 1.x keeps beside it: the legacy
BatchNorm_v1 and contrib.SyncBatchNorm (within one process). The numbers are MXNet
1.9.1's."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError

X = np.arange(24).reshape(4, 3, 2) * 0.1 - 1
HEAD = np.cos(np.arange(24)).reshape(4, 3, 2)
GAMMA, BETA = [1., 2., 3.], [0., 1., 0.]
# MXNet 1.9.1, fix_gamma=False, output_mean_var=True, one backward with HEAD
MEAN = [-0.05, 0.15, 0.35]
VAR = [0.4525, 0.4525, 0.4525]
MOVING_MEAN = [-0.005, 0.015, 0.035]
MOVING_VAR = [0.94525, 0.94525, 0.94525]
DATA_GRAD = [0.2867758274078369, -0.3997528553009033, 0.8249620795249939, -0.9701950550079346]


def _run(op, **kwargs):
    x = nd.array(X)
    x.attach_grad()
    moving_mean, moving_var = nd.zeros(3), nd.ones(3)
    with autograd.record():
        out = op(x, nd.array(GAMMA), nd.array(BETA), moving_mean, moving_var,
                 fix_gamma=False, output_mean_var=True, **kwargs)
    out[0].backward(nd.array(HEAD))
    return out, moving_mean, moving_var, x.grad


def test_batchnorm_gives_the_inverse_standard_deviation():
    out, moving_mean, moving_var, grad = _run(nd.BatchNorm)
    np.testing.assert_allclose(out[1].asnumpy(), MEAN, rtol=1e-6, atol=1e-7)
    # MXNet 1.9.1: 1 / sqrt(var + eps)
    np.testing.assert_allclose(out[2].asnumpy(), [1.4849483966827393] * 3, rtol=1e-6)
    np.testing.assert_allclose(moving_mean.asnumpy(), MOVING_MEAN, rtol=1e-5)
    np.testing.assert_allclose(moving_var.asnumpy(), MOVING_VAR, rtol=1e-6)
    np.testing.assert_allclose(grad.asnumpy().ravel()[:4], DATA_GRAD, rtol=1e-5)


@pytest.mark.parametrize('op', [nd.BatchNorm_v1, nd.contrib.SyncBatchNorm])
def test_legacy_and_sync_batchnorm_give_the_variance(op):
    kwargs = {'key': 'bn'} if op is nd.contrib.SyncBatchNorm else {}
    out, moving_mean, moving_var, grad = _run(op, **kwargs)
    np.testing.assert_allclose(out[1].asnumpy(), MEAN, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out[2].asnumpy(), VAR, rtol=1e-6)
    expected, _, _, _ = _run(nd.BatchNorm)
    np.testing.assert_allclose(out[0].asnumpy(), expected[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(moving_mean.asnumpy(), MOVING_MEAN, rtol=1e-5)
    np.testing.assert_allclose(moving_var.asnumpy(), MOVING_VAR, rtol=1e-6)
    np.testing.assert_allclose(grad.asnumpy().ravel()[:4], DATA_GRAD, rtol=1e-5)


def test_sync_batchnorm_needs_a_key_and_one_device():
    args = [nd.array(X), nd.ones(3), nd.zeros(3), nd.zeros(3), nd.ones(3)]
    with pytest.raises(MXNetError, match='key'):
        nd.contrib.SyncBatchNorm(*args)
    with pytest.raises(MXNetError, match='ndev=2'):
        nd.contrib.SyncBatchNorm(*args, key='bn', ndev=2)


@pytest.mark.parametrize('make', [
    lambda data: mx.sym.BatchNorm_v1(data, name='bn', output_mean_var=True),
    lambda data: mx.sym.contrib.SyncBatchNorm(data, name='bn', output_mean_var=True,
                                              key='bn')])
def test_symbols_keep_moving_statistics_as_auxiliary_states(make):
    sym = make(mx.sym.var('data'))
    assert sym.list_arguments() == ['data', 'bn_gamma', 'bn_beta']
    assert sym.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    assert sym.list_outputs() == ['bn_output', 'bn_mean', 'bn_var']
