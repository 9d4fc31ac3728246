"""``mx.init``: weight initializers, chosen by object or by registered name.

An initializer fills an NDArray in place. Random values are drawn on the host from
the generator that ``mx.random.seed`` seeds and then copied to the array's device, so
a seeded run initializes identically on every device and in every process.

Gluon calls an initializer with an :class:`InitDesc` whose ``__init__`` attribute
names the initializer chosen for that parameter (its own, or the global one passed
to ``initialize``), as MXNet does. Called with a plain name, an initializer picks
the rule by the name's suffix (``weight``, ``bias``, ``gamma``, ``beta``,
``running_mean``, ``running_var``...).
"""
import json
import logging
import re

import numpy as np

from .base import MXNetError
from .ndarray import zeros as nd_zeros
from .ndarray.generator import host_generator
from .ndarray.ops.rnn import param_layout
from .ndarray.serialization import load as load_arrays
from .registry import Registry

__all__ = ['InitDesc', 'Initializer', 'register', 'create', 'Zero', 'One', 'Constant',
           'Uniform', 'Normal', 'Xavier', 'MSRAPrelu', 'Orthogonal', 'Bilinear', 'LSTMBias',
           'FusedRNN', 'Mixed', 'Load']

_REGISTRY = Registry('initializer')


def register(klass):
    """Class decorator registering an initializer under its lower-cased class name."""
    return _REGISTRY.register(klass)


def _alias(*names):
    return lambda klass: _REGISTRY.register(klass, *names)


def create(init, /, **kwargs):
    """An Initializer from an instance (returned as is) or a registered name.

    ``create('xavier', magnitude=2)`` == ``Xavier(magnitude=2)``; names are
    case-insensitive. The JSON that ``Initializer.dumps()`` writes,
    ``'["xavier", {"magnitude": 2}]'``, is accepted too.
    """
    if isinstance(init, Initializer):
        return init
    if isinstance(init, type) and issubclass(init, Initializer):
        return init(**kwargs)
    if isinstance(init, str) and init.startswith('['):
        try:
            name, json_kwargs = json.loads(init)
        except ValueError:
            raise MXNetError('initializer JSON must be \'["name", {kwargs}]\' as dumps() '
                             'writes it, got %r' % init) from None
        if kwargs or not isinstance(json_kwargs, dict):
            raise MXNetError('initializer JSON %r: the keyword arguments belong in its dict, '
                             'not beside it' % init)
        return create(name, **json_kwargs)
    if isinstance(init, str):
        return _REGISTRY.find(init)(**kwargs)
    raise MXNetError('an initializer must be an mx.init.Initializer or a registered name '
                     '(e.g. "xavier"), got %s' % type(init).__name__)


class InitDesc(str):
    """A parameter name carrying attributes; ``attrs['__init__']`` picks its initializer."""

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = dict(attrs or {})
        desc.global_init = global_init
        return desc


def _as_list(value):
    if hasattr(value, 'asnumpy'):
        value = value.asnumpy()
    return value.tolist() if isinstance(value, np.ndarray) else value


def _fill(arr, values):
    """Write host array ``values`` into NDArray ``arr`` (cast to its dtype)."""
    arr[:] = np.broadcast_to(np.asarray(values).astype(arr.dtype, copy=False), arr.shape)


