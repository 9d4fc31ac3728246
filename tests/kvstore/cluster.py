"""Start a real distributed job on 127.0.0.1 for tests: scheduler, servers, workers.

Each process is a separate Python interpreter configured by DMLC_* variables, as a
launcher would start it. Workers run a script the test writes; servers and the
scheduler are started by importing minigluon. Every command line carries a unique
marker so a test can prove that no process outlived it. Only for what needs processes
(sockets, the gate, shared memory, kill -9, environment variables); the rest runs the
nodes as threads of the test process (inproc_cluster.py).
"""
import json
import os
import secrets
import subprocess
import sys
import textwrap
import time

import pytest

from minigluon.launcher.address import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Worker code (needs os, sys, time): say READY, then wait up to 90 s until the test
# creates <marker>.go beside the script (the marker is the script's first argument).
READY_THEN_WAIT = '''print('READY', flush=True)
go = os.path.join(os.path.dirname(os.path.abspath(__file__)), sys.argv[1] + '.go')
deadline = time.monotonic() + 90
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit('no go signal')
    time.sleep(0.02)
'''

# Worker code (needs json, store, r): worker 0 prints the servers' address-book entries
# and the job's nonce, which ``servers_of`` and ``job_nonce_of`` read back (tests that
# play a peer connect to them).
SHOW_SERVERS = '''if r == 0:
    print('SERVERS', json.dumps(store.book['servers']), flush=True)
    print('JOB_NONCE', store.book['job_nonce'], flush=True)
'''


def servers_of(cluster):
    """[[rank, host, port], ...] of the servers, as worker 0 printed them (SHOW_SERVERS)."""
    line = [ln for ln in cluster.output('worker:0').splitlines() if ln.startswith('SERVERS ')][0]
    return json.loads(line.split(' ', 1)[1])


def job_nonce_of(cluster):
    """The nonce the scheduler drew, as worker 0 printed it (SHOW_SERVERS): a peer of the
    servers opens its sessions under it (peer.Peer's ``job_nonce``)."""
    line = [ln for ln in cluster.output('worker:0').splitlines() if ln.startswith('JOB_NONCE ')]
    return line[0].split(' ', 1)[1]


def alive_with(marker):
    """PIDs of processes whose command line contains ``marker``."""
    out = subprocess.run(['pgrep', '-f', marker], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split() if int(p) != os.getpid()]


class Cluster:
    """A job of ``num_servers`` servers and ``num_workers`` workers running ``worker_code``.

    ``env`` adds or overrides variables for every process; ``worker_env`` per worker
    rank. Call ``start()``, then ``wait()``; ``close()`` (also on exit of a ``with``
    block) kills whatever is left.
    """

    def __init__(self, tmp_path, worker_code, num_workers=2, num_servers=1, env=None,
                 worker_env=None):
        self.tmp_path = tmp_path
        self.marker = 'mgtest-%s' % secrets.token_hex(6)
        self.script = os.path.join(str(tmp_path), 'worker_%s.py' % self.marker)
        with open(self.script, 'w') as f:
            f.write(textwrap.dedent(worker_code))
        self.num_workers, self.num_servers = num_workers, num_servers
        self.port = free_port()
        self.env = dict(os.environ)
        self.env.update({
            'DMLC_PS_ROOT_URI': '127.0.0.1', 'DMLC_PS_ROOT_PORT': str(self.port),
            'DMLC_NUM_SERVER': str(num_servers), 'DMLC_NUM_WORKER': str(num_workers),
            'MINIGLUON_PS_SECRET': secrets.token_hex(16),
            'PS_HEARTBEAT_INTERVAL': '0.5', 'PS_HEARTBEAT_TIMEOUT': '4',
            'MINIGLUON_PS_CONNECT_TIMEOUT': '30', 'MINIGLUON_PS_WAIT_TIMEOUT': '60',
            'PYTHONPATH': ROOT + os.pathsep + self.env.get('PYTHONPATH', ''),
            'PYTHONUNBUFFERED': '1',
        })
        self.env.update(env or {})
        self.worker_env = worker_env or {}
        self.procs = {}
        self.logs = {}

    def _spawn(self, name, role, argv, extra=None):
        env = dict(self.env, DMLC_ROLE=role)
        env.update(extra or {})
        path = os.path.join(str(self.tmp_path), '%s.log' % name.replace(':', '-'))
        self.logs[name] = path
        # The child writes through a file of its own: one shared with the reader would
        # share its offset too, and a read's seek would make the child overwrite its output.
        with open(path, 'w') as log:
            self.procs[name] = subprocess.Popen(argv, env=env, stdout=log,
                                                stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL,
                                                cwd=str(self.tmp_path))

    def start(self):
        serve = [sys.executable, '-c', 'import minigluon  # ' + self.marker]
        self._spawn('scheduler', 'scheduler', serve)
        for s in range(self.num_servers):
            self._spawn('server:%d' % s, 'server', serve)
        for w in range(self.num_workers):
            self.start_worker(w)
        return self

    def start_worker(self, rank, name=None, env=None):
        """Start worker ``rank`` (again, as a replacement, under another ``name``)."""
        extra = {'DMLC_WORKER_ID': str(rank)}
        extra.update(self.worker_env.get(rank, {}))
        extra.update(env or {})
        self._spawn(name or 'worker:%d' % rank, 'worker',
                    [sys.executable, self.script, self.marker], extra)

    def wait(self, timeout=60, names=None):
        """Exit codes by process name (None for a process still running at the deadline)."""
        deadline = time.monotonic() + timeout
        codes = {}
        for name in names or list(self.procs):
            proc = self.procs[name]
            try:
                codes[name] = proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[name] = None
        return codes

    def output(self, name):
        with open(self.logs[name]) as log:
            return log.read()

    def all_output(self):
        return '\n'.join('--- %s ---\n%s' % (n, self.output(n)) for n in self.procs)

    def close(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def assert_success(self, timeout=90):
        codes = self.wait(timeout)
        assert all(c == 0 for c in codes.values()), 'exit codes %s\n%s' % (codes,
                                                                           self.all_output())
        assert not alive_with(self.marker), 'processes outlived the job'
        return codes


def wait_for_output(job, names, text, timeout=30):
    """Wait until every process in ``names`` has printed ``text`` (fail if one exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(text in job.output(n) for n in names):
            return
        if any(p.poll() is not None for p in job.procs.values()):
            break
        time.sleep(0.05)
    pytest.fail('%r not printed by %s\n%s' % (text, names, job.all_output()))


def results(cluster, name):
    """Lines 'RESULT <json>' printed by a worker, decoded."""
    import json
    return [json.loads(line.split(' ', 1)[1]) for line in cluster.output(name).splitlines()
            if line.startswith('RESULT ')]
