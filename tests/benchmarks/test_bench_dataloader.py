"""benchmarks/bench_dataloader.py runs end to end at a tiny size (``--smoke``), so it
cannot rot: the CIFAR-10 pipeline over a synthetic set, in the main process and in
one and two workers."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_dataloader_prints_a_row_per_worker_count():
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_dataloader.py'),
                           '--smoke'], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r'^256 images, batch 32, ', done.stdout, re.M), done.stdout
    rows = re.findall(r'^\| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$', done.stdout, re.M)
    assert [workers for workers, *_ in rows] == ['0', '1', '2'], done.stdout
    # (CPU seconds come in clock ticks: a tiny epoch may round to none, so only the rate)
    assert all(int(rate) > 0 for _, rate, _, _ in rows), done.stdout
