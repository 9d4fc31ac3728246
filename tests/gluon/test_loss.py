"""gluon.loss against numpy references: values, weighting, stability and gradients."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon, nd
from minigluon.gluon import loss as gloss
from minigluon.test_utils import assert_almost_equal, check_numeric_gradient

rng = np.random.RandomState(0)


def _log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _per_sample(loss):
    return loss.reshape(loss.shape[0], -1).mean(axis=1)


def _run(loss_fn, pred, label, *extra, ctx=mx.cpu()):
    args = [nd.array(a, ctx=ctx, dtype='float64') for a in (pred, label) + extra]
    return loss_fn(*args).asnumpy()


PRED = rng.normal(size=(4, 5))
TARGET = rng.normal(size=(4, 5))
SIGNS = rng.choice([-1.0, 1.0], size=(4, 5))
BINARY = (SIGNS > 0).astype(np.float64)
SOFT = np.exp(_log_softmax(rng.normal(size=(4, 5))))

# name -> (loss, pred, label, numpy reference of the per-element loss)
CASES = {
    'L2': (gloss.L2Loss(), PRED, TARGET, lambda p, l: 0.5 * (p - l) ** 2),
    'L1': (gloss.L1Loss(), PRED, TARGET, lambda p, l: np.abs(p - l)),
    'softmax_ce': (gloss.SoftmaxCrossEntropyLoss(), PRED, np.array([0, 4, 2, 1.]),
                   lambda p, l: -_log_softmax(p)[np.arange(4), l.astype(int)]),
    'softmax_ce_dense': (gloss.SoftmaxCELoss(sparse_label=False), PRED, SOFT,
                         lambda p, l: -(_log_softmax(p) * l).sum(axis=-1)),
    'sigmoid_bce': (gloss.SigmoidBinaryCrossEntropyLoss(), PRED, BINARY,
                    lambda p, l: -(l * np.log(1 / (1 + np.exp(-p)))
                                   + (1 - l) * np.log(1 - 1 / (1 + np.exp(-p))))),
    'kl_div': (gloss.KLDivLoss(from_logits=False), PRED, SOFT,
               lambda p, l: l * (np.log(l + 1e-12) - _log_softmax(p))),
    'huber': (gloss.HuberLoss(rho=0.7), PRED, TARGET,
              lambda p, l: np.where(np.abs(p - l) > 0.7, np.abs(p - l) - 0.35,
                                    0.5 / 0.7 * (p - l) ** 2)),
    'hinge': (gloss.HingeLoss(margin=1.5), PRED, SIGNS,
              lambda p, l: np.maximum(0, 1.5 - p * l)),
    'squared_hinge': (gloss.SquaredHingeLoss(), PRED, SIGNS,
                      lambda p, l: np.maximum(0, 1 - p * l) ** 2),
    'logistic': (gloss.LogisticLoss(), PRED, SIGNS, lambda p, l: np.log1p(np.exp(-p * l))),
    'logistic_binary': (gloss.LogisticLoss(label_format='binary'), PRED, BINARY,
                        lambda p, l: np.log1p(np.exp(-p * (2 * l - 1)))),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_value_matches_numpy(name, ctx):
    loss_fn, pred, label, ref = CASES[name]
    out = _run(loss_fn, pred, label, ctx=ctx)
    assert out.shape == (4,)
    assert_almost_equal(out, _per_sample(ref(pred, label)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize('name', sorted(CASES))
def test_gradient_matches_finite_differences(name):
    loss_fn, pred, label, _ = CASES[name]
    lab = nd.array(label, dtype='float64')
    check_numeric_gradient(lambda p: loss_fn(p, lab), [pred], numeric_eps=1e-6, rtol=1e-5,
                           atol=1e-8)


def test_weight_and_sample_weight():
    pred, label = PRED, TARGET
    base = _per_sample(np.abs(pred - label))
    assert_almost_equal(_run(gloss.L1Loss(weight=3), pred, label), 3 * base)
    sample_weight = np.array([[1.], [0.], [2.], [0.5]])
    out = _run(gloss.L1Loss(), pred, label, sample_weight)
    assert_almost_equal(out, base * sample_weight[:, 0])
    assert_almost_equal(_run(gloss.L2Loss(weight=4), pred, label),
                        _per_sample(2 * (pred - label) ** 2))
    with pytest.raises(mx.MXNetError, match='weight must be a number'):
        gloss.L1Loss(weight=nd.ones((1,)))(nd.ones((2, 2)), nd.ones((2, 2)))


def test_batch_axis():
    pred, label = PRED.T, TARGET.T  # samples along axis 1
    out = _run(gloss.L2Loss(batch_axis=1), pred, label)
    assert_almost_equal(out, (0.5 * (pred - label) ** 2).mean(axis=0))


def test_softmax_ce_class_axis_and_from_logits():
    pred = rng.normal(size=(2, 3, 4))  # classes on axis 1
    label = np.array([[0, 2, 1, 1], [2, 2, 0, 1.]])
    out = _run(gloss.SoftmaxCrossEntropyLoss(axis=1), pred, label)
    logp = _log_softmax(pred, axis=1)
    ref = -np.take_along_axis(logp, label.astype(int)[:, None], axis=1)[:, 0]
    assert_almost_equal(out, ref.mean(axis=1))
    from_logits = _run(gloss.SoftmaxCrossEntropyLoss(axis=1, from_logits=True), logp, label)
    assert_almost_equal(from_logits, out)


def test_softmax_ce_label_of_the_wrong_size_is_explained():
    with pytest.raises(mx.MXNetError, match='sparse_label=False'):
        gloss.SoftmaxCELoss()(nd.ones((4, 5)), nd.ones((4, 2)))
    with pytest.raises(mx.MXNetError, match=r'L2Loss: label of shape \(3,\) does not match '
                                            r'pred of shape \(4, 5\)'):
        gloss.L2Loss()(nd.ones((4, 5)), nd.ones((3,)))


def test_large_logits_stay_finite():
    pred = nd.array([[1000., -1000., 0.], [-1e4, 1e4, 5.]], dtype='float32')
    ce = gloss.SoftmaxCrossEntropyLoss()(pred, nd.array([1, 0])).asnumpy()
    assert np.isfinite(ce).all()
    assert_almost_equal(ce, [2000.0 / 1, 2e4], rtol=1e-6)
    bce = gloss.SigmoidBCELoss()(pred, nd.array([[0, 1, 1], [1, 0, 1.]])).asnumpy()
    assert np.isfinite(bce).all()
    assert_almost_equal(bce, [(1000 + 1000 + np.log(2)) / 3,
                              (1e4 + 1e4 + np.log1p(np.exp(-5.))) / 3], rtol=1e-6)
    logistic = gloss.LogisticLoss()(pred, nd.array([[-1, 1, 1], [1, -1, 1.]])).asnumpy()
    assert np.isfinite(logistic).all()


def test_sigmoid_bce_from_sigmoid_and_pos_weight():
    prob = 1 / (1 + np.exp(-PRED))
    out = _run(gloss.SigmoidBCELoss(from_sigmoid=True), prob, BINARY)
    assert_almost_equal(out, _run(gloss.SigmoidBCELoss(), PRED, BINARY), rtol=1e-8)
    pos_weight = np.full((1, 5), 3.0)
    loss = gloss.SigmoidBCELoss()
    out = loss(nd.array(PRED, dtype='float64'), nd.array(BINARY, dtype='float64'), None,
               nd.array(pos_weight, dtype='float64')).asnumpy()
    logsig = np.log(prob)
    ref = -(3 * BINARY * logsig + (1 - BINARY) * np.log(1 - prob))
    assert_almost_equal(out, _per_sample(ref), rtol=1e-8)


def test_kl_div_from_log_probabilities():
    logp = _log_softmax(PRED)
    out = _run(gloss.KLDivLoss(), logp, SOFT)
    assert_almost_equal(out, _run(gloss.KLDivLoss(from_logits=False), PRED, SOFT))


def test_bad_options_and_repr():
    with pytest.raises(mx.MXNetError, match="label_format must be 'signed' or 'binary'"):
        gloss.LogisticLoss(label_format='pm1')
    assert repr(gloss.L2Loss()) == 'L2Loss(batch_axis=0, w=1.0)'
    assert isinstance(gloss.SoftmaxCELoss(), gluon.HybridBlock)
