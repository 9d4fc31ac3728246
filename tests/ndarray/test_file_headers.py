"""Files minigluon reads cannot make it allocate what their headers claim, and a save
killed half-way leaves nothing behind once the file is saved again."""
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon, nd
from minigluon.base import MXNetError
from minigluon.kvstore.ps import states_file
from minigluon.optimizer.updater import FORMAT as STATES_FORMAT

from archive_bombs import GIB, MIB, array_file, npy_zeros, peak_memory  # tests/ is on sys.path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HUGE = (2 ** 40,)
LIMIT_VARIABLE = 'MINIGLUON_ARCHIVE_MAX_BYTES'


def npy(array=None, claimed_shape=None):
    """The bytes of a .npy entry: ``array``, or a header claiming ``claimed_shape`` of
    float32 followed by only 16 bytes."""
    buf = io.BytesIO()
    if claimed_shape is None:
        np.lib.format.write_array(buf, array, allow_pickle=False)
    else:
        np.lib.format.write_array_header_1_0(
            buf, {'descr': '<f4', 'fortran_order': False, 'shape': claimed_shape})
        buf.write(b'\0' * 16)
    return buf.getvalue()


def npz(path, entries):
    with zipfile.ZipFile(str(path), 'w') as z:
        for name, data in entries.items():
            z.writestr(name + '.npy', data)


def json_entry(doc):
    return npy(np.frombuffer(json.dumps(doc).encode('utf-8'), dtype=np.uint8))


def test_an_array_file_claiming_two_to_the_forty_elements_is_minigluons_error(tmp_path):
    path = tmp_path / 'huge.params'
    npz(path, {'__meta__': json_entry({'format': 'minigluon.ndarray', 'kind': 'list',
                                       'names': None, 'count': 1}),
               'arr_0': npy(claimed_shape=HUGE)})
    with pytest.raises(MXNetError, match='huge.params.*claims float32'):
        nd.load(str(path))
    net = gluon.nn.Dense(2, in_units=2)
    net.initialize()
    with pytest.raises(MXNetError, match='huge.params'):
        net.load_parameters(str(path))


def states_blob(claimed_shape):
    header = {'format': STATES_FORMAT, 'entries': [], 'index_update_count': [],
              'num_update': 0, 'optimizer': None}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as z:
        z.writestr('__header__.npy', json_entry(header))
        z.writestr('arr_0.npy', npy(claimed_shape=claimed_shape))
    return buf.getvalue()


def test_trainer_and_store_states_claiming_too_much_are_minigluons_error(tmp_path):
    path = tmp_path / 'huge.states'
    path.write_bytes(states_blob(HUGE))
    net = gluon.nn.Dense(2, in_units=2)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            update_on_kvstore=False)
    with pytest.raises(MXNetError, match='huge.states.*claims float32'):
        trainer.load_states(str(path))
    store = mx.kv.create('local')
    store.set_optimizer(mx.optimizer.SGD())
    with pytest.raises(MXNetError, match='huge.states.*claims float32'):
        store.load_optimizer_states(str(path))
    # the distributed store's file of server states
    dist = tmp_path / 'huge.dist-states'
    npz(dist, {'__meta__': json_entry({'format': 'minigluon.dist-optimizer-states',
                                       'num_servers': 1}),
               'server_0': npy(claimed_shape=HUGE)})
    with pytest.raises(MXNetError, match='huge.dist-states.*claims float32'):
        states_file.load(str(dist), [0])


SLOW_SAVE = '''
import sys, time
sys.path.insert(0, %r)
from minigluon.ndarray.serialization import atomic_write
def write(f):
    f.write(b'x' * (1 << 20))
    f.flush()
    print('WRITING', flush=True)
    time.sleep(60)
atomic_write(sys.argv[1], write)
'''


def start_slow_save(path):
    proc = subprocess.Popen([sys.executable, '-c', SLOW_SAVE % ROOT, str(path)],
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b'WRITING'
    return proc


def temp_files(folder):
    return sorted(n for n in os.listdir(str(folder)) if n.startswith('.'))


def test_the_temp_file_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    path = tmp_path / 'model.params'
    nd.save(str(path), [nd.ones((3,))])
    killed = start_slow_save(path)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert len(temp_files(tmp_path)) == 1          # what kill -9 leaves
    live = start_slow_save(path)                   # another save still under way
    try:
        live_temp = [n for n in temp_files(tmp_path) if '-%d-' % live.pid in n]
        assert len(live_temp) == 1
        nd.save(str(path), [nd.ones((3,)) * 2])
        assert temp_files(tmp_path) == live_temp   # the abandoned one is gone, not the live one
        assert nd.load(str(path))[0].asnumpy().tolist() == [2.0] * 3
    finally:
        live.kill()
        live.wait()
    time.sleep(0.1)
    nd.save(str(path), [nd.ones((3,)) * 3])
    assert temp_files(tmp_path) == []


# ---- compressed archives: what their members declare is bounded before anything expands --
def test_a_one_megabyte_zip_bomb_is_refused_before_it_expands(tmp_path):
    path = tmp_path / 'bomb.params'
    path.write_bytes(array_file(npy_zeros(GIB)))
    assert path.stat().st_size < 2 * MIB
    error, peak = peak_memory(nd.load, str(path))
    assert isinstance(error, MXNetError), error
    assert 'bomb.params' in str(error) and LIMIT_VARIABLE in str(error)
    assert peak < 32 * MIB


def test_a_trusted_compressed_archive_loads_under_a_raised_limit(tmp_path, monkeypatch):
    path = tmp_path / 'zeros.params'
    path.write_bytes(array_file(npy_zeros(32 * MIB)))
    with pytest.raises(MXNetError, match='zeros.params.*declare.*%s=' % LIMIT_VARIABLE):
        nd.load(str(path))
    monkeypatch.setenv(LIMIT_VARIABLE, str(33 * MIB))
    assert nd.load(str(path))[0].shape == (32 * MIB,)
    monkeypatch.setenv(LIMIT_VARIABLE, '1 GiB')
    with pytest.raises(MXNetError, match="%s='1 GiB' is not a number of bytes" % LIMIT_VARIABLE):
        nd.load(str(path))


def test_a_member_inflating_past_its_declared_size_is_cut_there(tmp_path):
    head, _ = npy_zeros(MIB)
    path = tmp_path / 'liar.params'
    # the zip and .npy headers both say 1 MiB; the deflate stream goes on to 1 GiB
    path.write_bytes(array_file((head, GIB, len(head) + MIB)))
    error, peak = peak_memory(nd.load, str(path))
    assert isinstance(error, MXNetError) and 'CRC' in str(error), error
    assert peak < 32 * MIB
