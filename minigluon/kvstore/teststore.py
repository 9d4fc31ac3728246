"""MXNet's ``TestStore``: the smallest store a user could register, created as
``mx.kv.create('teststore')``.

It sums the values of one key over the devices (no state between calls, no
optimizer), which is all ``gluon.Trainer`` needs with ``update_on_kvstore=False``.
It doubles as the example of a store of one's own (see ``KVStoreBase.register``).
"""
from ..base import MXNetValueError
from ..ndarray.ndarray import NDArray
from .base import KVStoreBase


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A key-value store for testing: ``pushpull`` sums, ``broadcast`` copies."""

    def broadcast(self, key, value, out, priority=0):
        """Copy ``value`` into ``out`` (an NDArray or a list of them)."""
        for o in out if isinstance(out, list) else [out]:
            value.copyto(o)

    def pushpull(self, key, value, out=None, priority=0):
        """Sum ``value`` (an NDArray or one per device) into ``out``, else back into ``value``."""
        if isinstance(value, NDArray):
            if out is not None:
                for o in out if isinstance(out, list) else [out]:
                    value.copyto(o)
            return
        ctx = value[0].context
        reduced = value[0].copyto(ctx)
        for v in value[1:]:
            reduced += v.as_in_context(ctx)
        for o in value if out is None else (out if isinstance(out, list) else [out]):
            reduced.copyto(o)

    @staticmethod
    def is_capable(capability):
        """Only ``KVStoreBase.OPTIMIZER`` is defined, and this store lacks it."""
        if str(capability).lower() == KVStoreBase.OPTIMIZER:
            return False
        raise MXNetValueError('Unknown capability: %r' % (capability,))

    @property
    def type(self):
        """'teststore'."""
        return 'teststore'

    def set_optimizer(self, optimizer):
        """Refused: this store only sums, so the Trainer updates on the devices."""
        raise NotImplementedError('TestStore cannot run an optimizer; use '
                                  'update_on_kvstore=False')
