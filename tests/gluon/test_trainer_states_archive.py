"""Trainer.load_states reads a compressed states archive only as far as a limit allows."""
import pytest

import minigluon as mx
from minigluon import gluon
from minigluon.base import MXNetError

from archive_bombs import GIB, MIB, npy_zeros, optimizer_states, peak_memory  # (tests/)


@pytest.mark.parametrize('update_on_kvstore', [False, True])
def test_load_states_refuses_a_zip_bomb_before_it_expands(tmp_path, update_on_kvstore):
    path = tmp_path / 'bomb.states'
    path.write_bytes(optimizer_states(npy_zeros(GIB)))
    assert path.stat().st_size < 2 * MIB
    net = gluon.nn.Dense(2, in_units=2)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            kvstore=mx.kv.create('local'), update_on_kvstore=update_on_kvstore)
    error, peak = peak_memory(trainer.load_states, str(path))
    assert isinstance(error, MXNetError), error
    assert 'bomb.states' in str(error) and 'MINIGLUON_ARCHIVE_MAX_BYTES' in str(error)
    assert peak < 32 * MIB
