"""The KVStore interface shared by the in-process and distributed stores.

Keys are ints or strings; values are NDArrays, or lists of NDArrays on several
devices, which are summed. Stores register under their type names and
``mx.kv.create(name)`` builds them: minigluon's own through ``register(*names)``
(a factory given the type name), a user's through ``KVStoreBase.register`` (a class
built without arguments, named by its lower-cased class name, as in MXNet).
"""
import numbers
import warnings

import numpy as np

from ..base import MXNetError, MXNetTypeError, MXNetValueError
from ..ndarray.ndarray import NDArray
from ..registry import Registry

_REGISTRY = Registry('kvstore type')  # names are case-insensitive, as in MXNet


def register(*names):
    """Decorator: ``factory(type_name)`` builds the stores of every type in ``names``."""
    return lambda factory: _REGISTRY.register(factory, *names)


def create(name='local'):
    """A kvstore by type name.

    Parameters
    ----------
    name : str, default 'local'
        'local' (aggregate on the host), 'device' (on the devices; also
        'local_allreduce_cpu', 'local_allreduce_device', 'local_update_cpu'), a
        distributed type ('dist_sync', 'dist_async', 'dist_sync_device',
        'dist_async_device'), or a store registered with ``KVStoreBase.register``.
    """
    if isinstance(name, KVStoreBase):
        return name
    if not isinstance(name, str):
        raise MXNetTypeError('kvstore type must be a string, got %r' % (name,))
    name = name.lower()
    entry = _REGISTRY.find(name)
    return entry() if isinstance(entry, type) else entry(name)


def check_key(key):
    """A kvstore key as stored: an int (numpy integers too) or a str.

    Raises
    ------
    MXNetError
        For any other type (bool included).
    """
    if isinstance(key, bool) or not isinstance(key, (numbers.Integral, str)):
        raise MXNetError('kvstore keys must be int or str, got %r (%s)'
                         % (key, type(key).__name__))
    return int(key) if isinstance(key, numbers.Integral) else key


def exactly(key, value, dtype):
    """``value`` (a host array) as ``dtype``, which must hold every value exactly.

    Raises
    ------
    MXNetError
        When a value would change (``[0.7, 1.9]`` pushed into an int32 key), as a
        shape mismatch does.
    """
    if value.dtype == dtype:
        return value
    converted = value.astype(dtype)
    with np.errstate(invalid='ignore', over='ignore'):
        back = converted.astype(value.dtype)
    same = back == value
    if value.dtype.kind in 'fc':
        same |= np.isnan(value) & np.isnan(back)
    if not same.all():
        bad = value.reshape(-1)[np.argmin(same.reshape(-1))]
        raise MXNetError('kvstore: key %r holds %s, but the %s value pushed cannot be held '
                         'exactly (e.g. %r); convert it yourself first (value.astype(%r))'
                         % (key, np.dtype(dtype).name, value.dtype.name, bad.item(),
                            np.dtype(dtype).name))
    return converted


def as_value_list(value, what='value'):
    """A value as a non-empty list of NDArrays (one per device)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise MXNetError('kvstore %s is an empty list' % what)
    for v in values:
        if not isinstance(v, NDArray):
            raise MXNetError('kvstore %s must be an NDArray or a list of NDArrays, got %s'
                             % (what, type(v).__name__))
    return values


def pair_up(keys, values, what='value'):
    """``[(key, [NDArray, ...]), ...]`` from a key (or list of keys) and matching values."""
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            raise MXNetError('kvstore: %d keys need a list of %d %ss'
                             % (len(keys), len(keys), what))
        return [(check_key(k), as_value_list(v, what)) for k, v in zip(keys, values)]
    return [(check_key(keys), as_value_list(values, what))]


def traffic(pairs):
    """``{'keys': [...], 'bytes': n}`` of ``pair_up``'s pairs: what a push or pull moves,
    as the profiler shows it."""
    return {'keys': [k for k, _ in pairs],
            'bytes': sum(a.size * np.dtype(a.dtype).itemsize for _, arrays in pairs
                      for a in arrays)}


def check_shapes(key, arrays, shape, action):
    """Every array of a push (``action='push'``) or pull must have the key's shape."""
    for a in arrays:
        if a.shape != shape:
            if action == 'push':
                raise MXNetError('kvstore: push to key %r with shape %s, but it was '
                                 'initialised with shape %s' % (key, a.shape, shape))
            raise MXNetError('kvstore: pull of key %r with shape %s into an array of '
                             'shape %s' % (key, shape, a.shape))


