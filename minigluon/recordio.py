"""``mx.recordio``: MXNet's RecordIO files (``.rec``, with an ``.idx`` index), byte for
byte as MXNet (dmlc-core) writes them, and the image-record header.

A ``.rec`` file is a sequence of records. Each record is one or more parts; a part is
the 32-bit little-endian magic number ``0xced7230a``, a 32-bit word holding the part's
length (low 29 bits) and its continuation flag (high 3 bits: 0 a whole record, 1 the
first part, 2 a middle part, 3 the last part), the payload, and zero padding to a
multiple of 4 bytes. The writer cuts a payload wherever the magic number appears in
it at a 4-byte-aligned offset, and the reader puts the magic number back between the
parts, so the magic number marks the start of a record and nothing else (a reader
can resynchronise at any aligned magic). An ``.idx`` file is text, one
``key<TAB>offset`` line per record.

An image record's payload (``pack``/``unpack``) is a 24-byte header ``IRHeader(flag,
label, id, id2)`` as ``struct`` ``'IfQQ'``; when ``flag`` > 0 the label is ``flag``
float32 values that follow the header, before the encoded image.
"""
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import MXNetError, MXNetValueError
from .ndarray.image_codec import decode_raw, encode_raw

__all__ = ['MXRecordIO', 'MXIndexedRecordIO', 'IRHeader', 'pack', 'unpack', 'pack_img',
           'unpack_img', 'read_index', 'read_list', 'record_starts', 'next_record_start']

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack('<I', _MAGIC)
_LENGTH_BITS = 29
_MAX_PART = (1 << _LENGTH_BITS) - 1
_WHOLE, _FIRST, _MIDDLE, _LAST = 0, 1, 2, 3


def _padded(length):
    return (length + 3) & ~3


def _head(flag, length):
    return _MAGIC_BYTES + struct.pack('<I', (flag << _LENGTH_BITS) | length)


def encode_record(buf):
    """The bytes of one record holding ``buf``, split where ``buf`` holds the magic
    number at an aligned offset, exactly as MXNet's writer does."""
    buf = memoryview(buf).cast('B')
    size = len(buf)
    if size > _MAX_PART:
        raise MXNetValueError(
            'a RecordIO record holds at most %d bytes (2^29 - 1: the length field has 29 '
            'bits, and MXNet refuses longer records too); this one has %d: split the data '
            'over several records' % (_MAX_PART, size))
    aligned = size & ~3
    words = np.frombuffer(buf[:aligned], dtype='<u4')
    cuts = np.flatnonzero(words == _MAGIC) * 4
    pieces, start = [], 0
    for cut in cuts.tolist():
        pieces += [_head(_FIRST if start == 0 else _MIDDLE, cut - start), buf[start:cut]]
        start = cut + 4
    pieces += [_head(_LAST if start else _WHOLE, size - start), buf[start:],
               bytes(_padded(size) - size)]
    return b''.join(pieces)


