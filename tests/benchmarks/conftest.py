"""``smoke``: run a script of ``benchmarks/`` with ``--smoke``, as every test here does."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def smoke():
    """``smoke(script, *flags, timeout=300)``: the stdout of ``benchmarks/script --smoke
    flags...`` run with this checkout on its path, after asserting that it succeeded."""
    def run(script, *flags, timeout=300):
        done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', script),
                               '--smoke', *flags], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=REPO), timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout
    return run
