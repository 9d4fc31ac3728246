"""The op table: every NDArray operation is registered here once.

An op is a function ``forward(xp, *inputs, **params)`` written against the array
module ``xp`` (numpy or cupy), so the same code runs on every device. A
differentiable op returns ``(output, backward)`` where ``backward(dy)`` is a closure
over only what it needs and returns one gradient (or None) per input; an op with
several outputs returns a tuple of outputs and its backward receives a tuple of
output gradients. A non-differentiable op returns just its output(s).

``dispatch.invoke`` runs an op on NDArrays and records it on the tape; ``nd.<op>``
functions and NDArray methods are generated from this table.

An op registered with ``takes_needs_grad=True`` also receives the keyword-only
``needs_grad``: one bool per input, true when autograd will want that input's
gradient. Its backward returns None for the others, so a costly gradient nobody
reads (a convolution's data gradient at the network's input) is never computed.

An op may also carry a shape rule (``shape_rule``): given its inputs' shapes, with 0
for a dimension not known yet, and its parameters, it fills in what the op implies
(FullyConnected's weight is ``(num_hidden, in_units)``). ``dispatch.invoke`` uses it
for a ``PendingArray`` input: a Parameter whose shape waits for its first use. Graph
shape inference also passes ``out_shapes`` (what is known of the outputs' shapes), from
which a rule may fill in its inputs too (a convolution's batch size from its output's).
Graph shape inference learns an op's output shapes by running its kernel on zeros,
unless the op has an output rule (``output_shape_rule``): ops whose kernel costs a whole
computation (the fused RNN) have one.
"""
from ..base import MXNetError
from ..registry import Registry
from .accumulate import sum_over

_OPS = Registry('op', case_sensitive=True)


class OpDef:
    """One registered op: its forward, how many array inputs it takes, and flags."""
    __slots__ = ('name', 'forward', 'num_inputs', 'differentiable', 'output_context',
                 'takes_needs_grad', 'input_names', 'param_names', 'num_required_inputs',
                 'infer_shape', 'zero_dim', 'output_shapes', 'choices', 'infer_dtype')

    def __init__(self, name, forward, num_inputs, differentiable, output_context,
                 takes_needs_grad=False, zero_dim=False, choices=None):
        self.name = name
        self.choices = dict(choices or {})  # parameter -> the values it may take
        self.zero_dim = zero_dim  # its 0-d outputs stay 0-d (else they are made (1,))
        self.forward = forward
        self.num_inputs = num_inputs  # an int, or None for variadic (concat, stack, ...)
        self.differentiable = differentiable
        self.output_context = output_context
        self.takes_needs_grad = takes_needs_grad
        self.infer_shape = None  # set by shape_rule
        self.output_shapes = None  # set by output_shape_rule
        self.infer_dtype = None  # set by dtype_rule
        code = forward.__code__
        first = 1 + (num_inputs or 0)
        self.input_names = code.co_varnames[1:first]
        self.param_names = code.co_varnames[first:code.co_argcount]  # positional-capable params
        optional = len(forward.__defaults__ or ()) - len(self.param_names)
        self.num_required_inputs = len(self.input_names) - max(optional, 0)  # e.g. bias=None

    @property
    def doc(self):
        """The op's documentation, the docstring of its forward function."""
        return self.forward.__doc__

    def __repr__(self):
        return '<op %s>' % self.name


def register(name, num_inputs=1, differentiable=True, output_context=None,
             takes_needs_grad=False, zero_dim=False, choices=None):
    """Decorator adding ``forward`` to the op table under ``name``.

    ``num_inputs`` leading positional arguments are arrays (None: all positional
    arguments are). ``output_context(params)`` gives the outputs' context for ops
    that move data; by default outputs live where the inputs are.
    ``takes_needs_grad``: pass the keyword ``needs_grad`` (see the module docstring).
    ``zero_dim``: a 0-d output stays 0-d, for the few ops whose results MXNet 1.x gives
    shape () (``contrib.allclose``); the others' become shape (1,).
    ``choices``: ``{parameter: values}`` for parameters that take one of a few values
    (what ``mx.operator.get_operator_arguments`` reports).
    """
    def deco(forward):
        _OPS.add(name, OpDef(name, forward, num_inputs, differentiable, output_context,
                             takes_needs_grad, zero_dim, choices))
        return forward
    return deco


def _attach(slot, names):
    """A decorator setting ``slot`` of the ops ``names`` to the function it decorates."""
    def deco(rule):
        for name in names:
            setattr(get_op(name), slot, rule)
        return rule
    return deco


def shape_rule(*names):
    """Decorator giving the ops ``names`` a shape rule.

    The rule is called with one shape per input (a tuple with 0 for each unknown
    dimension; None for a scalar or an absent optional input) and the op's parameters
    as keywords, and returns the inputs' shapes with the dimensions it implies filled in.
    Graph shape inference adds the keyword ``out_shapes``: one shape per output (0 for
    unknown dimensions, None for an unknown shape); ``dispatch`` passes none.
    """
    return _attach('infer_shape', names)


def output_shape_rule(*names):
    """Decorator giving the ops ``names`` an output rule.

    The rule is called with one shape per input (all known; None for an absent optional
    input) and the op's parameters as keywords, and returns one shape per output, raising
    ``MXNetError`` for inputs the op cannot take, as the kernel would.
    """
    return _attach('output_shapes', names)


def dtype_rule(*names):
    """Decorator giving the ops ``names`` a dtype rule, for ops whose output dtype is not
    simply their inputs' (an output dtype argument such as ``norm``'s ``out_dtype``).

    The rule is called with one numpy dtype per input (None where not known yet) and the
    op's parameters as keywords, and returns one dtype (or None) per output. Graph type
    inference uses it instead of giving the outputs their inputs' dtype.
    """
    return _attach('infer_dtype', names)


def fill_from(shape, other):
    """``shape`` with its unknown (0) dimensions taken from ``other``, both aligned on
    their last axes as in broadcasting."""
    offset = len(other) - len(shape)
    return tuple(d if d > 0 or not 0 <= i + offset < len(other) else other[i + offset]
                 for i, d in enumerate(shape))


def get_op(name):
    """The registered op named ``name``.

    Parameters
    ----------
    name : str
        The op's name in the op table.

    Returns
    -------
    OpDef

    Raises
    ------
    MXNetError
        If no op of that name is registered.
    """
    op = _OPS.get(name)
    if op is None:
        raise MXNetError('no op named %r is registered' % name)
    return op


def all_ops():
    """Every registered op, keyed by name."""
    return dict(_OPS.items())


def unbroadcast(xp, grad, shape):
    """Sum ``grad`` down to ``shape`` (undoing numpy broadcasting); None for scalars."""
    if shape is None:
        return None
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:
        grad, extra = grad.reshape((1,) * -extra + grad.shape), 0
    axes = tuple(range(extra)) + tuple(extra + i for i, n in enumerate(shape)
                                       if n == 1 and grad.shape[extra + i] != 1)
    if axes:
        grad = sum_over(xp, grad, axes) if grad.dtype.kind == 'f' else grad.sum(axis=axes)
    return grad.reshape(shape)


def shape_of(x):
    """Shape of a raw array, or None for a Python scalar."""
    return getattr(x, 'shape', None)