class MXRecordIO:
    """Reads or writes a RecordIO file record by record.

    Parameters
    ----------
    uri : str
        Path of the ``.rec`` file.
    flag : {'r', 'w'}
        Read, or write (the file is created, or emptied).

    Examples
    --------
    >>> writer = mx.recordio.MXRecordIO('tmp.rec', 'w')
    >>> for i in range(3):
    ...     writer.write(b'record_%d' % i)
    >>> writer.close()
    >>> reader = mx.recordio.MXRecordIO('tmp.rec', 'r')
    >>> reader.read()
    b'record_0'

    A reader handed to another process (DataLoader workers, forked or spawned) opens
    the file again there, so processes never share a file position.
    """

    def __init__(self, uri, flag):
        if flag not in ('r', 'w'):
            raise MXNetValueError("RecordIO flag must be 'r' (read) or 'w' (write), got %r"
                                  % (flag,))
        self.uri = os.fspath(uri)
        self.flag = flag
        self.writable = flag == 'w'
        self.pid = None
        self.is_open = False
        self._file = None
        self.open()

    def open(self):
        """Open the file (again): a reader starts at the first record, a writer empties
        the file."""
        if self.is_open:
            self.close()
        try:
            self._file = open(self.uri, 'wb' if self.writable else 'rb')
        except OSError as exc:
            raise MXNetError('cannot open the RecordIO file %r for %s: %s'
                             % (self.uri, 'writing' if self.writable else 'reading',
                                exc.strerror or exc)) from None
        self.pid = os.getpid()
        self.is_open = True

    def close(self):
        """Close the file; a writer's records are then all on disk."""
        if not self.is_open:
            return
        self._file.close()
        self._file = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Start again: a reader from the first record, a writer with an empty file."""
        self.close()
        self.open()

    def __del__(self):
        try:
            self.close()
        except Exception:   # an interpreter shutting down may have torn down open()
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        # A file object cannot cross processes: the copy reopens the file by name.
        state = dict(self.__dict__)
        state['_file'] = None
        if self.is_open and not self.writable:
            state['_position'] = self._file.tell()
        return state

    def __setstate__(self, state):
        position = state.pop('_position', None)
        self.__dict__.update(state)
        if self.is_open:
            self.is_open = False
            if self.writable:
                raise MXNetError('a RecordIO writer for %r cannot be copied to another '
                                 'process: write from one process only' % (self.uri,))
            self.open()
            if position:
                self._file.seek(position)

    def _check_pid(self, allow_reset):
        """A forked copy reopens the file (reader) or refuses (writer) rather than share
        the parent's file position."""
        if not self.is_open:
            raise MXNetError('the RecordIO file %r is closed: call open() first' % (self.uri,))
        if self.pid != os.getpid():
            if not allow_reset:
                raise MXNetError('a RecordIO writer for %r cannot be used from another '
                                 'process than the one that opened it' % (self.uri,))
            self.reset()

    def write(self, buf):
        """Append one record holding the bytes ``buf``."""
        if not self.writable:
            raise MXNetError('%r is open for reading: open it with flag "w" to write'
                             % (self.uri,))
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            raise MXNetValueError('RecordIO records are bytes, got a str: encode it first, '
                                  'e.g. s.encode("utf-8")')
        self._file.write(encode_record(buf))

    def read(self):
        """The next record's bytes, or None at the end of the file."""
        if self.writable:
            raise MXNetError('%r is open for writing: open it with flag "r" to read'
                             % (self.uri,))
        self._check_pid(allow_reset=True)
        f = self._file
        parts = []
        while True:
            offset = f.tell()
            head = f.read(8)
            if not head and not parts:
                return None
            if len(head) < 8:
                raise self._corrupt(offset, 'the file ends inside a record header (%d of 8 '
                                            'bytes)' % len(head))
            magic, word = struct.unpack('<II', head)
            if magic != _MAGIC:
                raise self._corrupt(offset, 'no record starts here (0x%08x where the magic '
                                            'number 0x%08x belongs)' % (magic, _MAGIC))
            flag, length = word >> _LENGTH_BITS, word & _MAX_PART
            expected = (_WHOLE, _FIRST) if not parts else (_MIDDLE, _LAST)
            if flag not in expected:
                raise self._corrupt(offset, 'a record part with continuation flag %d where %s '
                                            'belongs' % (flag, ' or '.join(map(str, expected))))
            payload = f.read(_padded(length))
            if len(payload) < _padded(length):
                raise self._corrupt(offset, 'the record says %d bytes but the file ends %d '
                                            'bytes later' % (length, len(payload)))
            parts.append(payload[:length])
            if flag in (_WHOLE, _LAST):
                return _MAGIC_BYTES.join(parts) if len(parts) > 1 else parts[0]

    def read_at(self, offset):
        """The bytes of the record that starts at byte ``offset`` (from ``record_starts``
        or an index); the reader then continues after it."""
        if self.writable:
            raise MXNetError('%r is open for writing: open it with flag "r" to read'
                             % (self.uri,))
        self._check_pid(allow_reset=True)
        self._file.seek(offset)
        record = self.read()
        if record is None:
            raise self._corrupt(offset, 'the file ends there, so no record starts there')
        return record

    def _corrupt(self, offset, what):
        return MXNetError('%s is not a valid RecordIO file at byte offset %d: %s. The file '
                          'is truncated or corrupt (or, read through an index, the .idx does '
                          'not belong to it); write it again' % (self.uri, offset, what))

    def tell(self):
        """The byte offset where the next record will be written (or read)."""
        if not self.is_open:
            raise MXNetError('the RecordIO file %r is closed' % (self.uri,))
        return self._file.tell()


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index, for reading records by key in any order.

    Parameters
    ----------
    idx_path : str
        Path of the ``.idx`` file (text: ``key<TAB>byte offset`` per line).
    uri : str
        Path of the ``.rec`` file.
    flag : {'r', 'w'}
    key_type : type, default int
        What the keys are read back as.

    Examples
    --------
    >>> writer = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'w')
    >>> for i in range(5):
    ...     writer.write_idx(i, b'record_%d' % i)
    >>> writer.close()
    >>> reader = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'r')
    >>> reader.read_idx(3)
    b'record_3'
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        if self.writable:
            self.fidx = open(self.idx_path, 'w')
            return
        for key, offset in read_index(self.idx_path, self.key_type):
            if key not in self.idx:
                self.keys.append(key)
            self.idx[key] = offset

    def close(self):
        if not self.is_open:
            return
        super().close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state['fidx'] = None
        return state

    def __setstate__(self, state):
        # The index travels with the copy; only the .rec file is opened again.
        idx, keys = state['idx'], state['keys']
        super().__setstate__(state)
        self.idx, self.keys = idx, keys

    def seek(self, idx):
        """Move the reader to the record with key ``idx``."""
        if self.writable:
            raise MXNetError('%r is open for writing: seek needs flag "r"' % (self.uri,))
        self._check_pid(allow_reset=True)
        try:
            offset = self.idx[idx]
        except KeyError:
            raise MXNetError('%s has no record with key %r (its %d keys run from %r to %r)'
                             % (self.idx_path, idx, len(self.keys),
                                self.keys[0] if self.keys else None,
                                self.keys[-1] if self.keys else None)) from None
        self._file.seek(offset)

    def read_idx(self, idx):
        """The bytes of the record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Append a record holding ``buf`` under key ``idx``."""
        key = self.key_type(idx)
        offset = self.tell()
        self.write(buf)
        self.fidx.write('%s\t%d\n' % (str(key), offset))
        self.idx[key] = offset
        self.keys.append(key)


