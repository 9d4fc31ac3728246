"""Starts one process of a job on its host and makes sure it ends with the job.

The launcher runs this file's text with ``python3``, locally, through ssh or
srun, so a host needs Python 3 but not minigluon to start a process. It is read
in two ways:

- ``python3 -c LOADER minigluon-launch LABEL`` (local, ssh and slurm launchers):
  the loader reads this file's text from stdin as one JSON string line and runs
  it, so that `ps` shows the task's label rather than the source (see
  ``local.stdin_bootstrap_argv``). The next line of stdin is a JSON spec ``{"argv": [...], "cwd": DIR, "env": {NAME: VALUE or null}}`` (null
  removes the variable). The job's secret travels there, never on a command line.
  Stdin then stays open: when it closes (the launcher ended its ssh client, or
  died) the process is ended.
- ``python3 -c SOURCE SPEC COMMAND...`` (mpi launcher, one MPI app context): SPEC
  is JSON ``{"role": ROLE, "first_rank": R, "tasks": [[INDEX, NODE_HOST], ...],
  "cwd": DIR, "env": {...}}``; this process's MPI rank (OMPI_COMM_WORLD_RANK or
  PMI_RANK) minus R picks its task. The job-wide variables come from mpirun.
  mpirun merges the output of all ranks, and not always at line ends (MPICH's
  -prepend-rank tags every chunk it reads), so here the bootstrap relays the
  command's output itself, each whole line in one write, prefixed with the
  task's label ("[worker 1] ..."); a failing command's status follows as a last
  line FAILURE_MARK N, so that the launcher can tell which process failed first.

The command runs in its own session (under mpi: in the bootstrap's process
group, which mpirun signals as a whole). SIGTERM, SIGINT or SIGHUP, or the end
of stdin, ends it: SIGTERM, then SIGKILL after GRACE seconds, to its whole
session. When the command ends by itself, whatever it left running in its
session is killed. The exit status is the command's (128 + N when signal N
ended it).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading

GRACE = 3.0
FAILURE_MARK = '[minigluon-launch] exit status'
# Defined here, not imported, since this file runs alone on hosts without minigluon;
# job.py imports them from here.
INDEX_VARIABLES = {'server': 'DMLC_SERVER_ID', 'worker': 'DMLC_WORKER_ID'}
# How many of the job's workers share this task's host (see ``share_cores``)
LOCAL_WORKERS_VARIABLE = 'MINIGLUON_LAUNCH_LOCAL_WORKERS'


def fail(message, status, label=None):
    """Say why the command cannot start (under mpi: as ``label``) and exit."""
    prefix = '[%s] ' % label if label else ''
    sys.stderr.write('%sminigluon-launch on %s: %s\n' % (prefix, socket.gethostname(), message))
    if label:
        sys.stderr.write('%s%s %d\n' % (prefix, FAILURE_MARK, status))
    sys.exit(status)


def read_spec_line():
    """Read the spec, one JSON line, from stdin (fd 0) and return it decoded.

    Reads the raw descriptor rather than ``sys.stdin`` so that nothing past the line
    is buffered away: the rest of stdin is watched for its end (``watch_stdin``).
    Exits with status 1 if stdin ends before a whole line arrived (the launcher is gone).
    """
    data = b''
    while not data.endswith(b'\n'):
        chunk = os.read(0, 65536)
        if not chunk:
            sys.exit(1)  # the launcher went away before it sent the spec
        data += chunk
    return json.loads(data.decode())


def mpi_task(spec):
    """This MPI rank's label and its DMLC_ROLE, DMLC_NODE_HOST and role index."""
    rank = os.environ.get('OMPI_COMM_WORLD_RANK', os.environ.get('PMI_RANK'))
    if rank is None:
        fail('neither OMPI_COMM_WORLD_RANK nor PMI_RANK is set: not started by mpirun?', 1)
    index, node_host = spec['tasks'][int(rank) - spec['first_rank']]
    role = spec['role']
    local = sum(host == node_host for _, host in spec['tasks'])
    return '%s %d' % (role, index), {'DMLC_ROLE': role, 'DMLC_NODE_HOST': node_host,
                                     INDEX_VARIABLES[role]: str(index),
                                     LOCAL_WORKERS_VARIABLE: str(local)}


def relay(pipe, fd, prefix):
    """Copy ``pipe`` to ``fd`` line by line, each line prefixed, in one write."""
    for line in pipe:
        os.write(fd, prefix + line if line.endswith(b'\n') else prefix + line + b'\n')


