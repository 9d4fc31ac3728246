"""Loaded at start-up by every process of a test job that puts this folder on PYTHONPATH
with MGTEST_CAPTURE=<file>: records every frame set the process writes to the
network, as a sniffer on the wire would see it, so a test can replay it."""
import importlib.abc
import importlib.util
import json
import os
import sys

_PATH = os.environ.get('MGTEST_CAPTURE')


def _record(node, dest, frames):
    raw = [bytes(f) if isinstance(f, bytes) else memoryview(f).tobytes() for f in frames]
    if sum(len(f) for f in raw) < (1 << 20):
        with open(_PATH, 'a') as f:
            f.write(json.dumps({'node': node, 'dest': dest,
                                'frames': [x.hex() for x in raw]}) + '\n')


def _patch(van):
    write = van.Van._write
    encode = van.wire.encode

    def _write(self, dest, frames):
        _record(self.name, dest, frames)
        return write(self, dest, frames)

    def _encode(key, msg, *args, **kwargs):
        frames = encode(key, msg, *args, **kwargs)
        if msg.cmd == 'hello':  # (goes straight to the connection it opens, not by _write)
            _record(msg.src, msg.to, frames)
        return frames
    van.Van._write = _write
    van.wire.encode = _encode


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != 'minigluon.kvstore.transport.van':
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)
        spec.loader.exec_module = exec_module
        return spec


if _PATH:
    sys.meta_path.insert(0, _Hook())
