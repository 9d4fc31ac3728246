"""``mx.kv``: key-value stores that aggregate gradients (``create(name)``)."""
from .base import KVStoreBase, create, register
from .local import LocalKVStore
from .teststore import TestStore

_DIST_TYPES = ('dist', 'dist_sync', 'dist_async', 'dist_sync_device', 'dist_async_device')


def _create_dist(kv_type):
    from .dist import DistKVStore  # pyzmq is only needed once a job is distributed
    return DistKVStore(kv_type)


register(*_DIST_TYPES)(_create_dist)

KVStore = KVStoreBase

__all__ = ['KVStore', 'KVStoreBase', 'LocalKVStore', 'TestStore', 'create', 'register']
