"""``mx.operator``: operators written in Python, as MXNet 1.x's custom operators.

Subclass ``CustomOp`` (the computation) and ``CustomOpProp`` (what the op takes and
makes), register the property class with ``@mx.operator.register('name')``, and call
the op with ``mx.nd.Custom(*inputs, op_type='name', **kwargs)`` or, in graphs and
hybridized blocks, ``mx.sym.Custom``. Keyword arguments reach the property's
``__init__`` as strings. Autograd differentiates through the op with its ``backward``.

Example::

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register('sigmoid')
    class SigmoidProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    y = mx.nd.Custom(x, op_type='sigmoid')
"""
import collections
import inspect
import itertools
import warnings

from . import symbol as _symbol
from .base import MXNetError
from .ndarray import custom as _custom
from .ndarray.creation import array as _array
from .symbol import op_specs as _op_specs

__all__ = ['CustomOp', 'CustomOpProp', 'register', 'get_all_registered_operators',
           'get_operator_arguments', 'OperatorArguments', 'PythonOp', 'NumpyOp', 'NDArrayOp']


class CustomOp:
    """The computation of a custom operator; ``CustomOpProp.create_operator`` makes it.

    ``forward`` and ``backward`` receive preallocated arrays and write their results
    into them, with ``assign``. They run with autograd recording paused.
    """

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute the outputs; override it.

        Parameters
        ----------
        is_train : int
            1 in training mode (``autograd.record()``, ``is_train=True``), else 0.
        req : list of str
            How to write each output: 'null', 'write', 'inplace' or 'add'
            (see ``assign``).
        in_data : list of NDArray
            The arguments, in ``list_arguments`` order.
        out_data : list of NDArray
            The outputs to fill, shaped by ``infer_shape``.
        aux : list of NDArray
            The auxiliary states; changes written into them stay.
        """

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute the gradients of the arguments; override it.

        Parameters
        ----------
        req : list of str
            How to write each of ``in_grad``; 'null' for arguments whose gradient
            nobody needs.
        out_grad : list of NDArray
            The gradients of the outputs.
        in_data, out_data, aux : list of NDArray
            As ``forward`` saw them.
        in_grad : list of NDArray
            The arguments' gradients to fill.
        """

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says: 'null' leaves ``dst`` alone,
        'write' and 'inplace' overwrite it, 'add' adds to it.

        Raises
        ------
        MXNetError
            For any other ``req``.
        """
        if req == 'null':
            return
        if req in ('write', 'inplace'):
            dst[:] = src
        elif req == 'add':
            dst[:] += src
        else:
            raise MXNetError("assign: req must be 'null', 'write', 'inplace' or 'add', got %r"
                             % (req,))


class CustomOpProp:
    """What a custom operator takes and makes; subclass it and register the subclass.

    Its ``__init__`` receives the keyword arguments of the ``Custom`` call (other than
    ``op_type``), as strings.

    Parameters
    ----------
    need_top_grad : bool, default True
        Whether ``backward`` reads the gradients of the outputs; a loss that makes its own
        gradient (a softmax with its label) passes False.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """The shapes of the arguments, outputs and auxiliary states from the arguments'.

        Parameters
        ----------
        in_shape : list of list of int
            One shape per argument ([] where not known yet, in graphs).

        Returns
        -------
        tuple of 2 or 3 lists
            Argument shapes, output shapes, and optionally auxiliary state shapes. By
            default every output has the first argument's shape.
        """
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """The dtypes of the arguments, outputs and auxiliary states from the arguments'.

        Parameters
        ----------
        in_type : list of numpy scalar types
            One per argument (None where not known yet, in graphs).

        Returns
        -------
        tuple of 2 or 3 lists
            By default everything has the first argument's dtype.
        """
        return in_type, [in_type[0]] * len(self.list_outputs()), \
            [in_type[0]] * len(self.list_auxiliary_states())

    def list_outputs(self):
        """The names of the outputs (default ``['output']``)."""
        return ['output']

    def list_arguments(self):
        """The names of the arguments (default ``['data']``)."""
        return ['data']

    def list_auxiliary_states(self):
        """The names of the auxiliary states, inputs the operator updates itself and that
        get no gradient (default none)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids among ``out_grad``, ``in_data`` and ``out_data`` that ``backward``
        reads; the default is all of them, less ``out_grad`` without ``need_top_grad``.
        """
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The ``CustomOp`` that computes; override it.

        Parameters
        ----------
        ctx : Context
        in_shapes : list of list of int
            The shapes of the arguments and auxiliary states.
        in_dtypes : list of int
            Their dtypes as MXNet's type codes (0 float32, 1 float64, 2 float16, 3 uint8,
            4 int32, 5 int8, 6 int64, 7 bool).
        """
        return CustomOp()


def register(reg_name):
    """Decorator registering a ``CustomOpProp`` subclass as the custom operator
    ``reg_name``, the ``op_type`` that ``Custom`` takes. Registering a name again replaces
    the earlier class (with a warning).

    Raises
    ------
    MXNetError
        If the decorated object is not a class.
    """
    def do_register(prop_cls):
        if not isinstance(prop_cls, type):
            raise MXNetError('mx.operator.register(%r) decorates a subclass of '
                             'mx.operator.CustomOpProp, got %r' % (reg_name, prop_cls))
        return _custom.register(reg_name, prop_cls)
    return do_register


register('custom_op')(CustomOpProp)


def get_all_registered_operators():
    """The names of every operator graphs and ``mx.nd``/``mx.sym`` may use, under MXNet's
    names (``Activation``, ``broadcast_add``, ``_plus_scalar``, ...).

    Returns
    -------
    list of str
    """
    return _op_specs.names()


OperatorArguments = collections.namedtuple('OperatorArguments', ['narg', 'names', 'types'])


_KINDS = {bool: 'boolean', int: 'int', float: 'float', str: 'string', tuple: 'Shape(tuple)'}


def _type_of(default, choices):
    """An argument's type in MXNet's words (``"int, optional, default='1'"``); ``any``
    where the kernel's signature does not tell."""
    if choices:
        kind = '{%s}' % ', '.join(repr(str(c)) for c in sorted(choices))
    else:
        kind = _KINDS.get(type(default), 'any')
    if default is inspect.Parameter.empty:
        return kind + ', required'
    if isinstance(default, bool):
        return '%s, optional, default=%d' % (kind, default)  # MXNet writes booleans as 0/1
    if isinstance(default, (float, tuple)):
        return '%s, optional, default=%s' % (kind, default)
    return "%s, optional, default='%s'" % (kind, default)


