"""Keys to servers: stable in every process, whole or sliced, chunks bounded."""
import json
import os
import subprocess
import sys

import pytest

from minigluon.kvstore.ps.placement import plan, stable_hash

from ..cluster import ROOT

KEYS = [0, 1, 7, 12345, 'w', 'fc1.weight', 'resnet0_conv0_weight', 'ünïcode', '', '7']


def servers_here(keys, num_servers=5):
    return [plan(k, 10, 4, num_servers, 1000, 4096)[0].server for k in keys]


@pytest.mark.parametrize('hash_seed', ['0', '12345', 'random'])
def test_another_process_places_every_key_on_the_same_server(hash_seed):
    code = ('import json, sys\n'
            'from minigluon.kvstore.ps.placement import plan\n'
            'keys = json.loads(sys.argv[1])\n'
            'print(json.dumps([plan(k, 10, 4, 5, 1000, 4096)[0].server for k in keys]))\n')
    env = dict(os.environ, PYTHONHASHSEED=hash_seed,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    out = subprocess.run([sys.executable, '-c', code, json.dumps(KEYS)], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == servers_here(KEYS)


def test_the_hash_spreads_keys_and_tells_int_from_str_keys():
    assert stable_hash(7) != stable_hash('7')
    used = set(servers_here(['param%d' % i for i in range(200)], num_servers=4))
    assert used == {0, 1, 2, 3}


@pytest.mark.parametrize('size', [0, 1, 999])
def test_a_small_key_goes_whole_to_one_server(size):
    parts = plan('w', size, 4, 3, 1000, 1 << 20)
    assert len(parts) == 1
    assert (parts[0].index, parts[0].start, parts[0].stop) == (0, 0, size)
    assert parts[0].server == stable_hash('w') % 3


def check_cover(parts, size):
    """Parts are numbered in order and tile [0, size) with no gap or overlap."""
    assert [p.index for p in parts] == list(range(len(parts)))
    assert parts[0].start == 0 and parts[-1].stop == size
    for a, b in zip(parts, parts[1:]):
        assert a.stop == b.start and a.start < a.stop


@pytest.mark.parametrize('size, num_servers', [(1000, 2), (1001, 3), (3000, 2), (12347, 4)])
def test_a_big_key_is_cut_into_contiguous_slices_over_all_servers(size, num_servers):
    parts = plan(7, size, 4, num_servers, 1000, 1 << 20)
    check_cover(parts, size)
    assert [p.server for p in parts] == list(range(num_servers))
    lengths = [p.stop - p.start for p in parts]
    assert max(lengths) - min(lengths) <= 1          # balanced


@pytest.mark.parametrize('itemsize, chunk_bytes', [(4, 4096), (8, 4096), (2, 1000), (4, 4100)])
def test_chunks_are_bounded_and_stay_on_their_server(itemsize, chunk_bytes):
    size = 50000
    parts = plan('big', size, itemsize, 3, 1000, chunk_bytes)
    check_cover(parts, size)
    assert all((p.stop - p.start) * itemsize <= chunk_bytes for p in parts)
    servers = [p.server for p in parts]
    assert servers == sorted(servers) and set(servers) == {0, 1, 2}
    small = plan('small', 2500, itemsize, 3, 10 ** 6, chunk_bytes)
    check_cover(small, 2500)
    assert len({p.server for p in small}) == 1
    assert all((p.stop - p.start) * itemsize <= chunk_bytes for p in small)


def test_one_server_takes_everything():
    parts = plan('big', 5000, 4, 1, 1000, 1 << 20)
    assert [(p.server, p.start, p.stop) for p in parts] == [(0, 0, 5000)]
