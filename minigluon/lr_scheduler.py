"""``mx.lr_scheduler``: learning rate as a function of the update count, as in MXNet 1.x.

A scheduler is called as ``sched(num_update)`` and returns the learning rate to use.
``base_lr`` is a plain attribute: an optimizer given a scheduler overwrites it with
its own ``learning_rate``, exactly as MXNet's does. Factor and MultiFactor decay
``base_lr`` in place; Poly and Cosine, as in MXNet, decay from the ``base_lr`` they
were built with. Schedulers travel as JSON (``to_config`` / ``from_config``), never
as pickles: the config holds the constructor arguments only, because every schedule
is a function of ``num_update`` and a rebuilt scheduler catches up on its next call
(MXNet's "continue training via load_epoch" behaviour).
"""
import logging
import math
import numbers

from .registry import Registry

_LOG = logging.getLogger(__name__)

_REGISTRY = Registry('lr scheduler', case_sensitive=True)


def register(name):
    """Class decorator: make a scheduler class known to ``from_config`` as ``name``."""
    def wrap(klass):
        _REGISTRY.add(name, klass)
        klass.config_name = name
        return klass
    return wrap


def from_config(cfg):
    """Rebuild a scheduler from the dict made by its ``to_config()``.

    Parameters
    ----------
    cfg : dict
        ``{'name': registry name, 'params': constructor arguments}``.

    Returns
    -------
    LRScheduler
    """
    if not isinstance(cfg, dict) or not isinstance(cfg.get('params', {}), dict):
        raise ValueError("a scheduler config must be a dict {'name': ..., 'params': {...}}; "
                         "got %r" % (cfg,))
    name = cfg.get('name')
    klass = _REGISTRY.get(name)
    if klass is None:
        raise ValueError('unknown lr scheduler %r in config; known: %s (register new ones '
                         'with mx.lr_scheduler.register)' % (name, ', '.join(_REGISTRY.names())))
    try:
        sched = klass(**cfg.get('params', {}))
    except TypeError as exc:
        raise ValueError('bad params for lr scheduler %r: %s' % (name, exc)) from None
    return sched


