"""Training step of a stacked LSTM: minigluon's ``gluon.rnn.LSTM`` (one fused ``RNN``
op) against PyTorch's ``nn.LSTM`` and MXNet 1.9.1's ``gluon.rnn.LSTM`` on the CPU.

Usage::

    PYTHONPATH=. python benchmarks/bench_rnn.py [--threads 1,2] [--layers 2]
        [--hidden 256] [--input-size 256] [--seq-len 35] [--batch-size 32] [--steps 10]
        [--warmup 2] [--repeat 3] [--compare-torch] [--mxnet-python PATH] [--json PATH]
        [--smoke]

One step is forward and backward (the gradient of the outputs' sum, begin states of
zeros) in float32, the word language model's shape by default (sequence 35, batch 32,
embedding 256, 2 layers of 256). Each run (framework, thread count) is a child process
of its own with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS``
set (and ``torch.set_num_threads``); the runs alternate ``--repeat`` times so all see
the same load on a shared machine. The table gives the median and fastest step and
each framework's speed relative to minigluon's (>1: minigluon is faster). Goal: at
least 1.0x PyTorch at every thread count, and no slower than MXNet. ``--smoke`` runs
one step of a tiny LSTM (hidden 4, input 3, sequence 3, batch 2) once per configuration:
the test suite's check that the script still works.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = {'minigluon': 'minigluon', 'torch': 'PyTorch', 'mxnet': 'MXNet'}


def _mx_step(mx, args):
    """The LSTM and one training step of it, minigluon's or MXNet's (same code)."""
    mx.random.seed(0)
    net = mx.gluon.rnn.LSTM(args.hidden, num_layers=args.layers, input_size=args.input_size)
    net.initialize(mx.init.Uniform(0.1))
    x = mx.nd.random.normal(shape=(args.seq_len, args.batch_size, args.input_size))
    states = net.begin_state(args.batch_size)

    def step():
        with mx.autograd.record():
            out, _ = net(x, states)
        out.backward()
        mx.nd.waitall()
        return float(out.sum().asscalar())
    return step


def _torch_step(args):
    import torch
    torch.set_num_threads(args.child_threads)
    torch.manual_seed(0)
    net = torch.nn.LSTM(args.input_size, args.hidden, num_layers=args.layers)
    x = torch.randn(args.seq_len, args.batch_size, args.input_size)

    def step():
        net.zero_grad(set_to_none=True)
        out, _ = net(x)
        out.sum().backward()
        return float(out.detach().sum())
    return step


def run(framework, args):
    """Seconds per step of ``--steps`` steps after ``--warmup``."""
    if framework == 'torch':
        step = _torch_step(args)
    else:
        if framework == 'mxnet':
            import mxnet as mx
        else:
            sys.path.insert(0, REPO)
            import minigluon as mx
        step = _mx_step(mx, args)
    for _ in range(max(args.warmup, 1)):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {'step_s': times}


def spawn(python, framework, threads, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    if framework == 'minigluon':
        env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    cmd = [python, os.path.abspath(__file__), '--child', framework, '--child-threads',
           str(threads)] + ['--%s=%s' % (k.replace('_', '-'), getattr(args, k))
                            for k in ('layers', 'hidden', 'input_size', 'seq_len',
                                      'batch_size', 'steps', 'warmup')]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError('%s at %d thread(s) failed:\n%s'
                           % (framework, threads, done.stderr[-3000:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(runs):
    times = sorted(t for r in runs for t in r['step_s'])
    return {'median_step_ms': times[len(times) // 2] * 1e3, 'best_step_ms': times[0] * 1e3,
            'steps_timed': len(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--threads', default='1,2', help='comma-separated thread counts')
    parser.add_argument('--layers', type=int, default=2)
    parser.add_argument('--hidden', type=int, default=256)
    parser.add_argument('--input-size', type=int, default=256)
    parser.add_argument('--seq-len', type=int, default=35)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--steps', type=int, default=10, help='timed steps per run')
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--repeat', type=int, default=3, help='runs per configuration')
    parser.add_argument('--compare-torch', action='store_true',
                        help="also time PyTorch's nn.LSTM (this Python must import torch)")
    parser.add_argument('--mxnet-python', default=os.environ.get('MINIGLUON_MXNET_PYTHON'),
                        help="a Python that imports mxnet, to time MXNet's gluon.rnn.LSTM")
    parser.add_argument('--json', metavar='PATH', help='write the results here as JSON')
    parser.add_argument('--smoke', action='store_true',
                        help='one step of a tiny LSTM, one run per configuration: does it run?')
    parser.add_argument('--child', help=argparse.SUPPRESS)
    parser.add_argument('--child-threads', type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        (args.hidden, args.input_size, args.seq_len, args.batch_size, args.steps, args.warmup,
         args.repeat) = 4, 3, 3, 2, 1, 1, 1
    if args.child:
        print(json.dumps(run(args.child, args)))
        return

    threads = [int(t) for t in args.threads.split(',') if t]
    configs = [('minigluon', sys.executable)]
    if args.compare_torch:
        configs.append(('torch', sys.executable))
    if args.mxnet_python:
        configs.append(('mxnet', args.mxnet_python))
    runs = {}
    for _ in range(args.repeat):
        for n in threads:
            for framework, python in configs:
                runs.setdefault(n, {}).setdefault(framework, []).append(
                    spawn(python, framework, n, args))
    results = {n: {fw: summary(r) for fw, r in by_fw.items()} for n, by_fw in runs.items()}

    sys.path.insert(0, REPO)
    from minigluon.ndarray.ops import compiled  # (the children decide as this process does)
    kernels = 'numba' if compiled.enabled() else 'numpy'
    print('%s, %d CPUs, Python %s, minigluon CPU kernels: %s; float32; %d run(s) of %d '
          'steps per configuration, alternated' % (platform.platform(), os.cpu_count(),
                                                   platform.python_version(), kernels,
                                                   args.repeat, args.steps))
    print('LSTM: %d layers, hidden %d, input %d, sequence %d, batch %d; step = forward + '
          'backward' % (args.layers, args.hidden, args.input_size, args.seq_len,
                        args.batch_size))
    print('\n| threads | framework | median ms/step | best ms/step | minigluon speed vs it |')
    print('|---:|---|---:|---:|---:|')
    for n in threads:
        mine = results[n]['minigluon']['median_step_ms']
        for framework, r in results[n].items():
            ratio = r['median_step_ms'] / mine
            print('| %d | %s | %.1f | %.1f | %.2fx |' % (n, LABELS[framework],
                                                       r['median_step_ms'], r['best_step_ms'],
                                                       ratio))
    if args.json:
        report = {'machine': {'platform': platform.platform(), 'cpus': os.cpu_count(),
                              'python': platform.python_version(),
                              'minigluon_cpu_kernels': kernels},
                  'settings': {k: v for k, v in vars(args).items()
                               if k not in ('child', 'child_threads', 'json', 'mxnet_python')},
                  'results': {str(n): r for n, r in results.items()}}
        tmp = args.json + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, args.json)
        print('\nresults written to %s' % args.json)


if __name__ == '__main__':
    main()
