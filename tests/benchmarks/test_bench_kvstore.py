"""benchmarks/bench_kvstore.py runs end to end at a tiny size, so it cannot rot: the list
round and the per-key round (with MXNet's ps-lite beside them when
MINIGLUON_MXNET_PYTHON names a Python with mxnet 1.9.1)."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_kvstore_prints_the_list_and_per_key_rows_at_a_tiny_size():
    mxnet = os.environ.get('MINIGLUON_MXNET_PYTHON')
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_kvstore.py'),
                           '--tiny', '--rounds', '1', '--warmup', '1', '--repeat', '1',
                           '--no-torch', '--loop', 'list', 'per-key']
                          + (['--mxnet-python', mxnet] if mxnet else ['--kvstore-only']),
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO),
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = dict(re.findall(r'^\| (\S.*?) +\| +([\d.]+) \|', done.stdout, re.M))
    expected = ['kvstore push+pull, auto, chunk 4 MiB', 'kvstore per key, auto, chunk 4 MiB']
    if mxnet:
        expected += ['MXNet 1.9.1 dist_sync (ps-lite)', 'MXNet 1.9.1 dist_sync (ps-lite), per key']
    assert all(float(rows[name]) > 0 for name in expected), done.stdout
