"""The parameters of ``mx.io.ImageRecordIter``: MXNet 1.9's names and defaults, values
given as Python objects or as the strings MXNet accepts, converted and checked."""
import numbers
import os
import re
import warnings

import numpy as np

from ..base import MXNetValueError

__all__ = ['parse_params']

_DTYPES = {'float32': np.float32, 'uint8': np.uint8, 'int8': np.int8}


def _to_bool(name, value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return value != 0
    text = str(value).strip().lower()
    if text in ('true', '1'):
        return True
    if text in ('false', '0'):
        return False
    raise MXNetValueError('%s must be a bool, got %r' % (name, value))


def _to_int(name, value):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise MXNetValueError('%s must be an int, got %r' % (name, value)) from None


def _to_float(name, value):
    try:
        return float(value if isinstance(value, numbers.Real) else str(value).strip())
    except ValueError:
        raise MXNetValueError('%s must be a number, got %r' % (name, value)) from None


def _to_str(name, value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if not isinstance(value, str):
        raise MXNetValueError('%s must be a path (a str), got %r' % (name, value))
    return value


def _to_ints(name, value):
    if isinstance(value, str):
        text = value.strip().strip('()[]')
        parts = [p for p in re.split(r'[,\s]+', text) if p]
        return tuple(_to_int(name, p) for p in parts)
    try:
        return tuple(_to_int(name, v) for v in value)
    except TypeError:
        raise MXNetValueError('%s must be a tuple of ints, got %r' % (name, value)) from None


def _to_optional_int(name, value):
    return None if value is None or str(value) == 'None' else _to_int(name, value)


def _to_optional_float(name, value):
    return None if value is None or str(value) == 'None' else _to_float(name, value)


# name -> (default, converter); the names and defaults of MXNet 1.9's ImageRecordIter
_PARAMS = {
    'path_imgrec': ('', _to_str), 'path_imgidx': ('', _to_str),
    'path_imglist': ('', _to_str), 'aug_seq': ('aug_default', _to_str),
    'label_width': (1, _to_int), 'data_shape': (None, _to_ints),
    'preprocess_threads': (4, _to_int), 'verbose': (True, _to_bool),
    'num_parts': (1, _to_int), 'part_index': (0, _to_int), 'device_id': (0, _to_int),
    'shuffle_chunk_size': (0, _to_int), 'shuffle_chunk_seed': (0, _to_int),
    'seed_aug': (None, _to_optional_int), 'shuffle': (False, _to_bool), 'seed': (0, _to_int),
    'batch_size': (None, _to_int), 'round_batch': (True, _to_bool),
    'prefetch_buffer': (4, _to_int), 'ctx': ('gpu', _to_str), 'dtype': (None, None),
    'data_name': ('data', _to_str), 'label_name': ('softmax_label', _to_str),
    'mean_img': ('', _to_str),
    'resize': (-1, _to_int), 'rand_crop': (False, _to_bool),
    'random_resized_crop': (False, _to_bool), 'max_rotate_angle': (0, _to_int),
    'max_aspect_ratio': (0.0, _to_float), 'min_aspect_ratio': (None, _to_optional_float),
    'max_shear_ratio': (0.0, _to_float), 'max_crop_size': (-1, _to_int),
    'min_crop_size': (-1, _to_int), 'max_random_scale': (1.0, _to_float),
    'min_random_scale': (1.0, _to_float), 'max_random_area': (1.0, _to_float),
    'min_random_area': (1.0, _to_float), 'max_img_size': (1e10, _to_float),
    'min_img_size': (0.0, _to_float), 'brightness': (0.0, _to_float),
    'contrast': (0.0, _to_float), 'saturation': (0.0, _to_float),
    'pca_noise': (0.0, _to_float), 'random_h': (0, _to_int), 'random_s': (0, _to_int),
    'random_l': (0, _to_int), 'rotate': (-1, _to_int), 'rotate_list': ((), _to_ints),
    'fill_value': (255, _to_int), 'inter_method': (1, _to_int), 'pad': (0, _to_int),
    'mirror': (False, _to_bool), 'rand_mirror': (False, _to_bool),
    'mean_r': (0.0, _to_float), 'mean_g': (0.0, _to_float), 'mean_b': (0.0, _to_float),
    'mean_a': (0.0, _to_float), 'std_r': (1.0, _to_float), 'std_g': (1.0, _to_float),
    'std_b': (1.0, _to_float), 'std_a': (1.0, _to_float), 'scale': (1.0, _to_float),
    'max_random_contrast': (0.0, _to_float), 'max_random_illumination': (0.0, _to_float),
}


def parse_params(kwargs):
    """MXNet's parameters from ``kwargs`` (values or their string forms), checked."""
    unknown = sorted(set(kwargs) - set(_PARAMS))
    if unknown:
        # MXNet ignores names it does not know; say so, since it is usually a typo
        warnings.warn('ImageRecordIter ignores unknown parameters %s' % ', '.join(unknown),
                      stacklevel=3)
    p = {}
    for name, (default, convert) in _PARAMS.items():
        value = kwargs.get(name, default)
        p[name] = value if convert is None or value is None else convert(name, value)
    for name in ('path_imgrec', 'data_shape', 'batch_size'):
        if p[name] in (None, ''):
            raise MXNetValueError('ImageRecordIter needs %s' % name)
    shape = p['data_shape']
    if len(shape) != 3 or min(shape) <= 0:
        raise MXNetValueError('data_shape must be (channels, height, width) of positive ints, '
                              'got %r' % (shape,))
    if shape[0] not in (1, 3, 4):
        raise MXNetValueError('Invalid output shape %s: data_shape[0] is the number of '
                              'channels and must be 1 (gray), 3 (RGB) or 4 (RGBA)'
                              % (list(shape),))
    if p['batch_size'] <= 0:
        raise MXNetValueError('batch_size must be positive, got %d' % p['batch_size'])
    if p['label_width'] < 1:
        raise MXNetValueError('label_width must be >= 1, got %d' % p['label_width'])
    if p['preprocess_threads'] < 0:
        raise MXNetValueError('preprocess_threads must be >= 0, got %d'
                              % p['preprocess_threads'])
    if not 0 <= p['part_index'] < p['num_parts']:
        raise MXNetValueError('part_index must be in [0, num_parts), got part_index=%d with '
                              'num_parts=%d' % (p['part_index'], p['num_parts']))
    inter = p['inter_method']
    if not (0 <= inter <= 4 or inter in (9, 10)):
        raise MXNetValueError('invalid inter_method %d: valid values are 0 (nearest), 1 '
                              '(bilinear), 2 (bicubic), 3 (area), 4 (lanczos), 9 (auto) and '
                              '10 (random)' % inter)
    if p['aug_seq'] != 'aug_default':
        raise MXNetValueError("aug_seq=%r: only MXNet's 'aug_default' augmenter exists"
                              % p['aug_seq'])
    dtype = p['dtype']
    try:
        name = 'float32' if dtype is None or str(dtype) == 'None' else np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in _DTYPES:
        raise MXNetValueError('dtype=%r: ImageRecordIter makes float32, uint8 or int8 batches'
                              % (dtype,))
    p['dtype'] = _DTYPES[name]
    if p['shuffle_chunk_size'] > 0:
        warnings.warn('shuffle_chunk_size is not implemented: records are shuffled within '
                      'each 8 MiB chunk (or, with path_imgidx, over the whole part)',
                      stacklevel=3)
    return p