def environment(spec, extra):
    """The command's environment: ours, with ``spec['env']`` then ``extra`` applied.

    A value of None removes the variable; ``extra`` holds the per-rank variables
    under mpi (from ``mpi_task``) and is empty otherwise.
    """
    env = dict(os.environ)
    for name, value in list(spec['env'].items()) + list(extra.items()):
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    share_cores(env)
    return env


def host_cores():
    """The cores this process may run on."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def share_cores(env):
    """Give the command ``OMP_NUM_THREADS`` when no one set it (not the launcher's
    environment, ``--env`` or this host's): a worker gets the host's cores divided among
    the job's workers on it, a server or the scheduler, which mostly wait on the network,
    one. Each BLAS (and minigluon's host threads, which follow it) then sizes its pool to
    its share, as torchrun's OMP_NUM_THREADS does, instead of every process taking
    every core."""
    local = env.pop(LOCAL_WORKERS_VARIABLE, None)
    if local is None or env.get('OMP_NUM_THREADS'):
        return
    if env.get('DMLC_ROLE') != 'worker':
        env['OMP_NUM_THREADS'] = '1'
        return
    env['OMP_NUM_THREADS'] = str(max(1, host_cores() // max(1, int(local))))


class Command:
    """The user's command, started in its own session, or, under mpi, in our process
    group, which mpirun signals as a whole when it ends the job."""

    def __init__(self, argv, cwd, env, mpi_label=None):
        under_mpi = mpi_label is not None
        if cwd and not os.path.isdir(cwd):
            fail('cannot start in directory %s: it does not exist' % cwd, 1, mpi_label)
        self.own_session = not under_mpi
        output = subprocess.PIPE if under_mpi else None
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd or None, env=env,
                                         stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                                         start_new_session=self.own_session)
        except FileNotFoundError:
            fail('command not found: %s' % argv[0], 127, mpi_label)
        except PermissionError:
            fail('command not executable: %s' % argv[0], 126, mpi_label)

    def send(self, signum):
        """Send ``signum`` to the command: to its whole session if it has its own,
        else (under mpi) to the process alone while it runs. A process already gone
        is not an error."""
        try:
            if self.own_session:
                os.killpg(self.proc.pid, signum)
            elif self.proc.returncode is None:
                self.proc.send_signal(signum)
        except (ProcessLookupError, PermissionError):
            pass

    def end(self):
        """SIGTERM, then SIGKILL after GRACE seconds; also to what it left running."""
        if self.proc.returncode is None:
            self.send(signal.SIGTERM)
            try:
                self.proc.wait(GRACE)
            except subprocess.TimeoutExpired:
                pass
        self.send(signal.SIGKILL)
        self.proc.wait()
        return 128 - self.proc.returncode if self.proc.returncode < 0 else self.proc.returncode


def watch_stdin(stop):
    """Read stdin to its end, then set the event ``stop``.

    Stdin stays open as long as the launcher (or its ssh or srun client) lives, so its
    end means the job is over and the command must be ended.
    """
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    stop.set()


def main(args):
    """Run one task's command until it ends or is told to stop; exit with its status.

    Parameters
    ----------
    args : list of str
        Empty when the spec comes on stdin (local, ssh and slurm launchers); under
        mpi, the JSON spec followed by the command's argv.
    """
    under_mpi = bool(args)
    spec = json.loads(args[0]) if under_mpi else read_spec_line()
    argv = args[1:] if under_mpi else spec['argv']
    label, task_env = mpi_task(spec) if under_mpi else (None, {})
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    command = Command(argv, spec.get('cwd'), environment(spec, task_env), label)
    if under_mpi:
        prefix = ('[%s] ' % label).encode()
        threads = [threading.Thread(target=relay, args=(pipe, fd, prefix), daemon=True)
                   for pipe, fd in ((command.proc.stdout, 1), (command.proc.stderr, 2))]
    else:
        threads = [threading.Thread(target=watch_stdin, args=(stop,), daemon=True)]
    for thread in threads:
        thread.start()
    while command.proc.poll() is None and not stop.wait(0.05):
        pass
    status = command.end()
    if under_mpi:
        for thread in threads:
            thread.join(GRACE)
        if status and not stop.is_set():
            os.write(2, b'%s%s %d\n' % (prefix, FAILURE_MARK.encode(), status))
    sys.exit(status)


if __name__ == '__main__':
    main(sys.argv[1:])