class Initializer:
    """Base class: subclasses implement ``_init_weight(name, arr)``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False

    def set_verbosity(self, verbose=False, print_func=None):
        """Turn on (or off) printing a line for every array this initializer fills.

        Parameters
        ----------
        verbose : bool, default False
            Whether to print ``Initialized <name> as <initializer>: <summary>``.
        print_func : callable, optional
            Maps the filled numpy array to the summary string; by default the mean of its
            absolute values, ``'%.3g'``-formatted.

        Returns
        -------
        Initializer
            ``self``, for chaining.
        """
        self._verbose = verbose
        self._print_func = print_func or (lambda x: '%.3g' % float(np.abs(x).mean()))
        return self

    def dumps(self):
        """``'["name", {kwargs}]'`` as MXNet writes it."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr):
        """Initialize NDArray ``arr`` for the parameter named ``desc``."""
        if isinstance(desc, InitDesc) and desc.global_init is None:
            # Initializers that fill the pieces of one array (FusedRNN) fall back to it.
            desc.global_init = self
        init = getattr(desc, 'attrs', {}).get('__init__')
        if init:
            create(init)._init_weight(desc, arr)
        else:
            self._init_by_name(desc, arr)
        if self._verbose:
            print('Initialized %s as %s: %s' % (desc, init or self.__class__.__name__,
                                                self._print_func(arr.asnumpy())))

    def _init_by_name(self, name, arr):
        """Pick the rule by the name's suffix; subclasses may override any ``_init_*``."""
        name = str(name)
        suffix = name.lower()
        if suffix.endswith('weight'):
            self._init_weight(name, arr)
        elif suffix.endswith('bias'):
            self._init_bias(name, arr)
        elif suffix.endswith('gamma'):
            self._init_gamma(name, arr)
        elif suffix.endswith('beta'):
            self._init_beta(name, arr)
        elif suffix.endswith(('running_mean', 'moving_mean', 'moving_inv_var', 'moving_avg',
                              'min')):
            self._init_zero(name, arr)
        elif suffix.endswith(('running_var', 'moving_var', 'max')):
            self._init_one(name, arr)
        else:
            self._init_default(name, arr)

    def _init_zero(self, _, arr):
        _fill(arr, 0)

    def _init_one(self, _, arr):
        _fill(arr, 1)

    def _init_bias(self, _, arr):
        _fill(arr, 0)

    def _init_gamma(self, _, arr):
        _fill(arr, 1)

    def _init_beta(self, _, arr):
        _fill(arr, 0)

    def _init_default(self, name, _):
        raise MXNetError('unknown initialization pattern for %r: give the parameter an '
                         'init= of its own or name it ...weight/bias/gamma/beta' % name)

    def _init_weight(self, name, arr):
        raise NotImplementedError('%s must implement _init_weight' % type(self).__name__)

    def __repr__(self):
        args = ', '.join('%s=%r' % kv for kv in self._kwargs.items())
        return '%s(%s)' % (type(self).__name__, args)

    def __eq__(self, other):
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__


@register
@_alias('zeros')
class Zero(Initializer):
    """Fills with 0."""

    def _init_weight(self, _, arr):
        _fill(arr, 0)


@register
@_alias('ones')
class One(Initializer):
    """Fills with 1."""

    def _init_weight(self, _, arr):
        _fill(arr, 1)


@register
class Constant(Initializer):
    """Fills with ``value`` (a scalar, or an array broadcastable to the parameter)."""

    def __init__(self, value):
        # An array value is kept as a nested list in the kwargs, so dumps() is JSON
        # (MXNet writes it so too).
        super().__init__(value=value if np.isscalar(value) else _as_list(value))
        self.value = value

    def _init_weight(self, name, arr):
        value = self.value
        if hasattr(value, 'asnumpy'):
            value = value.asnumpy()
        value = np.asarray(value)
        try:
            value = np.broadcast_to(value, arr.shape)
        except ValueError:
            raise MXNetError('Constant initializer: value of shape %s does not fit parameter %s '
                             'of shape %s' % (value.shape, name, arr.shape)) from None
        _fill(arr, value)


@register
class Uniform(Initializer):
    """Uniform samples from ``[-scale, scale]``."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill(arr, host_generator().uniform(-self.scale, self.scale, arr.shape))


@register
class Normal(Initializer):
    """Normal samples with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill(arr, host_generator().normal(0, self.sigma, arr.shape))


@register
class Xavier(Initializer):
    """Glorot initialization: variance ``magnitude / factor`` with the fans of the weight.

    Parameters
    ----------
    rnd_type : {'uniform', 'gaussian'}
        Uniform on ``[-s, s]`` with ``s = sqrt(magnitude / factor)``, or normal with
        standard deviation ``s``.
    factor_type : {'avg', 'in', 'out'}
        ``factor`` is ``(fan_in + fan_out) / 2``, ``fan_in`` or ``fan_out``, where for a
        weight ``(out, in, *kernel)`` ``fan_in = in * prod(kernel)`` and
        ``fan_out = out * prod(kernel)``.
    magnitude : float
    """

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ('uniform', 'gaussian'):
            raise MXNetError("Xavier: rnd_type must be 'uniform' or 'gaussian', got %r"
                             % (rnd_type,))
        if factor_type not in ('avg', 'in', 'out'):
            raise MXNetError("Xavier: factor_type must be 'avg', 'in' or 'out', got %r"
                             % (factor_type,))
        self.rnd_type, self.factor_type = rnd_type, factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise MXNetError('Xavier initializer cannot be applied to vector %s of shape %s: '
                             'it needs at least 2 dimensions; give that parameter another '
                             'initializer (e.g. init="zeros")' % (name, shape))
        receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in, 'out': fan_out}[self.factor_type]
        scale = np.sqrt(self.magnitude / factor)
        rng = host_generator()
        if self.rnd_type == 'uniform':
            _fill(arr, rng.uniform(-scale, scale, shape))
        else:
            _fill(arr, rng.normal(0, scale, shape))


