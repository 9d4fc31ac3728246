"""The mpi launcher: the scheduler here, servers and workers from one ``mpirun``.

Servers and workers are MPI app contexts (``-np S ... : -np W ...``), each rank
running the bootstrap with its context's spec on its command line; the bootstrap
takes its role's index and DMLC_NODE_HOST from its rank. The job-wide variables,
the secret among them, are set in mpirun's own environment and passed by name
(OpenMPI ``-x NAME``, MPICH ``-genvlist``), so no value is on a command line.

OpenMPI gets one app context per (role, host), pinned with ``-H host``, which
reproduces the placement exactly. MPICH's hydra takes hosts only for the whole
job, so it gets ``-hosts h0:1,h1:1,...`` and one context per role; hydra then
deals ranks round-robin over the hosts, which is the same cycling.
"""
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Optional

from . import LaunchError
from .bootstrap import FAILURE_MARK
from .job import MANAGED
from .local import bootstrap_argv, start_task
from .placement import Host


@dataclass
class AppContext:
    """Consecutive MPI ranks running tasks of one role (on one host, or any)."""
    role: str
    host: Optional[Host]
    first_rank: int
    tasks: list = field(default_factory=list)


class OpenMPI:
    """How to write an OpenMPI ``mpirun`` command line.

    OpenMPI pins an app context to a host with ``-H``, so there is one context per
    (role, host) (``per_host``), which reproduces the placement exactly.
    """
    per_host = True

    def command(self, mpirun, names, contexts, hosts):
        """The ``mpirun`` argv that runs every app context.

        Parameters
        ----------
        mpirun : str
            The program to run.
        names : list of str
            Variables of mpirun's environment to pass to every rank (``-x NAME``).
        contexts : iterable of (AppContext, list of str)
            Each app context with the argv its ranks run, in rank order.
        hosts : list of Host
            The job's hosts; unused here, since each context names its own.

        Returns
        -------
        list of str
        """
        argv = [mpirun, '--oversubscribe']
        if os.geteuid() == 0:
            argv.append('--allow-run-as-root')
        for name in names:
            argv += ['-x', name]
        for context, program in contexts:
            if context.first_rank:
                argv.append(':')
            argv += ['-np', str(len(context.tasks))]
            if context.host is not None:
                argv += ['-H', context.host.name]
            argv += program
        return argv


class MPICH:
    """How to write an MPICH (hydra) ``mpirun`` command line.

    Hydra takes hosts only for the whole job, so there is one app context per role
    and ``-hosts h0:1,h1:1,...``, over which it deals ranks round-robin.
    """
    per_host = False

    def command(self, mpirun, names, contexts, hosts):
        """The ``mpirun`` argv that runs every app context.

        Parameters
        ----------
        mpirun : str
            The program to run.
        names : list of str
            Variables of mpirun's environment to pass to every rank (``-genvlist``).
        contexts : iterable of (AppContext, list of str)
            Each app context with the argv its ranks run, in rank order.
        hosts : list of Host
            The job's hosts, each given one slot; empty to run on this host.

        Returns
        -------
        list of str
        """
        argv = [mpirun, '-genvlist', ','.join(names)]
        if hosts:
            argv += ['-hosts', ','.join('%s:1' % host.name for host in hosts)]
        for context, program in contexts:
            if context.first_rank:
                argv.append(':')
            argv += ['-n', str(len(context.tasks))] + program
        return argv


FLAVOURS = {'Open MPI': OpenMPI, 'OpenRTE': OpenMPI, 'HYDRA': MPICH, 'MPICH': MPICH}


def flavour_of(mpirun):
    """The MPI implementation behind the program ``mpirun``, from its --version."""
    try:
        result = subprocess.run([mpirun, '--version'], capture_output=True, text=True,
                                timeout=30, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise LaunchError('%s is not installed on this host (it is needed by --launcher mpi; '
                          'install OpenMPI or MPICH, or name the program with --mpirun)'
                          % mpirun) from None
    except subprocess.TimeoutExpired:
        raise LaunchError('%s --version did not answer within 30 s' % mpirun) from None
    for marker, flavour in FLAVOURS.items():
        if marker in result.stdout + result.stderr:
            return flavour()
    raise LaunchError('%s is neither OpenMPI nor MPICH (its --version says %r)'
                      % (mpirun, (result.stdout + result.stderr).strip()[:200]))


def app_contexts(tasks, per_host):
    """Group the servers and workers into app contexts, in rank order."""
    contexts, rank = [], 0
    for role in ('server', 'worker'):
        groups = {}
        for task in tasks:
            if task.role == role:
                groups.setdefault(task.host if per_host else None, []).append(task)
        for host, members in groups.items():
            contexts.append(AppContext(role, host, rank, members))
            rank += len(members)
    return contexts


def launch(job, supervisor, options):
    """Start the scheduler here and every server and worker from one ``mpirun``.

    Parameters
    ----------
    job : Job
        The placed tasks, their command and environment.
    supervisor : Supervisor
        Runs the processes; mpirun's merged output is split back into the tasks'
        labels, and a bootstrap's FAILURE_MARK line reports that task's failure.
    options : argparse.Namespace
        The parsed command line; ``options.mpirun`` names the program.

    Raises
    ------
    LaunchError
        If a host gives an ssh port, or ``options.mpirun`` is missing or neither
        OpenMPI nor MPICH.
    """
    hosts = list(dict.fromkeys(t.host for t in job.tasks if t.host is not None))
    for host in hosts:
        if host.port is not None:
            raise LaunchError('hostfile host %s gives an ssh port, which mpirun cannot use; '
                              'set it in ~/.ssh/config instead' % host)
    flavour = flavour_of(options.mpirun)
    contexts = app_contexts(job.tasks, flavour.per_host)
    python = 'python3' if hosts else sys.executable
    programs = []
    for context in contexts:
        spec = {'role': context.role, 'first_rank': context.first_rank, 'cwd': os.getcwd(),
                'tasks': [[t.index, job.node_host(t)] for t in context.tasks],
                'env': job.role_environment(context.role)}
        programs.append(bootstrap_argv(python, json.dumps(spec), *job.command))
    common = job.common_environment()
    env = {k: v for k, v in os.environ.items() if k not in MANAGED}
    env.update(common)
    argv = flavour.command(options.mpirun, sorted(common), zip(contexts, programs), hosts)
    by_label = {task.label.encode(): task for task in job.tasks}

    def relabel(line):
        """The bootstraps prefix their lines with their label; others are mpirun's."""
        label, _, text = line[1:].partition(b'] ')
        task = by_label.get(label) if line.startswith(b'[') else None
        if task is None or task.role == 'scheduler':
            return 'mpirun', line
        if text.startswith(FAILURE_MARK.encode()):
            supervisor.fail(task.label, int(text.split()[-1]), str(task.host or 'this host'))
            return task.label, None
        return task.label, text

    for task in job.tasks:
        if task.role == 'scheduler':
            start_task(supervisor, job, task)
    supervisor.spawn('mpirun', argv, env=env, relabel=relabel)
