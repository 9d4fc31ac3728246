"""NDArray: an array of the context's array module, its Context and a gradient slot,
with the methods and operators generated from the op table."""
import numbers

import numpy as np

from .. import backend
from ..base import MXNetError, MXNetTypeError, MXNetValueError, shape_str
from ..context import Context, current_context
from . import ops  # noqa: F401  (registers the op table the methods below come from)
from . import mxnet_format, tape
from .dispatch import (PendingArray, check_inplace_target, compute_gradients, error_like,
                       invoke, requires_grad)
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
                 '_fresh_grad', '_grad_hook', '__weakref__')
    __array_priority__ = 1000.0  # numpy scalars defer to our reflected operators

    def __init__(self, data, ctx):
        self._data = data
        self._ctx = ctx
        self._node = None
        self._out_idx = 0
        self._grad = None
        self._grad_req = None
        self._grad_writes = 0  # backward passes that wrote this variable's gradient
        # MXNet's flag: backward wrote the gradient since the user last set it to False
        self._fresh_grad = False
        # called as hook(self, written) before (False) and after (True) backward writes
        # the gradient: a Trainer sends it on as soon as it is complete
        self._grad_hook = None

    # ---- attributes ------------------------------------------------------------------
    @property
    def shape(self):
        """The array's dimensions, a tuple of ints."""
        return self._data.shape

    @property
    def dtype(self):
        """The element type as a numpy scalar type (``numpy.float32``, ...), as in MXNet."""
        return self._data.dtype.type

    @property
    def size(self):
        """The number of elements, the product of ``shape``."""
        return self._data.size

    @property
    def ndim(self):
        """The number of dimensions, ``len(shape)``."""
        return self._data.ndim

    @property
    def context(self):
        """The Context (device) the data lives on; ``ctx`` is an alias."""
        return self._ctx

    ctx = context

    @property
    def stype(self):
        """The storage type; always ``'default'`` (dense), the only one minigluon stores."""
        return 'default'

    @property
    def T(self):
        """The array with its axes reversed, like ``transpose()``; recorded by autograd."""
        return invoke(_TRANSPOSE, (self,), {'axes': None})

    @property
    def grad(self):
        """The gradient buffer attached by ``attach_grad`` (None before)."""
        return self._grad

    @property
    def handle(self):
        """The underlying numpy (cpu) or CuPy (gpu) array, shared, not copied."""
        return self._data

    # ---- conversion ------------------------------------------------------------------
    def asnumpy(self):
        """A numpy copy of the data (copied from the GPU when needed)."""
        return backend.host_copy(self._data, order='C')

    def asscalar(self):
        """The only element, as a numpy scalar of the array's dtype (ValueError unless the
        array has exactly one element)."""
        if self.size != 1:
            raise MXNetValueError('asscalar() needs an array of exactly one element, got shape '
                                  '%s' % (self.shape,))
        return self.asnumpy().reshape(-1)[0]

    def item(self):
        """The only element as a Python number."""
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        # numpy functions (np.all, np.asarray, ...) read the data directly
        data = self.asnumpy()
        return data if dtype is None else data.astype(dtype, copy=False)

    def astype(self, dtype, copy=True):
        """Cast to another element type.

        Parameters
        ----------
        dtype : str or numpy dtype
            The target type.
        copy : bool, default True
            When False and ``dtype`` is already the array's type, return ``self`` instead
            of a copy.

        Returns
        -------
        NDArray
            The cast array, on the same context.
        """
        dt = normalize_dtype(dtype)
        if not copy and dt == self._data.dtype:
            return self
        return invoke(_CAST, (self,), {'dtype': dt}, ctx=self._ctx)

    def copy(self):
        """A new array with the same data, dtype and context (recorded by autograd)."""
        return invoke(_COPY, (self,), {}, ctx=self._ctx)

    def copyto(self, other):
        """Copy to a Context (new array) or into an NDArray of the same shape.

        Parameters
        ----------
        other : Context or NDArray
            A device to copy to (the copy is recorded by autograd), or an array of
            this array's shape, on any device, to overwrite.

        Returns
        -------
        NDArray
            The new array, or ``other``.
        """
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
        """This array on ``context``; itself when it is already there.

        Parameters
        ----------
        context : Context
            The target device.

        Returns
        -------
        NDArray
            ``self``, or a copy on ``context`` (``copyto(context)``).
        """
        if self._ctx == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def wait_to_read(self):
        """Block until pending computation on the array's device is finished.

        numpy runs eagerly, so on ``cpu`` this returns at once; on ``gpu`` it synchronizes
        the device. ``wait_to_write`` is the same.
        """
        if self._ctx.is_gpu:
            backend.synchronize(self._ctx.device_id)

    wait_to_write = wait_to_read

    def tostype(self, stype):
        """A dense copy for ``'default'``; sparse storage types are not part of minigluon."""
        if stype != 'default':
            raise MXNetError("tostype(%r): sparse storage (row_sparse, csr) is not part of "
                             "minigluon; every array is dense ('default')" % (stype,))
        return self.copy()

    def to_dlpack_for_read(self):
        """A DLPack capsule of this array's memory, for reading by another framework."""
        self.wait_to_read()
        return self._data.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack capsule of this array's memory that the consumer may also write."""
        self.wait_to_write()
        try:  # a versioned capsule says "writable"; plain ones import read-only in numpy
            return self._data.__dlpack__(max_version=(1, 0))
        except TypeError:
            return self._data.__dlpack__()

    # ---- autograd --------------------------------------------------------------------
    def attach_grad(self, grad_req='write', stype=None):
        """Allocate a zero gradient buffer and make this array a graph variable.

        Operations on the array inside ``autograd.record()`` are then recorded, and
        ``backward`` writes its gradient into ``.grad``. Calling it again replaces the
        buffer and detaches the array from any graph it came from.

        Parameters
        ----------
        grad_req : {'write', 'add', 'null'}, default 'write'
            'write' overwrites ``.grad`` on each backward, 'add' accumulates into it
            (zero it yourself between steps), 'null' computes no gradient.
        stype : None or 'default'
            Storage type of the gradient; only dense storage is supported.
        """
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
        self._fresh_grad = False
        self._node = None  # a variable starts a new graph

    def detach(self):
        """The same data, cut from the graph."""
        return NDArray(self._data, self._ctx)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Back-propagate from this array into the ``.grad`` of the variables it depends on.

        Parameters
        ----------
        out_grad : NDArray, optional
            The gradient of the final objective with respect to this array, of its shape
            and context; ones by default.
        retain_graph : bool, default False
            Keep the recorded graph so that backward can run through it again.
        train_mode : bool, default True
            Accepted for MXNet compatibility; it does not change the result.

        Raises
        ------
        MXNetError
            If this array was not computed by a recorded operation.
        """
        compute_gradients([self], None if out_grad is None else [out_grad], retain_graph)

    def _receive_grad(self, grad):
        """Take ``grad`` from backward into the gradient buffer, per ``grad_req``."""
        buf, hook = self._grad, self._grad_hook
        if hook is not None:
            hook(self, False)
        if grad.dtype != buf._data.dtype:
            grad = grad.astype(buf._data.dtype)
        if self._grad_req == 'add':
            buf._data += grad
        else:
            buf._data[...] = grad
        self._grad_writes += 1
        self._fresh_grad = True
        if hook is not None:
            hook(self, True)

    # ---- shape methods with MXNet's calling conventions -------------------------------
    def reshape(self, *shape, **kwargs):
        """A view with a new shape, sharing this array's memory.

        Parameters
        ----------
        *shape : ints, or one tuple/list of ints
            The new shape (also accepted as ``shape=``). ``0`` copies a dimension,
            ``-1`` infers one (also -2, -3, -4 as in MXNet).
        reverse : bool, default False
            Read the special codes from the right.

        Returns
        -------
        NDArray
            The reshaped array; its size must equal this array's.
        """
        unknown = [k for k in kwargs if k not in ('shape', 'reverse')]
        if unknown:
            raise MXNetTypeError('reshape: unknown keyword(s) %s; accepted are shape and reverse'
                                 % ', '.join(unknown))
        if 'shape' in kwargs:
            shape = kwargs.pop('shape')
        elif len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return invoke(get_op('reshape'), (self,), dict(shape=tuple(shape), **kwargs),
                      ctx=self._ctx)

    def flatten(self, inplace=False):
        """``(N, a, b, ...) -> (N, a*b*...)``; a view with ``inplace=True``, else a copy."""
        if inplace:
            return self.reshape((self.shape[0] if self.ndim else 1, -1))
        return invoke(get_op('flatten'), (self,), {})

    def expand_dims(self, axis, inplace=False):
        """Insert a length-1 axis at ``axis``; a view with ``inplace=True``, else a copy.

        Parameters
        ----------
        axis : int
            Where the new axis goes, in ``[-ndim - 1, ndim]``.
        inplace : bool, default False
            Return a view sharing this array's memory instead of a copy.

        Returns
        -------
        NDArray
        """
        if inplace:
            shape = list(self.shape)
            shape.insert(axis % (self.ndim + 1), 1)
            return self.reshape(shape)
        return invoke(get_op('expand_dims'), (self,), {'axis': axis})

    def squeeze(self, axis=None, inplace=False):
        """Remove length-1 axes (only ``axis`` when given); a view with ``inplace=True``.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The axes to remove, each of length 1; every length-1 axis by default.
        inplace : bool, default False
            Return a view sharing this array's memory instead of a copy.

        Returns
        -------
        NDArray
            The result keeps one axis of length 1 when all axes were removed.
        """
        if inplace:
            if axis is None:
                drop = {i for i, n in enumerate(self.shape) if n == 1}
            else:
                drop = {a % self.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
                if any(self.shape[a] != 1 for a in drop):
                    raise MXNetValueError('squeeze: axis %s of shape %s is not of length 1'
                                          % (axis, self.shape))
            return self.reshape([n for i, n in enumerate(self.shape) if i not in drop] or [1])
        return invoke(get_op('squeeze'), (self,), {'axis': axis})

    def transpose(self, *axes, **kwargs):
        """Permute the axes.

        Parameters
        ----------
        *axes : ints, or one tuple/list of ints
            The new order of the axes; none reverses them. May also be given as ``axes=``.

        Returns
        -------
        NDArray
            The transposed array.
        """
        if 'axes' in kwargs:
            axes = kwargs.pop('axes')
        elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return invoke(_TRANSPOSE, (self,), {'axes': tuple(axes) if axes else None})

    def broadcast_to(self, shape):
        """Broadcast to a larger shape, numpy-style.

        Parameters
        ----------
        shape : tuple of int
            The target shape; every axis of size 1 may grow to the target's size.

        Returns
        -------
        NDArray
            The broadcast array.
        """
        return invoke(get_op('broadcast_to'), (self,), {'shape': tuple(shape)})

    def slice_assign(self, rhs, begin, end, step=()):
        """Write ``rhs`` into the region ``begin:end:step`` of this array, in place."""
        self[:] = invoke(get_op('_slice_assign'), (self, rhs),
                         {'begin': begin, 'end': end, 'step': step})
        return self

    def slice_assign_scalar(self, value, begin, end, step=()):
        """Set the region ``begin:end:step`` of this array to ``value``, in place."""
        self[:] = invoke(get_op('_slice_assign_scalar'), (self,),
                         {'scalar': value, 'begin': begin, 'end': end, 'step': step})
        return self

    def __len__(self):
        if not self.shape:
            raise MXNetError('len() of a 0-d NDArray')
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ---- indexing --------------------------------------------------------------------
    def __getitem__(self, key):
        return invoke(_GETITEM, (self,), {'key': _raw_key(key, self._ctx)}, ctx=self._ctx)

    def __setitem__(self, key, value):
        key = _raw_key(key, self._ctx)
        if not self.shape and _is_whole(key):
            key = ()  # MXNet takes a[:] = v on a 0-d array as the whole array
        if isinstance(value, NDArray):
            if value._ctx is not self._ctx and (value._ctx.is_gpu or self._ctx.is_gpu):
                raise MXNetError('__setitem__: value is on %s but the array is on %s; move it '
                                 'with .as_in_context()' % (value._ctx, self._ctx))
            if tape.is_recording() and requires_grad(value):
                if not _is_whole(key):
                    raise MXNetError(
                        'Inplace operations (+=, -=, x[:]=, etc) are not supported when '
                        'recording with autograd: assigning into part of an array (key %r) '
                        'from a value that needs a gradient cannot be differentiated. Build '
                        'the result out of place (nd.where, nd.concat, ...) or assign outside '
                        'autograd.record().' % (key,))
                check_inplace_target(self)  # x[:] = y records a copy of y, as MXNet does
                self._take_over(invoke(_SETITEM, (self, value), {'key': key}))
                return
            value = value._data
        elif isinstance(value, (list, tuple)):
            value = self._ctx.put(np.asarray(value, dtype=self._data.dtype))
        elif backend.is_host_array(value) and backend.is_device_array(self._data):
            value = self._ctx.put(value)
        elif not isinstance(value, (numbers.Number, np.ndarray, np.generic)):
            raise MXNetTypeError('__setitem__: cannot assign a %s; use a scalar, list, NDArray '
                                 'or numpy array' % type(value).__name__)
        check_inplace_target(self)
        try:
            try:
                self._data[key] = value
            except ValueError:
                # one value for one element (b[0] = np.array([x])): MXNet broadcasts it
                if getattr(value, 'size', None) != 1:
                    raise
                self._data[key] = value.reshape(())
        except (ValueError, IndexError, TypeError) as exc:
            raise error_like(exc)('__setitem__ on shape %s with key %r: %s'
                                  % (self.shape, key, exc)) from exc

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
            raise MXNetValueError('the truth value of an NDArray with %d elements is ambiguous; '
                                  'use .asnumpy().any() or .all()' % self.size)
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

    # Pickling keeps what MXNet keeps: the array in MXNet's binary record, as its
    # __getstate__ does, so pickles move between MXNet and minigluon. Gradients and the
    # graph are not kept.
    def __getstate__(self):
        ctx = self._ctx
        return {'handle': mxnet_format.encode_array(self.asnumpy(), ctx.device_typeid,
                                                    ctx.device_id)}

    def __setstate__(self, state):
        handle = state.get('handle') if isinstance(state, dict) else None
        if handle is None:
            raise MXNetError('cannot restore an NDArray from %r: expected the state '
                             "{'handle': bytes} that pickling an NDArray writes" % (state,))
        try:
            data, dev_type, dev_id = mxnet_format.decode_array(bytes(handle))
        except mxnet_format.FormatError as exc:
            raise MXNetError('cannot restore an NDArray: %s' % exc) from None
        ctx = Context(dev_type if dev_type in Context.devtype2str else 1, dev_id)
        if ctx.is_gpu and backend.gpu_unavailable_reason(dev_id):
            ctx = Context('cpu', 0)  # saved on a GPU this machine lacks, as MXNet does
        self.__init__(ctx.put(data), ctx)

    def __copy__(self):
        return NDArray(self._data, self._ctx)

    def __deepcopy__(self, memo):
        return NDArray(self._data.copy(), self._ctx)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether the tuple of slices ``slc_key`` selects one contiguous block of the
        C-order memory of an array of ``shape``: single elements on the leading axes, one
        step-1 run on the next axis, whole axes after it."""
        slices = tuple(slc_key) + (slice(None),) * (len(shape) - len(slc_key))
        runs = []
        for slc, dim in zip(slices, shape):
            start, stop, step = slc.indices(dim)
            runs.append((len(range(start, stop, step)), step, dim))
        if any(length == 0 for length, _, _ in runs):
            return True
        first = next((i for i, (length, _, _) in enumerate(runs) if length > 1), None)
        if first is None:
            return True
        if runs[first][1] != 1:
            return False
        return all(length == dim and (step == 1 or dim == 1)
                   for length, step, dim in runs[first + 1:])


