"""The worker's side of the distributed stores (``dist_sync``, ``dist_async`` and their
``_device`` forms): the store (store.py) over the messages it sends (messages.py)."""
from .store import DistKVStore

__all__ = ['DistKVStore']
