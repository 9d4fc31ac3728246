"""The Trainer's overlap of kvstore communication with backward, in one process (a
'device' store over two cpu contexts): which gradients backward may push, and that
the weights are those of the plain step. tests/kvstore/test_dist_overlap.py runs it on
real distributed jobs."""
import hashlib

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
from minigluon.base import MXNetError
from minigluon.gluon.reducer import overlap_from_env

CTXS = [mx.cpu(0), mx.cpu(1)]


def _setup(overlap, update_on_kvstore=True):
    mx.random.seed(5)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, in_units=4, activation='tanh'), gluon.nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier(), ctx=CTXS)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01},
                            kvstore='device', update_on_kvstore=update_on_kvstore,
                            overlap=overlap)
    return net, trainer


def _backward(net, step, passes=1):
    rng = np.random.RandomState(step)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(passes):
        x = nd.array(rng.normal(size=(8, 4)))
        y = nd.array(rng.randint(0, 3, size=8))
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(gluon.utils.split_and_load(x, CTXS),
                                                         gluon.utils.split_and_load(y, CTXS))]
        autograd.backward(losses)


def _digest(net):
    return [hashlib.sha256(d.asnumpy().tobytes()).hexdigest()
            for p in net.collect_params().values() for d in p.list_data()]


def _train(overlap, steps=4, clip_at=(), update_on_kvstore=True):
    net, trainer = _setup(overlap, update_on_kvstore)
    early = []
    for step in range(steps):
        _backward(net, step)
        early.append(len(trainer._reducer._early))
        if step in clip_at:  # the program takes the gradients between backward and step
            grads = [g for p in net.collect_params().values() for g in p.list_grad()]
            gluon.utils.clip_global_norm(grads, 0.01)
        trainer.step(8)
    return _digest(net), early


@pytest.mark.parametrize('update_on_kvstore', [True, False])
def test_backward_pushes_from_the_second_step_with_the_plain_steps_numbers(update_on_kvstore):
    plain, plain_early = _train(False, update_on_kvstore=update_on_kvstore)
    overlapped, early = _train(True, update_on_kvstore=update_on_kvstore)
    assert plain_early == [0, 0, 0, 0]
    assert early == [0, 4, 4, 4]  # every parameter, once both devices' gradients are in
    assert overlapped == plain


def test_gradients_taken_before_the_step_are_pushed_by_the_step():
    # clipping in every step: backward never pushes; the clipped values reach the store
    plain, _ = _train(False, clip_at=range(4))
    overlapped, early = _train(True, clip_at=range(4))
    assert early == [0, 0, 0, 0] and overlapped == plain


def test_a_pushed_gradient_is_read_only_until_the_step():
    # clipping only in step 2: backward pushed already, and the change is refused
    net, trainer = _setup(True)
    _backward(net, 0)
    trainer.step(8)
    _backward(net, 1)
    grad = net[0].weight.grad(CTXS[0])
    before = grad.asnumpy()
    with pytest.raises(MXNetError, match='read-only'):
        grad[:] = 0
    np.testing.assert_array_equal(grad.asnumpy(), before)
    trainer.step(8)
    grad[:] = 0  # writable again after the step


def test_more_backward_passes_than_in_the_last_step_is_a_clear_error():
    net, trainer = _setup(True)
    _backward(net, 0)
    trainer.step(8)
    with pytest.raises(MXNetError, match='overlap=False'):
        _backward(net, 1, passes=2)


def test_two_backward_passes_per_step_push_after_the_second():
    # grad_req='write': only the second pass counts; learned from the first step
    def run(overlap):
        net, trainer = _setup(overlap)
        early = []
        for step in range(3):
            _backward(net, step, passes=2)
            early.append(len(trainer._reducer._early))
            trainer.step(8)
        return _digest(net), early
    plain, _ = run(False)
    overlapped, early = run(True)
    assert early == [0, 4, 4] and overlapped == plain


def test_the_overlap_variable_must_be_0_or_1(monkeypatch):
    monkeypatch.setenv('MINIGLUON_KVSTORE_OVERLAP', 'yes')
    with pytest.raises(MXNetError, match='MINIGLUON_KVSTORE_OVERLAP'):
        overlap_from_env()
    monkeypatch.setenv('MINIGLUON_KVSTORE_OVERLAP', '0')
    assert overlap_from_env() is False
