"""``mx.io``: MXNet's data iterators: the protocol (``DataIter``, ``DataBatch``,
``DataDesc``), in-memory arrays (``NDArrayIter``), wrappers (``ResizeIter``,
``PrefetchingIter``), files (``CSVIter``, ``MNISTIter``) and the ``ImageRecordIter``
family over RecordIO files."""
from . import utils
from .data_iter import DataBatch, DataDesc, DataIter
from .ndarray_iter import NDArrayIter
from .iter_wrappers import PrefetchingIter, ResizeIter
from .mx_data_iter import MXDataIter
from .csv_iter import CSVIter
from .mnist_iter import MNISTIter
from .image_record_iter import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter
from .utils import _getdata_by_idx, _has_instance, _init_data  # noqa: F401  (as MXNet)

__all__ = ['DataBatch', 'DataDesc', 'DataIter', 'NDArrayIter', 'ResizeIter', 'PrefetchingIter',
           'MXDataIter', 'CSVIter', 'MNISTIter', 'ImageRecordIter', 'ImageRecordUInt8Iter',
           'ImageRecordInt8Iter']
