"""metric: each metric against a numpy reference, device lists, local/global, create(), errors."""
import json
import math

import numpy as np
import pytest

import minigluon as mx
from minigluon import metric, nd

RNG = np.random.RandomState(0)

SCORES = np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]], dtype=np.float32)
LABELS = np.array([0, 1, 1], dtype=np.float32)


def _nd(a, ctx=None):
    return nd.array(np.asarray(a), ctx=ctx or mx.cpu(0))


# ---- base behaviour --------------------------------------------------------------------
def test_accuracy_mxnet_doc_example(ctx):
    acc = metric.Accuracy()
    acc.update(labels=[_nd(LABELS, ctx)], preds=[_nd(SCORES, ctx)])
    assert acc.get() == ('accuracy', pytest.approx(2 / 3))
    assert acc.get_name_value() == [('accuracy', pytest.approx(2 / 3))]
    assert 'accuracy' in str(acc)


def test_no_samples_gives_nan():
    for m in (metric.Accuracy(), metric.MSE(), metric.Perplexity(), metric.F1(average='micro')):
        name, value = m.get()
        assert name == m.name and math.isnan(value)
        assert math.isnan(m.get_global()[1])


def test_single_arrays_numpy_and_device_lists_agree():
    labels = RNG.randint(0, 4, size=10)
    scores = RNG.rand(10, 4)
    expected = np.mean(scores.argmax(1) == labels)
    single, numpy_in, split = metric.Accuracy(), metric.Accuracy(), metric.Accuracy()
    single.update(_nd(labels), _nd(scores))
    numpy_in.update(labels, scores)
    # as split_and_load gives: one slice per device
    split.update([_nd(labels[:6], mx.cpu(0)), _nd(labels[6:], mx.cpu(1))],
                 [_nd(scores[:6], mx.cpu(0)), _nd(scores[6:], mx.cpu(1))])
    for m in (single, numpy_in, split):
        assert m.get()[1] == pytest.approx(expected)
        assert m.num_inst == 10


def test_local_and_global_statistics():
    acc = metric.Accuracy()
    acc.update(_nd([0, 1]), _nd([[1, 0], [0, 1]]))         # 2 / 2
    acc.reset_local()
    assert math.isnan(acc.get()[1])
    assert acc.get_global() == ('accuracy', 1.0)
    acc.update(_nd([0, 1, 1, 0]), _nd([[1, 0], [1, 0], [1, 0], [1, 0]]))  # 2 / 4
    assert acc.get()[1] == 0.5
    assert acc.get_global()[1] == pytest.approx(4 / 6)
    assert (acc.sum_metric, acc.num_inst, acc.global_sum_metric, acc.global_num_inst) == \
        (2, 4, 4, 6)
    assert acc.get_global_name_value() == [('accuracy', pytest.approx(4 / 6))]
    acc.reset()
    assert math.isnan(acc.get()[1]) and math.isnan(acc.get_global()[1])


def test_user_subclass_without_global_stats_falls_back_to_local():
    class Count(metric.EvalMetric):
        def update(self, labels, preds):
            self.sum_metric += 3
            self.num_inst += 1

    m = Count('count')
    m.update(None, None)
    assert m.get_global() == ('count', 3.0)


def test_update_dict_selects_by_name():
    acc = metric.Accuracy(output_names=['out'], label_names=['y'])
    acc.update_dict({'y': _nd([1, 0]), 'other': _nd([0, 0])},
                    {'aux': _nd([[1, 0], [1, 0]]), 'out': _nd([[0, 1], [1, 0]])})
    assert acc.get()[1] == 1.0


