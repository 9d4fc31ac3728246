"""Training throughput and peak memory of ResNet18 (CIFAR stem) in minigluon.

Usage:
    python benchmarks/bench_resnet.py [--batch-size 64] [--steps 5] [--compare-torch]
        [--gpus N]

One training step is forward, backward and an SGD-with-momentum update of
``resnet18_v1(classes=10, thumbnail=True)`` on random float32 images. Each
framework runs in its own child process, so its peak resident memory is its own;
with ``--compare-torch`` the same architecture runs in PyTorch in the same
invocation and the table gives the ratio.
"""
import argparse
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


def run_minigluon(batch_size, steps, warmup, gpus):
    sys.path.insert(0, os.path.dirname(HERE))
    import minigluon as mx
    from minigluon import autograd, gluon, nd
    from minigluon.gluon.model_zoo import vision

    ctx = mx.gpu(0) if gpus else mx.cpu(0)
    mx.random.seed(0)
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 0.01, 'momentum': 0.9, 'wd': 1e-4})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = nd.random.normal(shape=(batch_size, 3, 32, 32), ctx=ctx)
    y = nd.random.randint(0, 10, shape=(batch_size,), ctx=ctx).astype('float32')
    baseline = peak_rss_mb()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch_size)
        nd.waitall()

    return _time_steps(step, batch_size, steps, warmup, baseline)


def run_torch(batch_size, steps, warmup, gpus):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            residual = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + residual)

    def resnet18_thumbnail(classes=10):
        # minigluon/MXNet resnet18_v1(thumbnail=True): one 3x3 conv stem, no BN, no pool
        layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False)]
        cin = 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
        return nn.Sequential(*layers)

    device = 'cuda' if gpus else 'cpu'
    torch.manual_seed(0)
    net = resnet18_thumbnail().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch_size, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch_size,), device=device)
    baseline = peak_rss_mb()

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
        if gpus:
            torch.cuda.synchronize()

    return _time_steps(step, batch_size, steps, warmup, baseline)


def _time_steps(step, batch_size, steps, warmup, baseline):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    best = min(times)
    median = sorted(times)[len(times) // 2]
    return {'images_per_s': batch_size / median, 'best_images_per_s': batch_size / best,
            'peak_rss_mb': peak_rss_mb(), 'step_peak_over_setup_mb': peak_rss_mb() - baseline}


def child(framework, args):
    runner = run_minigluon if framework == 'minigluon' else run_torch
    result = runner(args.batch_size, args.steps, args.warmup, args.gpus)
    print(json.dumps(result))


def spawn(framework, args):
    cmd = [sys.executable, os.path.abspath(__file__), '--child', framework,
           '--batch-size', str(args.batch_size), '--steps', str(args.steps),
           '--warmup', str(args.warmup), '--gpus', str(args.gpus)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--gpus', type=int, default=0)
    parser.add_argument('--compare-torch', action='store_true')
    parser.add_argument('--child', choices=['minigluon', 'torch'], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args)

    frameworks = ['minigluon']
    if args.compare_torch:
        try:
            import torch  # noqa: F401
            frameworks.append('torch')
        except ImportError:
            print('PyTorch is not installed: `pip install torch==2.13.0` for --compare-torch')
    results = {fw: spawn(fw, args) for fw in frameworks}
    print('resnet18_v1(classes=10, thumbnail=True), batch %d, float32, %s, %s'
          % (args.batch_size, 'gpu' if args.gpus else 'cpu (%d cores)' % os.cpu_count(),
             platform.platform()))
    print('%-10s %14s %14s %16s %18s' % ('framework', 'images/s', 'best images/s',
                                          'peak RSS (MB)', 'step peak-setup MB'))
    for fw, r in results.items():
        print('%-10s %14.1f %14.1f %16.0f %18.0f' % (fw, r['images_per_s'], r['best_images_per_s'],
                                                     r['peak_rss_mb'], r['step_peak_over_setup_mb']))
    if 'torch' in results:
        mg, tc = results['minigluon'], results['torch']
        print('ratio minigluon/torch: speed %.2f, peak RSS %.2f'
              % (mg['images_per_s'] / tc['images_per_s'], mg['peak_rss_mb'] / tc['peak_rss_mb']))


if __name__ == '__main__':
    main()
