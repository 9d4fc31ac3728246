"""benchmarks/bench_rnn.py runs end to end at a tiny size (``--smoke``), so it cannot rot
(PyTorch and MXNet beside it when they are there)."""
import importlib.util
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_rnn_prints_its_table_and_writes_json_at_a_tiny_size(tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO, MINIGLUON_CPU_KERNELS='numpy')
    out = str(tmp_path / 'results.json')
    torch = importlib.util.find_spec('torch') is not None
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_rnn.py'),
                           '--smoke', '--threads', '1', '--json', out]
                          + (['--compare-torch'] if torch else []),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split('|') for line in done.stdout.splitlines() if line.startswith('| 1 |')]
    expected = 1 + torch + bool(os.environ.get('MINIGLUON_MXNET_PYTHON'))
    assert len(rows) == expected and all(float(row[3]) > 0 for row in rows), done.stdout
    with open(out) as f:
        report = json.load(f)
    assert report['results']['1']['minigluon']['steps_timed'] == 1
    assert report['settings']['hidden'] == 4 and report['settings']['seq_len'] == 3
