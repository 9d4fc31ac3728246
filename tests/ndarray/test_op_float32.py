"""Every differentiable op in float32 against float64 on the same inputs, forward and
backward.

The inputs are rounded to float32 first and the float64 run starts from exactly those
values, so a difference is the op's own float32 arithmetic. Every case of the op table
(``op_cases.py``) runs with its inputs as given and, where an input is 4-D or 5-D, also
in channels-last memory: that is what convolutions return inside a network, and an op
that is exact on a C-contiguous array can sum a channels-last one less carefully (the
BatchNorm statistics once did, which cost whole networks 1e-2 in their gradients).
``LARGE`` adds inputs big enough for accumulated rounding to show, with a bound close
to float32's own resolution.
"""
import numpy as np
import pytest

from minigluon import autograd, nd
from op_cases import CASES, Case, r

# max |float32 - float64| / max |float64| of every output and gradient
TOLERANCE = 1e-5
# for LARGE: tens of thousands of terms per sum, still within a few roundings
TOLERANCE_LARGE = 1e-6

_ROWS = np.random.RandomState(1)


def _rows(*shape):
    """Values with a mean well away from zero, as activations have: a sum over them
    accumulates a large total, the case where naive float32 summation loses most."""
    return _ROWS.uniform(-1, 1, size=shape) + 0.5


LARGE = {
    'BatchNorm, channels-last, 65,536 rows': Case(
        lambda x, g, b, m, v: nd.BatchNorm(x.transpose((0, 3, 1, 2)), g, b, m, v,
                                           fix_gamma=False, training=True),
        _rows(64, 32, 32, 4), r(4) + 1.5, r(4), r(4), r(4, low=0.5, high=1),
        grad_nodes=[0, 1, 2]),
    'BatchNorm, channels-first, 65,536 rows': Case(
        lambda x, g, b, m, v: nd.BatchNorm(x, g, b, m, v, fix_gamma=False, training=True),
        _rows(64, 4, 32, 32), r(4) + 1.5, r(4), r(4), r(4, low=0.5, high=1),
        grad_nodes=[0, 1, 2]),
    'BatchNorm, (N, C), 65,536 rows': Case(
        lambda x, g, b, m, v: nd.BatchNorm(x, g, b, m, v, fix_gamma=False, training=True),
        _rows(65536, 4), r(4) + 1.5, r(4), r(4), r(4, low=0.5, high=1), grad_nodes=[0, 1, 2]),
    'LayerNorm, gamma and beta over 16,384 rows': Case(
        lambda x, g, b: nd.LayerNorm(x, g, b), r(16384, 16), r(16) + 1.5, r(16)),
    'InstanceNorm over 16,384 pixels': Case(
        lambda x, g, b: nd.InstanceNorm(x, g, b), _rows(2, 3, 128, 128), r(3) + 1.5, r(3)),
    'Convolution bias over 65,536 positions': Case(
        lambda x, w, b: nd.Convolution(x, w, b, kernel=(1, 1), num_filter=16),
        _rows(64, 8, 32, 32), r(16, 8, 1, 1), r(16)),
    'FullyConnected bias over 65,536 rows': Case(
        lambda x, w, b: nd.FullyConnected(x, w, b, num_hidden=16), _rows(65536, 8),
        r(16, 8), r(16)),
    'global average pooling of channels-last 64x64': Case(
        lambda x: nd.Pooling(x.transpose((0, 3, 1, 2)), pool_type='avg', global_pool=True),
        _rows(4, 64, 64, 8)),
    'sum over axis 0 of 65,536 rows': Case(lambda x: nd.sum(x, axis=0), _rows(65536, 4)),
    'mean over the batch of a channels-last array': Case(
        lambda x: nd.mean(x.transpose((0, 3, 1, 2)), axis=(0, 2, 3)), _rows(64, 32, 32, 4)),
    'gradient of a broadcast bias over 65,536 rows': Case(
        lambda x, b: x + b, _rows(65536, 4), r(4)),
}


def _case_params():
    for name, cases in sorted(CASES.items()):
        for i, case in enumerate(cases):
            yield pytest.param(name, case, 'given', id='%s-%d' % (name, i))
            if any(np.ndim(a) in (4, 5) for a in case.inputs):
                yield pytest.param(name, case, 'channels-last', id='%s-%d-cl' % (name, i))


def _leaf(values, dtype, layout, ctx):
    """An NDArray of ``values``; with ``channels-last``, a channels-first view of
    channels-last memory (as a convolution returns)."""
    if layout == 'channels-last' and values.ndim in (4, 5):
        last = nd.array(np.ascontiguousarray(np.moveaxis(values, 1, -1)), ctx=ctx, dtype=dtype)
        first = last.transpose((0, values.ndim - 1) + tuple(range(1, values.ndim - 1)))
        return first
    return nd.array(values, ctx=ctx, dtype=dtype)


def _run(case, dtype, layout, ctx):
    """Forward outputs and input gradients (as float64 numpy) of ``case`` in ``dtype``."""
    grad_nodes = case.grad_nodes if case.grad_nodes is not None else range(len(case.inputs))
    # float32 values in both runs: the comparison sees only the op's arithmetic
    inputs = [_leaf(np.asarray(a, np.float32), dtype, layout, ctx) for a in case.inputs]
    for i in grad_nodes:
        inputs[i].attach_grad()
    with autograd.record():
        out = case.fn(*inputs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    rng = np.random.RandomState(2)
    heads = [nd.array(rng.uniform(-1, 1, o.shape).astype(np.float32), ctx=o.context,
                      dtype=o.dtype) for o in outs]
    autograd.backward(outs, heads)
    return ([('output %d' % k, o.asnumpy()) for k, o in enumerate(outs)]
            + [('gradient of input %d' % i, inputs[i].grad.asnumpy()) for i in grad_nodes])


def _check(case, layout, ctx, tolerance):
    single = _run(case, np.float32, layout, ctx)
    double = _run(case, np.float64, layout, ctx)
    for (what, a), (_, b) in zip(single, double):
        assert a.shape == b.shape, what
        a, b = a.astype(np.float64), b.astype(np.float64)
        scale = np.abs(b).max() if b.size else 0.0
        err = np.abs(a - b).max() / scale if scale else np.abs(a - b).max(initial=0.0)
        assert err <= tolerance, (
            '%s: float32 differs from float64 by %.2e of its largest value (bound %.0e)'
            % (what, err, tolerance))


@pytest.mark.parametrize('name,case,layout', list(_case_params()))
def test_float32_matches_float64(name, case, layout, ctx):
    _check(case, layout, ctx, TOLERANCE)


@pytest.mark.parametrize('name', sorted(LARGE))
def test_float32_accumulates_large_sums_accurately(name, ctx):
    layout = 'given'
    _check(LARGE[name], layout, ctx, TOLERANCE_LARGE)