# ---- classification --------------------------------------------------------------------
def test_accuracy_label_and_prediction_layouts():
    scores = RNG.rand(6, 3)
    labels = RNG.randint(0, 3, size=6)
    ref = np.mean(scores.argmax(1) == labels)
    col = metric.Accuracy()
    col.update(_nd(labels.reshape(6, 1)), _nd(scores))  # (N, 1) labels
    assert col.get()[1] == pytest.approx(ref)
    idx = metric.Accuracy()
    idx.update(_nd(labels), _nd(scores.argmax(1)))  # class indices, same shape as labels
    assert idx.get()[1] == pytest.approx(ref)
    seq_scores, seq_labels = RNG.rand(2, 5, 3), RNG.randint(0, 3, size=(2, 5))
    seq = metric.Accuracy(axis=-1)
    seq.update(_nd(seq_labels), _nd(seq_scores))
    assert seq.get()[1] == pytest.approx(np.mean(seq_scores.argmax(-1) == seq_labels))


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r'labels of shape \(3,\).*predictions of shape '
                                         r'\(4, 2\)'):
        metric.Accuracy().update(_nd([0, 1, 1]), _nd(np.zeros((4, 2))))
    with pytest.raises(ValueError, match=r'\(5,\).*\(5, 2\)'):
        metric.MSE().update(_nd(np.zeros(5)), _nd(np.zeros((5, 2))))
    with pytest.raises(ValueError, match=r'\(4, 1\).*\(4,\); scores need a class axis 1'):
        metric.Accuracy().update(_nd(np.zeros((4, 1))), _nd(np.zeros(4)))
    with pytest.raises(ValueError, match='2 label arrays but 1 prediction arrays'):
        metric.Accuracy().update([_nd([0]), _nd([1])], [_nd([[1, 0]])])


def test_top_k_accuracy_against_argsort():
    scores, labels = RNG.rand(20, 6), RNG.randint(0, 6, size=20)
    for k in (1, 2, 3, 6, 10):
        m = metric.TopKAccuracy(top_k=k)
        m.update([_nd(labels[:8]), _nd(labels[8:])], [_nd(scores[:8]), _nd(scores[8:])])
        top = np.argsort(-scores, axis=1)[:, :k]
        ref = np.mean([labels[i] in top[i] for i in range(20)])
        assert m.get() == ('top_k_accuracy_%d' % k, pytest.approx(ref))
    assert metric.TopKAccuracy(3).get_config()['name'] == 'top_k_accuracy'
    with pytest.raises(ValueError, match='top_k must be an integer >= 1, got 0'):
        metric.TopKAccuracy(top_k=0)


def _confusion(labels, pred_labels):
    tp = np.sum((pred_labels == 1) & (labels == 1))
    fp = np.sum((pred_labels == 1) & (labels == 0))
    fn = np.sum((pred_labels == 0) & (labels == 1))
    return tp, fp, fn


def _f1_ref(labels, pred_labels):
    tp, fp, fn = _confusion(labels, pred_labels)
    return 2 * tp / (2 * tp + fp + fn)


BATCH1 = (np.array([0, 1, 1, 0, 1]), np.array([0, 1, 0, 1, 1]))  # (labels, predicted)
BATCH2 = (np.array([1, 1, 0, 0, 0, 1]), np.array([1, 0, 0, 0, 1, 1]))


def _binary_scores(pred_labels):
    return np.eye(2)[pred_labels] * 0.8 + 0.1


def test_f1_macro_and_micro():
    macro, micro = metric.F1(), metric.F1(average='micro')
    for labels, pred in (BATCH1, BATCH2):
        for m in (macro, micro):
            m.update(_nd(labels), _nd(_binary_scores(pred)))
    assert macro.get() == ('f1', pytest.approx((_f1_ref(*BATCH1) + _f1_ref(*BATCH2)) / 2))
    all_labels = np.concatenate([BATCH1[0], BATCH2[0]])
    all_pred = np.concatenate([BATCH1[1], BATCH2[1]])
    assert micro.get()[1] == pytest.approx(_f1_ref(all_labels, all_pred))
    micro.reset_local()
    micro.update(_nd(BATCH1[0]), _nd(_binary_scores(BATCH1[1])))
    assert micro.get()[1] == pytest.approx(_f1_ref(*BATCH1))
    both = (np.concatenate([all_labels, BATCH1[0]]), np.concatenate([all_pred, BATCH1[1]]))
    assert micro.get_global()[1] == pytest.approx(_f1_ref(*both))


