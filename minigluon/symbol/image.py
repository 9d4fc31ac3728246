"""``mx.sym.image``: MXNet's image operators as graph nodes (``_image_normalize`` ...),
named after the function (``normalize0``) as MXNet names them; ``mx.nd.image`` runs the
same kernels."""
from .op_specs import names as _names, spec_of as _spec_of
from .symbol import _FUNCTIONS, make_function as _make_function

__all__ = []

for _mx_name in _names():
    if _mx_name.startswith('_image_'):
        _fname = _mx_name[len('_image_'):]
        _top_level = _FUNCTIONS.get(_fname)
        globals()[_fname] = _make_function(_fname, _spec_of(_mx_name))
        if _top_level is not None:  # mx.sym.crop stays slice's, as in MXNet
            _FUNCTIONS[_fname] = _top_level
        __all__.append(_fname)
