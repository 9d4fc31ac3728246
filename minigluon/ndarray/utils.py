"""``mx.nd.utils``: MXNet's module of array creation and file helpers."""
from .creation import array, empty, zeros  # noqa: F401
from .serialization import load, load_frombuffer, save  # noqa: F401
