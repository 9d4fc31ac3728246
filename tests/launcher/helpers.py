"""Real programs for the launcher tests: the launcher as a subprocess, OpenSSH servers
with generated keys, and network namespaces as extra hosts.

Every process a test starts carries a unique marker on its command line, so that
``leftovers(marker)`` (pgrep -f) can prove nothing outlived the launcher.
"""
import contextlib
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import uuid

from minigluon.launcher.address import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(ROOT, 'tools', 'launch.py')
SSHD = shutil.which('sshd') or '/usr/sbin/sshd'


def new_marker():
    return 'mglaunchtest-' + uuid.uuid4().hex[:12]


def py(code, marker):
    """A command running Python ``code``; ``marker`` rides along as sys.argv[1]."""
    return [sys.executable, '-c', textwrap.dedent(code), marker]


# Prints the process's DMLC_* identity as one line of key=value pairs.
SHOW_IDENTITY = '''
import os
names = ['DMLC_ROLE', 'DMLC_WORKER_ID', 'DMLC_SERVER_ID', 'DMLC_NUM_WORKER',
         'DMLC_NUM_SERVER', 'DMLC_PS_ROOT_URI', 'DMLC_PS_ROOT_PORT', 'DMLC_NODE_HOST']
print('identity', ' '.join('%s=%s' % (n, os.environ.get(n, '-')) for n in names),
      'cwd=%s' % os.getcwd(), flush=True)
'''


def identities(stdout):
    """{label: {name: value}} from the SHOW_IDENTITY lines of a launcher's output."""
    found = {}
    for line in stdout.splitlines():
        label, _, rest = line.partition('] identity ')
        if rest:
            found[label.lstrip('[')] = dict(item.split('=', 1) for item in rest.split())
    return found


# Worker 1 kills itself the first time it runs (always, given a third argument); the
# second argument is a folder every process can write to.
DIES_ONCE = '''
import os, sys, time
mark = os.path.join(sys.argv[2], 'ran-' + os.environ.get('DMLC_WORKER_ID', 'x'))
first = not os.path.exists(mark)
open(mark, 'a').close()
if os.environ['DMLC_ROLE'] == 'worker':
    print('worker', os.environ['DMLC_WORKER_ID'], 'first' if first else 'again', flush=True)
    if os.environ['DMLC_WORKER_ID'] == '1' and (first or len(sys.argv) > 3):
        time.sleep(0.3)
        os.kill(os.getpid(), 9)
    time.sleep(1.5)
'''


def worker_lines(stdout):
    """The lines of DIES_ONCE's workers, sorted."""
    return sorted(line for line in stdout.splitlines() if '] worker ' in line)


# Each worker pushes (rank + 1) * round to a small key and a key big enough to be cut
# into slices over all servers, and pulls the sums back.
DIST_SYNC_SUMS = '''
import json
import minigluon as mx
from minigluon import kv, nd
store = kv.create('dist_sync')
rank, n = store.rank, store.num_workers
store.init('small', nd.zeros((2, 3)))
store.init(7, nd.zeros((3000,)))
out = []
for rnd in (1, 2):
    store.push('small', nd.ones((2, 3)) * (rank + 1) * rnd)
    store.push(7, nd.arange(3000) * (rank + 1))
    small, big = nd.zeros((2, 3)), nd.zeros((3000,))
    store.pull(['small', 7], out=[small, big])
    out.append([small.asnumpy().tolist(), big.asnumpy()[[0, 1, 2999]].tolist()])
print('RESULT', json.dumps({'rank': rank, 'n': n, 'out': out}), flush=True)
store.close()
'''


def check_dist_sync_sums(stdout, n):
    """Assert that the n workers of DIST_SYNC_SUMS all printed the exact sums."""
    found = [json.loads(line.split('RESULT ', 1)[1]) for line in stdout.splitlines()
             if '] RESULT ' in line]
    assert sorted(r['rank'] for r in found) == list(range(n)), stdout
    total = n * (n + 1) / 2  # sum of rank + 1
    for r in found:
        assert r['n'] == n
        for rnd, (small, big) in enumerate(r['out'], 1):
            assert small == [[total * rnd] * 3] * 2
            assert big == [0.0, total, 2999 * total]


def launcher_argv(args):
    return [sys.executable, LAUNCH, *args]


def run_launcher(args, timeout=30, **kwargs):
    """Run the launcher to the end; the CompletedProcess (text, both streams)."""
    return subprocess.run(launcher_argv(args), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kwargs)


