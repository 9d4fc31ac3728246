"""--launcher mpi with the real mpirun of OpenMPI (installed by .ci/run) and of MPICH
where it is installed too."""
import re
import shutil
import signal
import subprocess
import time

import pytest

from .helpers import (SHOW_IDENTITY, LiveLauncher, command_lines, identities, leftovers, py,
                      run_launcher)


def _implementations():
    """(name, program) for OpenMPI and MPICH, or a skip naming what is missing."""
    found = {}
    for program in ('mpirun', 'mpirun.openmpi', 'mpirun.mpich', 'mpiexec.hydra'):
        path = shutil.which(program)
        if path:
            version = subprocess.run([path, '--version'], capture_output=True, text=True,
                                     timeout=30, stdin=subprocess.DEVNULL)
            text = version.stdout + version.stderr
            name = 'openmpi' if 'Open MPI' in text or 'OpenRTE' in text else (
                'mpich' if 'HYDRA' in text or 'MPICH' in text else None)
            found.setdefault(name, path)
    return [pytest.param(found.get(name), id=name, marks=pytest.mark.skipif(
        name not in found, reason='%s is not installed (%s)' % (name, hint)))
        for name, hint in (('openmpi', '.ci/run installs openmpi-bin'),
                           ('mpich', 'apt-get install mpich to test it'))]


@pytest.fixture(params=_implementations())
def mpirun(request, monkeypatch):
    # OpenMPI refuses root unless told; the launcher adds --allow-run-as-root itself.
    monkeypatch.setenv('OMPI_ALLOW_RUN_AS_ROOT', '1')
    monkeypatch.setenv('OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1')
    return request.param


def test_the_job_runs_under_mpirun_with_the_secret_off_the_command_line(mpirun, marker,
                                                                         tmp_path):
    go = tmp_path / 'go'
    code = SHOW_IDENTITY + '''
import sys, time
print('secret', os.environ['MINIGLUON_PS_SECRET'], flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
'''
    launcher = LiveLauncher(['-n', '2', '-s', '2', '--launcher', 'mpi', '--mpirun', mpirun,
                             '--env-worker', 'ONLY_WORKERS=yes', *py(code, marker), str(go)],
                            cwd=str(tmp_path))
    lines = launcher.wait_for(lambda line: ' secret ' in line, count=5)
    secrets = {line.split()[-1] for line in lines if ' secret ' in line}
    assert len(secrets) == 1 and re.fullmatch('[0-9a-f]{64}', next(iter(secrets)))
    assert secrets.pop() not in command_lines()
    go.write_text('')
    assert launcher.finish() == 0, launcher.stderr
    found = identities('\n'.join(lines))
    assert sorted(found) == ['scheduler', 'server 0', 'server 1', 'worker 0', 'worker 1']
    for label, env in found.items():
        role = label.split()[0]
        assert env['DMLC_ROLE'] == role
        assert env['DMLC_WORKER_ID'] == (label.split()[1] if role == 'worker' else '-')
        assert env['DMLC_SERVER_ID'] == (label.split()[1] if role == 'server' else '-')
        assert (env['DMLC_NUM_WORKER'], env['DMLC_NUM_SERVER']) == ('2', '2')
        assert env['DMLC_NODE_HOST'] == '127.0.0.1' and env['cwd'] == str(tmp_path)
    assert len({env['DMLC_PS_ROOT_PORT'] for env in found.values()}) == 1
    assert '(mpi launcher)' in launcher.stderr
    assert leftovers(marker) == []


def test_a_failing_rank_ends_the_job_with_its_status(mpirun, marker):
    code = '''
    import os, sys, time
    if os.environ.get('DMLC_WORKER_ID') == '1':
        print('rank failure', file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(60)
    '''
    started = time.monotonic()
    result = run_launcher(['-n', '2', '-s', '1', '--launcher', 'mpi', '--mpirun', mpirun,
                           *py(code, marker)])
    assert result.returncode == 3, result.stderr
    assert time.monotonic() - started < 10
    assert '[worker 1] rank failure' in result.stderr
    assert 'worker 1 on this host failed first, with exit status 3' in result.stderr
    assert leftovers(marker) == []


def test_sigint_ends_mpirun_and_its_ranks(mpirun, marker):
    code = "import time; print('ready', flush=True); time.sleep(60)"
    launcher = LiveLauncher(['-n', '2', '-s', '1', '--launcher', 'mpi', '--mpirun', mpirun,
                             *py(code, marker)])
    launcher.wait_for(lambda line: line.endswith('] ready'), count=4)
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.finish() == 128 + signal.SIGINT
    assert leftovers(marker) == []


def test_a_missing_mpirun_is_named(marker):
    result = run_launcher(['-n', '1', '--launcher', 'mpi', '--mpirun', 'no-such-mpirun',
                           'true', marker])
    assert result.returncode == 1
    assert 'no-such-mpirun is not installed on this host' in result.stderr