def _is_whole(key):
    """Whether the index ``key`` selects the whole array (``:``, ``...``, None)."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or (isinstance(k, slice) and k == slice(None))
               for k in parts)


def _raw_key(key, ctx):
    """Replace NDArrays inside an index by raw arrays on the same device."""
    if isinstance(key, NDArray):
        if key._ctx is not ctx and (key._ctx.is_gpu or ctx.is_gpu):
            raise MXNetError('index array is on %s but the indexed array is on %s'
                             % (key._ctx, ctx))
        data = key._data
        return data if data.dtype == np.bool_ else data.astype(np.int64, copy=False)
    if isinstance(key, tuple):
        return tuple(_raw_key(k, ctx) for k in key)
    if isinstance(key, list):
        return _raw_key(NDArray(ctx.xp.asarray(key), ctx), ctx) if key else key
    if backend.is_host_array(key):
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


def call_op(op, args, kwargs):
    """Run ``op`` the way ``nd.<op>(*args, **kwargs)`` and the methods call it.

    The first ``op.num_inputs`` positional arguments are the array inputs (inputs may
    also come by keyword, ``nd.pick(data, index=i)``); further positional arguments fill
    the op's parameters in order. ``out=`` receives the result in place.
    """
    out = kwargs.pop('out', None)
    n = op.num_inputs
    if n is None:
        inputs, params = args, kwargs
    else:
        inputs, rest = tuple(args[:n]), args[n:]
        if len(inputs) < n:  # inputs given by keyword, e.g. nd.softmax(data=x)
            names = op.input_names
            absent = [m for m in names[len(inputs):op.num_required_inputs] if m not in kwargs]
            if absent:
                raise MXNetTypeError('nd.%s: missing input(s) %s' % (op.name, ', '.join(absent)))
            inputs = inputs + tuple(kwargs.pop(m, None) for m in names[len(inputs):])
        params = _params(op, rest, kwargs)
    result = invoke(op, inputs, params)
    if out is None:
        return result
    if isinstance(result, list):
        for target, value in zip(out, result):
            target[:] = value
    else:
        out[:] = result
    return out


def op_function(op):
    """The ``nd.<op>`` function of ``op``."""
    def function(*args, **kwargs):
        return call_op(op, args, kwargs)
    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = op.doc
    return function


def _method(op):
    def method(self, *args, **kwargs):
        return call_op(op, (self,) + args, kwargs)
    method.__name__ = op.name
    method.__doc__ = op.doc
    return method


def _params(op, positional, kwargs):
    """Map extra positional arguments onto the op's parameter names, in order."""
    if not positional:
        return kwargs
    names = op.param_names
    if len(positional) > len(names):
        raise MXNetTypeError('op %r takes at most %d parameters (%s), got %d'
                             % (op.name, len(names), ', '.join(names), len(positional)))
    params = dict(zip(names, positional))
    params.update(kwargs)
    return params


