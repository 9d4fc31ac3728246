"""The local launcher: every process on this host, each through the bootstrap.

``start_task`` is also how the ssh and mpi launchers start the scheduler here, and
(behind an ssh command) how the ssh launcher starts remote processes.
"""
import json
import os
import shlex
import sys

from . import bootstrap

with open(bootstrap.__file__) as _f:
    BOOTSTRAP_SOURCE = _f.read()


def bootstrap_argv(python, *args):
    """The command line that runs the bootstrap with ``python``."""
    return [python, '-c', BOOTSTRAP_SOURCE, *args]


def start_task(supervisor, job, task, *, cwd=None, via=(), notes=None):
    """Start ``task`` through the bootstrap, here with this Python, or with ``via``, an
    ssh command, on ``task.host`` with its python3. A worker can be started again the
    same way (``--max-restarts``)."""
    cwd = cwd or os.getcwd()
    spec = {'argv': job.command, 'cwd': cwd, 'env': job.environment(task)}
    if via:
        argv = [*via, shlex.join(bootstrap_argv('python3'))]
    else:
        argv = bootstrap_argv(sys.executable)

    def again():
        return start_task(supervisor, job, task, cwd=cwd, via=via, notes=notes)
    return supervisor.spawn(task.label, argv, payload=json.dumps(spec).encode() + b'\n',
                            where=str(task.host or 'this host'), notes=notes,
                            restart=again if task.role == 'worker' else None)


def launch(job, supervisor, options):
    for task in job.tasks:
        start_task(supervisor, job, task)
