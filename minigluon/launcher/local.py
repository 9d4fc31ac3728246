"""The local launcher: every process on this host, each through the bootstrap.

``start_task`` is also how the ssh and mpi launchers start the scheduler here, and
(behind an ssh command) how the ssh launcher starts remote processes.
"""
import json
import os
import shlex
import sys

from . import bootstrap
from .processes import killed

with open(bootstrap.__file__) as _f:
    BOOTSTRAP_SOURCE = _f.read()


# Reads one line of stdin, the bootstrap's source as a JSON string, and runs it; so `ps`
# shows this and the task's label, not the whole source. At end of input it stops.
_LOADER = ("import json,os,sys;sys.argv[1:]=[];"
           "exec(json.loads(b''.join(iter(lambda:os.read(0,1) or b'\\n',b'\\n'))))")


def bootstrap_argv(python, *args):
    """The command line that runs the bootstrap with ``python``, its source on the line.

    For mpirun, which gives stdin to one rank only.
    """
    return [python, '-c', BOOTSTRAP_SOURCE, *args]


def stdin_bootstrap_argv(python, label):
    """The short command line that runs the bootstrap sent first on stdin
    (``stdin_bootstrap_payload``); ``label`` is only there for `ps` to show."""
    return [python, '-c', _LOADER, 'minigluon-launch', *label.split()]


def stdin_bootstrap_payload(spec):
    """What a process started with ``stdin_bootstrap_argv`` reads: source, then spec."""
    return (json.dumps(BOOTSTRAP_SOURCE) + '\n' + json.dumps(spec) + '\n').encode()


def start_task(supervisor, job, task, *, cwd=None, via=(), notes=None):
    """Start ``task`` through the bootstrap, here with this Python, or with ``via``, an
    ssh command, on ``task.host`` with its python3. It can be started again the same
    way (``--max-restarts``): the scheduler on the same address and port, a server or
    a worker with its index."""
    cwd = cwd or os.getcwd()
    spec = {'argv': job.command, 'cwd': cwd, 'env': job.environment(task)}
    if via:
        argv = [*via, shlex.join(stdin_bootstrap_argv('python3', task.label))]
    else:
        argv = stdin_bootstrap_argv(sys.executable, task.label)

    def again():
        return start_task(supervisor, job, task, cwd=cwd, via=via, notes=notes)
    return supervisor.spawn(task.label, argv, payload=stdin_bootstrap_payload(spec),
                            where=str(task.host or 'this host'), notes=notes,
                            restart=again, restart_if=restart_if(task.role))


def restart_if(role):
    """Which failures of a ``role`` process ``--max-restarts`` starts it again after: any
    of a server's or a worker's; the scheduler's when it was killed (it exits 1 itself
    only when the job failed, and a new one would find nobody to rebuild it from)."""
    return killed if role == 'scheduler' else None


def launch(job, supervisor, options):
    """Start every task of ``job`` on this host under ``supervisor``.

    Parameters
    ----------
    job : Job
        The placed tasks, their command and environment.
    supervisor : Supervisor
        Runs the processes and relays their output.
    options : argparse.Namespace
        The parsed command line (unused: the local launcher has no options).
    """
    for task in job.tasks:
        start_task(supervisor, job, task)