def get_operator_arguments(op_name):
    """The inputs and parameters of the operator ``op_name``, as MXNet lists them: inputs
    first (type ``NDArray-or-Symbol``), then the parameters with their types.

    Parameters
    ----------
    op_name : str
        An operator's name, as ``get_all_registered_operators`` gives it.

    Returns
    -------
    OperatorArguments
        ``(narg, names, types)``.

    Raises
    ------
    MXNetError
        If no operator of that name exists.
    """
    spec = _op_specs.spec_of(op_name)
    if spec.variadic:
        names, types = ['data'], ['NDArray-or-Symbol[]']
    else:  # every input the op may take (softmax's length, a convolution's bias)
        names = list(spec.op.input_names if spec.run_is_op else spec.input_names({}))
        types = ['NDArray-or-Symbol'] * len(names)
    if spec.run_is_op:
        params = [p for p in list(inspect.signature(spec.op.forward).parameters.values())[1:]
                  if p.name in spec.accepted and p.name not in spec.fixed]
        choices = spec.op.choices
    else:  # made of other calls: the names are known, not the defaults
        params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
                  for n in sorted(spec.accepted)]
        choices = {}
    for param in params:
        names.append(param.name)
        types.append(_type_of(param.default, choices.get(param.name)))
    return OperatorArguments(len(names), names, types)


class PythonOp:
    """MXNet's first operators written in Python, kept for old programs (write new ones as
    ``CustomOp``). Override ``forward(in_data, out_data)``, ``backward(out_grad, in_data,
    out_data, in_grad)`` (they write into the output lists' arrays in place), and where the
    op is not one input to one output of its shape, ``list_arguments``, ``list_outputs``
    and ``infer_shape``; ``get_symbol(*inputs)`` makes a graph node of it. The defaults
    copy the input forward and give a gradient of ones."""
    _serial = itertools.count()

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad
        warnings.warn('PythonOp is deprecated (as in MXNet): write a CustomOp instead',
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A ``Symbol`` applying this operator to the symbols ``args`` (``name=`` names
        the node). It runs through ``mx.sym.Custom`` under a name of its own."""
        op_type = '_python_op%d' % next(self._serial)
        register(op_type)(_legacy_prop(self))
        return _symbol.Custom(*args, op_type=op_type, **kwargs)

    def forward(self, in_data, out_data):
        """Write the outputs into ``out_data``'s arrays."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Write the inputs' gradients into ``in_grad``'s arrays."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """``(input shapes, output shapes)`` from the input shapes."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        """The outputs' names (one, ``output``, by default)."""
        return ['output']

    def list_arguments(self):
        """The inputs' names (one, ``data``, by default)."""
        return ['data']

    def need_top_grad(self):
        """Whether ``backward`` reads the outputs' gradients (False for loss layers)."""
        return self.need_top_grad_

    def _arrays(self, arrays):
        """The op's view of NDArrays: numpy arrays for a ``NumpyOp``."""
        raise NotImplementedError


class NumpyOp(PythonOp):
    """A ``PythonOp`` whose ``forward`` and ``backward`` get numpy arrays."""

    def _arrays(self, arrays):
        return [a.asnumpy() for a in arrays]


class NDArrayOp(PythonOp):
    """A ``PythonOp`` whose ``forward`` and ``backward`` get NDArrays."""

    def _arrays(self, arrays):
        return [a.copy() for a in arrays]


def _legacy_prop(legacy):
    """A ``CustomOpProp`` class running the ``PythonOp`` ``legacy``: its methods get the
    op's own view of the arrays, and what they write is assigned per ``req``."""

    class Computation(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            outs = legacy._arrays(out_data)
            legacy.forward(legacy._arrays(in_data), outs)
            for dst, r, src in zip(out_data, req, outs):
                self.assign(dst, r, _array(src, ctx=dst.context, dtype=dst.dtype))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            grads = legacy._arrays(in_grad)
            legacy.backward(legacy._arrays(out_grad), legacy._arrays(in_data),
                            legacy._arrays(out_data), grads)
            for dst, r, src in zip(in_grad, req, grads):
                self.assign(dst, r, _array(src, ctx=dst.context, dtype=dst.dtype))

    class Prop(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=legacy.need_top_grad())

        def list_arguments(self):
            return legacy.list_arguments()

        def list_outputs(self):
            return legacy.list_outputs()

        def infer_shape(self, in_shape):
            ins, outs = legacy.infer_shape(in_shape)
            return ins, outs, []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Computation()

    return Prop
