"""--launcher slurm against a real Slurm cluster that the tests start on this machine:
munged, slurmctld, and three slurmd nodes n0, n1, n2, each in its own network
namespace with its own address (the ``slurm_cluster`` fixture, slurm_cluster.py).
Jobs go through the real sbatch, salloc, srun and scancel. Without Slurm, MUNGE,
root or network namespaces, the tests that need the cluster skip, saying why."""
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from minigluon.launcher import LaunchError, slurm
from minigluon.launcher.placement import Host

from .helpers import (DIES_ONCE, DIST_SYNC_SUMS, ROOT, LiveLauncher, check_dist_sync_sums,
                      command_lines, launcher_argv, leftovers, py, run_launcher, worker_lines)

# Where each process ran: its node (none for a scheduler outside the allocation),
# DMLC_NODE_HOST, which the kvstore binds to (so only that node can run it), and the
# scheduler's address.
PLACED = '''
import os
print('placed', os.environ.get('SLURMD_NODENAME', '-'), os.environ['DMLC_NODE_HOST'],
      os.environ['DMLC_PS_ROOT_URI'], flush=True)
'''
# Prints its secret, then sleeps until the launcher ends it.
SLEEPER = '''
import os, time
print('ready', os.environ['MINIGLUON_PS_SECRET'], flush=True)
time.sleep(120)
'''


def _placements(output):
    """{label: (node, DMLC_NODE_HOST, DMLC_PS_ROOT_URI)} from PLACED lines."""
    found = {}
    for line in output.splitlines():
        label, _, rest = line.partition('] placed ')
        if rest:
            found[label.lstrip('[')] = tuple(rest.split())
    return found


def _expected_placements(cluster, num_nodes, scheduler):
    """Servers then workers cycling over n0, n1, ... (one of each per node)."""
    expected = {'scheduler': scheduler}
    for role in ('server', 'worker'):
        for i in range(num_nodes):
            node = 'n%d' % i
            expected['%s %d' % (role, i)] = (node, cluster.addresses[node], scheduler[2])
    return expected


def _job_script(folder, *launcher_args):
    script = folder / 'job.sbatch'
    script.write_text('#!/bin/sh\nexec %s\n' % shlex.join(launcher_argv(launcher_args)))
    return script


@pytest.fixture
def allocation(slurm_cluster):
    """Two nodes allocated with `salloc --no-shell`: (job id, the launcher's environment
    inside it), as an allocation's shell would have it. The job outlives each launch, so
    the test sees which steps the launcher left."""
    result = subprocess.run(['salloc', '--no-shell', '--nodes=2'], capture_output=True,
                            text=True, env=slurm_cluster.env(), timeout=30)
    job_id = re.search(r'Granted job allocation (\d+)', result.stderr).group(1)
    nodes = slurm_cluster.run('squeue', '--noheader', '--jobs', job_id, '--format=%N').strip()
    yield job_id, slurm_cluster.env(SLURM_JOB_ID=job_id, SLURM_JOB_NODELIST=nodes)
    slurm_cluster.run('scancel', job_id)


def test_outside_an_allocation_it_says_how_to_get_one(marker, monkeypatch):
    for name in ('SLURM_JOB_ID', 'SLURM_JOBID', 'SLURM_JOB_NODELIST'):
        monkeypatch.delenv(name, raising=False)
    result = run_launcher(['-n', '2', '--launcher', 'slurm', 'true', marker])
    assert result.returncode == 2 and result.stdout == ''
    assert ('--launcher slurm starts its processes as job steps of a Slurm allocation, and '
            'this is not in one (SLURM_JOB_ID is not set)' in result.stderr)
    assert '`sbatch examples/slurm/cifar10_dist.sbatch`' in result.stderr
    assert '`salloc -N 2 minigluon-launch -n 2 --launcher slurm COMMAND...`' in result.stderr


