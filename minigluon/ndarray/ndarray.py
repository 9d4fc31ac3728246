"""NDArray: an array of the context's array module, its Context and a gradient slot,
with the methods and operators generated from the op table."""
import numbers

import numpy as np

from .. import backend
from ..base import MXNetError, shape_str
from ..context import Context, current_context
from . import ops  # noqa: F401  (registers the op table the methods below come from)
from . import tape
from .dispatch import PendingArray, check_inplace_target, compute_gradients, invoke, requires_grad
from .dtypes import normalize_dtype
from .registry import get_op

py_slice = slice  # MXNet's name for the builtin, which its own ``slice`` method shadows

# MXNet's storage-type ids; minigluon stores every array densely ('default').
_STORAGE_TYPE_STR_TO_ID = {'_undefined': -1, 'default': 0, 'row_sparse': 1, 'csr': 2}

class NDArray:
    """An n-dimensional array on one device, with MXNet's NDArray API.

    Wraps a numpy array (``cpu``) or a CuPy array (``gpu``). Create one with
    ``nd.array``, ``nd.zeros`` and friends rather than the constructor.
    """
    __slots__ = ('_data', '_ctx', '_node', '_out_idx', '_grad', '_grad_req', '_grad_writes',
                 '__weakref__')
    __array_priority__ = 1000.0  # numpy scalars defer to our reflected operators

    def __init__(self, data, ctx):
        self._data = data
        self._ctx = ctx
        self._node = None
        self._out_idx = 0
        self._grad = None
        self._grad_req = None
        self._grad_writes = 0  # backward passes that wrote this variable's gradient

    # ---- attributes ------------------------------------------------------------------
    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype.type

    @property
    def size(self):
        return self._data.size

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def stype(self):
        return 'default'

    @property
    def T(self):
        return invoke(_TRANSPOSE, (self,), {'axes': None})

    @property
    def grad(self):
        """The gradient buffer attached by ``attach_grad`` (None before)."""
        return self._grad

    @property
    def handle(self):
        return self._data

    # ---- conversion ------------------------------------------------------------------
    def asnumpy(self):
        """A numpy copy of the data (copied from the GPU when needed)."""
        return backend.host_copy(self._data, order='C')

    def asscalar(self):
        if self.size != 1:
            raise MXNetError('asscalar() needs an array of exactly one element, got shape %s'
                             % (self.shape,))
        return self.asnumpy().reshape(()).item()

    item = asscalar

    def astype(self, dtype, copy=True):
        dt = normalize_dtype(dtype)
        if not copy and dt == self._data.dtype:
            return self
        return invoke(_CAST, (self,), {'dtype': dt})

    def copy(self):
        return invoke(_COPY, (self,), {})

    def copyto(self, other):
        """Copy to a Context (new array) or into an NDArray of the same shape."""
        if isinstance(other, Context):
            return invoke(_COPYTO, (self,), {'ctx': other, 'src': self._ctx})
        if isinstance(other, NDArray):
            if other is self:
                return self
            if other.shape != self.shape:
                raise MXNetError('copyto: shape mismatch, source %s vs destination %s'
                                 % (self.shape, other.shape))
            check_inplace_target(other)
            if other._ctx is self._ctx:
                other._data[...] = self._data
            else:
                other._data[...] = other._ctx.put(self._data)
            return other
        raise MXNetError('copyto: expected a Context or an NDArray, got %s' % type(other).__name__)

    def as_in_context(self, context):
        """This array on ``context``; itself when it is already there."""
        if self._ctx == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def wait_to_read(self):
        if self._ctx.is_gpu:
            backend.synchronize(self._ctx.device_id)

    wait_to_write = wait_to_read

    def tostype(self, stype):
        if stype != 'default':
            raise MXNetError("only the 'default' (dense) storage type is supported, got %r" % stype)
        return self

    # ---- autograd --------------------------------------------------------------------
    def attach_grad(self, grad_req='write', stype=None):
        """Allocate a zero gradient buffer and make this array a graph variable."""
        if stype not in (None, 'default'):
            raise MXNetError("attach_grad: only stype='default' is supported, got %r" % stype)
        xp = self._ctx.xp
        self._mark(NDArray(xp.zeros_like(self._data), self._ctx), grad_req)

    def _mark(self, grad_buf, grad_req):
        if grad_req not in ('write', 'add', 'null'):
            raise MXNetError("grad_req must be 'write', 'add' or 'null', got %r" % (grad_req,))
        if grad_buf.shape != self.shape:
            raise MXNetError('gradient buffer shape %s differs from the variable shape %s'
                             % (grad_buf.shape, self.shape))
        self._grad = grad_buf
        self._grad_req = grad_req
        self._node = None  # a variable starts a new graph

    def detach(self):
        """The same data, cut from the graph."""
        return NDArray(self._data, self._ctx)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Gradients of this array into the variables' ``.grad`` (see ``autograd.backward``)."""
        compute_gradients([self], None if out_grad is None else [out_grad], retain_graph)

    def _receive_grad(self, grad):
        """Take ``grad`` from backward into the gradient buffer, per ``grad_req``."""
        buf = self._grad
        if grad.dtype != buf._data.dtype:
            grad = grad.astype(buf._data.dtype)
        if self._grad_req == 'add':
            buf._data += grad
        else:
            buf._data[...] = grad
        self._grad_writes += 1

    # ---- shape methods with MXNet's calling conventions -------------------------------
    def reshape(self, *shape, **kwargs):
        """Reshape; ``0`` copies a dimension, ``-1`` infers one (also -2, -3, -4 as MXNet)."""
        if 'shape' in kwargs:
            shape = kwargs.pop('shape')
        elif len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return invoke(get_op('reshape'), (self,), dict(shape=tuple(shape), **kwargs))

    def reshape_like(self, other):
        return self.reshape(other.shape)

    def transpose(self, *axes, **kwargs):
        if 'axes' in kwargs:
            axes = kwargs.pop('axes')
        elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return invoke(_TRANSPOSE, (self,), {'axes': tuple(axes) if axes else None})

    def broadcast_to(self, shape):
        return invoke(get_op('broadcast_to'), (self,), {'shape': tuple(shape)})

    def __len__(self):
        if not self.shape:
            raise MXNetError('len() of a 0-d NDArray')
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ---- indexing --------------------------------------------------------------------
    def __getitem__(self, key):
        return invoke(_GETITEM, (self,), {'key': _raw_key(key, self._ctx)})

    def __setitem__(self, key, value):
        key = _raw_key(key, self._ctx)
        if isinstance(value, NDArray):
            if value._ctx is not self._ctx:
                raise MXNetError('__setitem__: value is on %s but the array is on %s; move it '
                                 'with .as_in_context()' % (value._ctx, self._ctx))
            if tape.is_recording() and requires_grad(value):
                check_inplace_target(self)
                self._take_over(invoke(_SETITEM, (self, value), {'key': key}))
                return
            value = value._data
        elif isinstance(value, np.ndarray) and backend.is_device_array(self._data):
            value = self._ctx.put(value)
        elif not isinstance(value, (numbers.Number, np.ndarray, np.generic)):
            raise MXNetError('__setitem__: cannot assign a %s; use a scalar, NDArray or numpy '
                             'array' % type(value).__name__)
        check_inplace_target(self)
        try:
            self._data[key] = value
        except (ValueError, IndexError, TypeError) as exc:
            raise MXNetError('__setitem__ on shape %s with key %r: %s' % (self.shape, key, exc)) \
                from exc

    def _take_over(self, result):
        """Become ``result`` (used by recorded in-place ops: the old value stays saved)."""
        self._data = result._data
        self._node = result._node
        self._out_idx = result._out_idx

    # ---- printing --------------------------------------------------------------------
    def __repr__(self):
        return '\n%s\n<NDArray %s @%s>' % (np.array2string(self.asnumpy(), separator=' ')
                                           if self.size else '[]', shape_str(self.shape), self._ctx)

    def __str__(self):
        return self.__repr__()

    def __bool__(self):
        if self.size == 0:
            return False  # as MXNet: an empty array is falsy
        if self.size != 1:
            raise MXNetError('the truth value of an NDArray with %d elements is ambiguous; use '
                             '.asnumpy().any() or .all()' % self.size)
        return bool(self.asscalar())

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        if not np.issubdtype(self._data.dtype, np.integer):
            raise MXNetError('only integer NDArrays of one element can be used as an index')
        return int(self.asscalar())

    __hash__ = object.__hash__

    def __reduce__(self):
        raise MXNetError('NDArrays are not pickled; save them with nd.save(filename, arrays)')

    def __copy__(self):
        return NDArray(self._data, self._ctx)

    def __deepcopy__(self, memo):
        return NDArray(self._data.copy(), self._ctx)


