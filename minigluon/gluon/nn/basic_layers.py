"""Containers and basic layers: Sequential, Concurrent, HybridConcurrent, Identity, Dense,
Dropout, norms, Embedding, Lambda."""
import warnings

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError
from ..block import Block, HybridBlock
from ..parameter import Parameter
from .activations import Activation

__all__ = ['Sequential', 'HybridSequential', 'Concurrent', 'HybridConcurrent', 'Identity',
           'Dense', 'Dropout', 'BatchNorm', 'BatchNormReLU', 'Embedding', 'Flatten',
           'InstanceNorm', 'LayerNorm', 'GroupNorm', 'Lambda', 'HybridLambda']


def _chain(blocks, x, args):
    """Feed ``x`` through ``blocks``; a tuple output feeds its tail as extra inputs."""
    for block in blocks:
        x = block(x, *args)
        args = ()
        if isinstance(x, (tuple, list)):
            x, args = x[0], tuple(x[1:])
    return (x,) + args if args else x


class _SequentialMixin:
    def add(self, *blocks):
        """Append blocks; each is registered under its index ('0', '1', ...)."""
        for block in blocks:
            self.register_child(block)
        return self

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(key, slice):
            return type(self)(prefix=self._prefix).add(*layers)
        return layers

    def __len__(self):
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Runs its children one after the other."""
    _summary_hides = True

    def hybridize(self, active=True, **kwargs):
        """Hybridize the children; warns when all are HybridBlocks, as MXNet does."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn("All children of this Sequential layer '%s' are HybridBlocks. Consider "
                          "using HybridSequential for the best performance." % self.prefix,
                          stacklevel=2)
        super().hybridize(active, **kwargs)

    def forward(self, x, *args):
        """Feed ``x`` through the children in order.

        Inputs: ``x`` and optional extra arguments for the first child; a child returning a
        tuple or list passes its first element as ``x`` and the rest as the extra arguments
        of the next child. Outputs: the last child's output.
        """
        return _chain(self._children.values(), x, args)


class HybridSequential(_SequentialMixin, HybridBlock):
    """Runs its (hybrid) children one after the other."""
    _summary_hides = True

    def hybrid_forward(self, F, x, *args):
        """Feed ``x`` through the children in order.

        Inputs: ``x`` and optional extra arguments for the first child; a child returning a
        tuple or list passes its first element as ``x`` and the rest as the extra arguments
        of the next child. Outputs: the last child's output.
        """
        return _chain(self._children.values(), x, args)


class _ConcurrentMixin:
    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if isinstance(key, slice):
            out.axis = self.axis
        return out

    def _concat(self, F, x):
        if not self._children:
            raise MXNetError('%s: no children to feed the input to; add blocks with add() '
                             'first' % type(self).__name__)
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Concurrent(_ConcurrentMixin, Sequential):
    """Feeds its input to every child and concatenates their outputs along ``axis``
    (MXNet 1.x's ``gluon.contrib.nn.Concurrent``).

    Parameters
    ----------
    axis : int, default -1
        The axis the outputs are concatenated on; 1 joins the channels of NCHW maps.
    """

    def forward(self, x):
        """Feed ``x`` to every child and concatenate the outputs along ``axis``.

        Inputs: ``x``. Outputs: the children's outputs joined on ``axis``; they must agree
        on every other axis. Raises MXNetError when there are no children.
        """
        return self._concat(nd, x)


class HybridConcurrent(_ConcurrentMixin, HybridSequential):
    """``Concurrent`` of HybridBlocks (MXNet 1.x's ``gluon.contrib.nn.HybridConcurrent``).

    Parameters
    ----------
    axis : int, default -1
        The axis the outputs are concatenated on; 1 joins the channels of NCHW maps.
    """

    def hybrid_forward(self, F, x):
        """Feed ``x`` to every child and concatenate the outputs along ``axis``.

        Inputs: ``x``. Outputs: the children's outputs joined on ``axis``; they must agree
        on every other axis. Raises MXNetError when there are no children.
        """
        return self._concat(F, x)


class Identity(HybridBlock):
    """Returns its input unchanged: the skip path beside others in a ``HybridConcurrent``."""

    def hybrid_forward(self, F, x):
        """Return ``x`` itself.

        Inputs: ``x``. Outputs: ``x``.
        """
        return x


def _size(value, what, layer):
    """A layer size: an int >= 0. MXNet accepts 0 when the layer is made (its parameter
    shape is then unknown and the first forward fails), so minigluon does too."""
    if not isinstance(value, (int, np.integer)) or value < 0:
        raise MXNetError('%s: %s must be an int >= 0, got %r' % (layer, what, value))
    return int(value)


