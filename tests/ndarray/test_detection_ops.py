"""``nd.contrib``'s detection ops (ndarray/ops/detection.py) against numpy references of
MXNet 1.x's kernels, and against MXNet 1.9.1 itself."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd


def _iou_reference(a, b):
    """IoU of corner boxes a (n, 4) with b (m, 4), one pair at a time."""
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            w = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
            h = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
            area = lambda r: max(r[2] - r[0], 0) * max(r[3] - r[1], 0)  # noqa: E731
            out[i, j] = 0 if w * h <= 0 else w * h / (area(p) + area(q) - w * h)
    return out


def _nms_reference(rows, thresh, valid, topk, force, cid=0):
    """Greedy NMS of one image, box after box (rows [id, score, x1, y1, x2, y2])."""
    order = [i for i in np.argsort(-rows[:, 1], kind='stable') if rows[i, 1] > valid]
    order = order[:topk] if topk > 0 else order
    kept = []
    for i in order:
        if all(not (force or int(rows[i, cid]) == int(rows[k, cid]))
               or _iou_reference(rows[i:i + 1, 2:], rows[k:k + 1, 2:])[0, 0] <= thresh
               for k in kept):
            kept.append(i)
    out = -np.ones_like(rows)
    out[:len(kept)] = rows[kept]
    return out, kept


def _boxes(rng, n):
    xy = rng.uniform(0, 1, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0.1, 0.6, (n, 2))], axis=1)


def test_box_iou_matches_the_pairwise_reference_in_both_formats():
    rng = np.random.RandomState(0)
    a, b = _boxes(rng, 6).reshape(2, 3, 4), _boxes(rng, 4)
    want = _iou_reference(a.reshape(-1, 4), b).reshape(2, 3, 4)
    got = nd.contrib.box_iou(nd.array(a, dtype='float64'), nd.array(b, dtype='float64'))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    center = lambda x: np.concatenate([(x[..., :2] + x[..., 2:]) / 2,  # noqa: E731
                                       x[..., 2:] - x[..., :2]], axis=-1)
    got = nd.contrib.box_iou(nd.array(center(a)), nd.array(center(b)), format='center')
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.MXNetError, match="format must be 'corner' or 'center'"):
        nd.contrib.box_iou(nd.array(a), nd.array(b), format='xywh')


def test_box_nms_keeps_mxnet_s_rows_and_sends_gradients_to_them():
    rng = np.random.RandomState(1)
    data = np.zeros((2, 12, 6))
    data[..., 0] = rng.randint(0, 3, (2, 12))
    data[..., 1] = rng.permutation(24).reshape(2, 12) / 24.0
    data[..., 2:] = _boxes(rng, 24).reshape(2, 12, 4)
    for kwargs in ({'force_suppress': True}, {'topk': 5, 'valid_thresh': 0.2},
                   {'overlap_thresh': 0.2}):
        x = nd.array(data, dtype='float64')
        x.attach_grad()
        with autograd.record():
            out = nd.contrib.box_nms(x, id_index=0, **kwargs)
        head = rng.uniform(size=out.shape)
        out.backward(nd.array(head, dtype='float64'))
        for b in range(2):
            want, kept = _nms_reference(data[b], kwargs.get('overlap_thresh', 0.5),
                                        kwargs.get('valid_thresh', 0), kwargs.get('topk', -1),
                                        kwargs.get('force_suppress', False))
            np.testing.assert_array_equal(out.asnumpy()[b], want)
            grad = np.zeros((12, 6))
            grad[kept] = head[b, :len(kept)]
            np.testing.assert_array_equal(x.grad.asnumpy()[b], grad)


def test_box_nms_format_conversion_and_topk_zero():
    rows = nd.array([[0, 0.5, -0.1, 0.1, 0.2, 0.2], [0, 0.7, 0.3, 0.1, 0.4, 0.2]])
    out = nd.contrib.box_nms(rows, out_format='center').asnumpy()
    # MXNet leaves a box whose first coordinate is negative as it was
    np.testing.assert_allclose(out, [[0, 0.7, 0.35, 0.15, 0.1, 0.1],
                                     [0, 0.5, -0.1, 0.1, 0.2, 0.2]], rtol=1e-6)
    np.testing.assert_array_equal(nd.contrib.box_nms(rows, topk=0).asnumpy(), rows.asnumpy())


def test_bipartite_matching_is_greedy_by_score():
    scores = nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])
    rows, cols = nd.contrib.bipartite_matching(scores, threshold=1e-12)
    assert rows.asnumpy().tolist() == [1, -1, 0] and cols.asnumpy().tolist() == [2, 0]
    rows, cols = nd.contrib.bipartite_matching(scores, threshold=100, is_ascend=True)
    assert rows.asnumpy().tolist() == [-1, 0, 1] and cols.asnumpy().tolist() == [1, 2]
    rows, _ = nd.contrib.bipartite_matching(scores, threshold=0.45)
    assert rows.asnumpy().tolist() == [1, -1, -1]
    with pytest.raises(mx.MXNetError, match='threshold is required'):
        nd.contrib.bipartite_matching(scores)


def test_multibox_prior_lays_out_ssd_anchors():
    out = nd.contrib.MultiBoxPrior(nd.zeros((1, 3, 2, 4)), sizes=(0.5, 0.25), ratios=(1, 4),
                                   clip=True).asnumpy()
    assert out.shape == (1, 2 * 4 * 3, 4)
    want = []
    for r in range(2):
        for c in range(4):
            cy, cx = (r + 0.5) / 2, (c + 0.5) / 4
            for size, ratio in ((0.5, 1), (0.25, 1), (0.5, 4)):
                w, h = size * 2 / 4 * np.sqrt(ratio) / 2, size / np.sqrt(ratio) / 2
                want.append([cx - w, cy - h, cx + w, cy + h])
    np.testing.assert_allclose(out[0], np.clip(want, 0, 1), rtol=1e-6, atol=1e-7)


def test_multibox_target_matches_mxnet_s_documented_case():
    anchors = nd.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]]).reshape((1, -1, 4))
    cls_pred = nd.array(list(range(10))).reshape((1, -1, 2))
    label = nd.array([1, 0.1, 0.1, 0.5, 0.6]).reshape((1, -1, 5))
    loc, mask, cls = nd.contrib.MultiBoxTarget(anchors, label, cls_pred, overlap_threshold=0.5,
                                               negative_mining_ratio=3,
                                               negative_mining_thresh=0.4)
    np.testing.assert_allclose(loc.asnumpy(), [[5.0, 2.5000005, 3.4657357, 4.581454, 0, 0, 0,
                                                0]], rtol=1e-5)
    assert mask.asnumpy().tolist() == [[1, 1, 1, 1, 0, 0, 0, 0]]
    assert cls.asnumpy().tolist() == [[2, 0]]


def test_multibox_detection_decodes_and_suppresses():
    anchors = nd.array([[[0.1, 0.1, 0.5, 0.5], [0.12, 0.1, 0.52, 0.5], [0.6, 0.6, 0.9, 0.9]]])
    prob = nd.array([[[0.1, 0.2, 0.9], [0.8, 0.7, 0.05], [0.1, 0.1, 0.05]]])
    out = nd.contrib.MultiBoxDetection(prob, nd.zeros((1, 12)), anchors,
                                       threshold=0.1).asnumpy()[0]
    # anchor 1 loses to anchor 0 (same class, IoU 0.9); anchor 2's best class is below
    # the threshold
    np.testing.assert_allclose(out, [[0, 0.8, 0.1, 0.1, 0.5, 0.5],
                                     [-1, 0.7, 0.12, 0.1, 0.52, 0.5],
                                     [-1] * 6], rtol=1e-6)


def test_graph_nodes_use_mxnet_s_names():
    x = mx.sym.var('x')
    assert mx.sym.contrib.box_nms(x).list_outputs() == ['box_nms0_output0']
    target = mx.contrib.sym.MultiBoxTarget(x, mx.sym.var('l'), mx.sym.var('c'))
    assert target.list_outputs() == ['multiboxtarget0_loc_target', 'multiboxtarget0_loc_mask',
                                     'multiboxtarget0_cls_target']
    graph = mx.sym.load_json(mx.sym.contrib.MultiBoxPrior(x, sizes=(0.5, 0.2)).tojson())
    out = graph.eval(x=nd.zeros((1, 1, 2, 2)))[0]
    np.testing.assert_array_equal(out.asnumpy(), nd.contrib.MultiBoxPrior(
        nd.zeros((1, 1, 2, 2)), sizes=(0.5, 0.2)).asnumpy())


_SCRIPT = """
import json, sys
import numpy as np
import mxnet as mx
rng = np.random.RandomState(0)
res = {}
def put(key, value):
    res[key] = value.asnumpy().astype('float64').tolist()
