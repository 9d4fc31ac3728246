"""The data-iterator protocol of MXNet's legacy front end: ``DataDesc``, ``DataBatch``
and ``DataIter``, the base of every ``mx.io`` iterator and of ``mx.image.ImageIter``."""
from collections import namedtuple

import numpy as np

__all__ = ['DataDesc', 'DataBatch', 'DataIter']


class DataDesc(namedtuple('DataDesc', ['name', 'shape'])):
    """The name and shape of one input (data or label), with its dtype and layout.

    A ``(name, shape)`` tuple to code that unpacks it, as in MXNet.

    Parameters
    ----------
    name : str
    shape : tuple of int
    dtype : numpy dtype or str, default float32
    layout : str, default 'NCHW'
        What each axis means; ``N`` marks the batch axis.
    """

    def __new__(cls, name, shape, dtype=np.float32, layout='NCHW'):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return 'DataDesc[%s,%s,%s,%s]' % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The batch axis of ``layout`` (0 when it is None, -1 when it has no ``N``)."""
        if layout is None:
            return 0
        return layout.find('N')

    @staticmethod
    def get_list(shapes, types):
        """``DataDesc``s from ``[(name, shape)]`` and, optionally, ``[(name, dtype)]``."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch from a data iterator.

    Parameters
    ----------
    data : list of NDArray
        The inputs, each with ``batch_size`` examples along its batch axis.
    label : list of NDArray, optional
    pad : int, optional
        How many examples at the end repeat earlier ones to fill the last batch
        (prediction ignores them).
    index : numpy.ndarray, optional
        The examples' indices in the data set.
    bucket_key : optional
        The bucket of a bucketing iterator.
    provide_data, provide_label : list of DataDesc, optional
        The batch's own shapes, when they differ from the iterator's.
    """

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError('DataBatch: data must be a list of NDArrays, got %s'
                            % type(data).__name__)
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError('DataBatch: label must be a list of NDArrays, got %s'
                            % type(label).__name__)
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lbl.shape for lbl in self.label] if self.label else None
        return '%s: data shapes: %s label shapes: %s' % (type(self).__name__, data_shapes,
                                                          label_shapes)


class DataIter:
    """The base of data iterators: ``for batch in it`` yields ``DataBatch``es until the
    data are used up; ``reset()`` starts again.

    A subclass implements ``iter_next`` (advance; False at the end) and ``getdata``,
    ``getlabel``, ``getpad`` (and ``getindex``) for the current batch, or overrides
    ``next`` itself.

    Parameters
    ----------
    batch_size : int, default 0
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the first batch."""

    def next(self):
        """The next ``DataBatch``; raises ``StopIteration`` at the end of the data."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(),
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; False when there is none."""
        raise NotImplementedError('%s must implement iter_next() or next()'
                                  % type(self).__name__)

    def getdata(self):
        """The current batch's data, a list of NDArray."""
        raise NotImplementedError('%s must implement getdata()' % type(self).__name__)

    def getlabel(self):
        """The current batch's labels, a list of NDArray."""
        raise NotImplementedError('%s must implement getlabel()' % type(self).__name__)

    def getindex(self):
        """The data-set indices of the current batch's examples, or None."""
        return None

    def getpad(self):
        """How many examples at the end of the current batch are padding."""
        raise NotImplementedError('%s must implement getpad()' % type(self).__name__)