class Dense(HybridBlock):
    """Fully connected layer ``activation(dot(x, weight.T) + bias)``.

    Parameters
    ----------
    units : int
        Output size.
    activation : str, optional
        Name of an ``Activation`` applied to the output.
    use_bias : bool, default True
    flatten : bool, default True
        Collapse all input axes but the first; else apply to the last axis only.
    dtype : str, default 'float32'
    weight_initializer, bias_initializer : Initializer or str
    in_units : int, default 0
        Input size; 0 infers it on the first forward pass.

    Inputs: ``(batch, in_units)`` (or any shape with ``flatten``). Outputs:
    ``(batch, units)``.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype='float32',
                 weight_initializer=None, bias_initializer='zeros', in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._units = _size(units, 'units', 'Dense')
        self._flatten = flatten
        self.weight = Parameter('weight', shape=(units, in_units), init=weight_initializer,
                                dtype=dtype, allow_deferred_init=True)
        self.bias = Parameter('bias', shape=(units,), init=bias_initializer, dtype=dtype,
                              allow_deferred_init=True) if use_bias else None
        with self.name_scope():  # named <layer>_relu, as in MXNet, using no counter
            self.act = Activation(activation, prefix=activation + '_') \
                if activation is not None else None

    def infer_shape(self, x, *args):
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F, x, weight, bias=None):
        """``activation(dot(x, weight.T) + bias)``.

        Inputs: ``x`` of shape ``(batch, ...)`` with ``flatten`` (the trailing axes are
        collapsed into ``in_units``), else ``(..., in_units)``; ``weight`` ``(units, in_units)``
        and ``bias`` ``(units,)`` or None. Outputs: ``(batch, units)``, or ``(..., units)``
        without ``flatten``.
        """
        out = F.FullyConnected(x, weight, bias, num_hidden=self._units, no_bias=bias is None,
                               flatten=self._flatten, name='fwd')
        return self.act(out) if self.act is not None else out

    def __repr__(self):
        in_units = self.weight.shape[1]
        return '%s(%s -> %d, %s)' % (type(self).__name__, in_units or None, self._units,
                                     self.act if self.act is not None else 'linear')


class Dropout(HybridBlock):
    """Zeroes inputs with probability ``rate`` while training, scaling the rest by 1/(1-rate).

    Outside ``autograd.record()`` (or inside ``predict_mode``) it passes inputs through.
    ``axes`` shares one mask along those axes (e.g. ``axes=(2, 3)`` drops whole channels).
    """

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise MXNetError('Dropout: rate must be in [0, 1), got %r' % (rate,))
        self._rate = rate
        self._axes = tuple(axes)

    def hybrid_forward(self, F, x):
        """Zero elements with probability ``rate`` while training and scale the rest by
        ``1 / (1 - rate)``; pass ``x`` through otherwise.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        if self._rate == 0:
            return x
        return F.Dropout(x, p=self._rate, axes=self._axes, name='fwd')

    def __repr__(self):
        return 'Dropout(p = %s, axes=%s)' % (self._rate, self._axes)


def _norm_repr(block, kwargs):
    content = ', '.join('%s=%r' % kv for kv in kwargs.items())
    return '%s(%s, in_channels=%s)' % (type(block).__name__, content,
                                       block.gamma.shape[0] or None)


