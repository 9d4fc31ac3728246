"""benchmarks/bench_recordio.py runs end to end at a tiny size (``--smoke``), so it cannot
rot; with MINIGLUON_MXNET_PYTHON set it also runs MXNet's pipeline beside minigluon's."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_recordio_prints_its_table_at_a_tiny_size():
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_recordio.py'),
                           '--smoke'],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith('12 JPEGs of 32x32, '), done.stdout
    rows = [line.split('|') for line in done.stdout.splitlines() if line.startswith('| ') and
            not line.startswith('| pipeline')]
    pipelines = 3 if os.environ.get('MINIGLUON_MXNET_PYTHON') else 2
    # the smoke run's worker counts: decoding in the main process, and in one worker
    assert [int(row[2]) for row in rows] == [0] * pipelines + [1] * pipelines, done.stdout
    for row in rows:
        assert float(row[3]) > 0, row
