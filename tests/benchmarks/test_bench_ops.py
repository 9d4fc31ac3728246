"""benchmarks/bench_ops.py runs end to end at a tiny size (``--smoke``), so it cannot
rot: every row of its table timed."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_ops_prints_every_row_of_its_table():
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_ops.py'),
                           '--smoke'], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = re.findall(r'^(\S.*?) +(-?[\d.]+) +(-?[\d.]+) +(-?[\d.]+)$', done.stdout, re.M)
    assert [name for name, *_ in rows] == [
        'relu forward', 'x.relu() method', 'a + b operator', 'a * 2 (scalar)', 'sum(axis=0)',
        'relu record+backward'], done.stdout
    assert all(float(ours) > 0 and float(ref) > 0 for _, ours, ref, _ in rows), done.stdout
    assert re.search(r'^largest overhead: -?[\d.]+ us per op call', done.stdout, re.M)
