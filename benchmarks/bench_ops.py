"""Per-call overhead of minigluon ops over the raw numpy calls they make.

Usage: python benchmarks/bench_ops.py [--repeat N] [--number N] [--smoke]

For tiny arrays the numpy work is negligible, so the difference is the framework's
cost per call: context checks, dispatch through the op table, wrapping the result,
and (with autograd) recording a tape node and running backward. ``--smoke`` times one
repeat of 100 calls (the test suite's check that the script still works).
"""
import argparse
import platform
import timeit

import numpy as np

import minigluon as mx
from minigluon import autograd, nd


def per_call_us(fn, number, repeat):
    """Best-of-``repeat`` microseconds per call (least disturbed by other load)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=7)
    parser.add_argument('--number', type=int, default=20000)
    parser.add_argument('--smoke', action='store_true',
                        help='one repeat of 100 calls: does it run?')
    args = parser.parse_args()
    if args.smoke:
        args.repeat, args.number = 1, 100

    a_np, b_np = np.ones(4, np.float32), np.ones(4, np.float32)
    a, b = nd.array(a_np), nd.array(b_np)
    w = nd.array(a_np)
    w.attach_grad()
    ones = np.ones(4, np.float32)

    def numpy_fwd_bwd():
        y = np.maximum(a_np, 0)
        return ones * (y > 0)

    def record_fwd_bwd():
        with autograd.record():
            y = nd.relu(w)
        y.backward()

    rows = [
        ('relu forward', lambda: nd.relu(a), lambda: np.maximum(a_np, 0)),
        ('x.relu() method', lambda: a.relu(), lambda: np.maximum(a_np, 0)),
        ('a + b operator', lambda: a + b, lambda: a_np + b_np),
        ('a * 2 (scalar)', lambda: a * 2, lambda: a_np * 2),
        ('sum(axis=0)', lambda: a.sum(axis=0), lambda: a_np.sum(axis=0, keepdims=True)),
        ('relu record+backward', record_fwd_bwd, numpy_fwd_bwd),
    ]
    print('minigluon op overhead over raw numpy, tiny float32 arrays (shape (4,))')
    print('machine: %s, %s, Python %s, numpy %s' % (platform.machine(), platform.processor() or
                                                    platform.platform(), platform.python_version(),
                                                    np.__version__))
    print('%-24s %12s %12s %14s' % ('call', 'minigluon us', 'numpy us', 'overhead us'))
    worst = 0.0
    for name, ours, ref in rows:
        t_ours = per_call_us(ours, args.number, args.repeat)
        t_ref = per_call_us(ref, args.number, args.repeat)
        worst = max(worst, t_ours - t_ref)
        print('%-24s %12.2f %12.2f %14.2f' % (name, t_ours, t_ref, t_ours - t_ref))
    print('largest overhead: %.2f us per op call (target: under 10 us)' % worst)


if __name__ == '__main__':
    mx.random.seed(0)
    main()
