"""An Estimator fit, unchanged, on two workers with a dist_sync Trainer under the launcher."""
import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))


def test_two_workers_fit_one_model_stop_together_and_only_rank_0_checkpoints(tmp_path):
    # workers that did not stop together would wait for each other: fail in a minute
    env = dict(os.environ, OMP_NUM_THREADS='1', MINIGLUON_PS_WAIT_TIMEOUT='60',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    env.pop('DMLC_ROLE', None)
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'tools', 'launch.py'), '-n', '2', '-s', '1',
         '--launcher', 'local', sys.executable, os.path.join(HERE, 'dist_fit.py'),
         str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # rank 1 asked to stop after epoch 2 of 5: both stopped there, neither waited forever
    for rank in (0, 1):
        assert re.search(r'^\[worker %d\] Train finished using total \d+s with 2 epochs\. '
                         r'training accuracy: ' % rank, out, re.M), out
        assert re.search(r'^\[worker %d\] \[Epoch 1\]\[Batch 2\]\[Samples \d+\] ' % rank,
                         out, re.M), out
    sums = re.findall(r'^\[worker \d\] parameter sum (\S+)$', out, re.M)
    assert len(sums) == 2 and sums[0] == sums[1], out          # one model
    assert sorted(os.listdir(str(tmp_path / 'rank0'))) == [
        'model-best.params', 'model-best.states', 'model-epoch0batch4.params',
        'model-epoch0batch4.states', 'model-epoch1batch8.params', 'model-epoch1batch8.states']
    assert not os.path.exists(str(tmp_path / 'rank1'))
    with open(str(tmp_path / 'metrics.jsonl')) as f:
        records = [json.loads(line) for line in f]
    for rank in (0, 1):
        epochs = [r for r in records if r['rank'] == rank and r['kind'] == 'epoch']
        assert [r['epoch'] for r in epochs] == [0, 1], records
        assert all('validation accuracy' in r and r['batches'] == 4 for r in epochs)
