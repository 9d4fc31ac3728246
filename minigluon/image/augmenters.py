"""Image augmenters: callables that take one HWC image (an NDArray) and return it
changed, and ``CreateAugmenter``, which builds MXNet's standard list of them.

Random draws follow MXNet's: Python's ``random`` module for the jitter factors, the
flip and gray decisions and the order of a ``RandomOrderAug``; numpy's global generator
for the PCA lighting noise (and, through ``processing``, for the random crops). Seeding
``random`` and ``numpy.random`` as MXNet's tests do therefore repeats a run. The colour
augmenters work on float images (after ``CastAug``) and, as in MXNet, change their
input in place where they can.
"""
import json
import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import MXNetTypeError, MXNetValueError
from ..ndarray.image import interp_method
from .processing import center_crop, color_normalize, imresize, random_crop, \
    random_size_crop, resize_short

__all__ = ['Augmenter', 'SequentialAug', 'RandomOrderAug', 'ResizeAug', 'ForceResizeAug',
           'RandomCropAug', 'RandomSizedCropAug', 'CenterCropAug', 'BrightnessJitterAug',
           'ContrastJitterAug', 'SaturationJitterAug', 'HueJitterAug', 'ColorJitterAug',
           'LightingAug', 'ColorNormalizeAug', 'RandomGrayAug', 'HorizontalFlipAug', 'CastAug',
           'CreateAugmenter']

# ITU-R 601 luma weights of R, G and B (the gray that contrast and saturation mix in).
_LUMA = (0.299, 0.587, 0.114)
# RGB -> YIQ and back, for rotating the hue in the IQ plane.
_RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114],
                        [0.596, -0.274, -0.321],
                        [0.211, -0.523, 0.311]])
_YIQ_TO_RGB = np.array([[1.0, 0.956, 0.621],
                        [1.0, -0.272, -0.647],
                        [1.0, -1.107, 1.705]])
# ImageNet's RGB statistics: what ``mean=True`` and ``std=True`` stand for, and the
# eigen-decomposition of its pixel covariance that ``pca_noise`` perturbs along.
IMAGENET_MEAN = (123.68, 116.28, 103.53)
IMAGENET_STD = (58.395, 57.12, 57.375)
IMAGENET_EIGVAL = np.array([55.46, 4.794, 1.148])
IMAGENET_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                            [-0.5808, -0.0045, -0.8140],
                            [-0.5836, -0.6948, 0.4203]])


