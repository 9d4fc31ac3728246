"""One push+pull round of the ResNet18 gradients over the distributed kvstore, against
MXNet 1.9.1's own dist_sync kvstore (ps-lite), a torch.distributed gloo all-reduce and
a raw pyzmq echo of the same bytes.

Usage:
    python benchmarks/bench_kvstore.py [--rounds 10] [--warmup 3] [--repeat 2]
        [--chunk-bytes 4194304 ...] [--transport auto tcp] [--kvstore-only] [--no-torch]
        [--mxnet-python /tmp/mxvenv/bin/python | --no-mxnet] [--curve] [--profile DIR]
        [--loop list per-key] [--tiny] [--smoke]

The gradients have the shapes of the trainable parameters of
``resnet18_v1(classes=10, thumbnail=True)`` (60 float32 arrays, 44.7 MB). Every row
runs in fresh processes on 127.0.0.1, one job at a time, the rows' jobs interleaved
``--repeat`` times in this one invocation; a row's figure is the median over all its
rounds, and its CPU column the user + system time of all its processes over the
timed rounds (from /proc), which a busy shared machine disturbs less than wall time.

- kvstore: scheduler, 2 servers and 2 workers (``dist_sync``, no optimizer). A round
  is ``push`` of every gradient then ``pull`` of every sum, timed on each worker
  after a barrier; a round counts for the slower worker. One job per
  ``--chunk-bytes`` (``MINIGLUON_PS_CHUNK_BYTES``) and ``--transport``
  (``MINIGLUON_PS_TRANSPORT``: ``auto`` puts the arrays of these processes, all on one
  host, in shared memory; ``tcp`` sends them over loopback). Rounds alternate between the HMAC
  as shipped and the HMAC bypassed (on, off, off, on, ...) inside the same job, so
  the cost of authentication is measured on the same processes under the same load.
  The bypass is patched into this script's own child processes: the package has no
  switch to turn authentication off. ``--curve`` adds the same job with
  ``MINIGLUON_PS_ENCRYPT=curve`` (every byte over the network encrypted by CurveZMQ;
  with ``--transport tcp`` to measure what it costs between hosts).
- per key (``--loop per-key``): the same job, but a round is ``push(k, v)`` for every
  key, then ``pull(k, out=o)`` for every key, as MXNet's kvstore tutorial and most
  hand-written kvstore code do it (the HMAC as shipped in every round); ps-lite gets
  the same loop in its own row.
- MXNet ps-lite: the same job (scheduler, 2 servers, 2 workers, DMLC_* variables,
  ``MXNET_KVSTORE_BIGARRAY_BOUND`` as ours) with MXNet 1.9.1's ``mx.kv.create('dist_sync')``
  in the interpreter of ``--mxnet-python`` (default ``MINIGLUON_MXNET_PYTHON``, else
  ``/tmp/mxvenv/bin/python``; a venv with ``pip install mxnet==1.9.1 numpy==1.23.5``);
  a round is ``push`` and ``pull`` of every array then ``mx.nd.waitall()``. Without
  that interpreter the row is skipped with the reason printed.
- zmq echo: one DEALER sends every gradient as its own message to a ROUTER in
  another process, which sends each back; a round ends when all came back.
- gloo: 2 processes, ``torch.distributed.all_reduce`` of every gradient (async,
  then wait for all): the sum lands on both, as a kvstore round gives both workers.

``--profile DIR`` runs one more kvstore job with every process under ``py-spy
record`` (``pip install py-spy``), keeps the collapsed stacks there and prints the
lines where each process spent its Python time.

``--smoke`` runs the rows asked for at a tiny size (``--tiny``'s arrays, one warm-up and
one timed round, one job per row): the test suite's check that the script still works.
"""
import argparse
import hashlib
import hmac
import json
import os
import platform
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHILD_TIMEOUT_S = 300
MXNET_PYTHON = os.environ.get('MINIGLUON_MXNET_PYTHON') or '/tmp/mxvenv/bin/python'


def gradient_shapes():
    """Shapes of the trainable parameters of the CIFAR ResNet18 (after a forward pass)."""
    sys.path.insert(0, ROOT)
    from minigluon import nd
    from minigluon.gluon.model_zoo import vision
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize()
    net(nd.zeros((1, 3, 32, 32)))
    return [list(p.shape) for p in net.collect_params().values() if p.grad_req != 'null']


