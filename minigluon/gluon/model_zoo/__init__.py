"""``gluon.model_zoo``: model definitions (no pretrained weights ship with minigluon)."""
from . import vision  # noqa: F401
