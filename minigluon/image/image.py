"""MXNet's module path ``mx.image.image``, which scripts and MXNet's own tests import
(``mx.image.image.imread``): the same names as ``mx.image``."""
from .augmenters import *  # noqa: F401,F403
from .augmenters import __all__ as _augmenters_all
from .image_iter import *  # noqa: F401,F403
from .image_iter import __all__ as _image_iter_all
from .processing import *  # noqa: F401,F403
from .processing import __all__ as _processing_all

__all__ = list(_processing_all) + list(_augmenters_all) + list(_image_iter_all)
