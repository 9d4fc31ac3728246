"""``mx.random``: seeding and sampling shared with ``nd.random``."""
from .ndarray.random import (  # noqa: F401
    exponential, gamma, generalized_negative_binomial, multinomial, negative_binomial, normal,
    poisson, randint, randn, seed, shuffle, uniform)
