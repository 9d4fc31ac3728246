"""In-process kvstores: 'local' aggregates on the host, 'device' on the devices.

MXNet's longer names are the same two stores: 'local_update_cpu' and
'local_allreduce_cpu' aggregate on the host, 'local_allreduce_device' on the devices.

A push sums the values given for a key (one per device), then either hands the sum
to the updater (``set_optimizer``) or stores it; a pull copies the stored value to
every output array.
"""
from .. import profiler
from ..base import MXNetError
from ..context import cpu
from ..ndarray.ndarray import NDArray
from ..ndarray.serialization import atomic_write
from ..optimizer import Optimizer, Updater, get_updater
from . import compression
from .base import KVStoreBase, check_shapes, pair_up, register, traffic


def sum_on(values, ctx):
    """Sum NDArrays from any devices into a new array on ``ctx``."""
    total = values[0].as_in_context(ctx).copy() if values[0].context == ctx \
        else values[0].copyto(ctx)
    for v in values[1:]:
        total._data += v._data if v.context == ctx else v.copyto(ctx)._data
    return total


class LocalKVStore(KVStoreBase):
    """The single-process store: ``rank`` 0 of ``num_workers`` 1."""

    def __init__(self, kv_type='local'):
        super().__init__(kv_type)
        self._store = {}
        self._updater = None
        self._compression = None
        self._residuals = {}

    def _merge_context(self, values):
        return values[0].context if self._on_device else cpu(0)

    @property
    def _on_device(self):
        return 'device' in self._type

    def init(self, key, value):
        """Set the initial value of ``key`` (or of each key in a list)."""
        for k, values in pair_up(key, value):
            if k in self._store:
                raise MXNetError('kvstore: key %r is already initialised' % (k,))
            self._store[k] = values[0].copyto(self._merge_context(values))

    def _stored(self, k):
        try:
            return self._store[k]
        except KeyError:
            raise MXNetError('kvstore: key %r has not been initialised; call init(%r, value) '
                             'first' % (k, k)) from None

    def push(self, key, value, priority=0):
        """Sum the values pushed for each key, then update or overwrite the stored value."""
        start = profiler.now_if_recording()
        pairs = pair_up(key, value)
        for k, values in pairs:
            stored = self._stored(k)
            check_shapes(k, values, stored.shape, 'push')
            if self._compression is not None:
                values = [self._compressed(k, i, v) for i, v in enumerate(values)]
            merged = sum_on(values, stored.context)
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                stored._data[...] = merged._data
        if start is not None:
            profiler.record_range(start, 'kvstore', 'push', traffic(pairs))

    def _compressed(self, key, device_index, value):
        """What survives 2-bit quantisation of ``value`` (residual kept per device)."""
        xp = value.context.xp
        res = self._residuals.get((key, device_index))
        if res is None:
            res = self._residuals[(key, device_index)] = xp.zeros(value.shape, value._data.dtype)
        _, threshold = self._compression
        packed = compression.quantize_2bit(xp, value._data, res, threshold)
        data = compression.dequantize_2bit(xp, packed, value.size, threshold, value._data.dtype)
        return NDArray(data.reshape(value.shape), value.context)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the stored value of each key into every array of ``out``."""
        if out is None:
            raise MXNetError('kvstore.pull needs out=NDArray (or a list of them)')
        start = profiler.now_if_recording()
        pairs = pair_up(key, out, what='out')
        for k, outs in pairs:
            stored = self._stored(k)
            check_shapes(k, outs, stored.shape, 'pull')
            for o in outs:
                stored.copyto(o)
        if start is not None:
            profiler.record_range(start, 'kvstore', 'pull', traffic(pairs))

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` on every push (the stored values become weights)."""
        if not isinstance(optimizer, Optimizer):
            raise MXNetError('set_optimizer needs an Optimizer, got %s'
                             % type(optimizer).__name__)
        if isinstance(self._updater, Updater):
            self._updater.replace_optimizer(optimizer)
        else:
            self._updater = get_updater(optimizer)

    def _set_updater(self, updater):
        """Use ``updater(key, merged_grad, stored_weight)`` on every push (MXNet's name)."""
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        """2-bit compression with error feedback of every pushed value ('device' only)."""
        if not self._on_device:
            raise MXNetError("gradient compression needs kvstore 'device' or a distributed "
                             "store; this one is %r" % self._type)
        self._compression = compression.parse_params(compression_params)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the updater's states to ``fname`` (atomically, never a pickle)."""
        if self._updater is None or not hasattr(self._updater, 'get_states'):
            raise MXNetError('save_optimizer_states: no optimizer is set on this kvstore')
        blob = self._updater.get_states(dump_optimizer)
        atomic_write(fname, lambda f: f.write(blob))

    def load_optimizer_states(self, fname):
        """Read the optimizer states ``save_optimizer_states`` wrote into the store's updater.

        Raises
        ------
        MXNetError
            When no optimizer has been set.
        """
        if self._updater is None or not hasattr(self._updater, 'set_states'):
            raise MXNetError('load_optimizer_states: call set_optimizer first')
        with open(fname, 'rb') as f:
            blob = f.read()
        try:
            self._updater.set_states(blob)
        except MXNetError as exc:
            raise MXNetError('load_optimizer_states: %s: %s' % (fname, exc)) from None
        placement = {k: v.context for k, v in self._store.items()}
        for k, s in list(self._updater.states.items()):
            if k in placement:
                self._updater.states[k] = _move(s, placement[k])


@register('local', 'device', 'local_update_cpu', 'local_allreduce_cpu', 'local_allreduce_device')
def _create_local(kv_type):
    return LocalKVStore(kv_type)


def _move(state, ctx):
    if isinstance(state, NDArray):
        return state.as_in_context(ctx)
    if isinstance(state, tuple):
        return tuple(_move(s, ctx) for s in state)
    return state
