"""``mx.kv``: key-value stores that aggregate gradients (``create(name)``)."""
from .base import KVStoreBase, create, register
from .local import LocalKVStore

KVStore = KVStoreBase

__all__ = ['KVStore', 'KVStoreBase', 'LocalKVStore', 'create', 'register']