# Ops that NDArray exposes as methods (x.sum(axis=1), x.relu(), ...): MXNet 1.x's fluent
# methods, and a few more.
METHOD_OPS = (
    'sum', 'nansum', 'prod', 'nanprod', 'mean', 'max', 'min', 'norm', 'argmax', 'argmin',
    'argmax_channel', 'abs', 'sign', 'sqrt', 'rsqrt', 'cbrt', 'rcbrt', 'exp', 'expm1', 'log',
    'log10', 'log2', 'log1p', 'square', 'reciprocal', 'clip', 'round', 'rint', 'fix', 'floor',
    'ceil', 'trunc', 'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'degrees', 'radians',
    'sinh', 'cosh', 'tanh', 'arcsinh', 'arccosh', 'arctanh', 'relu', 'sigmoid', 'softrelu',
    'softmax', 'log_softmax', 'softmin', 'swapaxes', 'tile', 'repeat', 'pad', 'flip', 'split',
    'split_v2', 'slice', 'slice_axis', 'slice_like', 'one_hot', 'pick', 'take', 'argsort',
    'topk', 'sort', 'broadcast_like', 'reshape_like', 'zeros_like', 'ones_like',
    'shape_array', 'size_array', 'depth_to_space', 'space_to_depth', 'diag', 'dot', 'power',
    'maximum', 'minimum',
)

