"""gluon.loss against numpy references: values, weighting, stability and gradients."""
import itertools

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, gluon, nd
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
    # summed over the classes, as MXNet 1.9 does (one value per sample)
    'kl_div': (gloss.KLDivLoss(from_logits=False), PRED, SOFT,
               lambda p, l: (l * (np.log(l + 1e-12) - _log_softmax(p))).sum(axis=-1)),
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
    with pytest.raises(ValueError, match="label_format must be 'signed' or 'binary'"):
        gloss.LogisticLoss(label_format='pm1')
    assert repr(gloss.L2Loss()) == 'L2Loss(batch_axis=0, w=1.0)'
    assert isinstance(gloss.SoftmaxCELoss(), gluon.HybridBlock)


# ---- CTC ---------------------------------------------------------------------------------
def _ctc_brute_force(logits, label, blank):
    """-log of the summed probability of every path (one class per step) that collapses
    to ``label``: repeats merged, then blanks dropped."""
    steps, classes = logits.shape
    logp = _log_softmax(logits)
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != blank] == list(label):
            total += np.exp(logp[np.arange(steps), path].sum())
    return -np.log(total)


def test_ctc_matches_brute_force_over_all_paths():
    logits = rng.normal(size=(2, 6, 3)) * 2  # (N, T, C); class 2 is the blank
    labels = np.array([[1, 1, -1], [0, 1, 0]])
    out = _run(gloss.CTCLoss(), logits, labels)
    ref = [_ctc_brute_force(logits[0], [1, 1], 2), _ctc_brute_force(logits[1], [0, 1, 0], 2)]
    assert_almost_equal(out, ref, rtol=1e-10)
    # the op itself with the blank first: labels 1..C-1, rows end at their first 0
    first = nd.CTCLoss(nd.array(logits.transpose(1, 0, 2), dtype='float64'),
                       nd.array([[2, 0, 0], [1, 2, 1]]))
    assert_almost_equal(first, [_ctc_brute_force(logits[0], [2], 0),
                                _ctc_brute_force(logits[1], [1, 2, 1], 0)], rtol=1e-10)


def test_ctc_layouts_lengths_and_weights():
    logits = rng.normal(size=(3, 7, 4))
    labels = np.array([[1, 2, 2, 0], [2, -1, -1, -1], [0, 0, 1, 2]])
    lengths = np.array([4, 1, 2])  # the third sample ends after [0, 0]
    steps = np.array([7, 5, 6])
    ref = [_ctc_brute_force(logits[n, :steps[n]], labels[n, :lengths[n]], 3) for n in range(3)]
    out = _run(gloss.CTCLoss(), logits, labels, steps, lengths)
    assert_almost_equal(out, ref, rtol=1e-10)
    out = _run(gloss.CTCLoss(layout='TNC', label_layout='TN', weight=2.0),
               logits.transpose(1, 0, 2), labels.T, steps, lengths)
    assert_almost_equal(out, 2 * np.array(ref), rtol=1e-10)
    weighted = gloss.CTCLoss()(*[nd.array(a, dtype='float64') for a in (logits, labels)], None,
                               nd.array(lengths), nd.array([0.5, 1, 2.], dtype='float64'))
    ref_full = [_ctc_brute_force(logits[n], labels[n, :lengths[n]], 3) for n in range(3)]
    assert_almost_equal(weighted, np.array(ref_full) * [0.5, 1, 2], rtol=1e-10)


def test_ctc_matches_mxnets_own_example():
    # from MXNet's unit tests: uniform scores over 20 steps
    loss = gloss.CTCLoss()(nd.ones((2, 20, 4)), nd.array([[1, 0, -1, -1], [2, 1, 1, -1]]))
    assert_almost_equal(loss, [18.82820702, 16.50581741], rtol=1e-6)


