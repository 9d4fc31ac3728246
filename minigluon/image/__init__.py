"""``mx.image`` (also ``mx.img``): decoding and transforming images, augmenters, ImageIter.

``processing`` holds the functions on one image (decode, resize, crop, rotate);
``augmenters`` the Augmenter classes and ``CreateAugmenter``; ``image_iter`` the
``ImageIter`` data iterator over ``.rec`` files and image lists; ``image`` gives all of
them under MXNet's module path ``mx.image.image``.
"""
from . import image
from .image import *  # noqa: F401,F403
from .image import __all__
