"""Training throughput and peak memory of ResNet in minigluon, against PyTorch and MXNet.

Usage:
    python benchmarks/bench_resnet.py [--model resnet18_v1] [--image-size 32]
        [--batch-size 64] [--threads 1,2] [--steps 5] [--repeat R] [--compare-torch]
        [--mxnet-python PATH] [--gpus N] [--dtype float32|float16] [--tf32] [--profile]
        [--layers] [--smoke]

One training step is forward, backward and an SGD-with-momentum update of a model-zoo
ResNet on random float32 images: ``resnet18_v1(classes=10, thumbnail=True)`` at 32
pixels by default, ImageNet's stem (7x7 convolution, max pooling) from 64 pixels up
(``--model resnet50_v1 --image-size 224 --classes 1000``). Each run is a child process,
so its peak resident memory is its own; ``--threads 1,2`` runs each framework at each
thread count (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set
for the child, and ``torch.set_num_threads``), and the runs alternate ``--repeat``
times so all see the same load. ``--compare-torch`` runs the same architecture in
PyTorch; ``--mxnet-python`` runs the same Gluon code under MXNet 1.9.1 (a Python with
``mxnet`` installed, e.g. ``pip install mxnet==1.9.1 numpy==1.23.5`` in its own
environment). The table gives each framework's images/s and peak RSS, and minigluon's
speed against each. ``--profile`` times every op of the minigluon step, forward and
backward apart, and prints a per-layer breakdown; ``--layers`` instead times each kind
of ResNet layer at 224 pixels (the stem, max pooling, 3x3, strided and 1x1
convolutions, BatchNorm with ReLU) alone, forward and backward, beside PyTorch's
(``--compare-torch``), at each ``--threads``. ``--smoke`` runs everything at a
tiny size (the test suite's check that the script still works).

``--dtype float16`` trains in mixed precision as each framework's users do: minigluon
casts the network to float16 and keeps float32 master weights in the optimizer
(``multi_precision=True``, MXNet's recipe); PyTorch runs under ``torch.autocast`` with a
``GradScaler``. On a GPU, float32 means float32 arithmetic in both frameworks (PyTorch's
cuDNN TF32 default switched off); ``--tf32`` lets both multiply float32 matrices in
TF32 (PyTorch's defaults for convolutions; ``CUPY_TF32=1`` for minigluon's cuBLAS).
"""
import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_gluon(framework, batch_size, steps, warmup, gpus, profile=False, dtype='float32',
              model='resnet18_v1', image_size=32, classes=10):
    """One training step of the model-zoo net timed in minigluon or (``framework``
    'mxnet') in MXNet, with the same code."""
    if framework == 'mxnet':
        import mxnet as mx
    else:
        sys.path.insert(0, os.path.dirname(HERE))
        import minigluon as mx
    autograd, gluon, nd = mx.autograd, mx.gluon, mx.nd
    vision = gluon.model_zoo.vision

    ctx = mx.gpu(0) if gpus else mx.cpu(0)
    mx.random.seed(0)
    net = vision.get_model(model, classes=classes, **_model_options(model, image_size))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.cast(dtype)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 0.01, 'momentum': 0.9, 'wd': 1e-4,
                             'multi_precision': dtype != 'float32'})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = nd.random.normal(shape=(batch_size, 3, image_size, image_size), ctx=ctx).astype(dtype)
    y = nd.random.randint(0, classes, shape=(batch_size,), ctx=ctx).astype('float32')
    baseline = peak_rss_mb()
    timer = OpTimer(nd.waitall) if profile else None

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        with timer.section('Trainer.step (SGD update)') if timer else contextlib.nullcontext():
            trainer.step(batch_size)
        nd.waitall()

    if timer:
        step()  # first call: shapes, optimizer states; kept out of the profile
        timer.install()
        step = timer.timed_step(step)
    result = _time_steps(step, batch_size, steps, warmup, baseline)
    if timer:
        result['profile'] = timer.report()
    return result


def _model_options(model, image_size):
    """The CIFAR stem (``thumbnail``) for small images, ImageNet's for large ones."""
    return {'thumbnail': image_size < 64}


