"""The KVStore interface shared by the in-process and distributed stores.

Keys are ints or strings; values are NDArrays, or lists of NDArrays on several
devices, which are summed. Subclasses register under their type names and
``mx.kv.create(name)`` builds them.
"""
import numbers

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..registry import Registry

_REGISTRY = Registry('kvstore type', case_sensitive=True)


def register(*names):
    """Class decorator: make the store creatable under ``names``."""
    return lambda klass: _REGISTRY.register(klass, *names)


def create(name='local'):
    """A kvstore by type name: 'local', 'device', or a distributed type."""
    if isinstance(name, KVStoreBase):
        return name
    if not isinstance(name, str):
        raise MXNetError('kvstore type must be a string, got %r' % (name,))
    return _REGISTRY.find(name)(name)


def check_key(key):
    if isinstance(key, bool) or not isinstance(key, (numbers.Integral, str)):
        raise MXNetError('kvstore keys must be int or str, got %r (%s)'
                         % (key, type(key).__name__))
    return int(key) if isinstance(key, numbers.Integral) else key


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


def check_shapes(key, arrays, shape, action):
    """Every array of a push (``action='push'``) or pull must have the key's shape."""
    for a in arrays:
        if a.shape != shape:
            if action == 'push':
                raise MXNetError('kvstore: push to key %r with shape %s, but it was '
                                 'initialised with shape %s' % (key, a.shape, shape))
            raise MXNetError('kvstore: pull of key %r with shape %s into an array of '
                             'shape %s' % (key, shape, a.shape))


class KVStoreBase:
    """The API every kvstore offers (MXNet's KVStore)."""

    def __init__(self, kv_type):
        self._type = kv_type

    @property
    def type(self):
        return self._type

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
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
        raise NotImplementedError

    def push(self, key, value, priority=0):
        raise NotImplementedError

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        raise NotImplementedError

    def pushpull(self, key, value, out=None, priority=0):
        """Push ``value`` then pull the result into ``out`` (``value`` when omitted)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

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
        raise NotImplementedError

    def set_gradient_compression(self, compression_params):
        raise NotImplementedError

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError

    def load_optimizer_states(self, fname):
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