def test_ctc_gradient_and_impossible_labels():
    labels = nd.array([[0, 1, 1], [1, -1, -1]], dtype='float64')
    check_numeric_gradient(lambda p: gloss.CTCLoss()(p, labels), [rng.normal(size=(2, 5, 3))],
                           numeric_eps=1e-6, rtol=1e-5, atol=1e-8)
    # [1, 1] needs a blank between the repeats: 3 steps, but only 2 here
    x = nd.array(rng.normal(size=(1, 2, 3)), dtype='float64')
    x.attach_grad()
    with autograd.record():
        loss = gloss.CTCLoss()(x, nd.array([[1, 1]]))
    loss.backward()
    assert loss.asnumpy().tolist() == [0.0]  # as MXNet reports it
    assert (x.grad.asnumpy() == 0).all()


def test_ctc_bad_input_is_explained():
    with pytest.raises(ValueError, match="layout must be 'NTC' or 'TNC'"):
        gloss.CTCLoss(layout='NCT')
    with pytest.raises(mx.MXNetError, match=r'labels must lie in \[0, 3\)'):
        gloss.CTCLoss()(nd.ones((1, 4, 3)), nd.array([[5, 1]]))
    with pytest.raises(mx.MXNetError, match=r'data_lengths must lie in \[1, 4\]'):
        gloss.CTCLoss()(nd.ones((1, 4, 3)), nd.array([[1]]), nd.array([6]))


def test_ctc_against_pytorch():
    torch = pytest.importorskip('torch')
    logits = rng.normal(size=(3, 8, 5))
    labels = np.array([[1, 2, 2, 3], [4, 0, -1, -1], [3, 3, 3, -1]])
    lengths, steps = np.array([4, 2, 3]), np.array([8, 6, 7])
    out = _run(gloss.CTCLoss(), logits, labels, steps, lengths)
    logp = torch.log_softmax(torch.tensor(logits.transpose(1, 0, 2)), dim=2)
    ref = torch.nn.functional.ctc_loss(logp, torch.tensor(np.maximum(labels, 0)),
                                       torch.tensor(steps), torch.tensor(lengths), blank=4,
                                       reduction='none')
    assert_almost_equal(out, ref.numpy(), rtol=1e-10)


# ---- triplet, Poisson, cosine, SDML --------------------------------------------------------
def test_triplet_loss_matches_numpy():
    pred, pos, neg = rng.normal(size=(3, 4, 5))
    out = gloss.TripletLoss(margin=2)(*[nd.array(a, dtype='float64') for a in (pred, pos, neg)])
    ref = np.maximum(((pos - pred) ** 2).sum(1) - ((neg - pred) ** 2).sum(1) + 2, 0)
    assert_almost_equal(out, ref, rtol=1e-12)
    check_numeric_gradient(lambda p, q, n: gloss.TripletLoss(margin=2)(p, q, n),
                           [pred, pos, neg], numeric_eps=1e-6, rtol=1e-5, atol=1e-8)


def test_poisson_nll_loss_matches_numpy():
    rate = rng.uniform(0.5, 3, size=(3, 4))
    target = np.array([[0, 1, 2, 5], [3, 0, 1, 1], [2, 2, 7, 0.]])
    log_rate = _run(gloss.PoissonNLLLoss(), np.log(rate), target)
    assert log_rate.shape == (1,)  # the mean over every element, as in MXNet
    ref = (rate - target * np.log(rate)).mean()
    assert_almost_equal(log_rate, [ref], rtol=1e-12)
    assert_almost_equal(_run(gloss.PoissonNLLLoss(from_logits=False), rate, target),
                        [(rate - target * np.log(rate + 1e-8)).mean()], rtol=1e-12)
    full = _run(gloss.PoissonNLLLoss(from_logits=False, compute_full=True), rate, target)
    safe = np.maximum(target, 1)
    stirling = np.where(target > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe),
                        0)
    assert np.isfinite(full).all()  # targets of 0 have no Stirling term, and no NaN
    assert_almost_equal(full, [(rate - target * np.log(rate + 1e-8) + stirling).mean()],
                        rtol=1e-12)
    lab = nd.array(target, dtype='float64')
    check_numeric_gradient(lambda p: gloss.PoissonNLLLoss(from_logits=False, compute_full=True)(
        p, lab), [rate], numeric_eps=1e-6, rtol=1e-5, atol=1e-8)


