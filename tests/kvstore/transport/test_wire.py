"""The wire format: authentic, validated, and never unpickled or evaluated."""
import hashlib
import hmac
import json
import pathlib
import re

import numpy as np
import pytest

from minigluon.kvstore.transport import wire
from minigluon.kvstore.transport.wire import Message, WireError

SECRET = b'k' * 32
OTHER = b'o' * 32


def frames_of(msg, secret=SECRET):
    return [bytes(f) if isinstance(f, (bytes, bytearray)) else f.tobytes()
            for f in wire.encode(secret, msg)]


def signed(header, arrays=(), secret=SECRET):
    """Frames with a valid tag around a hand-written header."""
    raw = json.dumps(header).encode('utf-8')
    return [wire.NO_SESSION + hmac.new(secret, raw, hashlib.sha256).digest(), raw] + list(arrays)


def push_header(**changes):
    header = {'v': wire.VERSION, 'cmd': 'push', 'src': 'worker:0', 'seq': 3,
              'arrays': [['float32', [2, 3]]]}
    header.update(changes)
    return header


def test_round_trip_keeps_every_field_and_array():
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int64),
              np.zeros((0, 4), np.float16), np.array(True)]
    for key in (7, 'fc1.weight', None):
        msg = Message('push', 'worker:1', seq=12, req=5, key=key, part=2,
                      body={'2bit': 0.5}, err=None, arrays=arrays)
        got = wire.decode(SECRET, frames_of(msg))
        assert (got.cmd, got.src, got.seq, got.req, got.key, got.part, got.body, got.err) == \
            ('push', 'worker:1', 12, 5, key, 2, {'2bit': 0.5}, None)
        assert len(got.arrays) == len(arrays)
        for a, b in zip(got.arrays, arrays):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_integer_and_string_keys_stay_distinct():
    assert wire.decode(SECRET, frames_of(Message('pull', 'w', key=3))).key == 3
    assert wire.decode(SECRET, frames_of(Message('pull', 'w', key='3'))).key == '3'


def test_a_tampered_header_fails_authentication():
    frames = frames_of(Message('push', 'worker:0', seq=1, key='w',
                               arrays=[np.ones(3, np.float32)]))
    frames[1] = frames[1].replace(b'worker:0', b'worker:1')
    with pytest.raises(WireError, match='authentication'):
        wire.decode(SECRET, frames)


def test_a_tampered_array_cannot_change_its_announced_length():
    frames = frames_of(Message('push', 'worker:0', seq=1, arrays=[np.ones(3, np.float32)]))
    frames[2] = frames[2] + b'\0\0\0\0'
    with pytest.raises(WireError, match='does not hold'):
        wire.decode(SECRET, frames)


def test_the_wrong_secret_fails_authentication():
    frames = frames_of(Message('terminate', 'scheduler', seq=1), secret=OTHER)
    with pytest.raises(WireError, match='authentication'):
        wire.decode(SECRET, frames)


def test_a_missing_or_short_tag_is_rejected():
    frames = frames_of(Message('barrier', 'worker:0', seq=1))
    with pytest.raises(WireError):
        wire.decode(SECRET, [frames[0][:16], frames[1]])
    with pytest.raises(WireError):
        wire.decode(SECRET, frames[1:])
    with pytest.raises(WireError):
        wire.decode(SECRET, [])


@pytest.mark.parametrize('dtype', ['object', 'O', 'V8', '<U4', 'complex128', 'S3', 'float80',
                                   'float32; import os', ['float32']])
def test_a_dtype_outside_the_whitelist_is_rejected(dtype):
    frames = signed(push_header(arrays=[[dtype, [2, 3]]]), [b'\0' * 24])
    with pytest.raises(WireError, match='array spec'):
        wire.decode(SECRET, frames)


@pytest.mark.parametrize('shape, nbytes', [([2, 3], 20), ([2, 3], 28), ([2, 3], 0),
                                           ([1 << 40, 1 << 40], 16), ([-2, -3], 24),
                                           ([2.0, 3], 24), (['2', 3], 24)])
def test_an_array_frame_of_the_wrong_length_or_shape_is_rejected(shape, nbytes):
    frames = signed(push_header(arrays=[['float32', shape]]), [b'\0' * nbytes])
    with pytest.raises(WireError):
        wire.decode(SECRET, frames)


def test_more_or_fewer_array_frames_than_announced_are_rejected():
    with pytest.raises(WireError, match='announces'):
        wire.decode(SECRET, signed(push_header(), []))
    with pytest.raises(WireError, match='announces'):
        wire.decode(SECRET, signed(push_header(), [b'\0' * 24, b'\0' * 24]))


@pytest.mark.parametrize('raw', [b'', b'{', b'\xff\xfe', b'[1, 2]', b'null', b'"push"',
                                 b"{'cmd': 'push'}", b'NaN', b'[' * 60000])
def test_a_header_that_is_not_a_json_object_is_rejected(raw):
    frames = [hmac.new(SECRET, raw, hashlib.sha256).digest(), raw]
    with pytest.raises(WireError):
        wire.decode(SECRET, frames)


@pytest.mark.parametrize('cmd', ['shutdown', 'exec', '__init__', '', None, 7, ['push']])
def test_an_unknown_command_is_rejected(cmd):
    with pytest.raises(WireError, match='unknown command'):
        wire.decode(SECRET, signed({'v': wire.VERSION, 'cmd': cmd, 'src': 'w', 'seq': 1}))


@pytest.mark.parametrize('changes', [{'v': 2}, {'v': None}, {'src': ''}, {'src': 'w' * 65},
                                     {'src': 3}, {'seq': -1}, {'seq': 1.5}, {'seq': True},
                                     {'req': 'x'}, {'part': -1}, {'body': [1]},
                                     {'err': 5}, {'key': ['i', '3']}, {'key': ['x', 3]},
                                     {'key': 'plain'}, {'key': ['s', 'k' * 2000]},
                                     {'arrays': 'float32'}])
def test_malformed_header_fields_are_rejected(changes):
    with pytest.raises(WireError):
        wire.decode(SECRET, signed(push_header(**changes), [b'\0' * 24]))


def test_a_huge_header_is_rejected_before_parsing():
    raw = b'{"pad": "' + b'a' * (wire.MAX_HEADER_BYTES + 1) + b'"}'
    with pytest.raises(WireError, match='header of'):
        wire.decode(SECRET, [wire.NO_SESSION + hmac.new(SECRET, raw, hashlib.sha256).digest(),
                             raw])
    with pytest.raises(ValueError):
        wire.encode(SECRET, Message('push', 'w', body={'pad': 'a' * wire.MAX_HEADER_BYTES}))


def test_nothing_in_the_kvstore_package_unpickles_or_evaluates():
    package = pathlib.Path(wire.__file__).parent.parent
    forbidden = re.compile(r'\b(import\s+(c?pickle|marshal|shelve|dill)|from\s+(c?pickle|marshal'
                           r'|shelve)\s+import|pickle\.|marshal\.|eval\(|exec\(|literal_eval|'
                           r'allow_pickle\s*=\s*True|yaml\.load|__import__)')
    hits = []
    for path in sorted(package.rglob('*.py')):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if forbidden.search(line):
                hits.append('%s:%d: %s' % (path.name, number, line.strip()))
    assert not hits, '\n'.join(hits)
