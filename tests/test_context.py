"""Contexts: identity, the ``with`` default stack, and the clear GPU-unavailable error."""
import copy
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_constructors_and_equality():
    assert mx.cpu() == mx.cpu(0) == mx.Context('cpu', 0) == mx.Context('cpu')
    assert mx.gpu(1) == mx.Context('gpu', 1)
    assert mx.cpu(0) != mx.cpu(1)
    assert mx.cpu(0) != mx.gpu(0)
    assert mx.gpu(0) != mx.gpu(1)
    assert mx.cpu(0) != 'cpu(0)' and mx.cpu(0) != 0
    assert mx.cpu(1).device_type == 'cpu' and mx.cpu(1).device_id == 1
    assert mx.gpu(2).device_type == 'gpu' and mx.gpu(2).device_id == 2
    assert mx.Context(mx.cpu(3)) == mx.cpu(3)
    assert mx.Context(1, 0) == mx.cpu(0) and mx.Context(2, 0) == mx.gpu(0)  # MXNet type ids
    assert mx.cpu(0).device_typeid == 1 and mx.gpu(0).device_typeid == 2


def test_hashing_and_repr():
    assert hash(mx.cpu(0)) == hash(mx.Context('cpu', 0))
    table = {mx.cpu(0): 'a', mx.cpu(1): 'b', mx.gpu(0): 'c'}
    assert len(table) == 3
    assert table[mx.Context('cpu', 1)] == 'b'
    assert table[mx.Context('gpu', 0)] == 'c'
    assert len({mx.cpu(0), mx.cpu(), mx.Context('cpu', 0)}) == 1
    assert repr(mx.cpu(0)) == 'cpu(0)' and str(mx.gpu(1)) == 'gpu(1)'


def test_invalid_context_arguments():
    with pytest.raises(MXNetError, match='device type'):
        mx.Context('tpu', 0)
    with pytest.raises(MXNetError, match='non-negative'):
        mx.cpu(-1)


def test_default_is_cpu0():
    assert mx.current_context() == mx.cpu(0)
    assert nd.zeros((2,)).context == mx.cpu(0)


def test_with_sets_current_context_nested():
    with mx.Context('cpu', 1) as c:
        assert c == mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
        assert nd.ones((2, 2)).context == mx.cpu(1)
        assert nd.array([1, 2]).context == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
            assert nd.zeros((1,)).context == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


def test_with_restores_after_exception():
    with pytest.raises(RuntimeError):
        with mx.cpu(1):
            with mx.cpu(2):
                assert mx.current_context() == mx.cpu(2)
                raise RuntimeError('boom')
    assert mx.current_context() == mx.cpu(0)
    with pytest.raises(ValueError):
        with mx.cpu(1):
            try:
                with mx.cpu(3):
                    raise ValueError('inner')
            finally:
                assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


def test_same_context_nested_twice():
    c = mx.cpu(5)
    with c:
        with c:
            assert mx.current_context() == c
        assert mx.current_context() == c
    assert mx.current_context() == mx.cpu(0)


def test_default_context_is_per_thread():
    seen = []

    def worker():
        seen.append(mx.current_context())

    with mx.cpu(4):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert mx.current_context() == mx.cpu(4)
    assert seen == [mx.cpu(0)]


def test_explicit_ctx_beats_default():
    with mx.cpu(1):
        a = nd.zeros((2,), ctx=mx.cpu(0))
    assert a.context == mx.cpu(0)
    np.testing.assert_array_equal(a.asnumpy(), np.zeros(2, np.float32))


@pytest.mark.skipif(mx.num_gpus() > 0, reason='a GPU is visible here')
def test_num_gpus_is_zero_without_gpu():
    assert mx.num_gpus() == 0


@pytest.mark.skipif(mx.num_gpus() > 0, reason='a GPU is visible here')
def test_gpu_allocation_raises_clear_error():
    ctx = mx.gpu(0)  # naming a GPU context is fine; using it is not
    assert ctx.device_type == 'gpu'
    for make in (lambda: nd.zeros((2, 3), ctx=ctx),
                 lambda: nd.array([1, 2, 3], ctx=ctx),
                 lambda: nd.ones((2,), ctx=ctx),
                 lambda: nd.random.uniform(shape=(2,), ctx=ctx),
                 lambda: nd.zeros((2,)).copyto(ctx),
                 lambda: nd.zeros((2,)).as_in_context(ctx)):
        with pytest.raises(MXNetError) as info:
            make()
        msg = str(info.value)
        assert 'gpu(0)' in msg
        assert 'CuPy' in msg  # names the cause: CuPy missing or no visible CUDA device
    with mx.gpu(0):
        with pytest.raises(MXNetError, match='CuPy'):
            nd.zeros((1,))
    # cpu still works afterwards
    assert nd.zeros((1,)).asnumpy().tolist() == [0.0]


