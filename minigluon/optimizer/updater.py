"""Updater: applies an optimizer per key and keeps the per-key states.

``get_states``/``set_states`` exchange bytes holding a zip of ``.npy`` arrays and a
JSON header (state structure, update counts, optionally the optimizer config); they
never pickle, so states can be saved to disk or sent between processes safely.
"""
import io
import json
import zipfile

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray.dtypes import SUPPORTED_DTYPES
from ..ndarray.ndarray import NDArray
from ..ndarray.zip_format import read_member
from .optimizer import Optimizer

FORMAT = 'minigluon.optimizer-states'


def _encode_key(key):
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer, str)):
        raise MXNetError('optimizer state keys must be int or str, got %r' % (key,))
    return ['int', int(key)] if isinstance(key, (int, np.integer)) else ['str', key]


def _decode_key(pair):
    kind, value = pair
    if kind == 'int' and isinstance(value, int):
        return value
    if kind == 'str' and isinstance(value, str):
        return value
    raise MXNetError('malformed optimizer state key %r' % (pair,))


def _flatten(state, arrays):
    """State structure as JSON, appending its arrays to ``arrays``."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        arrays.append(state.asnumpy())
        return len(arrays) - 1
    if isinstance(state, (tuple, list)):
        return {'tuple': [_flatten(s, arrays) for s in state]}
    raise MXNetError('cannot save optimizer state of type %s' % type(state).__name__)


def _unflatten(spec, arrays, ctx):
    if spec is None:
        return None
    if isinstance(spec, int) and not isinstance(spec, bool):
        if not 0 <= spec < len(arrays):
            raise MXNetError('optimizer states refer to missing array %d' % spec)
        return NDArray(ctx.put(arrays[spec]), ctx)
    if isinstance(spec, dict) and isinstance(spec.get('tuple'), list):
        return tuple(_unflatten(s, arrays, ctx) for s in spec['tuple'])
    raise MXNetError('malformed optimizer state structure %r' % (spec,))


class Updater:
    """Call as ``updater(index, grad, weight)``: creates the state on first use.

    ``index``, ``grad`` and ``weight`` may be lists, updating several keys in one call.
    """

    def __init__(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise MXNetError('Updater needs an Optimizer, got %s' % type(optimizer).__name__)
        self.optimizer = optimizer
        self.states = {}

    def replace_optimizer(self, optimizer):
        """Use ``optimizer`` from now on, keeping the states and per-key step counts.

        New hyper-parameters (e.g. the Trainer's new ``rescale_grad``) must not restart
        step-dependent maths such as Adam's bias correction.
        """
        if not isinstance(optimizer, Optimizer):
            raise MXNetError('Updater needs an Optimizer, got %s' % type(optimizer).__name__)
        old = self.optimizer
        if optimizer is not old:
            optimizer._index_update_count = old._index_update_count
            optimizer.num_update = old.num_update
        self.optimizer = optimizer

    def __call__(self, index, grad, weight):
        if isinstance(index, (list, tuple)):  # several keys at once, as MXNet's kvstore passes
            for args in zip(index, grad, weight):
                self(*args)
            return
        state = self.states.get(index)
        if index not in self.states:
            state = self.states[index] = self.optimizer.create_state_multi_precision(index, weight)
        self.optimizer.update_multi_precision(index, weight, grad, state)

    def get_states(self, dump_optimizer=False):
        """All states as bytes (a zip of arrays + JSON; no pickle)."""
        arrays, entries = [], []
        for key, state in self.states.items():
            entries.append([_encode_key(key), _flatten(state, arrays)])
        opt = self.optimizer
        header = {
            'format': FORMAT, 'version': 1, 'entries': entries,
            'index_update_count': [[_encode_key(k), v] for k, v in
                                   opt._index_update_count.items()],
            'num_update': opt.num_update,
            'optimizer': opt.to_config() if dump_optimizer else None,
        }
        buf = io.BytesIO()
        payload = {'arr_%d' % i: a for i, a in enumerate(arrays)}
        payload['__header__'] = np.frombuffer(json.dumps(header).encode('utf-8'), dtype=np.uint8)
        np.savez(buf, **payload)
        return buf.getvalue()

    def set_states(self, states, ctx=None):
        """Restore what ``get_states`` returned; arrays go to ``ctx`` or the weights' context."""
        try:
            with np.load(io.BytesIO(states), allow_pickle=False) as archive:
                header = json.loads(bytes(read_member(archive, '__header__', len(states)))
                                    .decode('utf-8'))
                if header.get('format') != FORMAT:
                    raise ValueError('unknown format %r' % header.get('format'))
                count = sum(1 for n in archive.files if n.startswith('arr_'))
                arrays = [read_member(archive, 'arr_%d' % i, len(states)) for i in range(count)]
        except (ValueError, KeyError, OSError, zipfile.BadZipFile, TypeError, EOFError,
                NotImplementedError, RuntimeError) as exc:
            raise MXNetError('invalid optimizer states: %s' % exc) from None
        for a in arrays:
            if str(a.dtype) not in SUPPORTED_DTYPES:
                raise MXNetError('invalid optimizer states: unsupported dtype %s' % a.dtype)
        if header.get('optimizer') is not None:
            self.optimizer = Optimizer.from_config(header['optimizer'])
        ctx = ctx or cpu()
        self.states = {_decode_key(k): _unflatten(spec, arrays, ctx)
                       for k, spec in header['entries']}
        opt = self.optimizer
        opt._index_update_count = {_decode_key(k): int(v)
                                   for k, v in header['index_update_count']}
        opt.num_update = int(header['num_update'])


def get_updater(optimizer):
    """An Updater applying ``optimizer`` (MXNet's ``mx.optimizer.get_updater``)."""
    return Updater(optimizer)