def test_under_srun_with_several_tasks_it_refuses():
    inside = {'SLURM_JOB_ID': '7', 'SLURM_JOB_NODELIST': 'n[0-1]'}
    slurm.check_allocation(dict(inside, SLURM_STEP_ID='0', SLURM_STEP_NUM_TASKS='1'))
    with pytest.raises(LaunchError, match=r'one of 2 tasks of step 7.0, and each would start '
                                          r'the whole job: run minigluon-launch once'):
        slurm.check_allocation(dict(inside, SLURM_STEP_ID='0', SLURM_STEP_NUM_TASKS='2'))
    with pytest.raises(LaunchError, match='SLURM_JOB_NODELIST is not set'):
        slurm.check_allocation({'SLURM_JOB_ID': '7'})


def test_the_scheduler_address_is_chosen_towards_another_node():
    n0, n1 = Host('n0', address='10.0.0.10'), Host('n1', address='10.0.0.11')
    assert slurm.scheduler_peer([n0, n1], {'SLURMD_NODENAME': 'n0'}) == n1  # under sbatch
    assert slurm.scheduler_peer([n0, n1], {}) == n0                         # under salloc
    assert slurm.scheduler_peer([n0], {'SLURMD_NODENAME': 'n0'}) == n0


def test_dist_sync_sums_through_sbatch(slurm_cluster, marker, tmp_path):
    script = _job_script(tmp_path, '-n', '2', '--launcher', 'slurm',
                         '--env', 'MXNET_KVSTORE_BIGARRAY_BOUND=1000',
                         *py(PLACED + DIST_SYNC_SUMS, marker))
    output = tmp_path / 'job.out'
    result = subprocess.run(['sbatch', '--wait', '--nodes=2', '--chdir', ROOT,
                             '--output', str(output), str(script)], capture_output=True,
                            text=True, env=slurm_cluster.env(), timeout=60)
    text = output.read_text()
    assert result.returncode == 0, result.stderr + text
    check_dist_sync_sums(text, 2)
    n0 = slurm_cluster.addresses['n0']  # the batch script runs on the first node
    assert _placements(text) == _expected_placements(slurm_cluster, 2, ('n0', n0, n0))
    assert '(slurm launcher)' in text
    assert leftovers(marker) == []


