"""``mx.io``: MXNet's data iterators (``DataIter``, ``DataBatch``, ``DataDesc``) and the
``ImageRecordIter`` family over RecordIO files."""
from .data_iter import DataBatch, DataDesc, DataIter

__all__ = ['DataBatch', 'DataDesc', 'DataIter']
