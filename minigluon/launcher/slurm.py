"""The slurm launcher: inside an allocation, each server and worker is one ``srun``
job step on its node; the scheduler runs here, on the launching node.

The nodes are the allocation's, as Slurm lists them (``scontrol show hostnames
$SLURM_JOB_NODELIST``), placed on like the hosts of a hostfile. Each process is
reached at its node's NodeAddr (the node name unless slurm.conf says otherwise),
which becomes its DMLC_NODE_HOST.

A step is ``srun --nodes=1 --ntasks=1 --nodelist=NODE --overlap --export=ALL ...``
running the bootstrap, as the ssh launcher does, so that a command's whole session
ends with it and a missing command is named. The launcher's environment with the
task's DMLC_* variables and the job secret is srun's, and ``--export=ALL`` (whatever
``sbatch --export`` said) makes it the step's: no value is on a command line. The
bootstrap's spec (command and directory) goes over srun's stdin, which srun forwards
to the task. ``--overlap`` lets a node's server and worker steps share its CPUs,
memory and GPUs. Ending a step is ending its srun: closing srun's stdin lets the
bootstrap end the command; SIGTERM makes srun kill the step's tasks; the step of a
killed srun is ended by Slurm itself. ``scancel`` of the job ends every step, and
this launcher with the batch script.
"""
import os
import re
import subprocess

from . import LaunchError
from .local import restart_if, start_task, stdin_bootstrap_argv, stdin_bootstrap_payload
from .placement import Host
from .processes import PROGRAM, require

HOW_TO_ALLOCATE = (
    'submit a batch script that runs %s (e.g. `sbatch examples/slurm/cifar10_dist.sbatch`), '
    'or get an interactive allocation and launch in it: `salloc -N 2 %s -n 2 --launcher '
    'slurm COMMAND...`' % (PROGRAM, PROGRAM))
# srun's line for a task's exit status: the launcher's report says it, naming the process.
_TASK_ENDED = re.compile(rb'srun: error: \S+: tasks? [0-9,-]+: ')


def scontrol(*args):
    """What ``scontrol args...`` prints; its error as a LaunchError."""
    require('scontrol', 'by --launcher slurm')
    try:
        result = subprocess.run(['scontrol', *args], capture_output=True, text=True,
                                timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise LaunchError('scontrol %s did not answer within 60 s; is slurmctld up?'
                          % ' '.join(args)) from None
    if result.returncode:
        raise LaunchError('scontrol %s failed: %s' % (' '.join(args), result.stderr.strip()))
    return result.stdout


def _field(line, key):
    """KEY's value in a line of ``scontrol --oneliner show node`` (its first KEY=)."""
    found = re.search(r'(?:^|\s)%s=(\S+)' % key, line)
    return found.group(1) if found else None


def check_allocation(environ):
    """Refuse to run outside an allocation, or as one of several tasks of a step."""
    if not environ.get('SLURM_JOB_ID'):
        raise LaunchError('--launcher slurm starts its processes as job steps of a Slurm '
                          'allocation, and this is not in one (SLURM_JOB_ID is not set): '
                          + HOW_TO_ALLOCATE)
    if not environ.get('SLURM_JOB_NODELIST'):
        raise LaunchError('SLURM_JOB_ID is %s but SLURM_JOB_NODELIST is not set, so the '
                          "allocation's nodes are unknown: launch from the allocation's own "
                          'shell or batch script' % environ['SLURM_JOB_ID'])
    tasks = environ.get('SLURM_STEP_NUM_TASKS', '1')
    if environ.get('SLURM_STEP_ID') and tasks != '1':
        raise LaunchError('this launcher is one of %s tasks of step %s.%s, and each would '
                          'start the whole job: run %s once, in the batch script or the salloc '
                          'shell, not under srun' % (tasks, environ['SLURM_JOB_ID'],
                                                     environ['SLURM_STEP_ID'], PROGRAM))


def allocation_hosts(environ):
    """The allocation's nodes, in Slurm's order, each with its NodeAddr."""
    check_allocation(environ)
    nodelist = environ['SLURM_JOB_NODELIST']
    names = scontrol('show', 'hostnames', nodelist).split()
    addresses = {_field(line, 'NodeName'): _field(line, 'NodeAddr')
                 for line in scontrol('--oneliner', 'show', 'node', nodelist).splitlines()}
    return [Host(name, address=addresses.get(name)) for name in names]


def scheduler_peer(hosts, environ):
    """The node to choose the scheduler's address towards: the first one other than
    this node (SLURMD_NODENAME), since towards itself a node may use a loopback address."""
    here = environ.get('SLURMD_NODENAME')
    return next((host for host in hosts if host.name != here), hosts[0])


def srun_argv(task):
    """The ``srun`` options that run ``task`` as one job step on its node.

    The bootstrap's command line is appended by the caller. ``--overlap`` lets a
    node's steps share its resources, ``--export=ALL`` gives the step srun's whole
    environment, and the step's name carries the task's label.
    """
    # --ntasks-per-node overrides a SLURM_NTASKS_PER_NODE from the batch environment.
    return ['srun', '--nodes=1', '--ntasks=1', '--ntasks-per-node=1',
            '--nodelist=%s' % task.host.name, '--overlap', '--export=ALL', '--quiet',
            '--job-name=minigluon-%s' % task.label.replace(' ', '-')]


def step_environment(job, task):
    """srun's environment: this launcher's, with ``task``'s variables set or removed."""
    env = dict(os.environ)
    for name, value in job.environment(task).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def launch(job, supervisor, options):
    """Start the scheduler here and each server and worker as an ``srun`` job step.

    Parameters
    ----------
    job : Job
        The placed tasks (their hosts are the allocation's nodes), command and
        environment.
    supervisor : Supervisor
        Runs the processes; srun's own "task ended" lines are dropped, since the
        launcher's report names the failed process.
    options : argparse.Namespace
        The parsed command line (no slurm-specific options).
    """
    require('srun', 'by --launcher slurm')
    spec = stdin_bootstrap_payload({'argv': job.command, 'cwd': os.getcwd(), 'env': {}})
    for task in job.tasks:
        if task.host is None:
            start_task(supervisor, job, task)
        else:
            start_step(supervisor, job, task, spec)


def start_step(supervisor, job, task, spec):
    """Start ``task`` as a job step on its node (again: --max-restarts)."""
    def relabel(line):
        return task.label, None if _TASK_ENDED.match(line) else line

    def again():
        return start_step(supervisor, job, task, spec)
    argv = srun_argv(task) + stdin_bootstrap_argv('python3', task.label)
    return supervisor.spawn(task.label, argv,
                            payload=spec, env=step_environment(job, task),
                            where=task.host.name, relabel=relabel,
                            restart=again, restart_if=restart_if(task.role))
