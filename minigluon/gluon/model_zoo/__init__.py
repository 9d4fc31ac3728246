"""``gluon.model_zoo``: model definitions, and MXNet's published pretrained weights
fetched and verified by ``model_store``."""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
