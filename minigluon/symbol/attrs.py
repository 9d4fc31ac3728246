"""Attribute values of graph nodes: Python values <-> the strings MXNet stores.

MXNet's Python front end writes every operator argument into the graph with
``str()``: ``kernel=(3, 3)`` becomes ``"(3, 3)"``, ``no_bias=True`` ``"True"``,
``eps=1e-5`` ``"1e-05"``. Reading parses literals back and keeps other text
(``"relu"``, ``"float32"``) as it is.
"""
import ast
import copy
import functools

import numpy as np

# MXNet's integer codes for dtypes in ``__dtype__`` attributes.
DTYPE_CODES = {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3, 'int32': 4, 'int8': 5,
               'int64': 6, 'bool': 7, 'int16': 8, 'uint16': 9, 'uint32': 10, 'uint64': 11,
               'bfloat16': 12}
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}

_WORDS = {'true': True, 'false': False, 'none': None}


def to_string(value):
    """``value`` as MXNet writes it into a graph."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return 'True' if value else 'False'
    if isinstance(value, (list, tuple)):
        return str(tuple(v.item() if isinstance(v, np.generic) else v for v in value))
    if isinstance(value, (type, np.dtype)):
        return np.dtype(value).name
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)


def from_string(text):
    """The Python value of an attribute string (``"(3, 3)"`` -> ``(3, 3)``); text that
    is not a literal (``"relu"``) stays a string."""
    if not isinstance(text, str):
        return text
    value, shared = _parse(text)
    return value if shared else copy.deepcopy(value)


def _immutable(value):
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, str))


# Inference and planning read every node's attributes on each pass over a graph: each
# text is parsed once; ``(value, shared)``, values holding lists are copied per call.
@functools.lru_cache(maxsize=8192)
def _parse(text):
    value = _literal(text)
    return value, _immutable(value)


def _literal(text):
    stripped = text.strip()
    if stripped.lower() in _WORDS:
        return _WORDS[stripped.lower()]
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, (int, float, tuple)) or value is None:
        return value
    return text


def is_hidden(key):
    """True for the ``__name__`` attributes a user sets (``__lr_mult__``, ``__shape__``):
    they describe a node, they are not operator arguments."""
    return key.startswith('__') and key.endswith('__')
