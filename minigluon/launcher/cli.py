"""Launch a distributed minigluon job: one scheduler, S servers and N workers.

usage:
  minigluon-launch -n N [-s S] [-H HOSTFILE] [--launcher {local,ssh,mpi,slurm}]
                   [--sync-dst-dir DIR] [--env KEY[=VALUE]]... [--env-server KEY=VALUE]...
                   [--env-worker KEY=VALUE]... [--host-ip ADDR | --interface NAME]
                   [-p PORT] [--ssh-option KEY=VALUE]... [--mpirun PROGRAM]
                   [--max-restarts N] [--replication] COMMAND [ARG...]
  python tools/launch.py ...   (the same, from a checkout)

Every process runs COMMAND (as MXNet's launch.py does: a minigluon program whose
DMLC_ROLE is server or scheduler serves that role and exits). Options go before
COMMAND; an unknown option is an error. COMMAND is run as given, without a
shell: write `sh -c '...'` for pipes or redirections.

examples:
  minigluon-launch -n 2 --launcher local python train.py --kvstore dist_sync
  minigluon-launch -n 3 -H hosts python train.py --kvstore dist_sync
  minigluon-launch -n 3 -H hosts --sync-dst-dir /tmp/job python train.py
  minigluon-launch -n 4 -s 2 --launcher mpi -H hosts --env OMP_NUM_THREADS=2 python train.py
  salloc -N 2 minigluon-launch -n 2 --launcher slurm python train.py

placement:
  The scheduler runs on this host. Servers first, then workers, cycle through the
  hosts of the hostfile: with 5 hosts and -n 3, servers go to hosts 1, 2, 3 and
  workers to hosts 4, 5, 1; with exactly N hosts (and S = N) every host runs one
  server and one worker. Without a hostfile everything runs on this host. Under
  --launcher slurm the allocation's nodes, in Slurm's order, take the hostfile's place.

hostfile:
  One host per line, `host` or `host:port` (the port is ssh's; IPv6 with a port
  as `[addr]:port`); `#` starts a comment, blank lines are skipped.

environment of each process:
  DMLC_ROLE          scheduler, server or worker
  DMLC_PS_ROOT_URI   the scheduler's address: --host-ip, else the address of
                     --interface, else the address this host uses to reach the
                     first host of the hostfile (under slurm: the first node of the
                     allocation other than this one), else 127.0.0.1
  DMLC_PS_ROOT_PORT  -p, else a port that is free here when the job starts
  DMLC_NUM_SERVER, DMLC_NUM_WORKER
  DMLC_NODE_HOST     the process's host as the hostfile names it (a Slurm node: its
                     NodeAddr; 127.0.0.1 for local processes, DMLC_PS_ROOT_URI for
                     the scheduler)
  DMLC_SERVER_ID     0..S-1, servers only, stable: the placement order
  DMLC_WORKER_ID     0..N-1, workers only, stable: the placement order
  MINIGLUON_PS_SECRET  the job's secret: this launcher's own MINIGLUON_PS_SECRET
                     if set, else a fresh random token; it is passed through the
                     environment or stdin, never on a command line
  MINIGLUON_PS_JOB_ID  a fresh random id for this job (sessions are bound to it,
                     so jobs that share a secret cannot replay into each other)
  plus --env (every process), --env-server, --env-worker, and, when set here,
  DMLC_INTERFACE, OMP_NUM_THREADS and the PS_*, MXNET_* and MINIGLUON_PS_*
  variables (PS_VERBOSE, MXNET_KVSTORE_BIGARRAY_BOUND, MINIGLUON_PS_ENCRYPT=curve,
  ...).
  `--env KEY` passes this host's value of KEY; KEY:VALUE is accepted as in MXNet.
  OMP_NUM_THREADS, when no one set it: a worker gets its host's cores divided
  among the job's workers there, a server or the scheduler 1 (as torchrun).

launchers:
  local  every process on this host (the default without a hostfile).
  ssh    (the default with a hostfile) `ssh -o BatchMode=yes [-p PORT] HOST` per
         process, in the current directory's path on that host (or --sync-dst-dir,
         which checks for rsync on each host and rsyncs the current directory
         there first). Hosts must accept key logins: a host that asks for a
         password fails at once. Defaults StrictHostKeyChecking=accept-new,
         ConnectTimeout=10, ServerAliveInterval=10; --ssh-option KEY=VALUE
         (repeatable) adds or overrides ssh options, e.g. IdentityFile=~/job_key.
         The hosts need python3 on their PATH: a small bootstrap gets the
         process's environment over ssh's stdin, and ends the process when that
         stdin closes (when the launcher ends its ssh client, or dies).
  mpi    one `mpirun` (OpenMPI, or MPICH's hydra) for servers and workers, on the
         hostfile's hosts when given (ports cannot be given; use ~/.ssh/config);
         --mpirun names the program. As root, OpenMPI gets --allow-run-as-root.
  slurm  inside a Slurm allocation (an sbatch script, or salloc's shell), with no
         hostfile: each server and worker is one job step, `srun --nodes=1
         --ntasks=1 --nodelist=NODE --overlap --export=ALL` (steps of a node share
         its resources) running the bootstrap with python3; the launcher's
         environment, DMLC_* and the secret included, goes to each step through
         srun's. Other srun settings come from srun's input variables, e.g.
         SLURM_CPU_BIND=none in the batch script.
         `scancel` of the job ends every step and the launcher. Outside an
         allocation it refuses, saying how to get one.

restarts:
  --max-restarts N (local, ssh and slurm launchers) starts a worker or a server that
  exits with a non-zero status, or is killed, again with the same rank on the same
  host, and a killed scheduler again on the same address and port, up to N times in
  the job, all roles together (0, the default: the first failure stops the job). Every
  process is told through PS_WORKER_RECOVERY_TIMEOUT (60 seconds unless set here): the
  job waits that long for the new process. A worker rejoins where the job is
  (kv.is_recovery, Trainer.recover()); a new scheduler rebuilds its state from the
  live processes, which train on meanwhile; a server's keys survive it when they are
  replicated. The mpi launcher refuses it: mpirun cannot start one rank again.
  With -s 2 or more each server's keys are also held by another server, so a dead
  server's keys live on (PS_REPLICATION, on by default then); --replication insists
  (an error with one server), --env PS_REPLICATION=0 turns it off.

output and exit status:
  Each line a process writes to stdout (stderr) goes whole to the launcher's
  stdout (stderr), prefixed with the process: [scheduler], [server 0], [worker 1];
  the launcher's own messages go to stderr. The exit status is the first non-zero
  status of any process not started again (128+N for a process killed by signal N,
  255 when ssh cannot connect or log in, 127 for a command not found), else 0; 2 for
  bad options, 1 when the launch itself fails, 128+N when signal N stopped the job.
  When a process fails, or on Ctrl-C/SIGTERM/SIGHUP, every process the launcher
  started, remote ones included, is ended within 10 s (SIGTERM, then SIGKILL; a
  second Ctrl-C kills at once), and a report names the process that failed first
  with its last lines of output.
"""
import argparse
import os
import re
import signal
import sys

