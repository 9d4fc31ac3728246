"""A real Slurm cluster on this machine for the slurm launcher's tests: MUNGE's
munged, slurmctld here, and one slurmd per network namespace (helpers.
network_namespaces), so that every node has its own address, as on a cluster.

Everything lives in one temporary folder: the MUNGE key and socket, slurm.conf,
state, spool, logs. Clients find the cluster through ``SLURM_CONF`` (``env()``);
nothing under /etc is read or written. The slurmds enter their namespace with
``nsenter --net`` rather than ``ip netns exec``, which would mount a fresh /sys
without the cgroup file systems that slurmd probes at start. Processes are tracked
by proctrack/linuxproc, which needs no cgroups.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from .helpers import free_port

PROGRAMS = ('munged', 'slurmctld', 'slurmd', 'sbatch', 'salloc', 'srun', 'squeue', 'scancel',
            'scontrol', 'sinfo', 'nsenter')
START_TIMEOUT = 30


def slurm_missing_reason():
    """Why a Slurm cluster cannot be started here, or None."""
    missing = [name for name in PROGRAMS if shutil.which(name) is None
               and not os.access('/usr/sbin/' + name, os.X_OK)]
    if missing:
        return ('%s not installed (.ci/run installs slurm-wlm and munge)'
                % ', '.join(missing))
    if os.geteuid() != 0:
        return 'slurmd runs jobs as their users only when it runs as root'
    return None


def _program(name):
    return shutil.which(name) or '/usr/sbin/' + name


class SlurmCluster:
    """munged, slurmctld on ``controller_address`` and one slurmd per host of
    ``hosts`` ([NetnsHost]), nodes ``n0``, ``n1``, ... in one partition.
    Raises RuntimeError, with the daemons' logs, when the cluster does not come up."""

    def __init__(self, controller_address, hosts):
        self.controller_address = controller_address
        self.folder = tempfile.mkdtemp(prefix='mgslurm-')
        os.chmod(self.folder, 0o755)  # munged wants its socket's folders open to all
        self.nodes = ['n%d' % i for i in range(len(hosts))]
        self.addresses = {node: host.address for node, host in zip(self.nodes, hosts)}
        self.daemons = []
        self.conf = self.path('slurm.conf')
        try:
            self._start_munge()
            self._write_config(controller_address)
            self._start('slurmctld', 'slurmctld', '-D', '-i', '-f', self.conf)
            for node, host in zip(self.nodes, hosts):
                os.makedirs(self.path('spool', node))
                self._start('slurmd-' + node, 'slurmd', '-D', '-N', node, '-f', self.conf,
                            via=['nsenter', '--net=/run/netns/' + host.netns])
            self._wait_until_idle()
        except BaseException:
            self.stop()
            raise

    def path(self, *names):
        return os.path.join(self.folder, *names)

    def env(self, **more):
        """The environment for a Slurm client of this cluster."""
        return dict(os.environ, SLURM_CONF=self.conf, **more)

    def run(self, *argv, timeout=30, check=True):
        """A client command (``squeue``, ``scancel``, ...) run to its end; its stdout."""
        result = subprocess.run(argv, capture_output=True, text=True, env=self.env(),
                                timeout=timeout, stdin=subprocess.DEVNULL)
        if check and result.returncode:
            raise AssertionError('%s failed (%d): %s' % (' '.join(argv), result.returncode,
                                                         result.stderr))
        return result.stdout

    def steps(self, job_id):
        """The steps of the job that are still listed (``squeue --steps``)."""
        return self.run('squeue', '--noheader', '--steps', '--jobs', str(job_id),
                        '--format=%i %j %N', check=False).splitlines()

    def wait_until_gone(self, job_id, timeout=20):
        """Wait until the job has left squeue (ended, its steps too); its final state."""
        deadline = time.monotonic() + timeout
        while self.run('squeue', '--noheader', '--jobs', str(job_id), check=False).strip():
            if time.monotonic() > deadline:
                raise AssertionError('job %s still listed after %ss' % (job_id, timeout))
            time.sleep(0.2)
        shown = self.run('scontrol', '--oneliner', 'show', 'job', str(job_id))
        return shown.split('JobState=', 1)[1].split()[0]

    def logs(self):
        texts = []
        for name in sorted(os.listdir(self.path('log'))):
            with open(self.path('log', name), errors='replace') as f:
                texts.append('--- %s\n%s' % (name, ''.join(f.readlines()[-15:])))
        return '\n'.join(texts)

    def stop(self):
        """Cancel every job, then end the daemons; remove the folder."""
        if any(name == 'slurmctld' for name, _ in self.daemons):
            self.run('scancel', '--full', '--user=%d' % os.getuid(), check=False)
        for _, proc in reversed(self.daemons):
            if proc.poll() is None:
                proc.terminate()
        for _, proc in self.daemons:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.daemons = []
        shutil.rmtree(self.folder, ignore_errors=True)

    def _start(self, name, program, *args, via=()):
        with open(self.path('log', name + '.out'), 'w') as log:
            proc = subprocess.Popen([*via, _program(program), *args], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, env=self.env())
        self.daemons.append((name, proc))

    def _start_munge(self):
        os.makedirs(self.path('log'))
        os.makedirs(self.path('munge'), mode=0o755)
        os.makedirs(self.path('munge-key'), mode=0o700)
        key = self.path('munge-key', 'munge.key')
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o400), 'wb') as f:
            f.write(os.urandom(1024))
        self.munge_socket = self.path('munge', 'munge.socket')
        self._start('munged', 'munged', '--foreground', '--socket=' + self.munge_socket,
                    '--key-file=' + key, '--pid-file=' + self.path('munge', 'pid'),
                    '--seed-file=' + self.path('munge', 'seed'))
        deadline = time.monotonic() + START_TIMEOUT
        while not os.path.exists(self.munge_socket):
            if self.daemons[-1][1].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('munged did not start:\n' + self.logs())
            time.sleep(0.05)

    def _write_config(self, controller_address):
        host = socket.gethostname().split('.')[0]  # slurmctld checks it is this host
        settings = [
            'ClusterName=minigluontest',
            'SlurmctldHost=%s(%s)' % (host, controller_address),
            'SlurmctldPort=%d' % free_port(),
            'SlurmdPort=%d' % free_port(),  # one per namespace: no clash
            'SlurmUser=root', 'SlurmdUser=root',
            'AuthType=auth/munge', 'CredType=cred/munge',
            'AuthInfo=socket=%s' % self.munge_socket,
            'StateSaveLocation=' + self.path('state'),
            'SlurmdSpoolDir=' + self.path('spool', '%n'),
            'SlurmctldPidFile=' + self.path('slurmctld.pid'),
            'SlurmdPidFile=' + self.path('slurmd-%n.pid'),
            'SlurmctldLogFile=' + self.path('log', 'slurmctld.log'),
            'SlurmdLogFile=' + self.path('log', 'slurmd-%n.log'),
            'ProctrackType=proctrack/linuxproc', 'TaskPlugin=task/none',
            'JobAcctGatherType=jobacct_gather/none',
            'AccountingStorageType=accounting_storage/none', 'JobCompType=jobcomp/none',
            'MpiDefault=none', 'MailProg=/bin/true',
            'SchedulerType=sched/builtin', 'SelectType=select/cons_tres',
            'SelectTypeParameters=CR_Core',
            'SlurmdParameters=config_overrides',  # whatever this machine's CPUs
            'ReturnToService=2', 'KillWait=10',
            'MinJobAge=5',  # sbatch --wait polls every 2 s, not 8, below MinJobAge/2 = 2.5
        ]
        settings += ['NodeName=%s NodeAddr=%s CPUs=2 State=UNKNOWN' % item
                     for item in self.addresses.items()]
        settings.append('PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP')
        os.makedirs(self.path('state'))
        with open(self.conf, 'w') as f:
            f.write('\n'.join(settings) + '\n')

    def _wait_until_idle(self):
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            shown = self.run('sinfo', '--noheader', '--Node', '--format=%N %T', check=False)
            states = dict(line.split() for line in shown.splitlines())
            if sorted(node for node, state in states.items() if state == 'idle') == self.nodes:
                return
            ended = [name for name, proc in self.daemons if proc.poll() is not None]
            if ended or time.monotonic() > deadline:
                raise RuntimeError('the Slurm cluster did not come up (%s; nodes %s):\n%s' % (
                    'ended: %s' % ', '.join(ended) if ended else 'timed out', states,
                    self.logs()))
            time.sleep(0.2)
