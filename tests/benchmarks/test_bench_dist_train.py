"""benchmarks/bench_dist_train.py runs end to end at a tiny size (``--smoke``), so it
cannot rot: minigluon's dist_sync job (scheduler, 2 servers, 2 workers) and PyTorch DDP
beside it when PyTorch is there, all on 127.0.0.1 (the shaped links need root, ip netns
and tc, which the smoke run leaves out)."""
import importlib.util
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_dist_train_prints_the_loopback_row():
    # `plain` and `replicated` run the same code of the script as `overlap` (only the
    # jobs' environment differs), so the smoke test leaves them out: each job is seconds
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_dist_train.py'),
                           '--smoke', '--variants', 'overlap', 'ddp'],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO),
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert 'batch 2 per worker, 1 timed steps after 1;' in out, out
    torch = importlib.util.find_spec('torch') is not None
    progress = re.findall(r'^  loopback +(\w+) +([\d.]+) img/s', out, re.M)
    assert [v for v, _ in progress] == ['overlap'] + (['ddp'] if torch else []), out
    assert all(float(rate) > 0 for _, rate in progress), out
    row = re.search(r'^\| loopback \|(.*)\|$', out, re.M)
    assert row, out
    overlap, plain, replicated, ddp, overlap_ddp, plain_ddp, repl_overlap = \
        [cell.strip() for cell in row.group(1).split('|')]
    assert float(overlap) > 0 and plain == replicated == plain_ddp == repl_overlap == '', out
    if torch:
        assert float(ddp) > 0 and float(overlap_ddp) > 0, out
    else:
        assert 'PyTorch is not installed' in out and ddp == overlap_ddp == '', out
