"""benchmarks/bench_resnet.py runs end to end at a tiny size, so it cannot rot (with
PyTorch beside it when it is there). Its float16 runs are for GPUs (numpy has no
float16 BLAS: 20 s for one tiny step here); tools/gpu_check.sh runs them."""
import importlib.util
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_resnet_prints_its_table_and_profile_at_a_tiny_size():
    flags = ['--profile', '--tf32']
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1')
    torch = importlib.util.find_spec('torch') is not None
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_resnet.py'),
                           '--batch-size', '2', '--steps', '1', '--warmup', '0'] + flags
                          + (['--compare-torch'] if torch else []),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'batch 2, float32 (TF32), cpu' in done.stdout, done.stdout
    rows = re.findall(r'^(minigluon|torch) +([\d.]+) ', done.stdout, re.M)
    assert [name for name, _ in rows] == ['minigluon'] + (['torch'] if torch else [])
    assert all(float(speed) > 0 for _, speed in rows), done.stdout
    assert re.search(r'^Convolution 2x64x32x32 64x64x3x3 s1,1 +4 ', done.stdout, re.M), \
        done.stdout