class OpTimer:
    """Wraps every registered op so its forward and backward times add up per layer.

    A layer is an op with its input shapes and geometry; identical layers share a row
    (with a count). Each row keeps its time per step and reports the median over the
    steps, which shrugs off the spikes of a shared machine.
    """

    def __init__(self, sync):
        self.sync = sync
        self.rows = {}  # label -> Row
        self.step_times = []

    class Row:
        def __init__(self, flops):
            self.flops, self.calls, self.forward, self.backward = flops, 0, {}, {}

    def timed_step(self, step):
        def timed():
            start = time.perf_counter()
            step()
            self.step_times.append(time.perf_counter() - start)
        return timed

    def install(self):
        from minigluon.ndarray import registry
        for op in registry.all_ops().values():
            op.forward = self._wrap(op.name, op.forward, op.differentiable)

    def _add(self, times, seconds):
        step = len(self.step_times)
        times[step] = times.get(step, 0.0) + seconds

    @contextlib.contextmanager
    def section(self, name):
        """Time a block that is not an op (the optimizer update) as a row of its own."""
        start = time.perf_counter()
        yield
        self.sync()
        row = self.rows.setdefault(name, OpTimer.Row(0))
        row.calls += 1
        self._add(row.forward, time.perf_counter() - start)

    def _wrap(self, name, forward, differentiable):
        timer, sync = self, self.sync

        def timed(xp, *args, **params):
            key, flops = _layer_key(name, args, params)
            row = timer.rows.get(key)
            if row is None:
                row = timer.rows[key] = OpTimer.Row(flops)
            start = time.perf_counter()
            result = forward(xp, *args, **params)
            sync()
            row.calls += 1
            timer._add(row.forward, time.perf_counter() - start)
            if not differentiable:
                return result
            out, backward = result

            def timed_backward(dy):
                start = time.perf_counter()
                grads = backward(dy)
                sync()
                timer._add(row.backward, time.perf_counter() - start)
                return grads
            return out, timed_backward
        timed.__wrapped__ = forward
        return timed

    def report(self):
        steps = len(self.step_times)
        step_s = _median(self.step_times)
        lines = ['per-layer profile: ms per step, median of %d steps (median step %.0f ms); '
                 'GFLOP/s counts a direct convolution\'s 3 GEMMs'
                 % (steps, step_s * 1e3),
                 '%-56s %5s %9s %9s %9s %8s' % ('layer', 'calls', 'forward', 'backward',
                                               'total', 'GFLOP/s')]
        table, total_f, total_b = [], 0.0, 0.0
        for key, row in self.rows.items():
            fwd = _median([row.forward.get(i, 0.0) for i in range(steps)])
            bwd = _median([row.backward.get(i, 0.0) for i in range(steps)])
            table.append((fwd + bwd, key, row.calls // steps, fwd, bwd, row.flops))
            total_f, total_b = total_f + fwd, total_b + bwd
        for total, key, calls, fwd, bwd, flops in sorted(table, reverse=True):
            rate = '%8.0f' % (calls * flops * 3 / total / 1e9) if flops and total > 0 else ''
            lines.append('%-56s %5d %9.1f %9.1f %9.1f %s' % (key[:56], calls, fwd * 1e3,
                                                          bwd * 1e3, total * 1e3, rate))
        lines.append('%-56s %5s %9.1f %9.1f %9.1f' % ('sum of the rows', '', total_f * 1e3,
                                                     total_b * 1e3, (total_f + total_b) * 1e3))
        lines.append('%-56s %5s %9s %9s %9.1f' % ('rest (dispatch, autograd, step - rows)', '',
                                                 '', '', (step_s - total_f - total_b) * 1e3))
        return '\n'.join(lines)


def _median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0.0


def _layer_key(name, args, params):
    """A readable row label for one op call and the FLOPs of its forward (GEMM ops)."""
    shapes = [tuple(a.shape) for a in args if hasattr(a, 'shape')]
    label = name + ' ' + ' '.join('x'.join(map(str, s)) for s in shapes[:2])
    flops = 0
    if name == 'Convolution' and len(shapes) >= 2:
        x, w = shapes[0], shapes[1]
        stride = params.get('stride') or (1,) * (len(x) - 2)
        stride = (stride,) * (len(x) - 2) if isinstance(stride, int) else stride
        label += ' s%s' % ','.join(map(str, stride))
        out_positions = 1
        for n, k, s, p in zip(x[2:], w[2:], stride,
                              params.get('pad') or (0,) * (len(x) - 2)):
            out_positions *= (n + 2 * p - k) // s + 1
        flops = 2 * x[0] * out_positions * w[0] * _prod(w[1:])
    elif name == 'FullyConnected' and len(shapes) >= 2:
        flops = 2 * shapes[0][0] * _prod(shapes[1])
    elif name == 'Activation':
        label += ' ' + params.get('act_type', '')
    return label, flops


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


def torch_resnet(model='resnet18_v1', classes=10, thumbnail=True):
    """The model zoo's ResNet v1 in torch.nn: ``resnet18_v1``/``resnet34_v1`` of basic
    blocks, ``resnet50_v1`` and deeper of bottlenecks with the stride on their first 1x1
    convolution (MXNet's v1, not torchvision's v1.5); the thumbnail stem is one 3x3
    convolution, ImageNet's a 7x7 stride-2 one, BatchNorm, ReLU and 3x3 max pooling."""
    import torch
    from torch import nn

    depth = int(model.split('resnet')[1].split('_')[0])
    blocks = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
              152: [3, 8, 36, 3]}[depth]
    bottleneck = depth >= 50
    widths = [256, 512, 1024, 2048] if bottleneck else [64, 128, 256, 512]

    def conv_bn(cin, cout, kernel, stride, relu, bias=False):
        layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=bias),
                  nn.BatchNorm2d(cout)]
        return layers + [nn.ReLU()] if relu else layers

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            if bottleneck:
                mid = cout // 4
                # (MXNet's bottleneck gives its two 1x1 convolutions biases)
                body = (conv_bn(cin, mid, 1, stride, True, True) + conv_bn(mid, mid, 3, 1, True)
                        + conv_bn(mid, cout, 1, 1, False, True))
            else:
                body = conv_bn(cin, cout, 3, stride, True) + conv_bn(cout, cout, 3, 1, False)
            self.body = nn.Sequential(*body)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(*conv_bn(cin, cout, 1, stride, False))

        def forward(self, x):
            residual = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + residual)

    if thumbnail:
        layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False)]
    else:
        layers = conv_bn(3, 64, 7, 2, True) + [nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, (cout, count) in enumerate(zip(widths, blocks)):
        for i in range(count):
            layers.append(Block(cin, cout, 2 if stage > 0 and i == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def run_torch(batch_size, steps, warmup, gpus, dtype='float32', tf32=False,
              model='resnet18_v1', image_size=32, classes=10, threads=None):
    import torch
    from torch import nn

    if threads:
        torch.set_num_threads(threads)

    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = tf32

    device = 'cuda' if gpus else 'cpu'
    torch.manual_seed(0)
    net = torch_resnet(model, classes, **_model_options(model, image_size)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch_size, 3, image_size, image_size, device=device)
    y = torch.randint(0, classes, (batch_size,), device=device)
    baseline = peak_rss_mb()
    mixed = dtype != 'float32'
    scaler = torch.amp.GradScaler(device, enabled=mixed)

    def step():
        opt.zero_grad()
        with torch.autocast(device, dtype=getattr(torch, dtype), enabled=mixed):
            loss = loss_fn(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if gpus:
            torch.cuda.synchronize()

    return _time_steps(step, batch_size, steps, warmup, baseline)


def _seconds_each(fn, count):
    """``fn()`` called ``count`` times: the seconds each call took."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def _time_steps(step, batch_size, steps, warmup, baseline):
    for _ in range(warmup):
        step()
    times = _seconds_each(step, steps)
    return {'step_s': times, 'peak_rss_mb': peak_rss_mb(),
            'step_peak_over_setup_mb': peak_rss_mb() - baseline}


def _device_name():
    try:
        import cupy
        return 'gpu: %s' % cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()
    except Exception as exc:  # reported, not fatal: the numbers above still stand
        return 'gpu (name unknown: %s)' % exc


# ``--layers``: ResNet's layer kinds at 224 pixels, batch 16, each timed alone
# (name, input shape (N, C, H, W), op, arguments)
LAYERS = [
    ('7x7 stride-2 stem convolution', (16, 3, 224, 224), 'conv', (64, 7, 2, 3)),
    ('3x3 stride-2 max pooling', (16, 64, 112, 112), 'pool', (3, 2, 1)),
    ('3x3 convolution, 64 channels, 56x56', (16, 64, 56, 56), 'conv', (64, 3, 1, 1)),
    ('3x3 stride-2 convolution, 64 to 128', (16, 64, 56, 56), 'conv', (128, 3, 2, 1)),
    ('1x1 stride-2 convolution, 64 to 128', (16, 64, 56, 56), 'conv', (128, 1, 2, 0)),
    ('3x3 convolution, 512 channels, 7x7', (16, 512, 7, 7), 'conv', (512, 3, 1, 1)),
    ('BatchNorm + ReLU, 64 channels, 56x56', (16, 64, 56, 56), 'bnrelu', ()),
]


def time_layers(framework, steps, smoke):
    """Forward + backward ms of each of ``LAYERS`` alone (median of ``steps``), the
    input's gradient included except for the stem's."""
    import numpy as np
    shrink = 8 if smoke else 1  # (--smoke: an eighth of each spatial size, batch 2)
    out = {}
    for name, shape, kind, arg in LAYERS:
        shape = (2 if smoke else shape[0], shape[1]) + tuple(max(4, d // shrink)
                                                             for d in shape[2:])
        x = np.random.RandomState(0).standard_normal(shape).astype(np.float32)
        run = (_torch_layer if framework == 'torch' else _minigluon_layer)(kind, arg, x,
                                                                            name.startswith('7x7'))
        run()
        out[name] = _median(_seconds_each(run, steps)) * 1e3
    return out


def _minigluon_layer(kind, arg, x, is_stem):
    sys.path.insert(0, os.path.dirname(HERE))
    import numpy as np
    from minigluon import autograd, nd
    if is_stem:
        data = nd.array(x)  # images as a data loader gives them
    else:  # in the memory order a convolution writes its output, as inside the network
        data = nd.array(np.moveaxis(x, 1, -1).copy()).transpose((0, 3, 1, 2))
        data.attach_grad()
    params = []
    if kind == 'conv':
        filters, k, stride, pad = arg
        params = [nd.array(np.random.RandomState(1).standard_normal(
            (filters, x.shape[1], k, k)).astype(np.float32) * 0.05)]
        def layer(d):
            return nd.Convolution(d, params[0], kernel=(k, k), stride=(stride, stride),
                                  pad=(pad, pad), num_filter=filters, no_bias=True)
    elif kind == 'pool':
        k, stride, pad = arg
        def layer(d):
            return nd.Pooling(d, kernel=(k, k), stride=(stride, stride), pad=(pad, pad),
                              pool_type='max')
    else:
        c = x.shape[1]
        params = [nd.ones(c), nd.zeros(c)]
        stats = [nd.zeros(c), nd.ones(c)]
        def layer(d):
            return nd.relu(nd.BatchNorm(d, params[0], params[1], *stats, fix_gamma=False))
    for p in params:
        p.attach_grad()

    def run():
        with autograd.record():
            y = layer(data)
        y.backward()
        nd.waitall()
    return run


def _torch_layer(kind, arg, x, is_stem):
    import torch
    import torch.nn.functional as F
    data = torch.tensor(x, requires_grad=not is_stem)
    if kind == 'conv':
        filters, k, stride, pad = arg
        weight = torch.randn(filters, x.shape[1], k, k, requires_grad=True)
        def layer(d):
            return F.conv2d(d, weight, stride=stride, padding=pad)
    elif kind == 'pool':
        k, stride, pad = arg
        def layer(d):
            return F.max_pool2d(d, k, stride, pad)
    else:
        bn = torch.nn.BatchNorm2d(x.shape[1]).train()
        def layer(d):
            return torch.relu(bn(d))

    def run():
        y = layer(data)
        y.backward(torch.ones_like(y))  # (minigluon's backward() seeds ones too)
    return run


LABELS = {'minigluon': 'minigluon', 'torch': 'torch', 'mxnet': 'mxnet'}
THREAD_VARIABLES = ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS')


def child(framework, args):
    if args.layers:
        if framework == 'torch':
            import torch
            if args.child_threads:
                torch.set_num_threads(args.child_threads)
        print(json.dumps({'layers_ms': time_layers(framework, args.steps, args.smoke)}))
        return
    if framework == 'torch':
        result = run_torch(args.batch_size, args.steps, args.warmup, args.gpus, args.dtype,
                           args.tf32, args.model, args.image_size, args.classes,
                           args.child_threads)
    else:
        result = run_gluon(framework, args.batch_size, args.steps, args.warmup, args.gpus,
                           args.profile and framework == 'minigluon', args.dtype, args.model,
                           args.image_size, args.classes)
    print(json.dumps(result))


def spawn(framework, args, threads):
    """One run of ``framework`` in a child process (MXNet's under ``--mxnet-python``),
    with ``threads`` threads (None: as this process has them)."""
    python = args.mxnet_python if framework == 'mxnet' else sys.executable
    cmd = [python, os.path.abspath(__file__), '--child', framework,
           '--batch-size', str(args.batch_size), '--steps', str(args.steps),
           '--warmup', str(args.warmup), '--gpus', str(args.gpus), '--dtype', args.dtype,
           '--model', args.model, '--image-size', str(args.image_size),
           '--classes', str(args.classes)]
    if args.profile and framework == 'minigluon':
        cmd.append('--profile')
    if args.layers:
        cmd += ['--layers'] + (['--smoke'] if args.smoke else [])
    env = dict(os.environ)
    if threads:
        cmd += ['--child-threads', str(threads)]
        env.update({name: str(threads) for name in THREAD_VARIABLES})
    if args.tf32:
        cmd.append('--tf32')
        env['CUPY_TF32'] = '1'  # read by CuPy when it first multiplies float32 matrices
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        sys.exit('the %s run failed (exit %d):\n%s' % (framework, out.returncode,
                                                       out.stderr[-4000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def merge(runs, batch_size):
    """One framework's runs as one result: images/s from the median and the fastest step
    over all of them, the largest peak memory."""
    times = sorted(t for r in runs for t in r['step_s'])
    return {'images_per_s': batch_size / times[len(times) // 2],
            'best_images_per_s': batch_size / times[0],
            'peak_rss_mb': max(r['peak_rss_mb'] for r in runs),
            'step_peak_over_setup_mb': max(r['step_peak_over_setup_mb'] for r in runs),
            'profile': runs[-1].get('profile')}


def compare_layers(args):
    """``--layers``: each framework's per-layer times at each thread count, side by side."""
    frameworks = ['minigluon'] + (['torch'] if args.compare_torch else [])
    threads = [int(t) for t in args.threads.split(',') if t.strip()] or [None]
    times = {}
    for _ in range(args.repeat):
        for t in threads:
            for fw in frameworks:
                for name, ms in spawn(fw, args, t)['layers_ms'].items():
                    times.setdefault((t, fw, name), []).append(ms)
    print('ResNet layers at 224 pixels, batch 16%s, forward + backward alone, median of %d '
          'step(s) per run, %d run(s); cpu: %s, %d cores'
          % (' (--smoke: 2 images, an eighth of each size)' if args.smoke else '',
             args.steps, args.repeat, cpu_model(), os.cpu_count()))
    print('%-8s %-40s %14s %10s %8s' % ('threads', 'layer', 'minigluon ms', 'torch ms',
                                         'speed'))
    for t in threads:
        for name, *_ in LAYERS:
            mine = min(times[(t, 'minigluon', name)])
            theirs = min(times[(t, 'torch', name)]) if 'torch' in frameworks else None
            print('%-8s %-40s %14.1f %10s %8s' % (
                t or os.environ.get('OMP_NUM_THREADS', '-'), name, mine,
                '%.1f' % theirs if theirs else '-',
                '%.2fx' % (theirs / mine) if theirs else ''))


def cpu_model():
    """The CPU's model name, as /proc/cpuinfo gives it (the platform's elsewhere)."""
    try:
        with open('/proc/cpuinfo') as info:
            for line in info:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--model', default='resnet18_v1',
                        help='a model-zoo ResNet (resnet18_v1, resnet50_v1, ...)')
    parser.add_argument('--image-size', type=int, default=32,
                        help='under 64: the CIFAR stem (thumbnail=True); else ImageNet\'s')
    parser.add_argument('--classes', type=int, default=10)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--threads', default='',
                        help='comma-separated thread counts to run each framework at '
                             '(default: as this process has them)')
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--gpus', type=int, default=0)
    parser.add_argument('--dtype', choices=['float32', 'float16'], default='float32',
                        help='float16: mixed precision (float32 master weights)')
    parser.add_argument('--tf32', action='store_true',
                        help='on a GPU, float32 matrix products in TF32 in both frameworks')
    parser.add_argument('--compare-torch', action='store_true')
    parser.add_argument('--mxnet-python', metavar='PATH',
                        help='a Python with MXNet 1.9.1 installed: its run beside minigluon\'s')
    parser.add_argument('--repeat', type=int, default=1,
                        help='run each framework this many times, alternating, so all see '
                             'the same load on a shared machine')
    parser.add_argument('--profile', action='store_true',
                        help='print a per-layer forward/backward breakdown of the minigluon step')
    parser.add_argument('--layers', action='store_true',
                        help='time each kind of ResNet layer at 224 pixels alone, forward and '
                             'backward, against PyTorch (with --compare-torch)')
    parser.add_argument('--smoke', action='store_true',
                        help='tiny sizes (batch 2, one step, 32 or 64 pixels): does it run?')
    parser.add_argument('--child', choices=sorted(LABELS), help=argparse.SUPPRESS)
    parser.add_argument('--child-threads', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args)
    if args.smoke:
        args.batch_size, args.steps, args.warmup, args.repeat = 2, 1, 0, 1
        args.image_size = 32 if args.image_size < 64 else 64
    if args.layers:
        return compare_layers(args)
    threads = [int(t) for t in args.threads.split(',') if t.strip()] or [None]

    frameworks = ['minigluon']
    if args.compare_torch:
        try:
            import torch  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
            frameworks.append('torch')
        except ImportError:
            print('PyTorch is not installed: `pip install torch==2.13.0` for --compare-torch')
    if args.mxnet_python:
        frameworks.append('mxnet')
    runs = {(t, fw): [] for t in threads for fw in frameworks}
    for _ in range(args.repeat):
        for t in threads:
            for fw in frameworks:
                runs[(t, fw)].append(spawn(fw, args, t))
    results = {key: merge(r, args.batch_size) for key, r in runs.items()}
    blas = os.environ.get('OPENBLAS_CORETYPE')
    sys.path.insert(0, os.path.dirname(HERE))
    from minigluon.ndarray.ops import compiled  # (the child decides as this process does)
    device = _device_name() if args.gpus else 'cpu: %s, %d cores' % (cpu_model(),
                                                                      os.cpu_count())
    print('%s(classes=%d%s) at %d pixels, batch %d, %s, %s, %s%s; minigluon CPU kernels: %s'
          % (args.model, args.classes, ', thumbnail=True' if args.image_size < 64 else '',
             args.image_size, args.batch_size,
             args.dtype + (' (TF32)' if args.tf32 else ''), device, platform.platform(),
             ', OPENBLAS_CORETYPE=%s' % blas if blas else '',
             'numba' if compiled.enabled() else 'numpy'))
    print('%d step(s) per run, %d run(s) per framework and thread count, alternated; '
          'images/s from the median step' % (args.steps, args.repeat))
    print('%-8s %-10s %12s %14s %14s %18s %12s' % (
        'threads', 'framework', 'images/s', 'best images/s', 'peak RSS (MB)',
        'step peak-setup MB', 'minigluon vs'))
    for t in threads:
        mine = results[(t, 'minigluon')]
        for fw in frameworks:
            r = results[(t, fw)]
            print('%-8s %-10s %12.1f %14.1f %14.0f %18.0f %12s' % (
                t or os.environ.get('OMP_NUM_THREADS', '-'), LABELS[fw], r['images_per_s'],
                r['best_images_per_s'], r['peak_rss_mb'], r['step_peak_over_setup_mb'],
                '' if fw == 'minigluon' else '%.2fx' % (mine['images_per_s']
                                                        / r['images_per_s'])))
        for fw in frameworks[1:]:
            r = results[(t, fw)]
            print('ratio minigluon/%s at %s thread(s): speed %.2f (best steps %.2f), peak RSS '
                  '%.2f' % (fw, t or os.environ.get('OMP_NUM_THREADS', '-'),
                            mine['images_per_s'] / r['images_per_s'],
                            mine['best_images_per_s'] / r['best_images_per_s'],
                            mine['peak_rss_mb'] / r['peak_rss_mb']))
    for t in threads:
        if results[(t, 'minigluon')]['profile']:
            print()
            print(results[(t, 'minigluon')]['profile'])


if __name__ == '__main__':
    main()