def make_gradients(shapes, scale=1.0):
    rng = np.random.RandomState(0)
    return [(rng.standard_normal(s) * scale).astype(np.float32) for s in shapes]


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def child_env(extra):
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env.pop('DMLC_ROLE', None)
    env.update(extra)
    return env


def spawn(args, extra_env, wrap=None, python=None):
    argv = [python or sys.executable, os.path.abspath(__file__)] + args
    if wrap:
        argv = wrap(argv)
    # unbuffered bytes: timed_window reads lines from a leader that communicate() then
    # finishes, so nothing may sit in a reader's buffer in between
    return subprocess.Popen(argv, env=child_env(extra_env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


def cpu_seconds(procs):
    """User + system CPU time so far of each of these processes, all their threads."""
    seconds = []
    for proc in procs:
        with open('/proc/%d/stat' % proc.pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        seconds.append((int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK'))
    return np.array(seconds)


def timed_window(leader, procs):
    """CPU seconds each of ``procs`` spends while ``leader`` runs its timed rounds.

    The leader prints START and waits for a line on stdin before its timed rounds,
    then prints END; the others wait for it (barrier) meanwhile.
    """
    marks = {}
    for mark in ('START', 'END'):
        while True:
            line = leader.stdout.readline()
            if not line:
                raise RuntimeError('a benchmark process ended early:\n%s'
                                   % leader.stderr.read().decode(errors='replace'))
            if line.strip() == mark.encode():
                break
        marks[mark] = cpu_seconds(procs)
        if mark == 'START':
            leader.stdin.write(b'GO\n')
    return marks['END'] - marks['START']


def leader_mark(is_leader, mark):
    """The child's side of ``timed_window``."""
    if is_leader:
        print(mark, flush=True)
        if mark == 'START':
            sys.stdin.readline()


def collect(procs, leader=None):
    """Wait for every child; their last stdout lines as JSON (or an error with stderr),
    and the CPU seconds of the leader's timed window (see ``timed_window``)."""
    results = []
    try:
        cpu = timed_window(leader, procs) if leader is not None else None
        for proc in procs:
            out, err = (text.decode(errors='replace')
                        for text in proc.communicate(timeout=CHILD_TIMEOUT_S))
            if proc.returncode != 0:
                raise RuntimeError('a benchmark process failed (exit %s):\n%s\n%s'
                                   % (proc.returncode, out[-3000:], err[-3000:]))
            lines = [ln for ln in out.splitlines() if ln.startswith('{')]
            results.append(json.loads(lines[-1]) if lines else None)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results, cpu


# ---- kvstore --------------------------------------------------------------------------
class _SwitchableHmac:
    """Stands in for the hmac module inside wire.py, in this benchmark's processes only.

    While the shared flag says "bypass", messages go out with an all-zero tag and no
    hashing; a message that arrives with an all-zero tag is accepted without hashing.
    Every message carries its own mode, so rounds with and without the HMAC can
    alternate inside one job (the same processes, the same load on the machine).
    """
    ZERO = b'\0' * 32
    flag = None          # a shared one-byte mmap: 1 = send without tags
    decoding = False     # set by the decode wrapper ...
    skip_check = False   # ... and this when the tag is all zeros
    compare_digest = staticmethod(hmac.compare_digest)

    @classmethod
    def new(cls, key, msg, digestmod):
        if cls.skip_check if cls.decoding else cls.flag[0] == 1:
            return cls
        return hmac.new(key, msg, digestmod)

    @classmethod
    def digest(cls):
        return cls.ZERO


def install_hmac_switch(wire):
    import mmap
    with open(os.environ['BENCH_FLAG_FILE'], 'r+b') as f:
        _SwitchableHmac.flag = mmap.mmap(f.fileno(), 1)
    wire.hmac = _SwitchableHmac
    checked_decode = wire.decode

    def decode(secret, frames, *args):
        _SwitchableHmac.decoding = True
        _SwitchableHmac.skip_check = (bool(frames) and
                                      bytes(frames[0])[-32:] == _SwitchableHmac.ZERO)
        try:
            return checked_decode(secret, frames, *args)
        finally:
            _SwitchableHmac.decoding = _SwitchableHmac.skip_check = False
    wire.decode = decode


def hmac_bypassed_in_round(i):
    return i % 4 in (1, 2)     # on, off, off, on, ...: both modes see the same drift


def push_and_pull(store, keys, values, outs, per_key):
    """One round, in either store (minigluon's or MXNet's): every key pushed then pulled,
    as one list, or (``per_key``, as MXNet's kvstore tutorial) one key per call."""
    if per_key:
        for k in keys:
            store.push(k, values[k])
        for k in keys:
            store.pull(k, out=outs[k])
    else:
        store.push(keys, values)
        store.pull(keys, out=outs)


def kv_child(role, args):
    sys.path.insert(0, ROOT)
    import minigluon  # noqa: F401  (DMLC_ROLE is not set yet, so this serves nothing)
    from minigluon.kvstore.transport import wire
    install_hmac_switch(wire)
    os.environ['DMLC_ROLE'] = role
    if role != 'worker':
        from minigluon.kvstore.ps.config import Config
        from minigluon.kvstore.ps.roles import run_role
        sys.exit(run_role(Config.from_env()))
    kv_worker(args)


def kv_worker(args):
    from minigluon import kv, nd
    shapes = json.loads(os.environ['BENCH_SHAPES'])
    store = kv.create('dist_sync')
    rank = store.rank
    grads = [nd.array(g) for g in make_gradients(shapes, rank + 1.0)]
    outs = [nd.zeros(tuple(s)) for s in shapes]
    keys = list(range(len(shapes)))
    store.init(keys, outs)
    per_key = os.environ.get('BENCH_LOOP') == 'per-key'
    times = {'on': [], 'off': []}
    rounds = args.rounds if per_key else 2 * args.rounds  # (list: half with the HMAC bypassed)
    for i in range(args.warmup + rounds):
        if i == args.warmup:
            leader_mark(rank == 0, 'START')
        bypass = not per_key and i >= args.warmup and hmac_bypassed_in_round(i - args.warmup)
        if rank == 0:
            _SwitchableHmac.flag[0] = 1 if bypass else 0
        store.barrier()                # (the barrier's own messages may go either way)
        start = time.perf_counter()
        push_and_pull(store, keys, grads, outs, per_key)
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            times['off' if bypass else 'on'].append(elapsed)
    store.barrier()
    leader_mark(rank == 0, 'END')
    if rank == 0:
        _SwitchableHmac.flag[0] = 0
    expected = make_gradients(shapes[:1], 3.0)[0]   # (1 + 2) x worker 0's gradient
    ok = bool(np.allclose(outs[0].asnumpy(), expected, rtol=1e-6))
    store.close()
    print(json.dumps({'times': times, 'ok': ok}))


def run_kvstore(shapes, args, chunk_bytes, transport='auto', wrap=None, encrypt='plain',
                loop='list'):
    """Per-round seconds with the HMAC (as shipped) and with it bypassed (none with
    ``loop='per-key'``), and CPU seconds."""
    port = free_port()
    flag_file = os.path.join(tempfile.mkdtemp(prefix='bench-kvstore-'), 'hmac-bypass')
    with open(flag_file, 'wb') as f:
        f.write(b'\0')
    env = {'DMLC_PS_ROOT_URI': '127.0.0.1', 'DMLC_PS_ROOT_PORT': str(port),
           'DMLC_NUM_SERVER': '2', 'DMLC_NUM_WORKER': '2',
           'MINIGLUON_PS_SECRET': secrets.token_hex(32),
           'MINIGLUON_PS_CHUNK_BYTES': str(chunk_bytes), 'MINIGLUON_PS_TRANSPORT': transport,
           'MINIGLUON_PS_ENCRYPT': encrypt,
           'PS_REPLICATION': '0',  # (ps-lite keeps one copy of each key: like for like)
           'BENCH_SHAPES': json.dumps(shapes), 'BENCH_FLAG_FILE': flag_file,
           'BENCH_LOOP': loop}
    common = ['--rounds', str(args.rounds), '--warmup', str(args.warmup)]
    procs = [spawn(['--child', 'kv-scheduler'], env, wrap)]
    procs += [spawn(['--child', 'kv-server'], env, wrap) for _ in range(2)]
    procs += [spawn(['--child', 'kv-worker'] + common, dict(env, DMLC_WORKER_ID=str(w)), wrap)
              for w in range(2)]
    try:
        results, cpu = collect(procs[3:] + procs[:3], leader=None if wrap else procs[3])
    finally:
        shutil.rmtree(os.path.dirname(flag_file), ignore_errors=True)
    if not all(r['ok'] for r in results[:2]):
        raise RuntimeError('the kvstore returned wrong sums')
    a, b = results[0]['times'], results[1]['times']
    return ([max(x, y) for x, y in zip(a['on'], b['on'])],
            [max(x, y) for x, y in zip(a['off'], b['off'])], cpu)


# ---- MXNet 1.9.1 ps-lite ----------------------------------------------------------------
def mxnet_worker(args):
    import mxnet as mx
    shapes = json.loads(os.environ['BENCH_SHAPES'])
    store = mx.kv.create('dist_sync')
    rank = store.rank
    leader = os.environ.get('BENCH_LEADER') == '1'   # (ps-lite's ranks go by arrival)
    grads = [mx.nd.array(g) for g in make_gradients(shapes, rank + 1.0)]
    outs = [mx.nd.zeros(tuple(s)) for s in shapes]
    keys = list(range(len(shapes)))
    store.init(keys, outs)
    mx.nd.waitall()
    times = []
    for i in range(args.warmup + args.rounds):
        if i == args.warmup:
            leader_mark(leader, 'START')
        work = [g.copy() for g in grads]   # (a CPU push lends MXNet the array: the pull
        mx.nd.waitall()                    # writes the sum into it, as gloo's all-reduce)
        store._barrier()
        start = time.perf_counter()
        push_and_pull(store, keys, work, outs, os.environ.get('BENCH_LOOP') == 'per-key')
        mx.nd.waitall()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    store._barrier()
    leader_mark(leader, 'END')
    expected = make_gradients(shapes[:1], 3.0)[0]
    ok = bool(np.allclose(outs[0].asnumpy(), expected, rtol=1e-6))
    print(json.dumps({'times': times, 'ok': ok}))


def run_mxnet(shapes, args, loop='list'):
    sys.path.insert(0, ROOT)
    from minigluon.kvstore.ps.config import BIGARRAY_BOUND
    port = free_port()
    env = {'DMLC_PS_ROOT_URI': '127.0.0.1', 'DMLC_PS_ROOT_PORT': str(port),
           'DMLC_NUM_SERVER': '2', 'DMLC_NUM_WORKER': '2',
           # the arrays sliced over the servers as minigluon's default slices them
           'MXNET_KVSTORE_BIGARRAY_BOUND': str(BIGARRAY_BOUND), 'BENCH_SHAPES': json.dumps(shapes),
           'BENCH_LOOP': loop}
    python = args.mxnet_python
    # (importing mxnet with DMLC_ROLE=server or scheduler runs that node until the job ends)
    procs = [subprocess.Popen([python, '-c', 'import mxnet'],
                              env=child_env(dict(env, DMLC_ROLE=role)), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for role in ('scheduler', 'server', 'server')]
    common = ['--rounds', str(args.rounds), '--warmup', str(args.warmup)]
    procs += [spawn(['--child', 'mx-worker'] + common,
                    dict(env, DMLC_ROLE='worker', BENCH_LEADER=str(int(w == 0))), python=python)
              for w in range(2)]
    results, cpu = collect(procs[3:] + procs[:3], leader=procs[3])
    if not all(r['ok'] for r in results[:2]):
        raise RuntimeError('MXNet returned wrong sums')
    a, b = results[0]['times'], results[1]['times']
    return [max(x, y) for x, y in zip(a, b)], cpu


def mxnet_missing(python):
    """Why the MXNet row cannot run (None if it can)."""
    if not python or not os.path.exists(python):
        return ('no MXNet interpreter at %s (make a venv with `pip install mxnet==1.9.1 '
                'numpy==1.23.5` and pass --mxnet-python)' % python)
    probe = subprocess.run([python, '-c', 'import mxnet; print(mxnet.__version__)'],
                           capture_output=True, text=True, env=child_env({}))
    if probe.returncode != 0:
        return '%s cannot import mxnet: %s' % (python, probe.stderr.strip()[-300:])
    return None


# ---- raw pyzmq echo ---------------------------------------------------------------------
def zmq_echo_server(port, count):
    import zmq
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind('tcp://127.0.0.1:%d' % port)
    for _ in range(count):
        frames = sock.recv_multipart(copy=False)
        sock.send_multipart(frames, copy=False)
    ctx.destroy(linger=2000)


def zmq_echo_client(port, args):
    import zmq
    grads = make_gradients(json.loads(os.environ['BENCH_SHAPES']))
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect('tcp://127.0.0.1:%d' % port)
    times = []
    for i in range(args.warmup + args.rounds):
        if i == args.warmup:
            leader_mark(True, 'START')
        start = time.perf_counter()
        for g in grads:
            sock.send(g, copy=False)
        for _ in grads:
            sock.recv(copy=False)
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    leader_mark(True, 'END')
    ctx.destroy(linger=0)
    print(json.dumps({'times': times}))


def run_zmq(shapes, args):
    port = free_port()
    env = {'BENCH_SHAPES': json.dumps(shapes)}
    count = (args.warmup + args.rounds) * len(shapes)
    server = spawn(['--child', 'zmq-server', '--port', str(port), '--count', str(count)], env)
    client = spawn(['--child', 'zmq-client', '--port', str(port)] + ['--rounds', str(args.rounds),
                   '--warmup', str(args.warmup)], env)
    results, cpu = collect([client, server], leader=client)
    return results[0]['times'], cpu


# ---- torch.distributed gloo ---------------------------------------------------------------
def gloo_child(rank, port, args):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method='tcp://127.0.0.1:%d' % port, rank=rank,
                            world_size=2)
    grads = [torch.from_numpy(g) for g in make_gradients(json.loads(os.environ['BENCH_SHAPES']),
                                                         rank + 1.0)]
    times = []
    for i in range(args.warmup + args.rounds):
        if i == args.warmup:
            leader_mark(rank == 0, 'START')
        work = [t.clone() for t in grads]       # all-reduce works in place
        dist.barrier()
        start = time.perf_counter()
        handles = [dist.all_reduce(t, async_op=True) for t in work]
        for h in handles:
            h.wait()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    dist.barrier()
    leader_mark(rank == 0, 'END')
    dist.destroy_process_group()
    print(json.dumps({'times': times}))


def run_gloo(shapes, args):
    port = free_port()
    env = {'BENCH_SHAPES': json.dumps(shapes)}
    common = ['--port', str(port), '--rounds', str(args.rounds), '--warmup', str(args.warmup)]
    procs = [spawn(['--child', 'gloo', '--rank', str(r)] + common, env) for r in range(2)]
    (a, b), cpu = collect(procs, leader=procs[0])
    return [max(x, y) for x, y in zip(a['times'], b['times'])], cpu


# ---- the HMAC alone -------------------------------------------------------------------------
def hmac_micro(shapes, chunk_bytes, batch_bytes):
    """CPU seconds per round spent on tags in the whole job (2 workers, each message tagged
    by its sender and checked by its receiver), and what tagging the array bytes would add.
    ``batch_bytes``: how much one message carries (the transport decides, see kvstore/dist/store.py)."""
    sys.path.insert(0, ROOT)
    from minigluon.kvstore.transport import wire
    from minigluon.kvstore.dist.messages import batched
    from minigluon.kvstore.ps.placement import plan
    from minigluon.kvstore.transport.wire import Message
    secret = secrets.token_bytes(32)
    grads = make_gradients(shapes)
    pushes, pulls = [], []
    for key, g in enumerate(grads):
        flat = g.reshape(-1)
        for part in plan(key, flat.size, 4, 2, 1000000, chunk_bytes):
            data = flat[part.start:part.stop]
            pushes.append((part, key, {'n': 1}, data, data.nbytes))
            pulls.append((part, key, {'n': 1}, None, data.nbytes, data))
    messages = []
    for cmd, items in (('push', pushes), ('pull', pulls)):
        for _, msg, group in batched(cmd, items, lambda server: batch_bytes):
            msg.src, msg.seq, msg.req = 'worker:0', 1, 1
            arrays = [i[5] for i in group] if cmd == 'pull' else []
            messages += [msg, Message('reply', 'server:0', seq=1, req=1, arrays=arrays)]
    headers = [wire.encode(secret, m)[1] for m in messages]

    def best(fn, repeat=7):
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        return min(runs)

    one_worker = best(lambda: [hmac.new(secret, h, hashlib.sha256).digest() for h in headers])
    payload = best(lambda: [hmac.new(secret, memoryview(g), hashlib.sha256).digest()
                            for g in grads])
    # x2 workers, x2 tag and check; the arrays: 2 workers x (push + pull) x (tag + check)
    return {'messages': 2 * len(headers), 'header_tags_s': 2 * 2 * one_worker,
            'payload_tags_s': 2 * 2 * 2 * payload}


# ---- the run ---------------------------------------------------------------------------------
def profile_kvstore(shapes, args, chunk_bytes, out_dir):
    if shutil.which('py-spy') is None:
        print('py-spy is not installed (`pip install py-spy`); no profile')
        return
    os.makedirs(out_dir, exist_ok=True)
    counter = iter(range(100))

    def wrap(argv):
        name = '%s-%d' % (argv[3], next(counter))
        return ['py-spy', 'record', '--nonblocking', '--rate', '200', '--format', 'raw',
                '-o', os.path.join(out_dir, name + '.txt'), '--'] + argv

    run_kvstore(shapes, args, chunk_bytes, args.transport[0], wrap)
    print('py-spy profiles (collapsed stacks) in %s; where the Python time goes, start-up '
          'and imports left out:' % out_dir)
    for name in sorted(os.listdir(out_dir)):
        print('  %s' % name[:-4])
        for line, share in top_lines(os.path.join(out_dir, name)):
            print('    %5.1f%%  %s' % (share, line))


def top_lines(path, count=6):
    """The source lines most often on top of the stack in a collapsed-stack file."""
    tops, total = {}, 0
    with open(path) as f:
        for row in f:
            stack, _, samples = row.rstrip().rpartition(' ')
            frames = stack.split(';')
            if any('_find_and_load' in fr or 'make_gradients' in fr for fr in frames):
                continue  # importing, and the benchmark's own set-up
            total += int(samples)
            tops[frames[-1]] = tops.get(frames[-1], 0) + int(samples)
    ranked = sorted(tops.items(), key=lambda item: -item[1])[:count]
    return [(line.strip() or '(native)', 100.0 * n / max(total, 1)) for line, n in ranked]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--repeat', type=int, default=2,
                        help='jobs per row, interleaved with the other rows (the machine may '
                             'be shared: medians over all their rounds)')
    parser.add_argument('--chunk-bytes', type=int, nargs='+', default=[4 << 20])
    parser.add_argument('--transport', nargs='+', default=['auto'],
                        choices=['auto', 'shm', 'tcp'],
                        help='MINIGLUON_PS_TRANSPORT of the kvstore jobs (one row each)')
    parser.add_argument('--mxnet-python', default=MXNET_PYTHON,
                        help='a Python with mxnet==1.9.1 for the ps-lite row')
    parser.add_argument('--no-mxnet', action='store_true')
    parser.add_argument('--no-torch', action='store_true')
    parser.add_argument('--kvstore-only', action='store_true')
    parser.add_argument('--loop', nargs='+', default=['list', 'per-key'],
                        choices=['list', 'per-key'],
                        help='list: one push and one pull of every key per round; per-key: '
                             'push(k, v) for every key, then pull(k, out=o) for every key '
                             '(a row of each, for the kvstore and for ps-lite)')
    parser.add_argument('--tiny', action='store_true',
                        help='a few small arrays instead of the ResNet18 gradients (tests)')
    parser.add_argument('--smoke', action='store_true',
                        help='--tiny with one warm-up and one timed round, one job per row: '
                             'does it run?')
    parser.add_argument('--curve', action='store_true',
                        help='also the kvstore job with MINIGLUON_PS_ENCRYPT=curve')
    parser.add_argument('--profile', metavar='DIR')
    parser.add_argument('--child', help=argparse.SUPPRESS)
    parser.add_argument('--port', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--count', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--rank', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child.startswith('kv-'):
            return kv_child(args.child[3:], args)
        if args.child == 'zmq-server':
            return zmq_echo_server(args.port, args.count)
        if args.child == 'zmq-client':
            return zmq_echo_client(args.port, args)
        if args.child == 'gloo':
            return gloo_child(args.rank, args.port, args)
        if args.child == 'mx-worker':
            return mxnet_worker(args)
        raise SystemExit('unknown child %r' % args.child)
    if args.smoke:
        args.tiny, args.rounds, args.warmup, args.repeat = True, 1, 1, 1

    shapes = TINY_SHAPES if args.tiny else gradient_shapes()
    nbytes = sum(4 * _prod(s) for s in shapes)
    listed = 'list' in args.loop
    jobs = []   # (runner, names of the rows its time lists go to)
    for transport in args.transport:
        for chunk in args.chunk_bytes:
            if listed:
                jobs.append((lambda chunk=chunk, t=transport: run_kvstore(shapes, args, chunk, t),
                             [_kv_row(chunk, transport),
                              _kv_row(chunk, transport, bypassed=True)]))
            if 'per-key' in args.loop:
                jobs.append((lambda chunk=chunk, t=transport: run_kvstore(
                    shapes, args, chunk, t, loop='per-key'),
                    [_kv_row(chunk, transport, per_key=True)]))
            if args.curve and listed:
                jobs.append((lambda chunk=chunk, t=transport: run_kvstore(
                    shapes, args, chunk, t, encrypt='curve'),
                    [_kv_row(chunk, transport, curve=True),
                     _kv_row(chunk, transport, bypassed=True, curve=True)]))
    if not args.kvstore_only and not args.no_mxnet:
        why = mxnet_missing(args.mxnet_python)
        if why:
            print('no MXNet ps-lite row: %s' % why)
        else:
            for loop in args.loop:
                jobs.append((lambda loop=loop: run_mxnet(shapes, args, loop),
                             [_pslite_row(loop)]))
    if not args.kvstore_only:
        jobs.append((lambda: run_zmq(shapes, args), ['raw pyzmq echo (DEALER/ROUTER)']))
        if not args.no_torch:
            try:
                import torch
                jobs.append((lambda: run_gloo(shapes, args),
                             ['torch %s gloo all_reduce' % torch.__version__]))
            except ImportError:
                print('PyTorch is not installed (`pip install torch==2.13.0`): no gloo row')
    print('%s: %d arrays, %.1f MB float32; 2 workers, 2 servers, '
          '127.0.0.1; %d jobs per row, %d timed rounds each after %d warm-up'
          % ('tiny arrays' if args.tiny else 'ResNet18 (CIFAR) gradients', len(shapes),
             nbytes / 1e6, args.repeat, args.rounds, args.warmup))
    print('%s, Python %s, %d cores, load average %.1f at start'
          % (platform.platform(), platform.python_version(), os.cpu_count(),
             os.getloadavg()[0]))
    times, cpu, rounds = {}, {}, {}
    for _ in range(args.repeat):
        for run, names in jobs:
            *row_times, row_cpu = run()
            for name, t in zip(names, row_times):
                times.setdefault(name, []).extend(t)
            cpu[names[0]] = cpu.get(names[0], 0) + row_cpu
            rounds[names[0]] = rounds.get(names[0], 0) + sum(len(t) for t in row_times)
    median = {name: statistics.median(t) for name, t in times.items()}
    gloo = next((median[n] for n in times if 'gloo' in n), None)
    print()
    print('| %-40s | %7s | %6s | %10s | %7s | %12s |' % ('round', 'ms', 'MB/s', 'vs ps-lite',
                                                        'vs gloo', 'CPU ms/round'))
    print('|%s|%s:|%s:|%s:|%s:|%s:|' % ('-' * 42, '-' * 8, '-' * 7, '-' * 11, '-' * 8,
                                        '-' * 13))
    for name in times:
        pslite = _pslite_row('per-key' if 'per key' in name else 'list')
        print('| %-40s | %7.1f | %6.0f | %10s | %7s | %12s |'
              % (name, median[name] * 1e3, nbytes / 1e6 / median[name],
                 '%.2f' % (median[name] / median[pslite]) if pslite in median else '-',
                 '%.2f' % (median[name] / gloo) if gloo else '-',
                 '%.0f' % (cpu[name].sum() / rounds[name] * 1e3) if name in cpu else '"'))
    print()
    if not listed:
        return None
    for transport, chunk in [(t, c) for t in args.transport for c in args.chunk_bytes]:
        on = times[_kv_row(chunk, transport)]
        off = times[_kv_row(chunk, transport, bypassed=True)]
        # rounds go on, off, off, on, ...: the k-th of each mode are neighbours
        paired = statistics.median(a / b for a, b in zip(on, off))
        print('authentication cost (%s, chunk %s): %+.1f%% (median of %d neighbouring-round '
              'ratios; median round %.1f ms with the HMAC, %.1f ms without)'
              % (transport, _size(chunk), 100.0 * (paired - 1), len(on),
                 statistics.median(on) * 1e3, statistics.median(off) * 1e3))
        name = _kv_row(chunk, transport)
        print('  CPU ms per round by process: workers %s, scheduler %.0f, servers %s'
              % _split(cpu[name] * 1e3 / rounds[name]))
        if args.curve:
            curve = _kv_row(chunk, transport, curve=True)
            print('encryption cost (%s, chunk %s): curve round %.1f ms against %.1f ms plain '
                  '(x%.2f), CPU %.0f ms against %.0f ms per round (x%.2f); jobs interleaved'
                  % (transport, _size(chunk), median[curve] * 1e3, median[name] * 1e3,
                     median[curve] / median[name], cpu[curve].sum() / rounds[curve] * 1e3,
                     cpu[name].sum() / rounds[name] * 1e3,
                     (cpu[curve].sum() / rounds[curve]) / (cpu[name].sum() / rounds[name])))
    from minigluon.kvstore.ps.config import Config    # (its default ring: a quarter per message)
    micro = hmac_micro(shapes, args.chunk_bytes[0],
                       Config.shm_bytes // 4 if args.transport[0] != 'tcp' else args.chunk_bytes[0])
    first = _kv_row(args.chunk_bytes[0], args.transport[0])
    on = cpu[first].sum() / rounds[first]
    # (/proc counts clock ticks: a round or two of tiny arrays may show no CPU time at all)
    share = '%.2f%%' % (100.0 * micro['header_tags_s'] / on) if on else 'an unmeasured share'
    print('HMAC-SHA256 of every header of a round (%d messages, each tagged and checked): '
          '%.2f ms of CPU = %s of the CPU of a round; tagging the array bytes too would '
          'add %.0f ms of CPU per round'
          % (micro['messages'], micro['header_tags_s'] * 1e3, share,
             micro['payload_tags_s'] * 1e3))
    if args.profile:
        profile_kvstore(shapes, args, args.chunk_bytes[0], args.profile)


# a few arrays for tests: small ones and one over BIGARRAY_BOUND (cut over both servers)
TINY_SHAPES = [[3], [4, 5], [16, 3, 3, 3], [120000]]


def _pslite_row(loop):
    return 'MXNet 1.9.1 dist_sync (ps-lite)%s' % (', per key' if loop == 'per-key' else '')


def _kv_row(chunk, transport, bypassed=False, curve=False, per_key=False):
    what = '%s, %s%s' % (transport, _size(chunk), ', curve' if curve else '')
    if bypassed:
        return '  same job, HMAC bypassed (%s)' % what
    return 'kvstore %s, %s' % ('per key' if per_key else 'push+pull',
                               what.replace(', ', ', chunk ', 1))


def _split(per_process):
    """(workers, scheduler, servers) as text, in the order run_kvstore collects them."""
    return ('%.0f + %.0f' % tuple(per_process[:2]), per_process[2],
            '%.0f + %.0f' % tuple(per_process[3:]))


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def _size(n):
    return '%d MiB' % (n >> 20) if n % (1 << 20) == 0 else '%d KiB' % (n >> 10)


if __name__ == '__main__':
    sys.exit(main())
