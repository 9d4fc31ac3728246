"""``mx.io``: MXNet's data iterators (``DataIter``, ``DataBatch``, ``DataDesc``) and the
``ImageRecordIter`` family over RecordIO files."""
from .data_iter import DataBatch, DataDesc, DataIter
from .image_record_iter import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter

__all__ = ['DataBatch', 'DataDesc', 'DataIter', 'ImageRecordIter', 'ImageRecordUInt8Iter',
           'ImageRecordInt8Iter']