class BatchNorm(HybridBlock):
    """Batch normalization over every axis but ``axis``.

    While training (inside ``autograd.record()``) it normalizes with the batch's
    statistics and updates ``running_mean``/``running_var`` as
    ``running = momentum * running + (1 - momentum) * batch``; otherwise, or with
    ``use_global_stats``, it uses the running statistics.

    Parameters
    ----------
    axis : int, default 1
        The channel axis.
    momentum : float, default 0.9
    epsilon : float, default 1e-5
    center, scale : bool, default True
        Learn ``beta`` / ``gamma``; when False they stay 0 / 1.
    use_global_stats : bool, default False
    in_channels : int, default 0
        Number of channels; 0 infers it on the first forward pass.
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'axis': axis, 'eps': epsilon, 'momentum': momentum,
                        'fix_gamma': not scale, 'use_global_stats': use_global_stats}
        shape = (in_channels,)
        self.gamma = Parameter('gamma', grad_req='write' if scale else 'null', shape=shape,
                               init=gamma_initializer, allow_deferred_init=True,
                               differentiable=scale)
        self.beta = Parameter('beta', grad_req='write' if center else 'null', shape=shape,
                              init=beta_initializer, allow_deferred_init=True,
                              differentiable=center)
        self.running_mean = Parameter('running_mean', grad_req='null', shape=shape,
                                      init=running_mean_initializer, allow_deferred_init=True,
                                      differentiable=False)
        self.running_var = Parameter('running_var', grad_req='null', shape=shape,
                                     init=running_variance_initializer,
                                     allow_deferred_init=True, differentiable=False)

    def infer_shape(self, x, *args):
        channels = x.shape[self._kwargs['axis']]
        for param in (self.gamma, self.beta, self.running_mean, self.running_var):
            param.shape = (channels,)

    def cast(self, dtype):
        if np.dtype(dtype) == np.float16:
            dtype = 'float32'  # statistics and affine terms stay float32, as in MXNet
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        """Normalize ``x`` with the batch's statistics while training (updating the running
        ones), else with the running statistics, then scale by ``gamma`` and shift by ``beta``.

        Inputs: ``x`` with ``C`` channels on ``axis``, and the ``(C,)`` parameters ``gamma``,
        ``beta``, ``running_mean``, ``running_var``. Outputs: the shape of ``x``.
        """
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name='fwd',
                           **self._kwargs)

    def __repr__(self):
        return _norm_repr(self, self._kwargs)


class BatchNormReLU(BatchNorm):
    """``BatchNorm`` followed by a ReLU (MXNet fuses the two into one op; the result is
    the same). Takes the parameters of ``BatchNorm``."""

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        """``relu(BatchNorm(x))``.

        Inputs: as ``BatchNorm.hybrid_forward``. Outputs: the shape of ``x``.
        """
        return F.relu(super().hybrid_forward(F, x, gamma, beta, running_mean, running_var))


def _add_affine(block, center, scale, beta_initializer, gamma_initializer, in_channels):
    """The learned ``gamma`` and ``beta`` of LayerNorm, InstanceNorm (one per channel) and
    GroupNorm (one per group)."""
    block.gamma = Parameter('gamma', grad_req='write' if scale else 'null',
                            shape=(in_channels,), init=gamma_initializer,
                            allow_deferred_init=True)
    block.beta = Parameter('beta', grad_req='write' if center else 'null',
                           shape=(in_channels,), init=beta_initializer,
                           allow_deferred_init=True)


class LayerNorm(HybridBlock):
    """Normalizes each sample over ``axis``, then applies a learned ``gamma``, ``beta``."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        _add_affine(self, center, scale, beta_initializer, gamma_initializer, in_channels)

    def infer_shape(self, x, *args):
        self.gamma.shape = self.beta.shape = (x.shape[self._kwargs['axis']],)

    def hybrid_forward(self, F, x, gamma, beta):
        """Normalize each sample over ``axis`` to mean 0 and variance 1, then scale by ``gamma``
        and shift by ``beta``.

        Inputs: ``x`` with ``C`` entries on ``axis``, ``gamma`` and ``beta`` of shape ``(C,)``.
        Outputs: the shape of ``x``.
        """
        return F.LayerNorm(x, gamma, beta, axis=self._kwargs['axis'], eps=self._kwargs['eps'],
                           name='fwd')

    def __repr__(self):
        return _norm_repr(self, self._kwargs)


