"""Training step of a hybridized HybridBlock against the same step run imperatively,
and against MXNet 1.9.1's own hybridized step.

Usage::

    PYTHONPATH=. python benchmarks/bench_hybridize.py [--models mlp,resnet]
        [--batch-size 64] [--units 256] [--mlp-steps 500] [--resnet-steps 5] [--repeat 3]
        [--mxnet-python PATH] [--json results.json] [--smoke]

Two models, each trained for one step at a time (forward, loss, backward and
``Trainer.step``: SGD with momentum 0.9) on random float32 data:

- ``mlp``: three ``Dense`` layers (``--units`` wide, ReLU between, 10 outputs) on
  ``--units`` features, batch ``--batch-size``; what hybridizing saves here is Python
  dispatch. Goal: hybridized at least 2x the imperative step's speed. Beside it runs
  the **GEMM floor**: the step's eight matrix products alone, in numpy on arrays of
  their shapes, less than any step calling numpy's BLAS can take; ``GEMM
  floor/imperative`` bounds what removing everything else could gain.
- A 2 ms step is at the mercy of a shared machine's moments, so the MLP also runs
  paired: the imperative and the hybridized step in turns in one process, for the
  ratio ``paired in one process``.
- Each minigluon run ends with steps under minigluon's profiler: the time per step in
  each op's kernels. A replay runs the same kernels, so ``imperative/its <op>
  kernels`` (the heaviest op's) bounds what hybridizing can gain.
- ``resnet``: ``model_zoo.vision.resnet18_v1(classes=10, thumbnail=True)`` on
  ``--image-size`` images. Goals: hybridized at least 1.1x the imperative speed, and a
  peak resident memory at most 0.8x the imperative run's.

Each run (model, imperative or hybridized, framework) is a child process of its own, so
its peak RSS is its own; the runs alternate ``--repeat`` times so that all see the same
load on a shared machine. Hybridized means ``net.hybridize(static_alloc=True,
static_shape=True)`` and the same for the loss block. The MXNet runs (hybridized only)
use the Python named by ``--mxnet-python`` (default: ``MINIGLUON_MXNET_PYTHON``; left
out without one) and the same code with ``import mxnet as mx``. The table gives the
median step, the fastest step, peak RSS and the ratios; ``--json`` writes it all.
``--smoke`` runs both models at a tiny size (batch 2, 8 units, 4x4 images, a step or two,
one repeat): the test suite's check that the script still works.
"""
import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ('imperative', 'hybridized')
FLOOR = 'GEMM floor'  # the MLP step's matrix products alone
GOALS = {'mlp': {'speed': 2.0}, 'resnet': {'speed': 1.1, 'peak_rss': 0.8}}


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build(mx, model, args):
    """The network and one batch ``(x, y)`` of ``model``, initialised from seed 0."""
    mx.random.seed(0)
    if model == 'mlp':
        net = mx.gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(mx.gluon.nn.Dense(args.units, activation='relu'),
                    mx.gluon.nn.Dense(args.units, activation='relu'),
                    mx.gluon.nn.Dense(10))
        shape = (args.batch_size, args.units)
    else:
        net = mx.gluon.model_zoo.vision.resnet18_v1(classes=10, thumbnail=True)
        shape = (args.batch_size, 3, args.image_size, args.image_size)
    net.initialize(mx.init.Xavier())
    x = mx.nd.random.normal(shape=shape)
    y = mx.nd.random.randint(0, 10, shape=(args.batch_size,)).astype('float32')
    return net, x, y


def gemm_floor_step(args):
    """The MLP step's matrix products alone (see the module docstring), in numpy on
    arrays of their shapes, as a function returning a number in place of a loss."""
    import numpy as np
    rng = np.random.RandomState(0)

    def arr(*shape):
        return rng.randn(*shape).astype(np.float32)
    batch, units = args.batch_size, args.units
    x, h1, h2 = arr(batch, units), arr(batch, units), arr(batch, units)
    w1, w2, w3 = arr(units, units), arr(units, units), arr(10, units)
    d1, d2, d3 = arr(batch, units), arr(batch, units), arr(batch, 10)

    def step():
        # forward: three layers; backward: each weight's gradient, and the data
        # gradients of the upper two layers (the first layer's data needs none)
        products = (x @ w1.T, h1 @ w2.T, h2 @ w3.T, d3.T @ h2, d3 @ w3, d2.T @ h1, d2 @ w2,
                    d1.T @ x)
        return float(len(products))
    return step


