"""``import minigluon`` under DMLC_ROLE=server or scheduler serves that role and exits."""
import os
import subprocess
import sys

from ..cluster import ROOT


def test_a_role_is_served_before_the_layers_above_the_kvstore_load():
    # (they serve no role: a server or the scheduler of every job would pay for them)
    env = dict(os.environ, DMLC_ROLE='scheduler', DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT='1', DMLC_NUM_SERVER='two', DMLC_NUM_WORKER='1',
               MINIGLUON_PS_SECRET='s' * 32, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, '-X', 'importtime', '-c', 'import minigluon'],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and 'DMLC_NUM_SERVER' in done.stderr, done.stderr[-2000:]
    loaded = {line.rsplit('|', 1)[-1].strip() for line in done.stderr.splitlines()
              if line.startswith('import time:')}
    assert 'minigluon.kvstore.ps.roles' in loaded
    assert not {'minigluon.gluon', 'minigluon.test_utils', 'minigluon.io'} & loaded