def _raw_key(key, ctx):
    """Replace NDArrays inside an index by raw arrays on the same device."""
    if isinstance(key, NDArray):
        if key._ctx != ctx:
            raise MXNetError('index array is on %s but the indexed array is on %s'
                             % (key._ctx, ctx))
        data = key._data
        return data if data.dtype == np.bool_ else data.astype(np.int64, copy=False)
    if isinstance(key, tuple):
        return tuple(_raw_key(k, ctx) for k in key)
    if isinstance(key, list):
        return _raw_key(NDArray(ctx.xp.asarray(key), ctx), ctx) if key else key
    if isinstance(key, np.ndarray):
        return ctx.xp.asarray(key)  # to the GPU for a CuPy array; itself for numpy
    return key



# ---- operators and methods generated from the op table -----------------------------------
def _binary(name, reflected=False):
    op = get_op(name)
    if reflected:
        def method(self, other):
            return invoke(op, (other, self), {})
    else:
        def method(self, other):
            return invoke(op, (self, other), {})
    method.__name__ = name
    return method


def _inplace(name):
    op = get_op(name)

    def method(self, other):
        if tape.is_recording() and (requires_grad(self) or (
                isinstance(other, NDArray) and requires_grad(other))):
            check_inplace_target(self)
            self._take_over(invoke(op, (self, other), {}))
            return self
        result = invoke(op, (self, other), {})
        if result.shape != self.shape:
            raise MXNetError('in-place %s: result shape %s does not fit the target shape %s'
                             % (name, result.shape, self.shape))
        self._data[...] = result._data
        return self
    method.__name__ = '__i%s__' % name
    return method