@register
class MSRAPrelu(Xavier):
    """He initialization for PReLU nets: Gaussian Xavier with magnitude ``2 / (1 + slope**2)``."""

    def __init__(self, factor_type='avg', slope=0.25):
        super().__init__('gaussian', factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


@register
class Orthogonal(Initializer):
    """A (scaled) orthogonal matrix from the SVD of a random ``(out, prod(rest))`` matrix.

    Parameters
    ----------
    scale : float
    rand_type : {'uniform', 'normal'}
    """

    def __init__(self, scale=1.414, rand_type='uniform'):
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ('uniform', 'normal'):
            raise MXNetError("Orthogonal: rand_type must be 'uniform' or 'normal', got %r"
                             % (rand_type,))
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        rng = host_generator()
        if self.rand_type == 'uniform':
            tmp = rng.uniform(-1.0, 1.0, (nout, nin))
        else:
            tmp = rng.normal(0.0, 1.0, (nout, nin))
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        _fill(arr, self.scale * res.reshape(arr.shape))


@register
class Bilinear(Initializer):
    """Bilinear-interpolation kernels, for a Deconvolution that upsamples.

    A weight ``(out, in, k, k)`` gets the same ``k x k`` kernel in every channel pair:
    ``(1 - |x/f - c|) * (1 - |y/f - c|)`` with ``f = ceil(k/2)`` and
    ``c = (2f - 1 - f % 2) / (2f)``.
    """

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) != 4:
            raise MXNetError('Bilinear initializer needs a 4-d (out, in, height, width) '
                             'weight; %s has shape %s' % (name, shape))
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        wx = 1 - np.abs(np.arange(shape[3]) / f - c)
        wy = 1 - np.abs(np.arange(shape[2]) / f - c)
        _fill(arr, np.broadcast_to(np.outer(wy, wx).astype(np.float32), shape))


@register
class LSTMBias(Initializer):
    """LSTM biases: 0 except the forget gate's, ``forget_bias`` (Jozefowicz et al. 2015).

    The bias holds the four gates' biases one after another (input, forget, cell,
    output, as MXNet's LSTM cells order them); the second quarter is the forget gate.
    """

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        num_hidden = arr.shape[0] // 4
        values = np.zeros(arr.shape, dtype=np.float64)
        values[num_hidden:2 * num_hidden] = self.forget_bias
        _fill(arr, values)


FUSED_RNN_GATES = {'rnn_relu': [''], 'rnn_tanh': [''], 'lstm': ['_i', '_f', '_c', '_o'],
                   'gru': ['_r', '_z', '_o']}