class Pending:
    """A transfer a store has started and not necessarily finished (``pull_async``);
    ``wait()`` returns once it has, raising what went wrong. This one is finished."""

    def wait(self):
        """Block until the transfer is complete (here: at once)."""


class KVStoreBase:
    """The API every kvstore offers (MXNet's KVStore and KVStoreBase).

    A store of one's own subclasses this, implements at least ``broadcast``,
    ``pushpull``, ``is_capable`` and ``type`` (what ``gluon.Trainer`` uses), and is
    made creatable by name with the ``KVStoreBase.register`` class decorator. One that
    also implements ``pull_async`` (and ``push_held``/``release`` when it holds updates)
    gets the Trainer's overlap of communication with backward. What a store can do is
    said by attributes (``is_distributed``, ``is_async``, ``overlaps``,
    ``is_capable``), never read from its type name.
    """

    OPTIMIZER = 'optimizer'

    #: Gradients cross processes: each worker's step is scaled by ``1 / num_workers``.
    is_distributed = False
    #: Each push is applied as it arrives, without waiting for the other workers' (so
    #: the store must run the optimizer: ``update_on_kvstore``).
    is_async = False

    def __init__(self, kv_type=None):
        self._type = kv_type

    @staticmethod
    def register(klass):
        """Class decorator: ``mx.kv.create(klass.__name__.lower())`` builds ``klass()``.

        Examples
        --------
        >>> @mx.kv.KVStoreBase.register
        ... class MyKVStore(mx.kv.KVStoreBase):
        ...     pass
        >>> type(mx.kv.create('mykvstore'))
        <class '__main__.MyKVStore'>
        """
        if not isinstance(klass, type):
            raise MXNetTypeError('KVStoreBase.register decorates a class, got %r' % (klass,))
        name = klass.__name__.lower()
        old = _REGISTRY.get(name)
        if old is not None and old is not klass:
            warnings.warn('kvstore %s.%s replaces the kvstore %r registered before (%s)'
                          % (klass.__module__, klass.__name__, name,
                             getattr(old, '__qualname__', old)))
            del _REGISTRY[name]
        _REGISTRY.add(name, klass)
        return klass

    def is_capable(self, capability):
        """Whether this store supports ``capability`` (``KVStoreBase.OPTIMIZER``: running
        the optimizer on pushes)."""
        if str(capability).lower() == KVStoreBase.OPTIMIZER:
            return True
        raise MXNetValueError('Unknown capability: %r; the one defined is %r'
                              % (capability, KVStoreBase.OPTIMIZER))

    @property
    def type(self):
        """The store's type name, as given to ``mx.kv.create``."""
        return self._type

    @property
    def rank(self):
        """This worker's rank among the job's workers (0 in one process)."""
        return 0

    @property
    def num_workers(self):
        """How many workers the job has (1 in one process)."""
        return 1

    @property
    def is_recovery(self):
        """True in a worker that replaces a dead one of its job (distributed stores)."""
        return False

    @property
    def restarts_allowed(self):
        """True when a dead worker of the job may be replaced (distributed stores)."""
        return False

    def init(self, key, value):
        """Give ``key`` (or each key of a list) its first value.

        Parameters
        ----------
        key : int, str or list
        value : NDArray or list of NDArray
        """
        raise NotImplementedError

    def push(self, key, value, priority=0):
        """Send ``value`` (one NDArray, or one per device, summed) to be added into ``key``.

        Parameters
        ----------
        key : int, str or list
        value : NDArray, list of NDArray, or a list of those per key
        priority : int
            Higher goes first where the store orders its traffic.
        """
        raise NotImplementedError

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the current value of ``key`` into ``out`` (every array of a list).

        Parameters
        ----------
        key : int, str or list
        out : NDArray or list of NDArray
        priority : int
        ignore_sparse : bool
            MXNet's flag; every array is dense here.
        """
        raise NotImplementedError

    def pushpull(self, key, value, out=None, priority=0):
        """Push ``value`` then pull the result into ``out`` (``value`` when omitted).

        ``key`` may be a list, with one value (or list of per-device values) per key:
        every push leaves before the first pull waits.
        """
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    # ---- the protocol of the Trainer's gradient reducer (gluon/reducer.py) --------------
    # A store that overrides these gets communication overlapped with backward: pushes
    # while backward still runs, pulls in the background, the wait when the weights are
    # next used. The defaults are synchronous, so any store works with the Trainer.

    def push_held(self, key, value, priority=0):
        """``push`` whose update the store may hold back until every worker has called
        ``release``: gradients pushed during backward must be updated with the optimizer
        as ``Trainer.step`` leaves it (a new batch size or learning rate). A store that
        applies each push at once (the default) needs no hold: its pushes come in
        ``step``, after the optimizer is set."""
        self.push(key, value, priority)

    def release(self):
        """The pushes held so far (``push_held``) may be updated. Returns at once."""

    def pull_async(self, key, out, priority=0):
        """Start ``pull(key, out)`` and return a ``Pending`` whose ``wait()`` returns once
        ``out`` holds the value. Here: pulls now."""
        self.pull(key, out, priority)
        return Pending()

    @property
    def holds_pushes(self):
        """Whether ``push_held`` really holds updates until ``release``: True when the
        class implements it itself."""
        return type(self).push_held is not KVStoreBase.push_held

    @property
    def overlaps(self):
        """Whether the Trainer should push during backward and pull in the background:
        True when the class implements ``pull_async`` itself."""
        return type(self).pull_async is not KVStoreBase.pull_async

    def allreduce(self, key, value, out=None, average=False):
        """Sum ``value`` (one NDArray per device) over all devices and workers into ``out``.

        A minigluon extension for statistics kept beside the weights: the key is
        created on first use and the optimizer never updates it.
        """
        values = value if isinstance(value, (list, tuple)) else [value]
        out = values if out is None else out
        outs = out if isinstance(out, (list, tuple)) else [out]
        total = values[0].as_in_context(outs[0].context).copy()
        for v in values[1:]:
            total += v.as_in_context(total.context)
        if average:
            total /= self.num_workers
        for o in outs:
            total.copyto(o)

    def broadcast(self, key, value, out, priority=0):
        """Initialise ``key`` with ``value`` and pull it into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` inside the store (on the servers when distributed) on every push."""
        raise NotImplementedError

    def set_gradient_compression(self, compression_params):
        """Compress pushed gradients, e.g. ``{'type': '2bit', 'threshold': 0.5}``."""
        raise NotImplementedError

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the store's optimizer states (and the optimizer with ``dump_optimizer``) to ``fname``."""
        raise NotImplementedError

    def load_optimizer_states(self, fname):
        """Read optimizer states that ``save_optimizer_states`` wrote."""
        raise NotImplementedError

    def barrier(self):
        """Wait until every worker reaches this point (no-op in one process)."""

    _barrier = barrier

    def num_dead_node(self, node_id=None, timeout=None):
        """How many nodes of the job are known to be dead (always 0 in one process)."""
        return 0

    def close(self):
        """Release resources (connections for distributed stores)."""

    def __repr__(self):
        return '<%s type=%s rank=%d num_workers=%d>' % (type(self).__name__, self.type,
                                                        self.rank, self.num_workers)
