"""Helpers for Gluon tests: a float64 gradient check of whole Blocks, and float32
gradients of whole networks against float64."""
import itertools

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.ndarray.registry import all_ops
from minigluon.test_utils import assert_almost_equal


def check_block_gradient(block, inputs, train=True, seed=None, samples=None, params=None,
                         eps=1e-6, rtol=1e-5, atol=1e-7):
    """Compare autograd gradients of ``sum(block(*inputs) * head)`` with central differences.

    ``block`` must already hold float64 parameters on cpu. ``inputs`` are numpy arrays;
    floating ones are differentiated too. ``params`` names the parameters to check by
    structural name (``features.0.weight``; all with a gradient by default); ``samples``
    checks that many random entries of each array instead of all of them. ``seed`` reseeds before every forward pass, so a
    random layer (Dropout) draws the same mask each time. Returns the forward output.
    """
    rng = np.random.RandomState(0)
    xs = [nd.array(a, dtype=a.dtype) for a in inputs]
    for x in xs:
        if x.dtype in (np.float32, np.float64):
            x.attach_grad()
    all_params = block.collect_params()
    if params is None:
        params = [p for p in all_params.values() if p.grad_req != 'null']
    else:
        by_path = block._collect_params_with_prefix()
        params = [by_path[name] for name in params]

    def forward():
        if seed is not None:
            mx.random.seed(seed)
        return block(*xs)

    with autograd.record(train_mode=train):
        out = forward()
    head = rng.normal(size=out.shape)
    out.backward(nd.array(head, dtype=out.dtype))

    def objective():
        with autograd.pause(train_mode=train):
            return float((forward().asnumpy().astype(np.float64) * head).sum())

    targets = [(x._data, x.grad.asnumpy(), 'input %d' % i) for i, x in enumerate(xs)
               if x.grad is not None]
    targets += [(p.data()._data, p.grad().asnumpy(), p.name) for p in params]
    for raw, analytic, label in targets:
        flat, analytic = raw.reshape(-1), analytic.reshape(-1)
        assert np.shares_memory(flat, raw)
        picks = range(flat.size) if samples is None else \
            rng.choice(flat.size, min(samples, flat.size), replace=False)
        for i in picks:
            old = flat[i]
            flat[i] = old + eps
            plus = objective()
            flat[i] = old - eps
            minus = objective()
            flat[i] = old
            assert_almost_equal(analytic[i], (plus - minus) / (2 * eps), rtol=rtol, atol=atol,
                                names=('autograd d/d %s[%d]' % (label, i),
                                       'numeric d/d %s[%d]' % (label, i)))
    return out


@pytest.fixture
def block_gradient():
    """``check_block_gradient`` for tests of layers and models."""
    return check_block_gradient


def _relu_sides(xp, data, kwargs):
    return (data > 0,)


def _relu_replay(xp, data, sides, kwargs):
    positive, = sides
    return xp.where(positive, data, 0), lambda dy: (dy * positive,)


def _clip_sides(xp, data, kwargs):
    return (data < kwargs['a_min'], data > kwargs['a_max'])


def _clip_replay(xp, data, sides, kwargs):
    below, above = sides
    inside = ~(below | above)
    out = xp.where(below, kwargs['a_min'], xp.where(above, kwargs['a_max'], data))
    return out.astype(data.dtype), lambda dy: (dy * inside,)


def _is_max_pool(kw):
    return (kw.get('pool_type', 'max') == 'max' and not kw.get('global_pool')
            and kw.get('layout') in (None, 'NCW', 'NCHW', 'NCDHW'))