def test_mcc_equals_correlation_of_binary_vectors():
    macro, micro = metric.MCC(), metric.MCC(average='micro')
    for labels, pred in (BATCH1, BATCH2):
        for m in (macro, micro):
            m.update([_nd(labels)], [_nd(_binary_scores(pred))])
    per_batch = [np.corrcoef(l, p)[0, 1] for l, p in (BATCH1, BATCH2)]
    assert macro.get() == ('mcc', pytest.approx(np.mean(per_batch)))
    all_labels = np.concatenate([BATCH1[0], BATCH2[0]])
    all_pred = np.concatenate([BATCH1[1], BATCH2[1]])
    assert micro.get()[1] == pytest.approx(np.corrcoef(all_labels, all_pred)[0, 1])


def test_binary_metrics_errors():
    with pytest.raises(ValueError, match='binary classification only.*3 distinct'):
        metric.F1().update(_nd([0, 1, 2]), _nd(np.zeros((3, 2))))
    with pytest.raises(ValueError, match=r'\(batch, classes\).*\(4,\)'):
        metric.MCC().update(_nd([0, 1, 1]), _nd([0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError, match="average must be 'macro' or 'micro', got 'weighted'"):
        metric.F1(average='weighted')


# ---- regression ------------------------------------------------------------------------
@pytest.mark.parametrize('cls, ref', [
    (metric.MAE, lambda d: np.abs(d).mean()),
    (metric.MSE, lambda d: (d ** 2).mean()),
    (metric.RMSE, lambda d: np.sqrt((d ** 2).mean())),
])
def test_regression_metrics_average_per_array(cls, ref):
    l1, p1 = RNG.randn(8), RNG.randn(8, 1)   # (N,) labels with (N, 1) predictions
    l2, p2 = RNG.randn(5, 3), RNG.randn(5, 3)
    m = cls()
    m.update([_nd(l1), _nd(l2, mx.cpu(1))], [_nd(p1), _nd(p2, mx.cpu(1))])
    expected = (ref(l1 - p1[:, 0]) + ref(l2 - p2)) / 2  # MXNet 1.x: mean of per-array values
    assert m.get() == (cls.__name__.lower(), pytest.approx(expected, rel=1e-5))
    assert m.num_inst == 2


def test_pearson_macro_and_micro():
    pairs = [(RNG.randn(12), RNG.randn(12)), (RNG.randn(9) + 3, RNG.randn(9) * 2)]
    pairs = [(l, l * 0.5 + p) for l, p in pairs]
    macro = metric.PearsonCorrelation()
    micro = metric.PearsonCorrelation(average='micro')
    for label, pred in pairs:
        macro.update(_nd(label), _nd(pred))
        micro.update(_nd(label), _nd(pred))
    per_array = [np.corrcoef(l, p)[0, 1] for l, p in pairs]
    assert macro.get() == ('pearsonr', pytest.approx(np.mean(per_array), rel=1e-5))
    all_l = np.concatenate([p[0] for p in pairs])
    all_p = np.concatenate([p[1] for p in pairs])
    assert micro.get()[1] == pytest.approx(np.corrcoef(all_l, all_p)[0, 1], rel=1e-5)
    micro.reset_local()
    micro.update(_nd(pairs[0][0]), _nd(pairs[0][1]))
    assert micro.get()[1] == pytest.approx(per_array[0], rel=1e-5)
    all3 = (np.concatenate([all_l, pairs[0][0]]), np.concatenate([all_p, pairs[0][1]]))
    assert micro.get_global()[1] == pytest.approx(np.corrcoef(*all3)[0, 1], rel=1e-5)


# ---- probabilistic ---------------------------------------------------------------------
def _probs(n, c):
    x = RNG.rand(n, c) + 0.1
    return x / x.sum(1, keepdims=True)


@pytest.mark.parametrize('cls, name', [(metric.CrossEntropy, 'cross-entropy'),
                                       (metric.NegativeLogLikelihood, 'nll-loss')])
def test_cross_entropy_and_nll(cls, name):
    probs, labels = _probs(7, 4), RNG.randint(0, 4, size=7)
    m = cls()
    m.update([_nd(labels[:3]), _nd(labels[3:])], [_nd(probs[:3]), _nd(probs[3:])])
    expected = -np.mean(np.log(probs[np.arange(7), labels] + 1e-12))
    assert m.get() == (name, pytest.approx(expected, rel=1e-5))
    assert m.num_inst == 7
    with pytest.raises(ValueError, match=r'class indices in \[0, 4\), got values in \[0, 9\]'):
        m.update(_nd([0, 9]), _nd(_probs(2, 4)))


def test_perplexity_with_ignore_label_and_class_axis():
    probs, labels = _probs(6, 5), np.array([1, 0, 3, 0, 4, 2])
    m = metric.Perplexity(ignore_label=0)
    m.update(_nd(labels), _nd(probs))
    keep = labels != 0
    expected = math.exp(-np.mean(np.log(probs[np.arange(6), labels][keep])))
    assert m.get() == ('perplexity', pytest.approx(expected, rel=1e-5))
    assert m.num_inst == 4
    # (batch, classes, time) with the class axis in the middle
    seq = np.stack([_probs(3, 5).T for _ in range(2)])  # (2, 5, 3)
    seq_labels = RNG.randint(0, 5, size=(2, 3))
    m2 = metric.Perplexity(axis=1)
    m2.update(_nd(seq_labels), _nd(seq))
    picked = np.take_along_axis(seq, seq_labels[:, None, :], axis=1)
    assert m2.get()[1] == pytest.approx(math.exp(-np.mean(np.log(picked))), rel=1e-5)


def test_perplexity_clips_out_of_range_labels_as_mxnet_pick_does():
    # MXNet's bucketing tests draw word ids 1..V for V classes; id V picks class V-1.
    probs = _probs(3, 4)
    m = metric.Perplexity(ignore_label=None)
    m.update(_nd([4, 1, -2]), _nd(probs))
    picked = probs[np.arange(3), [3, 1, 0]]
    assert m.get()[1] == pytest.approx(math.exp(-np.mean(np.log(picked))), rel=1e-5)


def test_loss_averages_predictions():
    m = metric.Loss()
    m.update(None, [_nd([1.0, 2.0, 3.0]), _nd([[4.0], [6.0]], mx.cpu(1))])
    m.update(_nd([0]), _nd([10.0]))
    assert m.get() == ('loss', pytest.approx(26 / 6))


def test_caffe_and_torch_are_loss_metrics_under_their_names():
    for name, klass in (('caffe', metric.Caffe), ('torch', metric.Torch)):
        m = metric.create(name)
        assert isinstance(m, klass) and isinstance(m, metric.Loss)
        assert math.isnan(m.get()[1])
        m.update(None, [_nd([1.0, 2.0, 3.0]), _nd([[4.0]])])
        assert m.get() == m.get_global() == (name, 2.5)
        assert m.get_config() == {'metric': klass.__name__, 'name': name,
                                  'output_names': None, 'label_names': None}


# ---- composite, custom, create ----------------------------------------------------------
def test_composite():
    comp = metric.CompositeEvalMetric([metric.Accuracy(), 'f1'])
    comp.add(metric.Loss())
    comp.update([_nd(LABELS)], [_nd(SCORES)])
    names, values = comp.get()
    assert names == ['accuracy', 'f1', 'loss']
    assert values == pytest.approx([2 / 3, 0.8, SCORES.mean()])
    assert isinstance(comp.get_metric(1), metric.F1)
    with pytest.raises(ValueError, match='index 5 is out of range: this composite holds 3'):
        comp.get_metric(5)
    comp.reset_local()
    assert all(math.isnan(v) for v in comp.get()[1])
    assert comp.get_global()[1] == pytest.approx([2 / 3, 0.8, SCORES.mean()])
    comp.reset()
    assert all(math.isnan(v) for v in comp.get_global()[1])


def test_custom_metric_and_np():
    def abs_err(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return np.abs(label - pred).mean()

    m = metric.np(abs_err)
    m.update([_nd([1.0, 2.0]), _nd([0.0])], [_nd([1.5, 2.5]), _nd([2.0])])
    assert m.get() == ('abs_err', pytest.approx((0.5 + 2.0) / 2))

    summed = metric.CustomMetric(lambda l, p: (float(np.sum(l == p)), l.size))
    summed.update(_nd([1, 2, 3]), _nd([1, 0, 3]))
    assert summed.get() == ('custom(<lambda>)', pytest.approx(2 / 3))

    extra = metric.CustomMetric(abs_err, name='mae2', allow_extra_outputs=True)
    extra.update([_nd([1.0])], [_nd([2.0]), _nd([100.0])])
    assert extra.get() == ('mae2', 1.0)
    with pytest.raises(ValueError, match='1 label arrays but 2 prediction arrays'):
        metric.CustomMetric(abs_err).update([_nd([1.0])], [_nd([2.0]), _nd([100.0])])
    with pytest.raises(NotImplementedError, match='no config'):
        m.get_config()


@pytest.mark.parametrize('name, cls', [
    ('acc', metric.Accuracy), ('accuracy', metric.Accuracy),
    ('top_k_accuracy', metric.TopKAccuracy), ('f1', metric.F1), ('mcc', metric.MCC),
    ('mae', metric.MAE), ('mse', metric.MSE), ('RMSE', metric.RMSE),
    ('ce', metric.CrossEntropy), ('nll_loss', metric.NegativeLogLikelihood),
    ('perplexity', metric.Perplexity), ('pearsonr', metric.PearsonCorrelation),
    ('loss', metric.Loss), ('composite', metric.CompositeEvalMetric), ('pcc', metric.PCC),
])
def test_create_by_name(name, cls):
    assert type(metric.create(name)) is cls


def test_create_other_forms():
    acc = metric.Accuracy()
    assert metric.create(acc) is acc
    assert metric.create('top_k_accuracy', top_k=5).top_k == 5
    assert metric.create('acc', axis=-1).axis == -1
    custom = metric.create(lambda label, pred: 0.0)
    assert isinstance(custom, metric.CustomMetric)
    comp = metric.create([acc, 'mse', lambda label, pred: 1.0])
    assert isinstance(comp, metric.CompositeEvalMetric)
    assert [type(m) for m in comp.metrics] == [metric.Accuracy, metric.MSE, metric.CustomMetric]
    assert mx.metric is metric


def test_create_errors():
    with pytest.raises(ValueError, match="unknown metric 'accuarcy'; known: .*acc"):
        metric.create('accuarcy')
    with pytest.raises(ValueError, match='already a metric instance'):
        metric.create(metric.Accuracy(), axis=0)
    with pytest.raises(ValueError, match='cannot create a metric from 3'):
        metric.create(3)


def test_get_config_round_trip_through_json():
    comp = metric.create([metric.TopKAccuracy(top_k=3), metric.F1(average='micro'),
                          metric.Perplexity(ignore_label=0, axis=1)])
    config = json.loads(json.dumps(comp.get_config()))
    clone = metric.create(config)
    assert [m.get_config() for m in clone.metrics] == [m.get_config() for m in comp.metrics]
    assert clone.get()[0] == ['top_k_accuracy_3', 'f1', 'perplexity']


def test_register_and_alias():
    @metric.register
    @metric.alias('always_one_test')
    class AlwaysOneTest(metric.EvalMetric):
        def __init__(self, name='always-one'):
            super().__init__(name, has_global_stats=True)

        def update(self, labels, preds):
            self._add(1.0, 1)

    try:
        assert type(metric.create('always_one_test')) is AlwaysOneTest
        assert type(metric.create('AlwaysOneTest')) is AlwaysOneTest
    finally:
        del metric._REGISTRY['alwaysonetest'], metric._REGISTRY['always_one_test']
    with pytest.raises(ValueError, match='expects an EvalMetric subclass'):
        metric.register(dict)


def test_create_from_a_json_config_string():
    acc = metric.create(json.dumps(metric.Accuracy(axis=0).get_config()))
    assert type(acc) is metric.Accuracy and acc.axis == 0
    assert acc.get_config() == metric.Accuracy(axis=0).get_config()
    comp = metric.create(json.dumps(metric.create(['acc', 'f1']).get_config()))
    assert [type(m) for m in comp.metrics] == [metric.Accuracy, metric.F1]
    assert metric.create('["top_k_accuracy", {"top_k": 2}]').top_k == 2
    with pytest.raises(ValueError, match='takes no other arguments'):
        metric.create('{"metric": "acc"}', axis=0)
    with pytest.raises(ValueError, match='cannot read metric config'):
        metric.create('{"metric": ')
    with pytest.raises(ValueError, match=r'\["name", \{kwargs\}\]'):
        metric.create('["acc"]')


def _confusion_batch(cm):
    """Labels and one-hot predictions whose confusion matrix (label, pred) is ``cm``."""
    labels, preds = [], []
    for i, row in enumerate(cm):
        for j, count in enumerate(row):
            labels += [i] * count
            preds += [np.eye(len(cm))[j]] * count
    return _nd(labels), _nd(np.array(preds))


def _pcc_reference(cm):
    """The K-class Pearson correlation straight from its definition over the matrix."""
    c = np.asarray(cm, dtype=np.float64)
    k = len(c)
    num = sum(c[a, a] * c[b, m] - c[a, b] * c[m, a]
              for a in range(k) for b in range(k) for m in range(k))
    rows, cols = c.sum(axis=1), c.sum(axis=0)
    den_x = sum(rows[a] * (c.sum() - rows[a]) for a in range(k))
    den_y = sum(cols[a] * (c.sum() - cols[a]) for a in range(k))
    return num / math.sqrt(den_x * den_y)


def test_pcc_matches_its_definition_and_mcc_for_two_classes():
    labels, preds = _confusion_batch([[7, 3], [2, 5]])
    pcc, mcc = metric.PCC(), metric.MCC(average='micro')
    pcc.update([labels], [preds])
    mcc.update([labels], [preds])
    assert pcc.get()[1] == pytest.approx(mcc.get()[1], rel=1e-12)
    assert pcc.get()[1] == pytest.approx(_pcc_reference([[7, 3], [2, 5]]), rel=1e-12)
    cm = [[23, 13, 3], [7, 19, 11], [2, 5, 17]]
    labels, preds = _confusion_batch(cm)
    pcc.reset()
    pcc.update([labels], [preds])
    assert pcc.k == 3 and pcc.get() == ('pcc', pytest.approx(_pcc_reference(cm), rel=1e-12))
    # predicted classes instead of scores, one sample per update in reverse order: same
    one_by_one = metric.PCC()
    for lab, cls in reversed(list(zip(labels.asnumpy(), preds.asnumpy().argmax(axis=1)))):
        one_by_one.update(_nd([lab]), _nd([cls]))
    assert one_by_one.get()[1] == pcc.get()[1]


def test_pcc_local_and_global_and_errors():
    m = metric.PCC()
    assert math.isnan(m.get()[1])
    labels, preds = _confusion_batch([[3, 1], [1, 3]])
    m.update(labels, preds)
    m.reset_local()
    assert math.isnan(m.get()[1]) and m.get_global()[1] == pytest.approx(0.5)
    assert m.get_config() == {'metric': 'PCC', 'name': 'pcc', 'output_names': None,
                              'label_names': None}
    with pytest.raises(ValueError, match='>= 0'):
        m.update(_nd([-1, 0]), _nd([0, 1]))


def test_nll_is_computed_in_the_predictions_precision():
    """As MXNet: float32 probabilities give exactly the float32 result."""
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=np.float32)
    m = metric.create('nll_loss')
    m.update([_nd([2, 1])], [_nd(probs)])
    expected = -(np.log(probs[0, 2]) + np.log(probs[1, 1])) / 2   # float32 arithmetic
    assert expected.dtype == np.float32 and m.get()[1] == expected