def test_cosine_embedding_loss_matches_numpy():
    a, b = rng.normal(size=(2, 4, 3))
    label = np.array([1, -1, -1, 1.])
    out = _run(gloss.CosineEmbeddingLoss(margin=0.2), a, b, label)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    ref = np.where(label == 1, 1 - cos, np.maximum(cos - 0.2, 0))
    assert out.shape == (4, 1)  # as MXNet returns it
    assert_almost_equal(out[:, 0], ref, rtol=1e-12)
    weighted = _run(gloss.CosineEmbeddingLoss(margin=0.2), a, b, label, [[1.], [2], [0], [3]])
    assert_almost_equal(weighted[:, 0], ref * [1, 2, 0, 3], rtol=1e-12)
    lab = nd.array(label, dtype='float64')
    check_numeric_gradient(lambda x, y: gloss.CosineEmbeddingLoss(margin=0.2)(x, y, lab),
                           [a, b], numeric_eps=1e-6, rtol=1e-5, atol=1e-8)


def test_sdml_loss_matches_numpy():
    x1, x2 = rng.normal(size=(2, 4, 3))
    out = _run(gloss.SDMLLoss(smoothing_parameter=0.3), x1, x2)
    dist = ((x1[:, None] - x2[None]) ** 2).sum(-1)
    logp = _log_softmax(-dist, axis=1)
    labels = np.where(np.eye(4) == 1, 0.7, 0.1)
    assert_almost_equal(out, (labels * (np.log(labels) - logp)).sum(1), rtol=1e-10)
    check_numeric_gradient(lambda a, b: gloss.SDMLLoss()(a, b), [x1, x2], numeric_eps=1e-6,
                           rtol=1e-5, atol=1e-8)
    with pytest.raises(mx.MXNetError, match='batch_size >= 2'):
        gloss.SDMLLoss()(nd.ones((1, 3)), nd.ones((1, 3)))


def test_sdml_loss_trains_an_encoder_to_pair_its_inputs():
    # MXNet's own check: aligned pairs end up closer than every other pair
    mx.random.seed(0)
    data = mx.random.uniform(-1, 1, shape=(5, 10))
    pos = data + mx.random.uniform(-0.1, 0.1, shape=(5, 10))
    model = gluon.nn.Dense(10, activation='tanh')
    model.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(model.collect_params(), 'adam', {'learning_rate': 0.1})
    loss_fn = gloss.SDMLLoss()
    for _ in range(20):
        with autograd.record():
            loss = loss_fn(model(data), model(pos))
        loss.backward()
        trainer.step(1)
    assert loss.mean().asscalar() < 0.05


NEW_LOSSES = {
    'ctc': lambda a, b: gloss.CTCLoss()(a.reshape((2, 5, 4)), nd.array([[1, 0], [2, 2]],
                                                                       ctx=a.context)),
    'triplet': lambda a, b: gloss.TripletLoss()(a, b, b * 0.5),
    'poisson': lambda a, b: gloss.PoissonNLLLoss(from_logits=False, compute_full=True)(
        a.abs() + 0.1, b.abs() * 3),
    'cosine': lambda a, b: gloss.CosineEmbeddingLoss()(a, b, nd.array([1, -1, 1, -1],
                                                                     ctx=a.context)),
    'sdml': lambda a, b: gloss.SDMLLoss()(a, b),
}


@pytest.mark.parametrize('name', sorted(NEW_LOSSES))
def test_new_losses_float32_match_float64(name):
    a, b = rng.normal(size=(2, 4, 10)).astype(np.float32)
    results = []
    for dtype in ('float32', 'float64'):
        xs = [nd.array(v, dtype=dtype) for v in (a, b)]
        for x in xs:
            x.attach_grad()
        with autograd.record():
            out = NEW_LOSSES[name](*xs)
        out.backward()
        results.append([out.asnumpy()] + [x.grad.asnumpy() for x in xs])
    for single, double in zip(*results):
        scale = max(np.abs(double).max(), 1e-30)
        assert np.abs(single - double).max() / scale < 1e-5