_GETITEM, _SETITEM = get_op('_getitem'), get_op('_setitem')
_TRANSPOSE, _CAST = get_op('transpose'), get_op('cast')
_COPY, _COPYTO = get_op('copy'), get_op('_copyto')
for _name in METHOD_OPS:
    setattr(NDArray, _name, _method(get_op(_name)))
NDArray.broadcast_axes = _method(get_op('broadcast_axis'))


def to_array(source, ctx=None, dtype=None):
    """``nd.array``: an NDArray from a list, numpy array, scalar or NDArray.

    The dtype defaults to the source's for an NDArray and to float32 for everything
    else, numpy arrays of other dtypes included, as in MXNet 1.x: pass ``dtype`` to
    keep one (``nd.array(a, dtype=a.dtype)``). A 0-d source gives a 0-d array.
    """
    ctx = current_context() if ctx is None else Context(ctx)
    if isinstance(source, NDArray):
        data = source._data
        dtype = data.dtype if dtype is None else dtype
    elif backend.is_device_array(source):
        data = source
    else:
        try:
            data = np.asarray(source)
        except (ValueError, TypeError) as exc:  # ragged nested lists (numpy >= 1.24)
            raise MXNetTypeError('nd.array: cannot make an array from %s: %s'
                                 % (type(source).__name__, exc)) from None
        if data.dtype == object or data.dtype.kind in 'USV':
            raise MXNetTypeError('nd.array: cannot make an array from %s (ragged nested lists '
                                 'or non-numeric values)' % type(source).__name__)
    return NDArray(ctx.put(data, normalize_dtype(dtype)), ctx)
