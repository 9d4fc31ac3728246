"""Data-parallel training over a shaped link: minigluon ``dist_sync`` against PyTorch DDP.

Usage (as root, for the network namespaces):
    python benchmarks/bench_dist_train.py [--rates 250mbit 1gbit 10gbit] [--steps 8]
        [--warmup 3] [--repeat 1] [--batch-size 32] [--variants overlap plain ddp]
        [--loopback] [--smoke]

Two "hosts" are two Linux network namespaces joined by a veth pair; each end's
egress is shaped with ``tc qdisc ... tbf`` to the rate (this kernel has no netem),
so each direction carries at most that rate. Each host runs one worker and one
server; the first also runs the scheduler (PyTorch: rank 0 holds the rendezvous
store). Every process has ``OMP_NUM_THREADS=1``. The model is
``resnet18_v1(classes=10, thumbnail=True)`` (PyTorch: the same layers written with
torch.nn), batch ``--batch-size`` (32) per worker of synthetic 32x32 images, SGD with
momentum and weight decay. A run times ``--steps`` training steps after ``--warmup``;
images/s is 2 x batch x steps over the wall time of the timed steps on worker 0
(dist_sync keeps the workers in step; the last step's weights are waited for).
Variants, interleaved at each rate so that they see the same load:

- ``overlap``: minigluon ``dist_sync``, gluon.Trainer as shipped (gradients pushed
  during backward, weights waited for when the next forward uses them);
- ``plain``: the same with ``MINIGLUON_KVSTORE_OVERLAP=0`` (all communication in
  ``Trainer.step``);
- ``replicated``: ``overlap`` with server replication on (``PS_REPLICATION=1``: each
  server's keys also held by the other server, every round sent there before its pulls
  are answered), the cost of surviving a dead server;
- ``ddp``: ``torch.nn.parallel.DistributedDataParallel`` over gloo, default buckets.

Without root (or without ``ip netns``) the script says so and runs the loopback
part only: every process on 127.0.0.1, no shaping (``--loopback`` asks for that).
PyTorch is a benchmark-only dependency (benchmarks/requirements.txt). ``--smoke`` runs
the loopback part (no root needed) with batch 2, one warm-up step and one timed step,
each job given at most 120 s: the test suite's check that the script still works.
"""
import argparse
import importlib.util
import json
import os
import platform
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NS = ('mgbench_a', 'mgbench_b')
VETH = ('mgveth_a', 'mgveth_b')
ADDR = ('10.77.0.1', '10.77.0.2')
BATCH = 32


