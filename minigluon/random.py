"""``mx.random``: seeding and sampling shared with ``nd.random``.

The functions are ``nd.random``'s own (their docstrings are there): ``seed`` seeds
every device's generator, and ``uniform``, ``normal``, ``randint`` and ``shuffle``
sample as ``mx.random.uniform(...)`` does in MXNet.
"""
from .ndarray.random import normal, randint, seed, shuffle, uniform  # noqa: F401
