"""MXNet's binary NDArray list format (``nd.save`` and ``.params`` files), bytes <-> numpy.

The layout, as MXNet 1.x writes it (``src/ndarray/ndarray.cc``), all little-endian::

    file    uint64 0x112 | uint64 reserved (0) | uint64 N | N records
            | uint64 K (0, or N for a dict) | K names, each uint64 length + UTF-8 bytes
    record  V2 0xF993fac9 / V3 0xF993faca: uint32 magic | int32 storage type | shape | body
            V1 0xF993fac8:                 uint32 magic | shape | body
            v0 (before 0.9, no magic):     uint32 ndim | ndim x uint32 dims | body
    shape   int32 ndim | ndim x int64 dims               (V1, V2, V3)
    body    int32 dev_type | int32 dev_id | int32 type flag | the elements, C order

V2 is MXNet's classic ("legacy shape") semantics: ndim 0 marks an empty, never
allocated NDArray and no body follows. V3 is numpy shape semantics: ndim 0 is a
scalar, ndim -1 the empty NDArray. MXNet refuses to mix them: it loads V3 records only
under ``mx.util.np_shape(True)`` / ``npx.set_np()`` and V2 records only outside it.

Nothing is trusted: every count and size is checked against the bytes that remain
before anything is allocated, so a forged shape fails with ``FormatError`` instead of
a huge allocation.
"""
import io
import struct

import numpy as np

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

# mshadow's type flags (mshadow/base.h); minigluon holds exactly the first eight.
TYPE_FLAGS = {0: 'float32', 1: 'float64', 2: 'float16', 3: 'uint8',
              4: 'int32', 5: 'int8', 6: 'int64', 7: 'bool'}
_FLAG_OF_DTYPE = {np.dtype(name): flag for flag, name in TYPE_FLAGS.items()}
_OTHER_MXNET_TYPES = {12: 'bfloat16'}

_DEFAULT_STORAGE = 0
_STORAGE_NAMES = {-1: 'undefined', 1: 'row_sparse', 2: 'csr'}
# mxnet::Context::DeviceType: cpu, gpu, cpu_pinned, cpu_shared.
_DEVICE_TYPES = (1, 2, 3, 5)
# numpy's own limit on dimensions (NPY_MAXDIMS before numpy 2).
MAX_NDIM = 32


class FormatError(ValueError):
    """The bytes are not a valid MXNet NDArray list; the message says what is wrong."""


def is_mxnet_list(head):
    """Whether ``head`` (the file's first bytes) starts an MXNet NDArray list."""
    return len(head) >= 8 and struct.unpack_from('<Q', head)[0] == LIST_MAGIC


# ---- reading ---------------------------------------------------------------------------
class _Cursor:
    """Reads little-endian values from ``data``, never past its end."""

    def __init__(self, data):
        self.data = memoryview(data)
        self.pos = 0

    def remaining(self):
        return len(self.data) - self.pos

    def take(self, nbytes, what):
        if nbytes > self.remaining():
            raise FormatError('the file is truncated: %s needs %d bytes at offset %d but only '
                              '%d remain' % (what, nbytes, self.pos, self.remaining()))
        chunk = self.data[self.pos:self.pos + nbytes]
        self.pos += nbytes
        return chunk

    def unpack(self, fmt, what):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size, what))


def _read_dims(cursor, ndim, dim_format, what):
    if ndim > MAX_NDIM:
        raise FormatError('%s has %d dimensions; at most %d are supported'
                          % (what, ndim, MAX_NDIM))
    return cursor.unpack('<%d%s' % (ndim, dim_format), 'the shape of ' + what)


def _read_shape(cursor, what):
    """An int32 ndim and int64 dims (V1-V3); ndim -1 is returned as None."""
    ndim, = cursor.unpack('<i', 'the dimension count of ' + what)
    if ndim == -1:
        return None
    if ndim < 0:
        raise FormatError('%s has a negative dimension count %d' % (what, ndim))
    return _read_dims(cursor, ndim, 'q', what)


def _empty_array_error(what):
    return FormatError('%s is an empty NDArray (no shape, never allocated); minigluon '
                       'cannot hold one: save only arrays that have data' % what)