from ..kvstore.ps.config import RECOVERY_TIMEOUT_ENV, REPLICATION_ENV
from . import LaunchError, local, mpi, slurm, ssh
from .address import free_port, scheduler_address
from .job import Job, check_user_variables, job_secret, passed_on
from .placement import place, read_hostfile
from .processes import PROGRAM, Supervisor

# Seconds the job waits for a restarted worker (PS_WORKER_RECOVERY_TIMEOUT) by default.
RECOVERY_TIMEOUT = 60
LAUNCHERS = {'local': local.launch, 'ssh': ssh.launch, 'mpi': mpi.launch,
             'slurm': slurm.launch}
_VARIABLE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')


def _count(minimum):
    def parse(text):
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError('%r is not a whole number >= %d' % (text, minimum))
        return int(text)
    return parse


def _port(text):
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError('%r is not a port (1 to 65535)' % text)
    return int(text)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        if message.startswith('unrecognized arguments'):
            message += ' (launcher options go before the command; see --help)'
        super().error(message)


def build_parser():
    """The argparse parser of ``minigluon-launch``; its help is this module's docstring.

    Returns
    -------
    argparse.ArgumentParser
        A parser that rejects unknown or abbreviated options and takes everything
        from COMMAND on as the command to run.
    """
    head, _, rest = __doc__.partition('\n\n')
    parser = _Parser(
        prog=PROGRAM, usage='%(prog)s -n N [options] COMMAND [ARG...]', description=head,
        epilog=rest.split('\n\n', 1)[1],  # the docstring after its usage block
        allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add('-n', '--num-workers', type=_count(1), required=True, metavar='N',
        help='number of worker processes')
    add('-s', '--num-servers', type=_count(1), metavar='S',
        help='number of server processes (default: N)')
    add('-H', '--hostfile', metavar='FILE', help='hosts to run on, one host[:port] per line')
    add('--launcher', choices=sorted(LAUNCHERS),
        help='how to start processes (default: ssh with a hostfile, else local)')
    add('--sync-dst-dir', metavar='DIR',
        help='ssh: rsync the current directory to DIR on every host and start there')
    add('--env', action='append', default=[], metavar='KEY[=VALUE]',
        help='set KEY for every process (alone: pass this host\'s value); repeatable')
    add('--env-server', action='append', default=[], metavar='KEY=VALUE',
        help='set KEY for the servers; repeatable')
    add('--env-worker', action='append', default=[], metavar='KEY=VALUE',
        help='set KEY for the workers; repeatable')
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--host-ip', metavar='ADDR',
                       help='the scheduler address the other hosts use (DMLC_PS_ROOT_URI)')
    where.add_argument('--interface', metavar='NAME',
                       help='use the IPv4 address of this network interface as the '
                            'scheduler address')
    add('-p', '--port', type=_port, help='the scheduler port (default: a free one)')
    add('--ssh-option', action='append', default=[], metavar='KEY=VALUE',
        help='an ssh -o option for --launcher ssh (and its rsync); repeatable')
    add('--mpirun', metavar='PROGRAM', help='the mpirun program (default: mpirun)')
    add('--max-restarts', type=_count(0), default=0, metavar='N',
        help='start a failed worker or server again, with its rank, and a killed '
             'scheduler, up to N times in the job (default 0: a failure stops the job)')
    add('--replication', action='store_true',
        help='keep each server\'s keys on a second server too (PS_REPLICATION=1, the '
             'default with -s 2 or more), so that the job survives a dead server')
    add('command', nargs=argparse.REMAINDER, help='the command every process runs')
    return parser