def training_step(mx, model, mode, args):
    """``step()``: one training step of ``model`` run ``mode`` ('imperative' or
    'hybridized'), returning the loss."""
    net, x, y = build(mx, model, args)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    if mode == 'hybridized':
        for block in (net, loss_fn):
            block.hybridize(static_alloc=True, static_shape=True)
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.01, 'momentum': 0.9})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(args.batch_size)
        mx.nd.waitall()
        return loss
    return step


def run(framework, model, mode, args):
    """Time ``--*-steps`` training steps after ``--warmup`` (the trace of a hybridized
    block happens in the first); seconds per step, peak RSS, the first step's loss.
    Mode 'paired' times the imperative and the hybridized step in turns, in this one
    process: seconds per step of each."""
    if framework == 'GEMM':
        baseline = peak_rss_mb()
        step = gemm_floor_step(args)
        return timed(step, args.mlp_steps, args.warmup, baseline, float(step()))
    if framework == 'mxnet':
        import mxnet as mx
    else:
        sys.path.insert(0, REPO)
        import minigluon as mx
    steps = args.mlp_steps if model == 'mlp' else args.resnet_steps
    if mode == 'paired':
        return paired(mx, model, steps, args)
    baseline = peak_rss_mb()
    step = training_step(mx, model, mode, args)
    first_loss = float(step().mean().asscalar())
    result = timed(step, steps, args.warmup, baseline, first_loss)
    if framework == 'minigluon':
        result['kernel_ms'] = kernel_ms(mx, step, 20 if model == 'mlp' else 1)
    return result


def paired(mx, model, steps, args):
    """Seconds per step of the imperative and the hybridized step, run in turns (which
    goes first alternates) so that both see the same moments of a shared machine."""
    runs = {mode: training_step(mx, model, mode, args) for mode in MODES}
    times = {mode: [] for mode in MODES}
    for i in range(args.warmup + steps):
        for mode in MODES if i % 2 else MODES[::-1]:
            start = time.perf_counter()
            runs[mode]()
            if i >= args.warmup:
                times[mode].append(time.perf_counter() - start)
    return times


def kernel_ms(mx, step, steps):
    """Milliseconds per step in each op's kernels, forward and backward together, from
    minigluon's profiler over ``steps`` more steps: what a replay of the same kernels
    cannot take away."""
    profiler = mx.profiler
    profiler.set_config(profile_all=True, aggregate_stats=True)
    profiler.set_state('run')
    for _ in range(steps):
        step()
    profiler.set_state('stop')
    stats = json.loads(profiler.dumps(reset=True, format='json'))['Time'].get('operator', {})
    out = {}
    for name, stat in stats.items():
        op = name[len('_backward_'):] if name.startswith('_backward_') else name
        out[op] = out.get(op, 0.0) + stat['Total'] / steps
    return out


def timed(step, steps, warmup, baseline, first_loss):
    """Seconds of each of ``steps`` calls of ``step`` after ``warmup`` untimed ones (the
    first of which has run already), and peak RSS."""
    for _ in range(warmup - 1):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {'step_s': times, 'peak_rss_mb': peak_rss_mb(),
            'step_peak_over_setup_mb': peak_rss_mb() - baseline, 'first_loss': first_loss}


