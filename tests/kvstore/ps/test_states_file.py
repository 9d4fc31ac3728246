"""The file of a distributed job's optimizer states, and each server's part of it, are read
only as far as a limit on what their compressed members declare allows."""
import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError
from minigluon.kvstore.ps import states_file

from archive_bombs import (GIB, MIB, npy_json, npy_zeros, optimizer_states, peak_memory,
                           zip_bytes)  # (tests/ is on sys.path)

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from ..inproc_cluster import InprocJob  # noqa: E402  (needs pyzmq)

LIMIT_VARIABLE = 'MINIGLUON_ARCHIVE_MAX_BYTES'


def test_a_states_file_whose_server_part_is_a_zip_bomb_is_refused_before_it_expands(tmp_path):
    path = tmp_path / 'bomb.states'
    meta = {'format': 'minigluon.dist-optimizer-states', 'num_servers': 1}
    path.write_bytes(zip_bytes({'__meta__.npy': (npy_json(meta), 0),
                                'server_0.npy': npy_zeros(GIB)}))
    error, peak = peak_memory(states_file.load, str(path), [0])
    assert isinstance(error, MXNetError), error
    assert 'bomb.states' in str(error) and LIMIT_VARIABLE in str(error)
    assert peak < 32 * MIB


def test_a_server_refuses_a_zip_bomb_sent_as_its_optimizer_states(tmp_path):
    path = tmp_path / 'bomb.states'
    # a well-formed states file: the bomb is the server's part, which only the server opens
    blob = np.frombuffer(optimizer_states(npy_zeros(GIB)), dtype=np.uint8)
    states_file.save(str(path), {0: blob})

    def worker(store):
        store.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
        store.init('w', mx.nd.ones((4,)))
        error, peak = peak_memory(store.load_optimizer_states, str(path))
        store.push('w', mx.nd.ones((4,)))      # the server still runs, with its optimizer
        out = mx.nd.zeros((4,))
        store.pull('w', out=out)
        return error, peak, out.asnumpy()

    with InprocJob(num_workers=1, num_servers=1) as job:
        [(error, peak, weight)] = job.run(worker)
    assert isinstance(error, MXNetError), error
    assert 'load_states' in str(error) and LIMIT_VARIABLE in str(error)
    assert peak < 32 * MIB
    assert weight.tolist() == [0.5] * 4