xy = rng.uniform(0, 1, (2, 10, 2))
boxes = np.concatenate([xy, xy + rng.uniform(0.1, 0.5, (2, 10, 2))], axis=-1)
put('iou', mx.nd.contrib.box_iou(mx.nd.array(boxes[0]), mx.nd.array(boxes[1])))
rows = np.concatenate([rng.randint(0, 2, (2, 10, 1)), rng.permutation(20).reshape(2, 10, 1) / 20.,
                       boxes], axis=-1)
x = mx.nd.array(rows)
x.attach_grad()
with mx.autograd.record():
    y = mx.nd.contrib.box_nms(x, overlap_thresh=0.3, valid_thresh=0.1, topk=8, id_index=0,
                              out_format='center')
y.backward(mx.nd.array(np.arange(120).reshape(2, 10, 6)))
put('nms', y)
put('nms_grad', x.grad)
for i, out in enumerate(mx.nd.contrib.bipartite_matching(mx.nd.array(rng.uniform(size=(2, 4, 3))),
                                                         threshold=0.2)):
    put('match%d' % i, out)
anchors = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 1, 3, 3)), sizes=(0.3, 0.6), ratios=(1, 2),
                                      steps=(0.3, 0.3), offsets=(0.4, 0.6))
put('prior', anchors)
label = -np.ones((2, 3, 5))
label[0, :2] = [[0, 0.1, 0.1, 0.4, 0.5], [2, 0.5, 0.4, 0.9, 0.95]]
label[1, :1] = [[1, 0.2, 0.5, 0.7, 0.9]]
cls_pred = mx.nd.array(rng.randn(2, 4, anchors.shape[1]))
for i, out in enumerate(mx.nd.contrib.MultiBoxTarget(anchors, mx.nd.array(label), cls_pred,
                                                     negative_mining_ratio=2)):
    put('target%d' % i, out)
prob = mx.nd.softmax(cls_pred * 2, axis=1)
put('detection', mx.nd.contrib.MultiBoxDetection(prob, mx.nd.array(rng.randn(2, 108) * 0.3),
                                                 anchors, threshold=0.2, nms_topk=12))
json.dump(res, open(sys.argv[1] + '/out.json', 'w'))
"""


def test_all_six_ops_agree_with_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'out.json')
    assert sorted(theirs) == sorted(ours)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)