class Augmenter:
    """The base of image augmenters: ``aug(src)`` returns the augmented HWC image.

    Parameters
    ----------
    **kwargs
        The augmenter's settings, kept (arrays as lists) for ``dumps``.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for key, value in self._kwargs.items():
            if isinstance(value, nd.NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                self._kwargs[key] = value.tolist()

    def dumps(self):
        """The augmenter as a JSON string: ``["<class name in lower case>", {settings}]``.

        Returns
        -------
        str
        """
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError('%s must implement __call__(src)' % type(self).__name__)


class SequentialAug(Augmenter):
    """Apply augmenters one after another.

    Parameters
    ----------
    ts : list of Augmenter
    """

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        """``[name, [each augmenter's dumps()]]``: a list, not a string, as in MXNet.

        Returns
        -------
        list
        """
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(Augmenter):
    """Apply augmenters in a random order, shuffled (in place) on every call.

    Parameters
    ----------
    ts : list of Augmenter
    """

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    dumps = SequentialAug.dumps

    def __call__(self, src):
        random.shuffle(self.ts)
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resize so that the shorter edge is ``size``, keeping the aspect ratio.

    Parameters
    ----------
    size : int
        The new length of the shorter edge.
    interp : int, default 2
        OpenCV's interpolation code (see ``resize_short``).
    """

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` = (width, height), whatever the aspect ratio.

    Parameters
    ----------
    size : tuple of (int, int)
    interp : int, default 2
        OpenCV's interpolation code (see ``resize_short``).
    """

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, self.size[0], self.size[1], interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """A random crop of ``size`` = (width, height), upsampled when the image is smaller.

    Parameters
    ----------
    size : tuple of (int, int)
    interp : int, default 2
        OpenCV's interpolation code (see ``resize_short``).
    """

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A crop of random area and aspect ratio, resized to ``size``.

    Parameters
    ----------
    size : tuple of (int, int)
        The output's (width, height).
    area : float or tuple of (float, float)
        The fraction of the image's area to keep: a minimum (up to 1) or a range.
    ratio : tuple of (float, float)
        The range of the crop's aspect ratio (width / height).
    interp : int, default 2
        OpenCV's interpolation code (see ``resize_short``).
    """

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        if 'min_area' in kwargs:
            warnings.warn('`min_area` is deprecated. Please use `area` instead.',
                          DeprecationWarning)
            area = kwargs.pop('min_area')
        if kwargs:
            raise MXNetTypeError('RandomSizedCropAug: unexpected keyword arguments %s'
                                 % sorted(kwargs))
        self.size = size
        self.area = area
        self.ratio = ratio
        self.interp = interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """The central crop of ``size`` = (width, height), upsampled when the image is smaller.

    Parameters
    ----------
    size : tuple of (int, int)
    interp : int, default 2
        OpenCV's interpolation code (see ``resize_short``).
    """

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scale the image by ``1 + u``, ``u`` uniform in [-brightness, brightness].

    Parameters
    ----------
    brightness : float
        The jitter's range, in [0, 1].
    """

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        src *= alpha
        return src


class ContrastJitterAug(Augmenter):
    """Blend the image with its mean gray level: ``alpha * src + (1 - alpha) * mean_gray``,
    ``alpha = 1 + u``, ``u`` uniform in [-contrast, contrast].

    Parameters
    ----------
    contrast : float
        The jitter's range, in [0, 1].
    """

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[_LUMA]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef.as_in_context(src.context)
        # The mean over pixels of the luma, times (1 - alpha): 3 / size = 1 / (H * W).
        gray = (3.0 * (1.0 - alpha) / gray.size) * nd.sum(gray)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its own gray level: ``alpha * src + (1 - alpha) * gray``,
    ``alpha = 1 + u``, ``u`` uniform in [-saturation, saturation].

    Parameters
    ----------
    saturation : float
        The jitter's range, in [0, 1].
    """

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[_LUMA]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = nd.sum(src * self.coef.as_in_context(src.context), axis=2, keepdims=True)
        gray *= (1.0 - alpha)
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue by ``u * 180`` degrees, ``u`` uniform in [-hue, hue], with the
    linear approximation in YIQ space (a rotation of the I-Q plane).

    Parameters
    ----------
    hue : float
        The jitter's range, in [0, 1].
    """

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = _RGB_TO_YIQ
        self.ityiq = _YIQ_TO_RGB

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        cos, sin = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rotation = np.array([[1.0, 0.0, 0.0],
                             [0.0, cos, -sin],
                             [0.0, sin, cos]])
        # Pixels are rows, so the colour transform multiplies from the right, transposed.
        transform = np.dot(np.dot(self.ityiq, rotation), self.tyiq).T
        return nd.dot(src, nd.array(transform, ctx=src.context))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0), in a random order.

    Parameters
    ----------
    brightness, contrast, saturation : float
        The jitters' ranges, in [0, 1]; 0 leaves that one out.
    """

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add ``eigvec @ (alpha * eigval)`` to every pixel,
    ``alpha`` three draws of N(0, alphastd).

    Parameters
    ----------
    alphastd : float
        The noise's standard deviation.
    eigval : numpy.ndarray, shape (3,)
        Eigenvalues of the RGB covariance.
    eigvec : numpy.ndarray, shape (3, 3)
        The matching eigenvectors, as columns.
    """

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += nd.array(rgb, ctx=src.context)
        return src


def _on(value, src):
    """``value`` on ``src``'s device when it is an NDArray."""
    return value.as_in_context(src.context) if isinstance(value, nd.NDArray) else value


class ColorNormalizeAug(Augmenter):
    """``(src - mean) / std``, per channel.

    Parameters
    ----------
    mean : NDArray, numpy.ndarray or None
        The RGB mean to subtract.
    std : NDArray, numpy.ndarray or None
        The RGB standard deviation to divide by.
    """

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, nd.NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, nd.NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, _on(self.mean, src), _on(self.std, src))


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace every channel by the pixel's gray level
    (0.21 R + 0.72 G + 0.07 B); the image keeps its three channels.

    Parameters
    ----------
    p : float
    """

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21],
                             [0.72, 0.72, 0.72],
                             [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, self.mat.as_in_context(src.context))
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror the image left to right.

    Parameters
    ----------
    p : float
    """

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast the image to ``typ`` (float32 by default).

    Parameters
    ----------
    typ : str, default 'float32'
    """

    def __init__(self, typ='float32'):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


def _channel_stats(name, value, imagenet):
    """``value`` for CreateAugmenter's ``mean``/``std``: True means ImageNet's."""
    if value is True:
        return nd.array(imagenet)
    if value is None:
        return None
    if not isinstance(value, (np.ndarray, nd.NDArray)) or value.ndim == 0 \
            or value.shape[0] not in (1, 3):
        raise MXNetValueError(
            'CreateAugmenter: %s must be True (ImageNet\'s), None, or a numpy array or '
            'NDArray of 1 or 3 values, got %r; pass e.g. np.array([%s])'
            % (name, value, ', '.join(str(v) for v in imagenet)))
    return value


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,
                    rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                    saturation=0, hue=0, pca_noise=0, rand_gray=0, inter_method=2):
    """MXNet's standard list of augmenters, in the order they are applied.

    Resize (optional), crop to ``data_shape`` (center, random, or random sized), mirror,
    cast to float32, colour jitter, hue jitter, PCA lighting, random gray, normalize.

    Parameters
    ----------
    data_shape : tuple of int
        The output's (channels, height, width).
    resize : int, default 0
        When > 0, first resize the shorter edge to this.
    rand_crop : bool, default False
        Crop at a random place rather than the centre.
    rand_resize : bool, default False
        Crop a random area and aspect ratio (ImageNet's "inception" crop); needs
        ``rand_crop``.
    rand_mirror : bool, default False
        Mirror left to right with probability 0.5.
    mean : True, numpy.ndarray, NDArray or None
        The RGB mean to subtract; True means ImageNet's (123.68, 116.28, 103.53).
    std : True, numpy.ndarray, NDArray or None
        The RGB standard deviation to divide by; True means ImageNet's
        (58.395, 57.12, 57.375).
    brightness, contrast, saturation, hue : float, default 0
        The jitters' ranges, in [0, 1].
    pca_noise : float, default 0
        The standard deviation of AlexNet's PCA lighting noise.
    rand_gray : float, default 0
        The probability of turning the image gray (keeping three channels).
    inter_method : int, default 2
        OpenCV's interpolation code for every resize: 0 nearest, 1 bilinear, 2 bicubic,
        3 area, 4 lanczos, 9 auto, 10 random.

    Returns
    -------
    list of Augmenter
    """
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))

    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise MXNetValueError('CreateAugmenter: rand_resize=True needs rand_crop=True')
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0),
                                          inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))

    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, IMAGENET_EIGVAL, IMAGENET_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))

    mean = _channel_stats('mean', mean, IMAGENET_MEAN)
    std = _channel_stats('std', std, IMAGENET_STD)
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