def _plain(value):
    """A JSON-able Python value from numpy scalars, tuples and plain values."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, 'item') else value


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError('%s must be an integer >= %d, got %r' % (name, minimum, value))
    return int(value)


def _check_factor(factor):
    if factor > 1.0:
        raise ValueError('factor must be no more than 1 so that the learning rate decreases, '
                         'got %r' % (factor,))


class LRScheduler:
    """Base class of a learning rate scheduler, with optional warmup.

    Parameters
    ----------
    base_lr : float, default 0.01
        The learning rate the schedule starts from after warmup. An optimizer given
        this scheduler overwrites it with its own ``learning_rate``.
    warmup_steps : int, default 0
        Number of updates spent warming up before the schedule proper begins.
    warmup_begin_lr : float, default 0
        Learning rate at update 0 of the warmup.
    warmup_mode : {'linear', 'constant'}, default 'linear'
        ``'linear'`` rises from ``warmup_begin_lr`` towards ``base_lr`` in equal
        steps; ``'constant'`` holds ``warmup_begin_lr`` throughout the warmup.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        self.base_lr = base_lr
        self.warmup_steps = _check_int('warmup_steps', warmup_steps, 0)
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_steps > 0 and warmup_begin_lr > base_lr:
            raise ValueError('warmup_begin_lr (%r) must not exceed base_lr (%r): warmup rises '
                             'towards base_lr' % (warmup_begin_lr, base_lr))
        if warmup_mode not in ('linear', 'constant'):
            raise ValueError("warmup_mode must be 'linear' or 'constant', got %r" % (warmup_mode,))
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The learning rate at update ``num_update`` (< ``warmup_steps``) of the warmup."""
        if self.warmup_mode == 'constant':
            return self.warmup_begin_lr
        rise = (self.warmup_final_lr - self.warmup_begin_lr) * num_update / self.warmup_steps
        return self.warmup_begin_lr + rise

    def __call__(self, num_update):
        """Return the learning rate for update ``num_update``.

        Parameters
        ----------
        num_update : int
            The largest number of updates applied to any weight so far.
        """
        raise NotImplementedError('%s must override __call__' % type(self).__name__)

    def _params(self):
        """Constructor arguments that rebuild this scheduler from its start."""
        return {'base_lr': self.warmup_final_lr, 'warmup_steps': self.warmup_steps,
                'warmup_begin_lr': self.warmup_begin_lr, 'warmup_mode': self.warmup_mode}

    def to_config(self):
        """A JSON-able description: registry name and constructor params.

        The params describe the schedule from its start (for Factor and MultiFactor,
        ``base_lr`` as it was before the first decay, e.g. as an optimizer set it);
        a scheduler rebuilt by ``from_config`` replays the decays on its first call,
        so it returns what this one returns for the same (non-decreasing) updates.

        Returns
        -------
        dict
            ``{'name': ..., 'params': {...}}``.
        """
        name = getattr(type(self), 'config_name', None)
        if _REGISTRY.get(name) is not type(self):
            raise ValueError('%s is not registered; decorate it with '
                             "@mx.lr_scheduler.register('name') to serialise it"
                             % type(self).__name__)
        return {'name': name, 'params': {k: _plain(v) for k, v in self._params().items()}}

    def __repr__(self):
        args = ', '.join('%s=%r' % kv for kv in self._params().items())
        return '%s(%s)' % (type(self).__name__, args)


@register('factor')
class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates.

    After warmup the rate at update ``n`` is::

        max(base_lr * factor ** floor((n - 1) / step), stop_factor_lr)

    i.e. the first decay happens at update ``step + 1``, as in MXNet. Updates are
    counted from 0, warmup included. ``base_lr`` is decayed in place.

    Parameters
    ----------
    step : int
        Number of updates between two decays (>= 1).
    factor : float, default 1
        Multiplier applied at each decay (<= 1).
    stop_factor_lr : float, default 1e-8
        The rate never goes below this value.
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError('step must be >= 1 update, got %r' % (step,))
        _check_factor(factor)
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if self.count == 0:
            self._start_lr = self.base_lr  # to_config's base_lr: decays replay from it
        # a loop, not an if: a resumed run may jump over several decays at once, which
        # is one change of the rate and is logged once
        before = self.base_lr
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr = max(self.base_lr * self.factor, self.stop_factor_lr)
        if self.base_lr != before:
            _LOG.info('Update[%d]: learning rate %s %0.5e', num_update,
                      'reached its floor' if self.base_lr == self.stop_factor_lr
                      else 'changed to', self.base_lr)
        return self.base_lr

    def _params(self):
        params = super()._params()
        params['base_lr'] = self._start_lr if self.count else self.base_lr
        return dict(step=self.step, factor=self.factor, stop_factor_lr=self.stop_factor_lr,
                    **params)


@register('multifactor')
class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` once past each update in ``step``.

    After warmup the rate at update ``n`` is ``base_lr * factor ** k`` where ``k`` is
    the number of entries ``s`` of ``step`` with ``n > s``. ``base_lr`` is decayed in
    place.

    Parameters
    ----------
    step : list of int
        Strictly increasing updates (each >= 1) after which the rate decays.
    factor : float, default 1
        Multiplier applied at each decay (<= 1).
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, (list, tuple)) or not step:
            raise ValueError('step must be a non-empty list of update counts, got %r' % (step,))
        for i, s in enumerate(step):
            if s < 1:
                raise ValueError('every step must be >= 1 update, got %r in %r' % (s, step))
            if i and s <= step[i - 1]:
                raise ValueError('steps must be strictly increasing, got %r' % (list(step),))
        _check_factor(factor)
        self.step = list(step)
        self.factor = factor
        self.cur_step_ind = 0
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if self.cur_step_ind == 0:
            self._start_lr = self.base_lr  # to_config's base_lr: decays replay from it
        before = self.base_lr
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
        if self.base_lr != before:  # once, however many steps a resumed run jumped over
            _LOG.info('Update[%d]: learning rate changed to %0.5e', num_update, self.base_lr)
        return self.base_lr

    def _params(self):
        params = super()._params()
        params['base_lr'] = self._start_lr if self.cur_step_ind else self.base_lr
        return dict(step=self.step, factor=self.factor, **params)


class _DecayToFinal(LRScheduler):
    """Shared body of Poly and Cosine: decay from base_lr to final_lr over max_update."""

    def __init__(self, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                 warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.max_update = _check_int('max_update', max_update, 1)
        if self.warmup_steps >= self.max_update:
            raise ValueError('warmup_steps (%d) must be smaller than max_update (%d): no '
                             'updates would be left to decay over'
                             % (self.warmup_steps, self.max_update))
        self.base_lr_orig = base_lr
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _decay(self, steps):
        """Fraction in [0, 1] of (base_lr_orig - final_lr) left ``steps`` past warmup."""
        raise NotImplementedError

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        steps = min(num_update, self.max_update) - self.warmup_steps
        self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._decay(steps)
        return self.base_lr

    def _params(self):
        params = super()._params()
        params['base_lr'] = self.base_lr_orig
        return dict(max_update=self.max_update, final_lr=self.final_lr, **params)


@register('poly')
class PolyScheduler(_DecayToFinal):
    """Polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates.

    After warmup the rate at update ``n`` is::

        final_lr + (base_lr - final_lr) * (1 - (n - warmup_steps) / max_steps) ** pwr

    with ``max_steps = max_update - warmup_steps``, and ``final_lr`` once
    ``n >= max_update``.

    Parameters
    ----------
    max_update : int
        Update at which the rate reaches ``final_lr``.
    base_lr : float, default 0.01
        Rate at the end of warmup. As in MXNet this is fixed at construction:
        assigning ``base_lr`` later does not change the decay.
    pwr : float, default 2
        Power of the polynomial.
    final_lr : float, default 0
        Rate after ``max_update`` updates.
    warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = pwr

    def _decay(self, steps):
        return (1.0 - steps / self.max_steps) ** self.power

    def _params(self):
        return dict(pwr=self.power, **super()._params())


@register('cosine')
class CosineScheduler(_DecayToFinal):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates.

    After warmup the rate at update ``n`` is::

        final_lr + (base_lr - final_lr) * (1 + cos(pi * (n - warmup_steps) / max_steps)) / 2

    with ``max_steps = max_update - warmup_steps``, and ``final_lr`` once
    ``n >= max_update``.

    Parameters
    ----------
    max_update : int
        Update at which the rate reaches ``final_lr``.
    base_lr : float, default 0.01
        Rate at the end of warmup. As in MXNet this is fixed at construction:
        assigning ``base_lr`` later does not change the decay.
    final_lr : float, default 0
        Rate after ``max_update`` updates.
    warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0,
                 warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _decay(self, steps):
        return (1.0 + math.cos(math.pi * steps / self.max_steps)) / 2.0
