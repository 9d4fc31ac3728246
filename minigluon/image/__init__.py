"""``mx.image`` (also ``mx.img``): decoding and transforming images, augmenters, ImageIter.

``processing`` holds the functions on one image (decode, resize, crop, rotate);
``augmenters`` the Augmenter classes and ``CreateAugmenter``; ``image_iter`` the
``ImageIter`` data iterator over ``.rec`` files and image lists.
"""
from .processing import *  # noqa: F401,F403
from .processing import __all__ as _processing_all

__all__ = list(_processing_all)