def read_index(idx_path, key_type=int):
    """The ``(key, byte offset)`` entries of an ``.idx`` file, in the file's order."""
    entries = []
    try:
        with open(idx_path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                fields = line.strip().split('\t')
                if len(fields) < 2:     # MXNet's C++ readers take any whitespace
                    fields = line.split()
                try:
                    entries.append((key_type(fields[0]), int(fields[1])))
                except (IndexError, ValueError):
                    raise MXNetError('%s, line %d: expected "key<TAB>offset", got %r; the '
                                     'index is corrupt: write it again (im2rec.py, or '
                                     'MXIndexedRecordIO with flag "w")'
                                     % (idx_path, number, line.rstrip('\n'))) from None
    except OSError as exc:
        raise MXNetError('cannot read the RecordIO index %r: %s'
                         % (idx_path, exc.strerror or exc)) from None
    return entries


def read_list(lst_path):
    """The ``(index, labels, path)`` entries of an image list (``.lst``, as im2rec.py
    writes it: ``index<TAB>label[<TAB>label...]<TAB>path`` per line), in file order;
    the labels a float64 numpy array (im2rec writes them as ``3.000000``)."""
    entries = []
    with open(lst_path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            fields = line.strip().split('\t')
            try:
                if len(fields) < 3:
                    raise ValueError('too few fields')
                entries.append((int(fields[0]), np.array(fields[1:-1], dtype=np.float64),
                                fields[-1]))
            except ValueError:
                raise MXNetValueError(
                    '%s, line %d: expected "index<TAB>label[<TAB>label...]<TAB>path", got '
                    '%r; write the list with tools/im2rec.py --list'
                    % (lst_path, number, line.rstrip('\n'))) from None
    return entries


def record_starts(uri, begin=0, end=None):
    """The byte offsets of the records that start in ``[begin, end)`` of the file
    ``uri`` (``begin`` a record start), read from their headers alone."""
    size = os.path.getsize(uri)
    end = size if end is None else min(end, size)
    starts = []
    with open(uri, 'rb') as f:
        pos = begin
        while pos < end:
            starts.append(pos)
            first = True
            while True:
                f.seek(pos)
                head = f.read(8)
                if len(head) < 8:
                    raise MXNetError('%s is not a valid RecordIO file at byte offset %d: the '
                                     'file ends inside a record header (truncated?)'
                                     % (uri, pos))
                magic, word = struct.unpack('<II', head)
                flag, length = word >> _LENGTH_BITS, word & _MAX_PART
                if magic != _MAGIC or flag not in ((_WHOLE, _FIRST) if first
                                                   else (_MIDDLE, _LAST)):
                    raise MXNetError('%s is not a valid RecordIO file at byte offset %d: no '
                                     'record part starts there (magic 0x%08x, flag %d); the '
                                     'file is corrupt' % (uri, pos, magic, flag))
                if pos + 8 + length > size:
                    raise MXNetError('%s is not a valid RecordIO file: the record part at '
                                     'byte offset %d holds %d bytes but the file ends %d '
                                     'bytes later (truncated?)'
                                     % (uri, pos, length, size - pos - 8))
                pos += 8 + _padded(length)
                if flag in (_WHOLE, _LAST):
                    break
                first = False
    return starts


def next_record_start(uri, offset):
    """The first record start at or after byte ``offset`` of the file ``uri``, or its
    size: an aligned magic number followed by a first or whole part's flag (how MXNet
    splits a file into parts at arbitrary offsets)."""
    size = os.path.getsize(uri)
    offset -= offset % 4
    block_size = 1 << 20
    with open(uri, 'rb') as f:
        while offset < size:
            f.seek(offset)
            block = f.read(block_size)
            words = np.frombuffer(block[:len(block) // 4 * 4], '<u4')
            hits = np.flatnonzero((words[:-1] == _MAGIC)
                                  & ((words[1:] >> _LENGTH_BITS) <= _FIRST))
            if len(hits):
                return offset + 4 * int(hits[0])
            if len(block) < block_size:
                return size
            offset += block_size - 4
    return size


IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])
IRHeader.__doc__ = """The header of an image record.

flag : int
    0 when ``label`` is one number; otherwise how many float32 labels follow the header.
label : float or numpy.ndarray
id, id2 : int
    The record's id (im2rec writes the image's index in the list) and a second one.
"""
_IR_FORMAT = 'IfQQ'
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """An image record's bytes: ``header`` (an IRHeader or a 4-tuple) and the payload
    ``s``; an array ``label`` is stored as float32 values after the header."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, *header) + bytes(s)


def unpack(s):
    """``(IRHeader, payload)`` from an image record's bytes."""
    if len(s) < _IR_SIZE:
        raise MXNetError('an image record starts with a %d-byte header, this one has only '
                         '%d bytes: it was not written by pack()' % (_IR_SIZE, len(s)))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError('an image record says %d float32 labels follow its header but '
                             'only %d bytes do' % (header.flag, len(s)))
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[4 * header.flag:]
    return header, s


def unpack_img(s, iscolor=-1):
    """``(IRHeader, image)`` from an image record: the image as a numpy uint8 array in
    OpenCV's layout (HxW gray, HxWx3 BGR, HxWx4 BGRA).

    Parameters
    ----------
    s : bytes
    iscolor : int, default -1
        As OpenCV's imdecode flag: -1 as stored, 0 gray, 1 three channels.
    """
    header, s = unpack(s)
    img = decode_raw(s, iscolor, False, 'the image record (id %d)' % header.id)
    return header, img[:, :, 0] if img.shape[2] == 1 else img


def pack_img(header, img, quality=95, img_fmt='.jpg'):
    """An image record's bytes: ``header`` and the numpy uint8 image ``img`` (HxW gray,
    or HxWx3 BGR as OpenCV holds images), encoded.

    Parameters
    ----------
    header : IRHeader or 4-tuple
    img : numpy.ndarray
    quality : int, default 95
        JPEG quality (1-100), or the PNG compression level (clipped to 0-9).
    img_fmt : {'.jpg', '.png'}
    """
    return pack(header, encode_raw(img, img_fmt, quality, from_rgb=False))
