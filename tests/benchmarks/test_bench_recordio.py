"""benchmarks/bench_recordio.py runs end to end at a tiny size, so it cannot rot; with
MINIGLUON_MXNET_PYTHON set it also runs MXNet's pipeline beside minigluon's."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_recordio_prints_its_table_at_a_tiny_size():
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_recordio.py'),
                           '--images', '12', '--size', '32', '--batch-size', '5',
                           '--workers', '0,1', '--repeat', '1'],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith('| ') and
            not line.startswith('| pipeline')]
    pipelines = 3 if os.environ.get('MINIGLUON_MXNET_PYTHON') else 2
    assert len(rows) == 2 * pipelines, done.stdout
    for row in rows:
        rate = float(row.split('|')[3])
        assert rate > 0, row
