"""The ssh launcher: the scheduler here, each server and worker through ``ssh HOST``.

Every ssh runs in batch mode (``-o BatchMode=yes``: a host that wants a password
fails at once instead of prompting), with ``-p PORT`` when the hostfile gives one,
the user's ``--ssh-option``s, then the defaults below (ssh keeps the first value
it reads for an option, so the user's win). The remote command is the bootstrap,
whose spec, secret included, goes over ssh's stdin; ending our ssh client closes
that stdin and the bootstrap ends the remote process.

``--sync-dst-dir DIR`` first checks that every host that runs a process has
rsync and creates DIR there, then copies the current directory to it with
``rsync -az`` over the same ssh command; the processes then start in DIR.
"""
import os
import shlex

from .local import start_task
from .processes import require

DEFAULT_OPTIONS = ('StrictHostKeyChecking=accept-new', 'ConnectTimeout=10',
                   'ServerAliveInterval=10', 'ServerAliveCountMax=3')
SSH_FAILED = 255  # ssh's exit status when it cannot connect or log in
SSH_FAILED_NOTE = "ssh's status when it cannot connect to or log in to %s"
RSYNC_NOT_FOUND = 127  # the shell's status for a command not found


def ssh_argv(host, options=()):
    """``ssh ... HOST`` for ``host``, with the user's ``options`` (KEY=VALUE)."""
    argv = ['ssh', '-T', '-o', 'BatchMode=yes']
    for option in (*options, *DEFAULT_OPTIONS):
        argv += ['-o', option]
    if host.port is not None:
        argv += ['-p', str(host.port)]
    return argv + [host.name]


def remote_hosts(job):
    """The distinct hosts that run a task, in placement order."""
    return list(dict.fromkeys(task.host for task in job.tasks if task.host is not None))


def sync(job, supervisor, destination, options):
    """Copy the current directory to ``destination`` on every host; the exit status."""
    require('rsync', 'by --sync-dst-dir')
    hosts = remote_hosts(job)
    prepare = 'command -v rsync >/dev/null || exit %d; mkdir -p -- %s' % (
        RSYNC_NOT_FOUND, shlex.quote(destination))
    for host in hosts:
        supervisor.spawn('rsync %s' % host, ssh_argv(host, options) + [prepare], notes={
            RSYNC_NOT_FOUND: 'rsync is not installed on %s; --sync-dst-dir needs it there'
                             % host.name,
            SSH_FAILED: SSH_FAILED_NOTE % host})
    status = supervisor.wait()
    if status:
        return status
    for host in hosts:
        rsh = shlex.join(ssh_argv(host, options)[:-1])
        target = '%s:%s/' % ('[%s]' % host.name if ':' in host.name else host.name, destination)
        supervisor.spawn('rsync %s' % host, ['rsync', '-az', '-e', rsh, os.getcwd() + '/',
                                             target], notes={SSH_FAILED: SSH_FAILED_NOTE % host})
    return supervisor.wait()


def launch(job, supervisor, options):
    """Start the scheduler here and each server and worker through ``ssh HOST``.

    With ``--sync-dst-dir`` the current directory is first copied to every host
    (see ``sync``), and nothing starts if that fails.

    Parameters
    ----------
    job : Job
        The placed tasks, their command and environment.
    supervisor : Supervisor
        Runs the processes; ssh's failure status is explained in its report.
    options : argparse.Namespace
        The parsed command line: ``sync_dst_dir`` and ``ssh_option`` are read.
    """
    require('ssh', 'by --launcher ssh')
    cwd = os.getcwd()
    if options.sync_dst_dir:
        if sync(job, supervisor, options.sync_dst_dir, options.ssh_option):
            return
        cwd = options.sync_dst_dir
    for task in job.tasks:
        if task.host is None:
            start_task(supervisor, job, task)
            continue
        start_task(supervisor, job, task, cwd=cwd, via=ssh_argv(task.host, options.ssh_option),
                   notes={SSH_FAILED: SSH_FAILED_NOTE % task.host})
