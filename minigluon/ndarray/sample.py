"""MXNet's ``nd.sample_*`` functions: one distribution per element of NDArray parameters.

They are ``nd.random``'s samplers under MXNet's operator argument names
(``sample_normal(mu, sigma)`` where ``random.normal`` takes ``loc, scale``), and as in
MXNet their parameters must be NDArrays: the output is ``param.shape + shape``.
"""
from ..base import MXNetTypeError
from . import random
from .ndarray import NDArray


def _sampler(name, draw, arg_names, to_random=None):
    """``nd.sample_<name>(*params, shape=(), dtype=None, out=None)``, drawing with
    ``draw``; ``to_random`` maps MXNet's parameters onto ``draw``'s."""
    def sample(*args, shape=None, dtype=None, out=None, **kwargs):
        kwargs.pop('name', None)
        if len(args) > len(arg_names) + 2:
            raise MXNetTypeError('sample_%s takes %s, shape and dtype; got %d positional '
                                 'arguments' % (name, ', '.join(arg_names), len(args)))
        params = list(args[:len(arg_names)])
        params += [kwargs.pop(n, None) for n in arg_names[len(params):]]
        rest = args[len(arg_names):]
        shape = rest[0] if rest else shape
        dtype = rest[1] if len(rest) > 1 else dtype
        if kwargs:
            raise MXNetTypeError('sample_%s got unexpected arguments %s (it takes %s, shape, '
                                 'dtype, out)' % (name, sorted(kwargs), ', '.join(arg_names)))
        for arg, value in zip(arg_names, params):
            if not isinstance(value, NDArray):
                raise MXNetTypeError('sample_%s: argument %s must be an NDArray, got %s; use '
                                     'nd.random.%s for number parameters'
                                     % (name, arg, type(value).__name__, name))
        if to_random is not None:
            params = to_random(*params)
        return draw(*params, shape=shape, dtype=dtype, out=out)
    sample.__name__ = sample.__qualname__ = 'sample_' + name
    sample.__doc__ = ('Samples from the %s distribution, ``shape`` draws per element of the '
                      'NDArray parameters %s (output ``%s.shape + shape``).'
                      % (name.replace('_', ' '), ', '.join(arg_names), arg_names[0]))
    return sample


sample_uniform = _sampler('uniform', random.uniform, ('low', 'high'))
sample_normal = _sampler('normal', random.normal, ('mu', 'sigma'))
sample_gamma = _sampler('gamma', random.gamma, ('alpha', 'beta'))
sample_exponential = _sampler('exponential', random.exponential, ('lam',),
                              lambda lam: (1.0 / lam,))  # random.exponential takes the scale
sample_poisson = _sampler('poisson', random.poisson, ('lam',))
sample_negative_binomial = _sampler('negative_binomial', random.negative_binomial, ('k', 'p'))
sample_generalized_negative_binomial = _sampler(
    'generalized_negative_binomial', random.generalized_negative_binomial, ('mu', 'alpha'))
