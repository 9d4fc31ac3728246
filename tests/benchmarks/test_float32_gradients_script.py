"""benchmarks/float32_gradients.py runs end to end at a tiny size (``--smoke``), so it
cannot rot: minigluon's float32 and float64 gradients of ResNet-18 against its PyTorch
twin holding the same weights, matched parameter by parameter."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, 'benchmarks', 'float32_gradients.py')


@pytest.mark.skipif(importlib.util.find_spec('torch') is None,
                    reason='the comparison is against a PyTorch twin: '
                           '`pip install -r benchmarks/requirements.txt`')
def test_float32_gradients_compares_every_parameter_with_the_torch_twin():
    # one thread: PyTorch's thread pool spinning on a shared 2-core machine costs seconds
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1')
    done = subprocess.run([sys.executable, SCRIPT, '--smoke'], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert '2 images of 32x32 per seed' in out, out
    rows = re.findall(r'^ +(\d+)((?: +\S+){4}) +(\d+) +(\d+)$', out, re.M)
    assert [seed for seed, _, _, _ in rows] == ['0'], out
    mg32_mg64, t32_t64, mg32_t32, mg64_t64 = map(float, rows[0][1].split())
    assert 0 < mg32_mg64 < 1 and 0 < t32_t64 < 1 and 0 < mg32_t32 < 1, out
    # in float64 the two frameworks agree to rounding only when every weight sits in the
    # twin's matching layer
    assert mg64_t64 < 1e-8, out
    # ResNet-18's 60 trainable arrays: 20 convolutions, 19 BatchNorms' gamma and beta,
    # the dense layer's weight and bias
    assert 'trainable parameters compared per seed: 60, all of them' in out, out
