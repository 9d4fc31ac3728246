"""nd.sample_*: MXNet 1.x's argument names, NDArray parameters, output
``param.shape + shape``."""
import numpy as np
import pytest

from minigluon import nd
from minigluon.base import MXNetTypeError


def test_sample_normal_shape_follows_the_parameters():
    """MXNet 1.9.1 (its issue 16135): no shape or shape () adds no axis."""
    mu, sigma = nd.array([10.0]), nd.array([0.5])
    assert nd.sample_normal(mu=mu, sigma=sigma).shape == (1,)
    assert nd.sample_normal(mu=mu, sigma=sigma, shape=()).shape == (1,)
    assert nd.sample_normal(mu=mu, sigma=sigma, shape=1).shape == (1, 1)
    assert nd.sample_normal(mu, sigma, (2, 3)).shape == (1, 2, 3)


def test_samplers_use_their_parameters():
    draws = nd.sample_normal(nd.array([10.0, -10.0]), nd.array([0.1, 0.1]), shape=500)
    np.testing.assert_allclose(draws.asnumpy().mean(axis=1), [10, -10], atol=0.05)
    rate = nd.sample_exponential(lam=nd.array([100.0, 0.5]), shape=4000).asnumpy()
    np.testing.assert_allclose(rate.mean(axis=1), [0.01, 2.0], rtol=0.1)
    low_high = nd.sample_uniform(low=nd.array([2.0]), high=nd.array([3.0]), shape=100,
                                 dtype='float64')
    assert low_high.dtype == np.float64 and 2 <= low_high.asnumpy().min() < 3
    assert nd.sample_gamma(alpha=nd.array([[1.0, 2.0]]), beta=nd.array([[1.0, 1.0]])).shape \
        == (1, 2)


def test_sample_functions_want_ndarray_parameters():
    with pytest.raises(MXNetTypeError, match='mu must be an NDArray'):
        nd.sample_normal(mu=1.0, sigma=nd.array([1.0]))
    with pytest.raises(MXNetTypeError, match='unexpected'):
        nd.sample_normal(nd.array([1.0]), nd.array([1.0]), loc=0)