def fused_rnn_pieces(mode, num_layers, state_size, bidirectional, size):
    """The per-gate weights and biases in the fused ``RNN`` op's flat parameter vector of
    ``size`` values, named as MXNet's ``FusedRNNCell.unpack_weights`` names them (without
    the cell's prefix: ``l0_i2h_i_weight`` ... ``r1_h2h_o_bias``).

    Returns
    -------
    list of (name, offset, shape)
        In the order of the vector.
    """
    gates = FUSED_RNN_GATES.get(mode)
    if gates is None:
        raise MXNetError('fused RNN: mode must be one of %s, got %r'
                         % (sorted(FUSED_RNN_GATES), mode))
    dirs = 2 if bidirectional else 1
    # The size fixes the first layer's input size: size = dirs*G*H*(C+H+2) + later layers.
    block = len(gates) * state_size * dirs
    later = (num_layers - 1) * block * (dirs * state_size + state_size + 2)
    input_size = (size - later) // block - state_size - 2
    slots, total = param_layout(mode, num_layers, max(input_size, 1), state_size,
                                bidirectional)
    if input_size < 1 or total != size:
        raise MXNetError('fused RNN: a parameter vector of %d values fits no input size for '
                         'mode=%r, num_layers=%d, state_size=%d, bidirectional=%s'
                         % (size, mode, num_layers, state_size, bidirectional))
    pieces = []
    for index, slot in enumerate(slots):
        stem = '%s%d_' % ('lr'[index % dirs], index // dirs)
        for key, name in (('wx', 'i2h%s_weight'), ('wh', 'h2h%s_weight'),
                          ('bx', 'i2h%s_bias'), ('bh', 'h2h%s_bias')):
            offset, shape = slot[key]
            rows = shape[0] // len(gates)
            step = rows * int(np.prod(shape[1:], dtype=np.int64))
            for j, gate in enumerate(gates):
                pieces.append((stem + name % gate, offset + j * step, (rows,) + shape[1:]))
    return sorted(pieces, key=lambda piece: piece[1])


@register
class FusedRNN(Initializer):
    """The flat parameter vector of ``mx.rnn.FusedRNNCell``: each per-gate weight and bias
    is filled on its own, as the unfused cells' would be.

    Parameters
    ----------
    init : Initializer, str or None
        For the weights and biases; the global initializer if None.
    num_hidden, num_layers, mode, bidirectional
        As given to the FusedRNNCell.
    forget_bias : float, default 1.0
        Value of every LSTM forget-gate bias (i2h and h2h, as MXNet fills them).
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if init is not None:
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._layout_args = (mode, num_layers, num_hidden, bidirectional)
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        inner = self._init or getattr(desc, 'global_init', None)
        if inner is None or isinstance(inner, FusedRNN):
            raise MXNetError('FusedRNN initializer for %r: give it an init= for the weights, '
                             'or use it as a parameter\'s own initializer under a global '
                             'one' % str(desc))
        flat = np.empty(arr.shape, dtype=np.float64)
        for name, offset, shape in fused_rnn_pieces(*self._layout_args, size=arr.size):
            piece = nd_zeros(shape, ctx=arr.context, dtype=arr.dtype)
            if self._layout_args[0] == 'lstm' and name.endswith('_f_bias'):
                _fill(piece, self._forget_bias)
            else:
                inner(InitDesc(name, global_init=getattr(desc, 'global_init', None)), piece)
            flat[offset:offset + piece.size] = piece.asnumpy().ravel()
        _fill(arr, flat)


@register
class Mixed(Initializer):
    """The first initializer whose regex (``re.match``) matches the parameter name.

    Example: ``Mixed(['bias', '.*'], [mx.init.Zero(), mx.init.Uniform(0.1)])``.
    """

    def __init__(self, patterns, initializers):
        super().__init__()
        if len(patterns) != len(initializers):
            raise MXNetError('Mixed: got %d patterns but %d initializers'
                             % (len(patterns), len(initializers)))
        self.map = [(re.compile(p), create(i)) for p, i in zip(patterns, initializers)]

    def _pick(self, name):
        for pattern, init in self.map:
            if pattern.match(str(name)):
                return init
        patterns = [p.pattern for p, _ in self.map]
        raise MXNetError('Mixed initializer: parameter %r matches none of the patterns %s; '
                         'add a catch-all ".*" pattern' % (str(name), patterns))

    def _init_by_name(self, name, arr):
        self._pick(name)(str(name), arr)

    def _init_weight(self, name, arr):
        self._pick(name)._init_weight(name, arr)


class Load:
    """Initialize from saved arrays, falling back to ``default_init`` for the rest.

    Parameters
    ----------
    param : str or dict of str -> NDArray
        A file written by ``nd.save`` (a dict of arrays), or the dict itself; MXNet's
        ``arg:``/``aux:`` name prefixes are dropped.
    default_init : Initializer, optional
        For parameters the arrays do not have.
    verbose : bool, default False
        Log where each parameter came from.
    """

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = load_arrays(param)
        if not isinstance(param, dict):
            raise MXNetError('Load initializer needs a dict of name -> NDArray (or a file of '
                             'one), got %s' % type(param).__name__)
        self.param = {(name[4:] if name.startswith(('arg:', 'aux:')) else name): arr
                      for name, arr in param.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            loaded = self.param[name]
            if tuple(arr.shape) != tuple(loaded.shape):
                raise MXNetError('Parameter %s cannot be initialized from loading: shape '
                                 'mismatch, target %s vs loaded %s'
                                 % (name, tuple(arr.shape), tuple(loaded.shape)))
            arr[:] = loaded
            if self.verbose:
                logging.info('Initialized %s by loading', name)
            return
        if self.default_init is None:
            raise MXNetError('Cannot initialize %s: it is not in the loaded arrays and no '
                             'default_init was given' % name)
        self.default_init(name, arr)
        if self.verbose:
            logging.info('Initialized %s by default', name)
