"""Activation layers: Activation, LeakyReLU, PReLU, ELU, SELU, GELU, Swish."""
from ... import initializer
from ...base import MXNetError
from ..block import HybridBlock
from ..parameter import Parameter

__all__ = ['Activation', 'LeakyReLU', 'PReLU', 'ELU', 'SELU', 'GELU', 'Swish']

_ACT_TYPES = ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')


class Activation(HybridBlock):
    """Applies ``activation``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""

    def __init__(self, activation, **kwargs):
        if activation not in _ACT_TYPES:
            raise MXNetError('Activation: unknown activation %r; choose one of %s'
                             % (activation, ', '.join(_ACT_TYPES)))
        self._act_type = activation  # before Block.__init__, which names it after this
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        """Apply the activation function elementwise.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        return F.Activation(x, act_type=self._act_type, name='fwd')

    def __repr__(self):
        return 'Activation(%s)' % self._act_type


class LeakyReLU(HybridBlock):
    """``x`` for ``x >= 0``, ``alpha * x`` otherwise."""

    def __init__(self, alpha, **kwargs):
        super().__init__(**kwargs)
        if alpha < 0:
            raise MXNetError('LeakyReLU: alpha must be >= 0, got %r' % (alpha,))
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        """``x`` where ``x >= 0``, ``alpha * x`` elsewhere.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        return F.LeakyReLU(x, None, act_type='leaky', slope=self._alpha, name='fwd')

    def __repr__(self):
        return 'LeakyReLU(%s)' % self._alpha


class PReLU(HybridBlock):
    """Leaky ReLU with a learned slope per channel (axis 1), or one shared slope.

    Parameters
    ----------
    alpha_initializer : Initializer, default Constant(0.25)
    in_channels : int, default 1
        Number of learned slopes: 1 (shared) or the number of channels.
    """

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1, **kwargs):
        super().__init__(**kwargs)
        self.alpha = Parameter('alpha', shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        """``x`` where ``x >= 0``, ``alpha * x`` elsewhere, with the learned slopes ``alpha``.

        Inputs: ``x`` of shape ``(N, C, ...)`` and the parameter ``alpha`` of shape ``(1,)`` or
        ``(C,)`` (broadcast along axis 1). Outputs: the shape of ``x``.
        """
        return F.LeakyReLU(x, alpha, act_type='prelu', name='fwd')


class ELU(HybridBlock):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        """``x`` where ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        return F.LeakyReLU(x, None, act_type='elu', slope=self._alpha)


class SELU(HybridBlock):
    """Scaled ELU with the self-normalizing constants of Klambauer et al. (2017)."""

    def hybrid_forward(self, F, x):
        """``scale * ELU(x, alpha)`` with the fixed SELU constants.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        return F.LeakyReLU(x, None, act_type='selu', name='fwd')


class GELU(HybridBlock):
    """Gaussian error linear unit ``x * Phi(x)``."""

    def hybrid_forward(self, F, x):
        """``x * Phi(x)``, Phi the standard normal CDF.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        return F.LeakyReLU(x, None, act_type='gelu', name='fwd')


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        """``x * sigmoid(beta * x)``.

        Inputs: ``x`` of any shape. Outputs: the same shape.
        """
        return x * F.sigmoid(self._beta * x, name='fwd')