def _read_array(cursor, what):
    magic, = cursor.unpack('<I', 'the header of ' + what)
    if magic in (V2_MAGIC, V3_MAGIC):
        storage, = cursor.unpack('<i', 'the storage type of ' + what)
        if storage != _DEFAULT_STORAGE:
            name = _STORAGE_NAMES.get(storage)
            if name is None:
                raise FormatError('%s has unknown storage type %d' % (what, storage))
            raise FormatError('%s has %s storage; minigluon holds dense arrays only: in '
                              'MXNet, convert it with .tostype("default") and save again'
                              % (what, name))
        shape = _read_shape(cursor, what)
        # Only numpy semantics (V3) has scalars; classic ndim 0 is the empty NDArray.
        if shape is None or (magic == V2_MAGIC and not shape):
            raise _empty_array_error(what)
    elif magic == V1_MAGIC:
        shape = _read_shape(cursor, what)
        if not shape:
            raise _empty_array_error(what)
    else:  # v0: the first word was the dimension count of uint32 dims
        if magic > MAX_NDIM:
            raise FormatError('%s starts with 0x%08x, neither an NDArray magic number '
                              '(0x%08x, 0x%08x, 0x%08x) nor a dimension count of a v0 record'
                              % (what, magic, V1_MAGIC, V2_MAGIC, V3_MAGIC))
        shape = _read_dims(cursor, magic, 'I', what)
        if not shape:
            raise _empty_array_error(what)
    if any(d < 0 for d in shape):
        raise FormatError('%s has shape %s with a negative or unknown dimension; it holds no '
                          'data' % (what, tuple(shape)))
    dev_type, dev_id, flag = cursor.unpack('<iii', 'the context and type of ' + what)
    if dev_type not in _DEVICE_TYPES:
        raise FormatError('%s has unknown device type %d' % (what, dev_type))
    name = TYPE_FLAGS.get(flag)
    if name is None:
        known = ', '.join('%d %s' % kv for kv in TYPE_FLAGS.items())
        raise FormatError('%s has type flag %d%s, which minigluon does not support '
                          '(supported: %s); in MXNet, cast it with .astype first'
                          % (what, flag, ' (%s)' % _OTHER_MXNET_TYPES[flag]
                             if flag in _OTHER_MXNET_TYPES else '', known))
    dtype = np.dtype(name)
    count = 1
    for d in shape:  # Python ints: a forged shape cannot overflow here
        count *= d
    data = cursor.take(count * dtype.itemsize, 'the %s data of %s, shape %s'
                       % (name, what, tuple(shape)))
    if dtype == np.bool_:  # any nonzero byte is true, as in MXNet
        values = np.frombuffer(data, dtype=np.uint8) != 0
    else:
        values = np.frombuffer(data, dtype=dtype.newbyteorder('<')).astype(dtype)
    try:
        return values.reshape(shape), dev_type, dev_id
    except ValueError:  # no data, but dimensions whose product numpy cannot represent
        raise FormatError('%s has shape %s, too large for numpy to describe'
                          % (what, tuple(shape))) from None


def decode(data):
    """``(arrays, names)`` from the bytes of a list file; names is None for a list.

    Raises ``FormatError`` saying what is wrong with the bytes.
    """
    cursor = _Cursor(data)
    magic, _reserved = cursor.unpack('<QQ', 'the file header')
    if magic != LIST_MAGIC:
        raise FormatError('it starts with 0x%x, not the NDArray list magic 0x%x'
                          % (magic, LIST_MAGIC))
    count, = cursor.unpack('<Q', 'the number of arrays')
    arrays = []
    for i in range(count):  # each record takes bytes, so a forged count ends as truncation
        arrays.append(_read_array(cursor, 'array #%d' % i)[0])
    name_count, = cursor.unpack('<Q', 'the number of names')
    if name_count not in (0, count):
        raise FormatError('it holds %d arrays but %d names' % (count, name_count))
    names = []
    for i in range(name_count):
        length, = cursor.unpack('<Q', 'the length of name #%d' % i)
        raw = cursor.take(length, 'name #%d' % i)
        try:
            names.append(bytes(raw).decode('utf-8'))
        except UnicodeDecodeError as exc:
            raise FormatError('name #%d is not UTF-8 (%s)' % (i, exc)) from None
    if len(set(names)) != len(names):
        seen = set()
        twice = next(n for n in names if n in seen or seen.add(n))
        raise FormatError('the name %r appears more than once' % twice)
    if cursor.remaining():
        raise FormatError('%d unexpected bytes follow the end of the list at offset %d'
                          % (cursor.remaining(), cursor.pos))
    return arrays, (names if name_count else None)


# ---- writing ---------------------------------------------------------------------------
def needs_numpy_shape(shapes):
    """Whether arrays of these shapes need V3 records: classic MXNet shapes (V2) have no
    scalars and no zero-size dimensions, and MXNet cannot mix V2 and V3 in one file."""
    return any(len(s) == 0 or 0 in s for s in shapes)


def write(f, count, records, names, numpy_shape):
    """Write a list of ``count`` arrays to binary file ``f``.

    ``records`` yields ``(host array, dev_type, dev_id)`` (consumed one at a time, so
    only one array is copied to the host at once); ``names`` is None for a list, else
    one name per record; ``numpy_shape`` picks V3 records instead of V2.
    """
    f.write(struct.pack('<QQQ', LIST_MAGIC, 0, count))
    written = 0
    for array, dev_type, dev_id in records:
        _write_record(f, array, dev_type, dev_id, numpy_shape)
        written += 1
    if written != count:
        raise ValueError('%d arrays were announced but %d written' % (count, written))
    names = names or []
    f.write(struct.pack('<Q', len(names)))
    for name in names:
        raw = name.encode('utf-8')
        f.write(struct.pack('<Q', len(raw)))
        f.write(raw)


def _write_record(f, array, dev_type, dev_id, numpy_shape):
    flag = _FLAG_OF_DTYPE.get(array.dtype)
    if flag is None:
        raise ValueError('dtype %s has no MXNet type flag' % array.dtype)
    f.write(struct.pack('<Iii%dq' % array.ndim, V3_MAGIC if numpy_shape else V2_MAGIC,
                        _DEFAULT_STORAGE, array.ndim, *array.shape))
    f.write(struct.pack('<iii', dev_type, dev_id, flag))
    f.write(np.ascontiguousarray(array, dtype=array.dtype.newbyteorder('<')).tobytes())


# ---- one array: MXNet's raw bytes (MXNDArraySaveRawBytes), what pickling an NDArray holds
def encode_array(array, dev_type, dev_id):
    """The record of one host array (V3 when only numpy shapes can hold it)."""
    out = io.BytesIO()
    _write_record(out, array, dev_type, dev_id, needs_numpy_shape([array.shape]))
    return out.getvalue()


def decode_array(data):
    """``(array, dev_type, dev_id)`` from the bytes of one record."""
    cursor = _Cursor(data)
    record = _read_array(cursor, 'the array')
    if cursor.remaining():
        raise FormatError('%d unexpected bytes follow the array' % cursor.remaining())
    return record