def _max_pool_windows(xp, data, kw):
    """Each kernel offset's window of max pooling as a strided view of the padded input
    (stacked), the padded shape, and the slices of each offset and of the unpadded input."""
    dims = data.ndim - 2
    kernel = tuple(kw['kernel']) if not isinstance(kw['kernel'], int) else (kw['kernel'],) * dims
    stride = tuple(kw.get('stride') or (1,) * dims)
    pad = tuple(kw.get('pad') or (0,) * dims)
    out_sp, extra = [], []
    for n, k, s, p in zip(data.shape[2:], kernel, stride, pad):
        span = n + 2 * p - k
        o = (-(-span // s) if kw.get('pooling_convention') == 'full' else span // s) + 1
        out_sp.append(o)
        extra.append(max(0, (o - 1) * s + k - (n + 2 * p)))
    padded = xp.full(data.shape[:2] + tuple(n + 2 * p + e for n, p, e in
                                            zip(data.shape[2:], pad, extra)),
                     xp.finfo(data.dtype).min, dtype=data.dtype)
    unpad = (slice(None),) * 2 + tuple(slice(p, p + n) for p, n in zip(pad, data.shape[2:]))
    padded[unpad] = data
    slices = [(slice(None),) * 2 + tuple(slice(o, o + s * (m - 1) + 1, s)
                                         for o, s, m in zip(off, stride, out_sp))
              for off in itertools.product(*(range(k) for k in kernel))]
    return xp.stack([padded[sl] for sl in slices]), padded.shape, slices, unpad


def _max_pool_sides(xp, data, kwargs):
    # the offset each output takes: the first of the largest, as the op breaks ties
    return (_max_pool_windows(xp, data, kwargs)[0].argmax(axis=0),)


def _max_pool_replay(xp, data, sides, kwargs):
    taken, = sides
    windows, padded_shape, slices, unpad = _max_pool_windows(xp, data, kwargs)

    def backward(dy):
        grad = xp.zeros(padded_shape, dtype=dy.dtype)
        for i, sl in enumerate(slices):
            grad[sl] += dy * (taken == i)
        return (grad[unpad],)
    return xp.take_along_axis(windows, taken[None], axis=0)[0], backward


# op name -> (is this call a kink?, which side of its kinks each input is on, the op
# computed with given sides); max pooling's kinks are its ties
_KINKS = {
    'relu': (lambda kw: True, _relu_sides, _relu_replay),
    'Activation': (lambda kw: kw.get('act_type') == 'relu', _relu_sides, _relu_replay),
    'clip': (lambda kw: True, _clip_sides, _clip_replay),
    'Pooling': (_is_max_pool, _max_pool_sides, _max_pool_replay),
}


class KinkDecisions:
    """Records on which side of its kinks every input of ReLU, clip and max pooling lay
    in one pass and replays those decisions in a later pass.

    An input within float32 rounding of a kink can land on either side of it, in
    PyTorch as here; its gradient then differs by that element's whole output gradient.
    Comparing float32 with float64 at the same point of the piecewise-linear function
    (float32's decisions in both) measures the arithmetic; ``flipped`` counts the
    decisions the float64 pass would have made otherwise, of ``seen``.
    """

    def __init__(self):
        self.decisions, self.replaying, self.used, self.flipped, self.seen = [], False, 0, 0, 0

    def _wrap(self, forward, applies, sides_of, replay):
        def run(xp, data, *args, **kwargs):
            if args or not applies(kwargs):
                return forward(xp, data, *args, **kwargs)
            if not self.replaying:
                self.decisions.append(sides_of(xp, data, kwargs))
                return forward(xp, data, **kwargs)
            sides = self.decisions[self.used]
            self.used += 1
            for recorded, now in zip(sides, sides_of(xp, data, kwargs)):
                self.flipped += int((recorded != now).sum())
                self.seen += recorded.size
            return replay(xp, data, sides, kwargs)
        return run

    def __enter__(self):
        ops = all_ops()
        self._saved = {name: ops[name].forward for name in _KINKS}
        for name, (applies, sides_of, replay) in _KINKS.items():
            ops[name].forward = self._wrap(self._saved[name], applies, sides_of, replay)
        return self

    def __exit__(self, *exc):
        ops = all_ops()
        for name, forward in self._saved.items():
            ops[name].forward = forward


def relative_errors(single, double):
    """``max |a - b| / max |b|`` for each name in the dicts of numpy arrays.

    An array that is zero in exact arithmetic (the gradient of a bias just before
    BatchNorm: float64 gives 1e-18, float32 its rounding noise) is measured against the
    largest entry of all the arrays instead of its own.
    """
    # one pass over each array for its scale and one for its error: AlexNet's are 60M values
    scales = {name: np.abs(b).max(initial=0.0) for name, b in double.items()}
    largest = max(scales.values())
    out = {}
    for name, b in double.items():
        a, b = single[name], np.asarray(b, np.float64)
        scale = scales[name]
        if scale < 1e-9 * largest:
            scale = largest
        # float32 minus float64 is computed in float64
        out[name] = np.abs(a - b).max(initial=0.0) / scale if scale else np.abs(a).max()
    return out


def compare_float32_float64(net, run):
    """``run(dtype)`` (a dict of numpy arrays) with ``net`` cast to float32, then to
    float64 with float32's decisions at the kinks of ReLU, clip and max pooling; returns
    the ``relative_errors`` of the two and the ``KinkDecisions``. ``net`` is left in
    float64."""
    results = {}
    with KinkDecisions() as kinks:
        for dtype in ('float32', 'float64'):
            net.cast(dtype)
            results[dtype] = run(dtype)
            kinks.replaying = True
    return relative_errors(results['float32'], results['float64']), kinks


def parameter_gradients(net, inputs, label, dtype, loss=None):
    """Gradients of ``loss(net(*inputs), label)`` (numpy inputs, taken in ``dtype`` where
    floating) for every trainable parameter of ``net``, by name."""
    loss = loss or gluon.loss.SoftmaxCrossEntropyLoss()
    xs = [nd.array(x, dtype=dtype if x.dtype.kind == 'f' else x.dtype) for x in inputs]
    with autograd.record():
        out = loss(net(*xs), nd.array(label, dtype=dtype))
    out.backward()
    return {name: p.grad().asnumpy() for name, p in net.collect_params().items()
            if p.grad_req != 'null'}


@pytest.fixture
def float32_vs_float64():
    """``compare_float32_float64`` for tests of layers and models."""
    return compare_float32_float64


@pytest.fixture
def gradients_of():
    """``parameter_gradients`` for tests of layers and models."""
    return parameter_gradients