def spawn(python, framework, model, mode, args):
    env = dict(os.environ)
    if framework == 'minigluon':
        env['PYTHONPATH'] = REPO + os.pathsep + env.get('PYTHONPATH', '')
    cmd = [python, os.path.abspath(__file__), '--child', '%s:%s:%s' % (framework, model, mode),
           '--batch-size', str(args.batch_size), '--units', str(args.units),
           '--image-size', str(args.image_size), '--mlp-steps', str(args.mlp_steps),
           '--resnet-steps', str(args.resnet_steps), '--warmup', str(args.warmup)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError('%s %s %s failed:\n%s' % (framework, model, mode,
                                                     done.stderr[-3000:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def merge(runs, batch_size):
    """A configuration's runs as one: the median and the fastest step over all of them,
    the largest peak memory."""
    times = sorted(t for r in runs for t in r['step_s'])
    median = times[len(times) // 2]
    return {'median_step_ms': median * 1e3, 'best_step_ms': times[0] * 1e3,
            'samples_per_s': batch_size / median,
            'peak_rss_mb': max(r['peak_rss_mb'] for r in runs),
            'step_peak_over_setup_mb': max(r['step_peak_over_setup_mb'] for r in runs),
            'first_loss': runs[0]['first_loss'], 'steps_timed': len(times),
            'kernel_ms': {op: sum(r['kernel_ms'].get(op, 0.0) for r in runs) / len(runs)
                          for op in sorted({op for r in runs for op in r.get('kernel_ms', {})})}}


def ratios(results):
    """Hybridized against imperative (speed: >1 is faster, from the median steps and
    from the fastest ones; peak RSS: <1 is smaller), and minigluon's hybridized step
    against MXNet's."""
    def speed(slow, fast, key):
        return results[slow][key] / results[fast][key]

    imp, hyb, mxnet = 'minigluon imperative', 'minigluon hybridized', 'MXNet hybridized'
    out = {'hybridized/imperative speed': speed(imp, hyb, 'median_step_ms'),
           'hybridized/imperative speed, best steps': speed(imp, hyb, 'best_step_ms'),
           'hybridized/imperative peak RSS': speed(hyb, imp, 'peak_rss_mb')}
    kernels = results[imp]['kernel_ms']
    if kernels:
        heaviest = max(kernels, key=kernels.get)
        out['imperative/its %s kernels' % heaviest] = \
            results[imp]['median_step_ms'] / kernels[heaviest]
    if FLOOR in results:
        out['GEMM floor/imperative speed'] = speed(imp, FLOOR, 'median_step_ms')
        out['hybridized/GEMM floor speed'] = speed(FLOOR, hyb, 'median_step_ms')
    if mxnet in results:
        out['minigluon/MXNet hybridized speed'] = speed(mxnet, hyb, 'median_step_ms')
        out['minigluon/MXNet hybridized speed, best steps'] = speed(mxnet, hyb, 'best_step_ms')
        out['minigluon/MXNet hybridized peak RSS'] = speed(hyb, mxnet, 'peak_rss_mb')
    return out


def goal_text(model, name):
    goals = GOALS[model]
    if name.startswith('hybridized/imperative speed') and 'best' not in name:
        return '>= %gx' % goals['speed']
    if name == 'hybridized/imperative peak RSS' and 'peak_rss' in goals:
        return '<= %gx' % goals['peak_rss']
    return ''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--models', default='mlp,resnet')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--units', type=int, default=256, help='MLP width and input features')
    parser.add_argument('--image-size', type=int, default=32)
    parser.add_argument('--mlp-steps', type=int, default=500)
    parser.add_argument('--resnet-steps', type=int, default=5)
    parser.add_argument('--warmup', type=int, default=2,
                        help='untimed steps first (at least 1: a hybridized block traces)')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--mxnet-python', default=os.environ.get('MINIGLUON_MXNET_PYTHON'))
    parser.add_argument('--json', metavar='PATH', help='write the results here as JSON')
    parser.add_argument('--smoke', action='store_true',
                        help='tiny sizes (batch 2, 8 units, 4x4 images, 1-2 steps): does it run?')
    parser.add_argument('--child', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        (args.batch_size, args.units, args.image_size, args.mlp_steps, args.resnet_steps,
         args.warmup, args.repeat) = 2, 8, 4, 2, 1, 1, 1
    args.warmup = max(args.warmup, 1)
    if args.child:
        print(json.dumps(run(*args.child.split(':'), args)))
        return

    models = [m for m in args.models.split(',') if m]
    unknown = sorted(set(models) - set(GOALS))
    if unknown:
        parser.error('unknown model(s) %s: choose from %s' % (unknown, sorted(GOALS)))
    configs = [('minigluon', mode, sys.executable) for mode in MODES]
    if args.mxnet_python:
        configs.append(('mxnet', 'hybridized', args.mxnet_python))
    runs, pairs = {}, []
    for _ in range(args.repeat):
        for model in models:
            for framework, mode, python in configs + (
                    [('GEMM', 'floor', sys.executable)] if model == 'mlp' else []):
                label = '%s %s' % ('MXNet' if framework == 'mxnet' else framework, mode)
                runs.setdefault(model, {}).setdefault(label, []).append(
                    spawn(python, framework, model, mode, args))
            if model == 'mlp':
                pairs.append(spawn(sys.executable, 'minigluon', model, 'paired', args))
    results = {model: {label: merge(r, args.batch_size) for label, r in by_label.items()}
               for model, by_label in runs.items()}
    report = {'machine': {'platform': platform.platform(), 'cpus': os.cpu_count(),
                          'python': platform.python_version()},
              'settings': {k: v for k, v in vars(args).items()
                           if k not in ('child', 'json', 'mxnet_python')},
              'results': results,
              'ratios': {model: ratios(results[model]) for model in models}}
    if pairs:
        medians = {mode: sorted(t for p in pairs for t in p[mode]) for mode in MODES}
        medians = {mode: t[len(t) // 2] for mode, t in medians.items()}
        report['ratios']['mlp']['hybridized/imperative speed, paired in one process'] = \
            medians['imperative'] / medians['hybridized']

    sys.path.insert(0, REPO)
    from minigluon.ndarray.ops import compiled  # (the children decide as this process does)
    kernels = 'numba' if compiled.enabled() else 'numpy'
    report['machine']['minigluon_cpu_kernels'] = kernels
    print('%s, %d CPUs, Python %s, minigluon CPU kernels: %s; batch %d, float32; %d run(s) '
          'per configuration, alternated; hybridize(static_alloc=True, static_shape=True)'
          % (platform.platform(), os.cpu_count(), platform.python_version(), kernels,
             args.batch_size, args.repeat))
    print('models: mlp = 3 x Dense(%d) on %d features, %d timed steps per run; resnet = '
          'resnet18_v1(thumbnail) on %dx%d, %d timed steps per run'
          % (args.units, args.units, args.mlp_steps, args.image_size, args.image_size,
             args.resnet_steps))
    print('\n| model | run | median ms/step | best ms/step | samples/s | peak RSS MB | '
          'step peak-setup MB | first loss |')
    print('|---|---|---:|---:|---:|---:|---:|---:|')
    for model in models:
        for label, r in results[model].items():
            print('| %s | %s | %.2f | %.2f | %.0f | %.0f | %.0f | %.5f |'
                  % (model, label, r['median_step_ms'], r['best_step_ms'], r['samples_per_s'],
                     r['peak_rss_mb'], r['step_peak_over_setup_mb'], r['first_loss']))
    print('\n| model | ratio | value | goal |')
    print('|---|---|---:|---|')
    for model in models:
        for name, value in report['ratios'][model].items():
            print('| %s | %s | %.2fx | %s |' % (model, name, value, goal_text(model, name)))
    for model in models:
        hybridized = results[model]['minigluon hybridized']
        shares = sorted(hybridized['kernel_ms'].items(), key=lambda kv: -kv[1])[:4]
        print('%s: the hybridized step\'s time in kernels (profiler): %s' % (model, ', '.join(
            '%s %.0f%%' % (op, 100 * ms / hybridized['median_step_ms']) for op, ms in shares)))
    for model in models:
        imp, hyb = (results[model]['minigluon %s' % m]['first_loss'] for m in MODES)
        if abs(imp - hyb) > 1e-4 * max(1.0, abs(imp)):
            print('WARNING: %s: the first step\'s loss differs, imperative %.6f, hybridized '
                  '%.6f: the two runs do not compute the same step' % (model, imp, hyb))
    if args.json:
        tmp = args.json + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, args.json)
        print('\nresults written to %s' % args.json)


if __name__ == '__main__':
    main()
