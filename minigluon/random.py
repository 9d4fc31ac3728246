"""``mx.random``: seeding and sampling shared with ``nd.random``."""
from .ndarray.random import normal, randint, seed, shuffle, uniform  # noqa: F401