def test_dist_sync_sums_through_salloc(slurm_cluster, marker):
    result = subprocess.run(
        ['salloc', '--nodes=3', *launcher_argv(['-n', '3', '--launcher', 'slurm',
                                                *py(PLACED + DIST_SYNC_SUMS, marker)])],
        capture_output=True, text=True, env=slurm_cluster.env(), cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    check_dist_sync_sums(result.stdout, 3)
    here = slurm_cluster.controller_address  # salloc runs the launcher here, off the nodes
    assert _placements(result.stdout) == _expected_placements(slurm_cluster, 3,
                                                              ('-', here, here))
    assert leftovers(marker) == []


def test_the_cifar10_batch_script_trains_two_workers_to_one_accuracy(slurm_cluster, tmp_path):
    output = tmp_path / 'cifar10.out'
    env = slurm_cluster.env(PYTHON=sys.executable, MINIGLUON_HOME=str(tmp_path / 'home'),
                            OMP_NUM_THREADS='1')
    result = subprocess.run(
        ['sbatch', '--wait', '--chdir', ROOT, '--output', str(output),
         os.path.join(ROOT, 'examples', 'slurm', 'cifar10_dist.sbatch'),
         '--model', 'cifar_resnet20_v1', '--synthetic', '200', '--num-epochs', '1',
         '--batch-size', '20'], capture_output=True, text=True, env=env, timeout=120)
    text = output.read_text()
    assert result.returncode == 0, result.stderr + text
    assert '2 servers and 2 workers on 2 hosts (slurm launcher)' in text
    accuracies = re.findall(r'^\[worker (\d)\] Epoch 0: Test_acc (\d\.\d{6})$', text, re.M)
    assert sorted(rank for rank, _ in accuracies) == ['0', '1'], text
    assert accuracies[0][1] == accuracies[1][1], text


def test_a_failing_worker_ends_every_step(slurm_cluster, allocation, marker):
    job_id, env = allocation
    code = '''
    import os, sys, time
    if os.environ.get('DMLC_WORKER_ID') == '1':
        time.sleep(0.5)
        print('step failure', file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(60)
    '''
    started = time.monotonic()
    result = run_launcher(['-n', '2', '-s', '1', '--launcher', 'slurm', *py(code, marker)],
                          env=env, timeout=30)
    assert result.returncode == 3, result.stderr
    assert time.monotonic() - started < 15
    assert '[worker 1] step failure' in result.stderr
    assert 'worker 1 on n0 failed first, with exit status 3' in result.stderr
    assert 'srun: error' not in result.stderr  # the report says it once
    assert slurm_cluster.steps(job_id) == []
    assert leftovers(marker) == []


def test_max_restarts_starts_a_killed_worker_again_as_a_new_step(slurm_cluster, allocation,
                                                                  marker, tmp_path):
    job_id, env = allocation
    result = run_launcher(['-n', '2', '-s', '1', '--launcher', 'slurm', '--max-restarts', '1',
                           *py(DIES_ONCE, marker), str(tmp_path)], env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert worker_lines(result.stdout) == ['[worker 0] worker 0 first',
                                           '[worker 1] worker 1 again',
                                           '[worker 1] worker 1 first']
    assert re.search(r'worker 1 on n\d ended with exit status 137 \(killed by SIGKILL\); '
                     r'starting it again \(restart 1 of 1\)', result.stderr), result.stderr
    assert slurm_cluster.steps(job_id) == []
    assert leftovers(marker) == []


def test_sigint_ends_every_step_and_the_secret_is_never_on_a_command_line(
        slurm_cluster, allocation, marker):
    job_id, env = allocation
    launcher = LiveLauncher(['-n', '2', '--launcher', 'slurm', *py(SLEEPER, marker)],
                            env=env, cwd=ROOT)
    lines = launcher.wait_for(lambda line: '] ready ' in line, count=5, timeout=30)
    secrets = {line.split()[-1] for line in lines if '] ready ' in line}
    assert len(secrets) == 1 and re.fullmatch('[0-9a-f]{64}', next(iter(secrets)))
    assert secrets.pop() not in command_lines()  # srun, slurmstepd, bootstraps, commands
    assert len([step for step in slurm_cluster.steps(job_id) if ' minigluon-' in step]) == 4
    started = time.monotonic()
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.finish() == 128 + signal.SIGINT, launcher.stderr
    assert time.monotonic() - started < 10
    assert slurm_cluster.steps(job_id) == []
    assert leftovers(marker) == []


def test_scancel_ends_every_step_and_process(slurm_cluster, marker, tmp_path):
    script = _job_script(tmp_path, '-n', '2', '--launcher', 'slurm', *py(SLEEPER, marker))
    output = tmp_path / 'job.out'
    job_id = slurm_cluster.run('sbatch', '--parsable', '--nodes=2', '--chdir', ROOT,
                               '--output', str(output), str(script)).strip()
    deadline = time.monotonic() + 30
    while not output.exists() or output.read_text().count('] ready ') < 5:
        assert time.monotonic() < deadline, output.read_text() if output.exists() else ''
        time.sleep(0.1)
    assert len(slurm_cluster.steps(job_id)) == 5  # the batch step and 4 srun steps
    slurm_cluster.run('scancel', job_id)
    assert slurm_cluster.wait_until_gone(job_id) == 'CANCELLED'
    assert slurm_cluster.steps(job_id) == []
    assert leftovers(marker, wait=5) == []
    # scancel signals the batch step and the srun steps at once: the launcher either
    # gets its SIGTERM first, or first sees a step (or the scheduler it runs in the
    # batch step, signalled too: exit status 143) end and ends the rest itself
    text = output.read_text()
    assert ('minigluon-launch: stopped by SIGTERM' in text
            or re.search(r'CANCELLED AT .*\n(?:.*\n)*?minigluon-launch: ended the \d+ other '
                         r'processes', text)), text
