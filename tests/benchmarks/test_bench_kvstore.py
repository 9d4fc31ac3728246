"""benchmarks/bench_kvstore.py runs end to end at a tiny size (``--smoke``), so it cannot
rot: the list round (with the HMAC and without), the per-key round, the raw pyzmq echo,
gloo's all-reduce when PyTorch is there and MXNet's ps-lite when MINIGLUON_MXNET_PYTHON
names a Python with mxnet 1.9.1."""
import importlib.util
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_kvstore_prints_every_row_at_a_tiny_size():
    mxnet = os.environ.get('MINIGLUON_MXNET_PYTHON')
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_kvstore.py'),
                           '--smoke', '--loop', 'list', 'per-key']
                          + (['--mxnet-python', mxnet] if mxnet else ['--no-mxnet']),
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO),
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # (without PyTorch a line saying so comes first)
    assert re.search(r'^tiny arrays: 4 arrays, ', done.stdout, re.M), done.stdout
    rows = dict(re.findall(r'^\| +(\S.*?) +\| +([\d.]+) \|', done.stdout, re.M))
    expected = ['kvstore push+pull, auto, chunk 4 MiB', 'same job, HMAC bypassed (auto, 4 MiB)',
                'kvstore per key, auto, chunk 4 MiB', 'raw pyzmq echo (DEALER/ROUTER)']
    if importlib.util.find_spec('torch') is not None:
        import torch
        expected.append('torch %s gloo all_reduce' % torch.__version__)
    if mxnet:
        expected += ['MXNet 1.9.1 dist_sync (ps-lite)', 'MXNet 1.9.1 dist_sync (ps-lite), per key']
    assert sorted(rows) == sorted(expected), done.stdout
    assert all(float(ms) > 0 for ms in rows.values()), done.stdout
    assert re.search(r'^authentication cost \(auto, chunk 4 MiB\): [-+][\d.]+%', done.stdout,
                     re.M), done.stdout