def parse_variables(values, option, environ):
    """{KEY: VALUE} from ``--env``-style values: KEY=VALUE, KEY:VALUE or KEY alone."""
    env = {}
    for text in values:
        separator = '=' if '=' in text else ':'
        name, found, value = text.partition(separator)
        if not _VARIABLE.match(name):
            raise LaunchError('%s %s: %r is not a variable name' % (option, text, name))
        if not found:
            if name not in environ:
                raise LaunchError('%s %s: %s is not set here; give a value with %s %s=VALUE'
                                  % (option, text, name, option, name))
            value = environ[name]
        env[name] = value
    check_user_variables(env, option)
    return env


def check_options(args, parser):
    """Fill in defaults; refuse options that do not fit the chosen launcher."""
    if args.command[:1] == ['--']:
        args.command = args.command[1:]
    if not args.command:
        parser.error('no command given: write the command to run after the options')
    if args.num_servers is None:
        args.num_servers = args.num_workers
    if args.launcher is None:
        args.launcher = 'ssh' if args.hostfile else 'local'
    misplaced = {'--hostfile': args.hostfile and args.launcher in ('local', 'slurm'),
                 '--sync-dst-dir': args.sync_dst_dir and args.launcher != 'ssh',
                 '--ssh-option': args.ssh_option and args.launcher != 'ssh',
                 '--mpirun': args.mpirun and args.launcher != 'mpi'}
    for option, wrong in misplaced.items():
        if wrong:
            parser.error('%s does not apply to --launcher %s' % (option, args.launcher))
    if args.max_restarts and args.launcher == 'mpi':
        parser.error('--max-restarts does not apply to --launcher mpi: one mpirun runs every '
                     'server and worker, and MPI cannot start one rank again; use --launcher '
                     'ssh (or local, slurm) to have failed workers restarted')
    if args.replication and args.num_servers < 2:
        parser.error('--replication keeps each server\'s keys on a second server as well, so '
                     'it needs two servers or more (-s 2); the job has %d' % args.num_servers)
    if args.launcher == 'ssh' and not args.hostfile:
        parser.error('--launcher ssh needs a hostfile (-H FILE)')
    for option in args.ssh_option:
        if not option or option.startswith('-'):
            parser.error('--ssh-option %r: give an ssh option as KEY=VALUE' % option)
    args.mpirun = args.mpirun or 'mpirun'


