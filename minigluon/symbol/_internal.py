"""``mx.sym._internal``: the graph ops MXNet keeps out of ``mx.sym`` (names starting with
``_``, such as ``_plus_scalar`` behind ``x + 1``)."""
from .op_specs import names as _names, spec_of as _spec_of
from .symbol import make_function as _make_function

for _name in _names():
    if _name.startswith('_'):
        globals()[_name] = _make_function(_name, _spec_of(_name))
