"""The process keeping freed host memory (``static_alloc=True`` on a CPU): arrays
allocated again after being freed fault no fresh pages, and a user's own malloc
tunables are left as they are. Each case runs in a process of its own (the policy lasts
as long as the process)."""
import os
import platform
import subprocess
import sys

import pytest

PROGRAM = r'''
import resource, sys
import numpy as np
from minigluon.ndarray import host_memory
kept = host_memory.keep_freed() if sys.argv[1] == 'keep' else None
def step():  # what a training step does: large arrays allocated, filled and freed
    arrays = [np.ones(s) for s in (3 << 20, 1 << 20, 2 << 20, 3 << 19)]
    del arrays
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
'''


def _run(mode, **env):
    done = subprocess.run([sys.executable, '-c', PROGRAM, mode], capture_output=True,
                          text=True, env=dict(os.environ, **env), timeout=120, check=True)
    kept, faults = done.stdout.split()
    return kept, int(faults)


@pytest.mark.skipif(platform.libc_ver()[0] != 'glibc',
                    reason='the policy is glibc malloc\'s; this C library keeps its own')
def test_freed_memory_serves_the_next_arrays_without_page_faults():
    pages = (3 + 1 + 2 + 1.5) * (1 << 20) * 8 / 4096 * 5
    kept, faults = _run('keep')
    assert kept == 'True' and faults < pages / 20
    # left to itself, malloc gives the heap's top back and maps the largest afresh
    _, default_faults = _run('default')
    assert default_faults > 20 * max(faults, 50)


def test_a_users_malloc_tunables_are_left_alone():
    kept, _ = _run('keep', MALLOC_TRIM_THRESHOLD_='1048576')
    assert kept == 'False'
