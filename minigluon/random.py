"""``mx.random``: seeding and sampling shared with ``nd.random``.

The functions are ``nd.random``'s own (their docstrings are there): ``seed`` seeds
every device's generator, and the samplers draw as ``mx.random.uniform(...)`` does in
MXNet.
"""
from .ndarray.random import (  # noqa: F401
    exponential, gamma, generalized_negative_binomial, multinomial, negative_binomial, normal,
    poisson, randint, randn, seed, shuffle, uniform)