class LiveLauncher:
    """A launcher running in the background whose stdout lines can be waited for."""

    def __init__(self, args, **kwargs):
        self.proc = subprocess.Popen(launcher_argv(args), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL, **kwargs)
        self.lines = queue.Queue()
        self.seen = []
        self.stderr = ''
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip('\n'))

    def wait_for(self, predicate, count=1, timeout=20):
        """Wait for ``count`` stdout lines matching ``predicate``; return them all."""
        deadline = time.monotonic() + timeout
        while sum(map(predicate, self.seen)) < count:
            try:
                self.seen.append(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                self.kill()
                raise AssertionError('waited %ss for %d matching lines; saw %r; stderr %r'
                                     % (timeout, count, self.seen, self.stderr)) from None
        return self.seen

    def finish(self, timeout=15):
        """Wait for the launcher to exit; its exit status."""
        try:
            _, self.stderr = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            _, self.stderr = self.proc.communicate()


def leftovers(marker, wait=0.0):
    """Command lines of processes still running with ``marker``, after at most ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        found = subprocess.run(['pgrep', '-af', marker], capture_output=True, text=True).stdout
        found = [line for line in found.splitlines() if 'pgrep' not in line]
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def kill_leftovers(marker):
    subprocess.run(['pkill', '-KILL', '-f', marker], capture_output=True)


def command_lines():
    """The command line of every process on this host (what `ps` shows)."""
    return subprocess.run(['ps', '-eww', '-o', 'args='], capture_output=True,
                          text=True).stdout


# --- OpenSSH ------------------------------------------------------------------------

def make_key(path):
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'minigluon-test',
                    '-f', str(path)], check=True, capture_output=True, timeout=30)
    with open(str(path) + '.pub') as f:
        return f.read().strip()


def wait_for_port(address, port, timeout=10, netns=None):
    """Wait until something listens on address:port (inside ``netns`` if given)."""
    probe = [sys.executable, '-c',
             'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)',
             address, str(port)]
    if netns:
        probe = ['ip', 'netns', 'exec', netns] + probe
    deadline = time.monotonic() + timeout
    while subprocess.run(probe, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise AssertionError('nothing listens on %s:%d after %ss' % (address, port, timeout))
        time.sleep(0.05)


class SshKeys:
    """A host key and a client key in ``folder``; known_hosts filled as servers start."""

    def __init__(self, folder):
        self.folder = folder
        self.host_key_path = os.path.join(folder, 'host_key')
        self.host_key = make_key(self.host_key_path).split()[:2]
        self.client_key_path = os.path.join(folder, 'client_key')
        self.authorized_keys = os.path.join(folder, 'authorized_keys')
        with open(self.authorized_keys, 'w') as f:
            f.write(make_key(self.client_key_path) + '\n')
        self.known_hosts = os.path.join(folder, 'known_hosts')
        open(self.known_hosts, 'w').close()

    def trust(self, address, port):
        name = address if port == 22 else '[%s]:%d' % (address, port)
        with open(self.known_hosts, 'a') as f:
            f.write('%s %s\n' % (name, ' '.join(self.host_key)))

    def client_options(self, connect_timeout=5, identity=None):
        """``--ssh-option`` arguments for the launcher that log in with the client key
        (or with the key file ``identity``)."""
        options = ['IdentityFile=' + (identity or self.client_key_path), 'IdentitiesOnly=yes',
                   'UserKnownHostsFile=' + self.known_hosts, 'GlobalKnownHostsFile=/dev/null',
                   'StrictHostKeyChecking=yes', 'ConnectTimeout=%d' % connect_timeout,
                   'LogLevel=ERROR']
        return [arg for option in options for arg in ('--ssh-option', option)]


class Sshd:
    """A real OpenSSH server on address:port that accepts the client key of ``keys``;
    ``settings`` override lines of its sshd_config (e.g. PasswordAuthentication)."""

    def __init__(self, keys, address='127.0.0.1', port=None, netns=None, settings=()):
        if os.geteuid() == 0:
            os.makedirs('/run/sshd', mode=0o755, exist_ok=True)  # privilege separation
        self.address, self.port, self.netns = address, port or free_port(), netns
        config = {'ListenAddress': address, 'Port': self.port, 'HostKey': keys.host_key_path,
                  'AuthorizedKeysFile': keys.authorized_keys, 'PidFile': 'none',
                  'StrictModes': 'no', 'UsePAM': 'no', 'PermitRootLogin': 'prohibit-password',
                  'PubkeyAuthentication': 'yes', 'PasswordAuthentication': 'no',
                  'KbdInteractiveAuthentication': 'no', 'LogLevel': 'ERROR', **dict(settings)}
        name = os.path.join(keys.folder, 'sshd-%s-%d' % (address, self.port))
        with open(name + '.config', 'w') as f:
            f.writelines('%s %s\n' % item for item in config.items())
        argv = [SSHD, '-D', '-e', '-f', name + '.config']
        if netns:
            argv = ['ip', 'netns', 'exec', netns] + argv
        self.log = open(name + '.log', 'w')
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        try:
            wait_for_port(address, self.port, netns=netns)
        except AssertionError:
            self.stop()
            with open(self.log.name) as f:
                raise AssertionError('sshd did not start: %s' % f.read()) from None
        keys.trust(address, self.port)

    def hostfile(self, folder, *more_lines):
        """A hostfile in ``folder`` naming this server (then ``more_lines``)."""
        path = os.path.join(str(folder), 'hosts')
        with open(path, 'w') as f:
            f.write('\n'.join(['# a test sshd', '%s:%d' % (self.address, self.port),
                               *more_lines]) + '\n')
        return path

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def ssh_missing_reason():
    """Why the ssh tests cannot run here, or None."""
    for program in ('ssh', 'ssh-keygen'):
        if shutil.which(program) is None:
            return '%s is not installed (.ci/run installs openssh-client)' % program
    if not os.access(SSHD, os.X_OK):
        return 'sshd is not installed (.ci/run installs openssh-server)'
    return None


# --- network namespaces as hosts -----------------------------------------------------

def _ip(*args, check=True):
    return subprocess.run(['ip', *args], capture_output=True, text=True, timeout=30,
                          check=check)


def netns_missing_reason():
    """Why network namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return 'making network namespaces needs root'
    if shutil.which('ip') is None:
        return 'the ip program (iproute2) is not installed'
    probe = 'mgprobe%d' % os.getpid()
    made = _ip('netns', 'add', probe, check=False)
    if made.returncode != 0:
        return '`ip netns add` failed: %s' % made.stderr.strip()
    _ip('netns', 'del', probe, check=False)
    return None


class NetnsHost:
    """A network namespace joined to the test bridge, with its address (and sshd)."""

    def __init__(self, netns, address, sshd=None):
        self.netns, self.address, self.sshd = netns, address, sshd


@contextlib.contextmanager
def network_namespaces(count, tag='mg'):
    """``count`` network namespaces, each a host with its own address on a private
    10.200.X.0/24 subnet, joined by veth pairs to a bridge in this namespace; ``tag``
    starts their names. Yields (bridge name, bridge address, [NetnsHost]). Everything
    is removed afterwards, processes left in them killed, even on failure."""
    tag = '%s%d' % (tag, os.getpid() % 100000)
    # a subnet no other test's bridge has (the suite's workers make hosts at once)
    taken = set(re.findall(r'inet 10\.200\.(\d+)\.', _ip('-o', '-4', 'addr', 'show').stdout))
    subnet = '10.200.%d' % random.choice([n for n in range(1, 250) if str(n) not in taken])
    bridge, bridge_address = tag + 'br', subnet + '.1'
    namespaces = []
    try:
        _ip('link', 'add', bridge, 'type', 'bridge')
        _ip('addr', 'add', bridge_address + '/24', 'dev', bridge)
        _ip('link', 'set', bridge, 'up')
        for i in range(count):
            netns, outside, inside = '%sn%d' % (tag, i), '%sv%d' % (tag, i), '%sp%d' % (tag, i)
            _ip('netns', 'add', netns)
            namespaces.append(NetnsHost(netns, '%s.%d' % (subnet, 10 + i)))
            _ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside)
            _ip('link', 'set', inside, 'netns', netns)
            _ip('link', 'set', outside, 'master', bridge, 'up')
            _ip('-n', netns, 'addr', 'add', namespaces[-1].address + '/24', 'dev', inside)
            _ip('-n', netns, 'link', 'set', inside, 'up')
            _ip('-n', netns, 'link', 'set', 'lo', 'up')
        yield bridge, bridge_address, namespaces
    finally:
        for host in namespaces:
            _kill_netns_processes(host.netns)
            _ip('netns', 'del', host.netns, check=False)  # deletes its veth pair too
        _ip('link', 'del', bridge, check=False)


@contextlib.contextmanager
def netns_ssh_hosts(keys, count):
    """``count`` network namespaces (see network_namespaces), each with its own sshd on
    port 22. Yields (bridge name, bridge address, [NetnsHost])."""
    with network_namespaces(count) as (bridge, bridge_address, hosts):
        try:
            for host in hosts:
                host.sshd = Sshd(keys, host.address, 22, netns=host.netns)
            yield bridge, bridge_address, hosts
        finally:
            for host in hosts:
                if host.sshd is not None:
                    host.sshd.stop()


def _kill_netns_processes(netns):
    pids = _ip('netns', 'pids', netns, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)
