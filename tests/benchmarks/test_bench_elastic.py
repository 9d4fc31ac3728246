"""benchmarks/bench_elastic.py runs end to end at a tiny size (``--smoke``), so it cannot
rot: an undisturbed launch of examples/cifar10_dist.py, then one with a worker killed
while it trains, which the launcher starts again and the job survives."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_elastic_survives_a_killed_worker(tmp_path):
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'bench_elastic.py'),
                           '--smoke', '--keep', str(tmp_path)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO),
                          timeout=300)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:] + ''.join(
        p.read_text()[-3000:] for p in tmp_path.iterdir())
    undisturbed = re.search(r"^undisturbed: exit 0, ([\d.]+) s, final accuracy \{(.*)\}, "
                            r"left \[\]$", out, re.M)
    assert undisturbed and float(undisturbed.group(1)) > 0, out
    assert sorted(re.findall(r"'(\d+)': [\d.]+", undisturbed.group(2))) == ['0', '1'], out
    # killed while the job ran (not "(it had ended)"), and everything as undisturbed
    run = re.search(r"^run 0: worker [01] killed [\d.]+ s after 'Epoch 0: Test_acc': exit 0, "
                    r"([\d.]+) s .*, left \[\]: OK$", out, re.M)
    assert run and float(run.group(1)) > 0, out
    assert not list(tmp_path.iterdir())  # (a failed run's output would be kept there)