# ---- the two hosts --------------------------------------------------------------------
def _sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def can_use_namespaces():
    """Why the shaped part cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return 'not root (network namespaces and tc need CAP_NET_ADMIN)'
    for tool in ('ip', 'tc'):
        if shutil.which(tool) is None:
            return '%s is not installed' % tool
    return None


def make_hosts():
    remove_hosts()
    for ns in NS:
        _sh('ip', 'netns', 'add', ns)
    _sh('ip', 'link', 'add', VETH[0], 'netns', NS[0], 'type', 'veth', 'peer', 'name', VETH[1],
        'netns', NS[1])
    for ns, dev, addr in zip(NS, VETH, ADDR):
        _sh('ip', '-n', ns, 'addr', 'add', addr + '/24', 'dev', dev)
        _sh('ip', '-n', ns, 'link', 'set', dev, 'up')
        _sh('ip', '-n', ns, 'link', 'set', 'lo', 'up')


def shape(rate):
    """Each veth end sends at most ``rate`` (tc syntax: 250mbit, 1gbit, ...)."""
    bits = _rate_bits(rate)
    # the bucket must hold a GSO packet (64 KiB) and a few ms of traffic at fast rates
    burst = max(128 * 1024, int(bits / 8 * 0.002))
    for ns, dev in zip(NS, VETH):
        _sh('ip', 'netns', 'exec', ns, 'tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf',
            'rate', rate, 'burst', str(burst), 'latency', '50ms')


def _rate_bits(rate):
    units = {'kbit': 1e3, 'mbit': 1e6, 'gbit': 1e9}
    for unit, factor in units.items():
        if rate.endswith(unit):
            return float(rate[:-len(unit)]) * factor
    raise SystemExit('rate %r: use e.g. 250mbit, 1gbit, 10gbit' % rate)


def remove_hosts():
    for ns in NS:
        _sh('ip', 'netns', 'del', ns, check=False)


# ---- the jobs ---------------------------------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _spawn(host, argv, env, loopback):
    env = dict(os.environ, OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', MKL_NUM_THREADS='1',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''),
               PYTHONUNBUFFERED='1', **env)
    prefix = [] if loopback else ['ip', 'netns', 'exec', NS[host]]
    return subprocess.Popen(prefix + argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _collect(procs, timeout):
    deadline = time.monotonic() + timeout
    outputs, failed = {}, False
    for name, proc in procs.items():
        # once one process failed, the others get a few seconds to end, not the whole timeout
        wait = 10 if failed else max(1, deadline - time.monotonic())
        try:
            out, _ = proc.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            failed = True
        outputs[name] = out
        failed = failed or proc.returncode != 0
    if failed:
        for name, proc in procs.items():
            if proc.poll() is None:
                proc.kill()
        raise RuntimeError('a process failed:\n' + '\n'.join(
            '--- %s ---\n%s' % (n, o[-3000:]) for n, o in outputs.items()))
    return outputs


def _result(output):
    lines = [ln for ln in output.splitlines() if ln.startswith('RESULT ')]
    return json.loads(lines[-1].split(' ', 1)[1])


def run_minigluon(args, overlap, loopback, replication=False):
    addr = ('127.0.0.1', '127.0.0.1') if loopback else ADDR
    env = {'DMLC_PS_ROOT_URI': addr[0], 'DMLC_PS_ROOT_PORT': str(_free_port()),
           'DMLC_NUM_SERVER': '2', 'DMLC_NUM_WORKER': '2',
           'MINIGLUON_PS_SECRET': secrets.token_hex(16),
           'MINIGLUON_KVSTORE_OVERLAP': '1' if overlap else '0',
           'PS_REPLICATION': '1' if replication else '0'}
    serve = [sys.executable, '-c', 'import minigluon']
    me = [sys.executable, os.path.abspath(__file__)]
    procs = {'scheduler': _spawn(0, serve, dict(env, DMLC_ROLE='scheduler',
                                                DMLC_NODE_HOST=addr[0]), loopback)}
    for host in range(2):
        host_env = dict(env, DMLC_NODE_HOST=addr[host])
        procs['server:%d' % host] = _spawn(host, serve, dict(host_env, DMLC_ROLE='server'),
                                           loopback)
        procs['worker:%d' % host] = _spawn(
            host, me + ['--child', 'minigluon', '--steps', str(args.steps),
                        '--warmup', str(args.warmup), '--batch-size', str(args.batch_size)],
            dict(host_env, DMLC_ROLE='worker', DMLC_WORKER_ID=str(host)), loopback)
    outputs = _collect(procs, args.timeout)
    return _result(outputs['worker:0'])


def run_ddp(args, loopback):
    addr = ('127.0.0.1', '127.0.0.1') if loopback else ADDR
    port = _free_port()
    procs = {}
    for rank in range(2):
        env = {'MASTER_ADDR': addr[0], 'MASTER_PORT': str(port), 'RANK': str(rank),
               'WORLD_SIZE': '2', 'GLOO_SOCKET_IFNAME': 'lo' if loopback else VETH[rank]}
        procs['rank:%d' % rank] = _spawn(
            rank, [sys.executable, os.path.abspath(__file__), '--child', 'ddp',
                   '--steps', str(args.steps), '--warmup', str(args.warmup),
                   '--batch-size', str(args.batch_size)], env, loopback)
    outputs = _collect(procs, args.timeout)
    return _result(outputs['rank:0'])


# ---- inside the workers -------------------------------------------------------------------
def child_minigluon(steps, warmup, batch):
    import numpy as np
    import minigluon as mx
    from minigluon import autograd, gluon, kv, nd
    from minigluon.gluon.model_zoo import vision

    store = kv.create('dist_sync')
    mx.random.seed(0)
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 0.01, 'momentum': 0.9, 'wd': 1e-4}, kvstore=store)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.RandomState(store.rank)
    x = nd.array(rng.normal(size=(batch, 3, 32, 32)).astype(np.float32))
    y = nd.array(rng.randint(0, 10, size=batch).astype(np.float32))
    params = list(net.collect_params().values())

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)

    for _ in range(warmup):
        step()
    for p in params:
        p.data()
    marks = [time.perf_counter()]
    for _ in range(steps):
        step()
        marks.append(time.perf_counter())
    for p in params:
        p.data()  # the last step's weights are in
    marks[-1] = time.perf_counter()
    return {'step_s': [b - a for a, b in zip(marks, marks[1:])],
            'seconds': marks[-1] - marks[0], 'steps': steps, 'batch': batch}


def child_ddp(steps, warmup, batch):
    import torch
    import torch.distributed as dist
    from torch import nn

    from bench_resnet import torch_resnet  # (this folder: sys.path[0])

    torch.set_num_threads(1)
    dist.init_process_group('gloo')
    torch.manual_seed(0)
    net = nn.parallel.DistributedDataParallel(torch_resnet())
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(dist.get_rank())
    x = torch.randn(batch, 3, 32, 32, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()  # DDP all-reduces its buckets during backward
        opt.step()

    for _ in range(warmup):
        step()
    dist.barrier()
    marks = [time.perf_counter()]
    for _ in range(steps):
        step()
        marks.append(time.perf_counter())
    dist.barrier()
    marks[-1] = time.perf_counter()
    dist.destroy_process_group()
    return {'step_s': [b - a for a, b in zip(marks, marks[1:])],
            'seconds': marks[-1] - marks[0], 'steps': steps, 'batch': batch}


# ---- the table ------------------------------------------------------------------------------
def images_per_s(res):
    return 2 * res['batch'] * res['steps'] / res['seconds']


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rates', nargs='+', default=['250mbit', '1gbit', '10gbit'])
    parser.add_argument('--variants', nargs='+', default=['overlap', 'plain', 'ddp'],
                        choices=['overlap', 'plain', 'replicated', 'ddp'])
    parser.add_argument('--steps', type=int, default=8)
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--repeat', type=int, default=1)
    parser.add_argument('--batch-size', type=int, default=BATCH, help='images per worker')
    parser.add_argument('--timeout', type=float, default=900)
    parser.add_argument('--loopback', action='store_true',
                        help='run every process on 127.0.0.1 without shaping')
    parser.add_argument('--smoke', action='store_true',
                        help='loopback, batch 2, one warm-up and one timed step: does it run?')
    parser.add_argument('--child', choices=['minigluon', 'ddp'], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run = child_minigluon if args.child == 'minigluon' else child_ddp
        print('RESULT', json.dumps(run(args.steps, args.warmup, args.batch_size)), flush=True)
        return
    if args.smoke:
        # loopback: the shaped links need root, ip netns and tc, which a test cannot ask for
        args.loopback, args.batch_size, args.steps, args.warmup, args.repeat = True, 2, 1, 1, 1
        args.timeout = min(args.timeout, 120)
    # (found, not imported: importing torch here would cost seconds the DDP workers pay anyway)
    if 'ddp' in args.variants and importlib.util.find_spec('torch') is None:
        print('PyTorch is not installed (`pip install torch==2.13.0`): no DDP column')
        args.variants = [v for v in args.variants if v != 'ddp']

    why = can_use_namespaces()
    loopback = args.loopback or why is not None
    if why and not args.loopback:
        print('shaped links unavailable: %s; running the loopback part only' % why)
    rates = ['loopback'] if loopback else args.rates
    sys.path.insert(0, ROOT)
    from minigluon.ndarray.ops import compiled  # (the children decide as this process does)
    print('%s, %d CPUs, Python %s; batch %d per worker, %d timed steps after %d; minigluon '
          'CPU kernels: %s' % (platform.machine(), os.cpu_count(), platform.python_version(),
                               args.batch_size, args.steps, args.warmup,
                               'numba' if compiled.enabled() else 'numpy'))
    table = {}
    try:
        if not loopback:
            make_hosts()
        for rate in rates:
            if not loopback:
                shape(rate)
            for _ in range(args.repeat):
                for variant in args.variants:
                    if variant == 'ddp':
                        res = run_ddp(args, loopback)
                    else:
                        res = run_minigluon(args, variant != 'plain', loopback,
                                            replication=variant == 'replicated')
                    table.setdefault((rate, variant), []).append(images_per_s(res))
                    print('  %-8s %-8s %6.1f img/s  (median step %.2f s)'
                          % (rate, variant, images_per_s(res), statistics.median(res['step_s'])),
                          flush=True)
    finally:
        if not loopback:
            remove_hosts()
    print('\n| link | minigluon overlap img/s | minigluon plain img/s | replicated img/s '
          '| DDP (gloo) img/s | overlap / DDP | plain / DDP | replicated / overlap |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|')
    for rate in rates:
        fig = {v: statistics.median(table[(rate, v)]) for v in args.variants
               if (rate, v) in table}
        ddp, overlap = fig.get('ddp'), fig.get('overlap')
        cells = ['%.1f' % fig[v] if v in fig else ''
                 for v in ('overlap', 'plain', 'replicated', 'ddp')]
        ratios = ['%.2f' % (fig[v] / ddp) if v in fig and ddp else ''
                  for v in ('overlap', 'plain')]
        ratios.append('%.2f' % (fig['replicated'] / overlap)
                      if 'replicated' in fig and overlap else '')
        print('| %s | %s |' % (rate, ' | '.join(cells + ratios)))


if __name__ == '__main__':
    main()