def test_import_does_not_import_cupy():
    if mx.backend.cupy is not None:
        pytest.skip('CuPy is installed, so importing it is expected')
    out = subprocess.run([sys.executable, '-c',
                          "import minigluon, sys; print('cupy' in sys.modules)"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'False'


def test_host_memory_kinds_hold_numpy_arrays():
    for kind, typeid in (('cpu_pinned', 3), ('cpu_shared', 5)):
        ctx = mx.Context(kind, 0)
        assert ctx.device_typeid == typeid and mx.Context(typeid, 0) is ctx
        arr = mx.nd.array([1.0, 2.0], ctx=ctx)
        assert arr.context == ctx and isinstance(arr.handle, np.ndarray)
        assert arr.as_in_context(mx.cpu()).asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(mx.MXNetError, match='unknown device type'):
        mx.Context('tpu', 0)


def test_deprecated_default_ctx_reads_and_sets_this_threads_default():
    # MXNet 1.x scripts (and its test_gluon_rnn) save, set and restore Context.default_ctx
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.cpu(0)
    with pytest.warns(DeprecationWarning):
        mx.Context.default_ctx = mx.cpu(2)
    try:
        assert mx.current_context() == mx.cpu(2)
        assert nd.zeros((1,)).context == mx.cpu(2)
        with mx.cpu(3):
            assert mx.current_context() == mx.cpu(3)
        assert mx.current_context() == mx.cpu(2)
    finally:
        with pytest.warns(DeprecationWarning):
            mx.Context.default_ctx = None
    assert mx.current_context() == mx.cpu(0)


def test_copies_of_a_context_are_the_context():
    # a deep copy of Parameters (MXNet's tests copy a ParameterDict) keeps their devices
    assert copy.copy(mx.cpu(1)) is mx.cpu(1) and copy.deepcopy([mx.cpu(2)])[0] is mx.cpu(2)


def test_host_contexts_mix_in_ops_as_in_mxnet():
    # MXNet 1.9.1: CPU contexts share memory; an op's result is on its first input's
    # context, a pinned or shared one becoming cpu(i); copies and views keep theirs.
    a, b = nd.ones((2,), ctx=mx.cpu(0)), nd.ones((2,), ctx=mx.cpu(1))
    pinned = nd.ones((2,), ctx=mx.cpu_pinned(1))
    assert (a + b).context == mx.cpu(0) and (b + a).context == mx.cpu(1)
    assert (a + b).asnumpy().tolist() == [2, 2]
    assert nd.concat(b, a, dim=0).context == mx.cpu(1)
    assert (pinned + a).context == mx.cpu(1) and (-pinned).context == mx.cpu(1)
    assert (a + pinned).context == mx.cpu(0)
    for kept in (pinned.astype('float64'), pinned.copy(), pinned.reshape((1, 2)), pinned[0:1]):
        assert kept.context == mx.cpu_pinned(1)
    out = nd.zeros((2,), ctx=mx.cpu(3))
    out[:] = a
    a[:] = b
    a += b
    assert a.context == mx.cpu(0) and a.asnumpy().tolist() == [2, 2]
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = (b * a * 3 + a).sum()
    y.backward()
    assert a.grad.context == mx.cpu(0) and a.grad.asnumpy().tolist() == [4, 4]
    assert b.grad.context == mx.cpu(1) and b.grad.asnumpy().tolist() == [6, 6]


@pytest.mark.skipif(mx.num_gpus() == 0, reason='needs a GPU to mix with the CPU')
def test_cpu_and_gpu_do_not_mix():
    for host in (mx.cpu(1), mx.cpu_pinned(0)):
        with pytest.raises(MXNetError, match='different contexts'):
            nd.ones((2,), ctx=host) + nd.ones((2,), ctx=mx.gpu(0))
        with pytest.raises(MXNetError, match='is on'):
            nd.ones((2,), ctx=host)[:] = nd.ones((2,), ctx=mx.gpu(0))