def check_recovery_timeout(value, max_restarts):
    """Restarted workers need a job that waits for them."""
    try:
        waits = float(value) > 0
    except ValueError:
        waits = False
    if not waits:
        raise LaunchError('--max-restarts %d needs %s to be a number of seconds above 0 (how '
                          'long the job waits for a restarted worker), not %r'
                          % (max_restarts, RECOVERY_TIMEOUT_ENV, value))


def plan(args, environ=os.environ):
    """The Job that ``args`` describe."""
    if args.launcher == 'slurm':
        hosts = slurm.allocation_hosts(environ)
        peer = slurm.scheduler_peer(hosts, environ)
    else:
        hosts = read_hostfile(args.hostfile) if args.hostfile else None
        peer = hosts[0] if hosts else None
    tasks = place(args.num_workers, args.num_servers, hosts)
    env = passed_on(environ)
    env.update(parse_variables(args.env, '--env', environ))
    if args.replication:
        env[REPLICATION_ENV] = '1'
    if args.max_restarts:
        check_recovery_timeout(env.setdefault(RECOVERY_TIMEOUT_ENV, str(RECOVERY_TIMEOUT)),
                               args.max_restarts)
    return Job(command=args.command, tasks=tasks,
               root_uri=scheduler_address(args.host_ip, args.interface, peer),
               root_port=args.port or free_port(), secret=job_secret(environ), env=env,
               env_server=parse_variables(args.env_server, '--env-server', environ),
               env_worker=parse_variables(args.env_worker, '--env-worker', environ))


def describe(job, launcher):
    """The launcher's first line: where the scheduler listens, how many run where."""
    def count(number, what):
        return '%d %s%s' % (number, what, '' if number == 1 else 's')
    hosts = {task.host for task in job.tasks if task.host is not None}
    return ('%s: scheduler at %s:%d; %s and %s on %s (%s launcher)'
            % (PROGRAM, job.root_uri, job.root_port, count(job.count('server'), 'server'),
               count(job.count('worker'), 'worker'),
               count(len(hosts), 'host') if hosts else 'this host', launcher))


def run(job, args):
    """Start the job, wait for it, report; the job's exit status."""
    supervisor = Supervisor(max_restarts=args.max_restarts)
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, supervisor.interrupt) for signum in handled}
    try:
        supervisor.say(describe(job, args.launcher))
        try:
            LAUNCHERS[args.launcher](job, supervisor, args)
        except LaunchError as e:
            supervisor.say('%s: error: %s' % (PROGRAM, e))
            supervisor.stop()
            supervisor.wait()
            return 1
        status = supervisor.wait()
        supervisor.report()
        return status
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def main(argv=None):
    """Entry point of ``minigluon-launch`` and ``tools/launch.py``; the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_options(args, parser)
    try:
        job = plan(args)
    except LaunchError as e:
        print('%s: error: %s' % (PROGRAM, e), file=sys.stderr)
        return 2
    return run(job, args)


if __name__ == '__main__':
    sys.exit(main())