class InstanceNorm(HybridBlock):
    """Normalizes each sample's channel over its spatial axes (channel ``axis``)."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        _add_affine(self, center, scale, beta_initializer, gamma_initializer, in_channels)

    def infer_shape(self, x, *args):
        self.gamma.shape = self.beta.shape = (x.shape[self._kwargs['axis']],)

    def hybrid_forward(self, F, x, gamma, beta):
        """Normalize each channel of each sample over its spatial axes, then scale by ``gamma``
        and shift by ``beta``.

        Inputs: ``x`` of shape ``(N, ..., C on axis, ...)``, ``gamma`` and ``beta`` of shape
        ``(C,)``. Outputs: the shape of ``x``.
        """
        axis, eps = self._kwargs['axis'], self._kwargs['eps']
        if axis == 1:
            return F.InstanceNorm(x, gamma, beta, name='fwd', eps=eps)
        x = x.swapaxes(1, axis)
        return F.InstanceNorm(x, gamma, beta, name='fwd', eps=eps).swapaxes(1, axis)

    def __repr__(self):
        return _norm_repr(self, self._kwargs)


class GroupNorm(HybridBlock):
    """Normalizes each sample over groups of channels: ``(N, C, ...)`` is viewed as
    ``(N, num_groups, C // num_groups * ...)`` and each group scaled to mean 0 and
    variance 1, then scaled and shifted by that group's ``gamma`` and ``beta``.

    Parameters
    ----------
    num_groups : int, default 1
        The number of groups the channel axis (axis 1) is split into; it must divide
        the number of channels.
    epsilon : float, default 1e-5
    center, scale : bool, default True
        Learn ``beta`` / ``gamma``; when False they stay 0 / 1.
    beta_initializer, gamma_initializer : Initializer or str

    ``gamma`` and ``beta`` have one entry per group, shape ``(num_groups,)``, as in
    MXNet 1.x (later versions have one per channel).
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', **kwargs):
        super().__init__(**kwargs)
        if _size(num_groups, 'num_groups', 'GroupNorm') == 0:
            raise MXNetError('GroupNorm: num_groups must be at least 1, got 0')
        self._kwargs = {'eps': epsilon, 'num_groups': int(num_groups),
                        'center': center, 'scale': scale}
        _add_affine(self, center, scale, beta_initializer, gamma_initializer, num_groups)

    def hybrid_forward(self, F, x, gamma, beta):
        """Normalize each group of channels of each sample, then scale by ``gamma`` and shift by
        ``beta``, one entry per group.

        Inputs: ``x`` of shape ``(N, C, ...)`` with ``C`` divisible by ``num_groups``,
        ``gamma`` and ``beta`` of shape ``(num_groups,)``. Outputs: the shape of ``x``.
        """
        return F.GroupNorm(x, gamma, beta, num_groups=self._kwargs['num_groups'],
                           eps=self._kwargs['eps'])

    def __repr__(self):
        return 'GroupNorm(%s)' % ', '.join('%s=%r' % kv for kv in self._kwargs.items())


class Embedding(HybridBlock):
    """Maps integer indices to rows of a learned ``(input_dim, output_dim)`` matrix.

    The weight's gradient is dense (``sparse_grad`` is accepted and has no effect).
    """

    def __init__(self, input_dim, output_dim, dtype='float32', weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._input_dim = _size(input_dim, 'input_dim', 'Embedding')
        self._output_dim = _size(output_dim, 'output_dim', 'Embedding')
        self._dtype = np.dtype(dtype).name
        self.weight = Parameter('weight', shape=(input_dim, output_dim), init=weight_initializer,
                                dtype=dtype)

    def hybrid_forward(self, F, x, weight):
        """Look up the rows of ``weight`` at the indices ``x``.

        Inputs: ``x`` of any shape holding indices in ``[0, input_dim)``, ``weight`` of shape
        ``(input_dim, output_dim)``. Outputs: ``x.shape + (output_dim,)``.
        """
        return F.Embedding(x, weight, input_dim=self._input_dim, output_dim=self._output_dim,
                           name='fwd')

    def __repr__(self):
        return 'Embedding(%d -> %d, %s)' % (self._input_dim, self._output_dim, self._dtype)


class Flatten(HybridBlock):
    """Collapses all axes but the first: ``(N, ...)`` -> ``(N, prod(...))``."""

    def hybrid_forward(self, F, x):
        """Collapse every axis but the first.

        Inputs: ``(N, d1, d2, ...)``. Outputs: ``(N, d1 * d2 * ...)``.
        """
        return F.flatten(x)

    def __repr__(self):
        return 'Flatten'


def _nd_function(name, layer):
    fn = getattr(nd, name, None)
    if not callable(fn):
        raise MXNetError('%s: there is no function nd.%s' % (layer, name))
    return fn


def _function_name(fn):
    return getattr(fn, '__name__', type(fn).__name__)


class Lambda(Block):
    """Wraps a function (or the name of an ``nd`` function) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            function = _nd_function(function, 'Lambda')
        elif not callable(function):
            raise MXNetError('Lambda: expected a function or the name of one, got %s'
                             % type(function).__name__)
        self._func_impl = function

    def forward(self, *args):
        """Call the wrapped function on the inputs.

        Inputs: any positional arguments. Outputs: whatever the function returns.
        """
        return self._func_impl(*args)

    def __repr__(self):
        return 'Lambda(%s)' % _function_name(self._func_impl)


class HybridLambda(HybridBlock):
    """Wraps ``function(F, x, *args)`` (or the name of an ``F`` function) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            name = function
            _nd_function(name, 'HybridLambda')
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = name
        elif callable(function):
            self._func = function
            self._func_name = _function_name(function)
        else:
            raise MXNetError('HybridLambda: expected a function or the name of one, got %s'
                             % type(function).__name__)

    def hybrid_forward(self, F, x, *args):
        """Call the wrapped function as ``function(F, x, *args)``.

        Inputs: ``x`` and any further positional arguments. Outputs: whatever the function
        returns.
        """
        return self._func(F, x, *args)

    def __repr__(self):
        return 'HybridLambda(%s)' % self._func_name