for _dunder, _name in [('add', 'add'), ('sub', 'subtract'), ('mul', 'multiply'),
                       ('truediv', 'divide'), ('div', 'divide'), ('mod', 'mod'),
                       ('pow', 'power')]:
    setattr(NDArray, '__%s__' % _dunder, _binary(_name))
    setattr(NDArray, '__r%s__' % _dunder, _binary(_name, reflected=True))
    setattr(NDArray, '__i%s__' % _dunder, _inplace(_name))

for _dunder, _name in [('eq', 'equal'), ('ne', 'not_equal'), ('gt', 'greater'),
                       ('ge', 'greater_equal'), ('lt', 'lesser'), ('le', 'lesser_equal')]:
    setattr(NDArray, '__%s__' % _dunder, _binary(_name))

NDArray.__neg__ = lambda self: invoke(get_op('negative'), (self,), {})
NDArray.__abs__ = lambda self: invoke(get_op('abs'), (self,), {})
NDArray.__pos__ = lambda self: self

# A Parameter still waiting for its shape meets the arithmetic operators as NDArray does.
for _dunder, _name in [('add', 'add'), ('sub', 'subtract'), ('mul', 'multiply'),
                       ('truediv', 'divide'), ('div', 'divide'), ('mod', 'mod'),
                       ('pow', 'power')]:
    setattr(PendingArray, '__%s__' % _dunder, _binary(_name))
    setattr(PendingArray, '__r%s__' % _dunder, _binary(_name, reflected=True))


def _method(op):
    def method(self, *args, **kwargs):
        return invoke(op, (self,) + args[:op.num_inputs - 1],
                      _params(op, args[op.num_inputs - 1:], kwargs))
    method.__name__ = op.name
    method.__doc__ = op.doc
    return method


def _params(op, positional, kwargs):
    """Map extra positional arguments onto the op's parameter names, in order."""
    if not positional:
        return kwargs
    names = op.param_names
    if len(positional) > len(names):
        raise MXNetError('op %r takes at most %d parameters (%s), got %d'
                         % (op.name, len(names), ', '.join(names), len(positional)))
    params = dict(zip(names, positional))
    params.update(kwargs)
    return params


# Ops that NDArray exposes as methods (x.sum(axis=1), x.relu(), ...).
METHOD_OPS = (
    'sum', 'mean', 'max', 'min', 'prod', 'argmax', 'argmin', 'norm', 'nansum',
    'abs', 'sign', 'sqrt', 'rsqrt', 'exp', 'expm1', 'log', 'log1p', 'square', 'reciprocal',
    'clip', 'floor', 'ceil', 'round', 'relu', 'sigmoid', 'tanh', 'softrelu', 'sin', 'cos',
    'softmax', 'log_softmax', 'expand_dims', 'squeeze', 'flatten', 'swapaxes', 'tile',
    'repeat', 'split', 'one_hot', 'pick', 'take', 'argsort', 'topk', 'sort', 'slice_axis',
    'broadcast_like', 'zeros_like', 'ones_like', 'dot', 'power', 'maximum', 'minimum',
)

_GETITEM, _SETITEM = get_op('_getitem'), get_op('_setitem')
_TRANSPOSE, _CAST = get_op('transpose'), get_op('cast')
_COPY, _COPYTO = get_op('copy'), get_op('_copyto')
for _name in METHOD_OPS:
    setattr(NDArray, _name, _method(get_op(_name)))


def to_array(source, ctx=None, dtype=None):
    """``nd.array``: an NDArray from a list, numpy array, scalar or NDArray.

    The dtype defaults to the source's for arrays and to float32 for Python data,
    as in MXNet.
    """
    ctx = current_context() if ctx is None else Context(ctx)
    if isinstance(source, NDArray):
        data = source._data
    elif backend.is_device_array(source):
        data = source
    else:
        try:
            data = np.asarray(source)
        except (ValueError, TypeError) as exc:  # ragged nested lists (numpy >= 1.24)
            raise MXNetError('nd.array: cannot make an array from %s: %s'
                             % (type(source).__name__, exc)) from None
        if data.dtype == object or data.dtype.kind in 'USV':
            raise MXNetError('nd.array: cannot make an array from %s (ragged nested lists or '
                             'non-numeric values)' % type(source).__name__)
        if not isinstance(source, (np.ndarray, np.generic)):
            data = data.astype(normalize_dtype(dtype), copy=False)
    out = ctx.put(data, normalize_dtype(dtype if dtype is not None else data.dtype))
    if out.ndim == 0:
        out = out.reshape(1)
    return NDArray(out, ctx)
