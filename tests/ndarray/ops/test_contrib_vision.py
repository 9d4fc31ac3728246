"""contrib's AdaptiveAvgPooling2D, index_array, RROIAlign, PSROIPooling, Proposal,
MultiProposal and the deformable convolutions: against MXNet 1.9.1 (one script run by
both) and on their own."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

_SCRIPT = """
import json, sys
import numpy as np
import mxnet as mx

nd, autograd = mx.nd, mx.autograd
rng = np.random.RandomState(3)
results = {}


def run(name, fn, arrays, dtype='float64', grad=True):
    xs = [nd.array(a, dtype=dtype) for a in arrays]
    if grad:
        for x in xs:
            x.attach_grad()
    with autograd.record():
        outs = fn(*xs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    entry = {'out': [o.asnumpy().astype('float64').tolist() for o in outs]}
    if grad:
        head = np.cos(np.arange(outs[0].size)).reshape(outs[0].shape) + 0.3
        outs[0].backward(nd.array(head, dtype=dtype))
        entry['grads'] = [x.grad.asnumpy().astype('float64').tolist() for x in xs]
    results[name] = entry


x = rng.uniform(-1, 1, (2, 3, 7, 5))
run('adaptive', lambda a: nd.contrib.AdaptiveAvgPooling2D(a, output_size=(3, 4)), [x])
run('adaptive_1', lambda a: nd.contrib.AdaptiveAvgPooling2D(a), [x])
run('index_array', lambda a: nd.contrib.index_array(a, axes=(-1, 0)), [x[:, :, :2]],
    grad=False)
data = np.arange(2 * 2 * 9 * 11).reshape(2, 2, 9, 11) * 0.01
rrois = np.array([[0, 40, 30, 50, 20, 30], [1, 10, 70, 120, 40, 150], [0, 80, 80, 5, 3, 0],
                  [1, 170, 5, 60, 60, 95]])
run('rroi', lambda d, r: nd.contrib.RROIAlign(d, r, pooled_size=(2, 3), spatial_scale=1 / 16.),
    [data, rrois], dtype='float32', grad=False)
run('rroi_ratio', lambda d, r: nd.contrib.RROIAlign(d, r, pooled_size=(3, 2),
                                                    spatial_scale=1 / 16., sampling_ratio=2),
    [data, rrois], dtype='float32', grad=False)
fm = rng.uniform(-1, 1, (2, 18, 7, 8))
prois = np.array([[0, 10, 22, 100, 90], [1, 3.4, 5.6, 60.2, 20.7], [0, 50, 50, 52, 51],
                  [1, -20, -8, 200, 300]])
run('psroi', lambda d, r: nd.contrib.PSROIPooling(d, r, spatial_scale=0.0625, output_dim=2,
                                                  pooled_size=3), [fm, prois])
run('psroi_group', lambda d, r: nd.contrib.PSROIPooling(d, r, spatial_scale=0.0625,
                                                        output_dim=4, pooled_size=3,
                                                        group_size=2), [fm, prois])
cls = rng.uniform(0, 1, (2, 18, 5, 6))
deltas = rng.uniform(-0.3, 0.3, (2, 36, 5, 6))
info = np.array([[70, 90, 1.0], [50, 60, 0.8]])
for iou in (False, True):
    run('multi_proposal_%d' % iou, lambda c, b, i: nd.contrib.MultiProposal(
        c, b, i, feature_stride=16, scales=(2, 4, 8), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=60,
        rpn_post_nms_top_n=40, threshold=0.6, rpn_min_size=4, output_score=True,
        iou_loss=iou), [cls, deltas, info], dtype='float32', grad=False)
run('proposal', lambda c, b, i: nd.contrib.Proposal(
    c, b, i, feature_stride=16, scales=(2, 4, 8), ratios=(0.5, 1, 2), rpn_post_nms_top_n=30,
    threshold=0.5, rpn_min_size=8), [cls[1:], deltas[1:], info[1:]], dtype='float32',
    grad=False)
img = rng.uniform(-1, 1, (2, 4, 5, 6))
off = rng.uniform(-1.5, 1.5, (2, 36, 5, 6))
w = rng.uniform(-1, 1, (6, 2, 3, 3))
run('deformable', lambda d, o, k, b: nd.contrib.DeformableConvolution(
    d, o, k, b, kernel=(3, 3), pad=(1, 1), num_filter=6, num_group=2, num_deformable_group=2),
    [img, off, w, rng.uniform(-1, 1, 6)])
run('modulated', lambda d, o, m, k: nd.contrib.ModulatedDeformableConvolution(
    d, o, m, k, kernel=(3, 3), pad=(2, 2), dilate=(2, 2), num_filter=6, num_group=2,
    num_deformable_group=2, no_bias=True), [img, off, rng.uniform(0, 1, (2, 18, 5, 6)), w],
    grad=False)  # MXNet's CPU kernel has no backward for it
with open(sys.argv[1] + '/contrib.json', 'w') as f:
    json.dump(results, f)
"""

# float32 where the op computes in float32 only
_FLOAT32 = ('rroi', 'rroi_ratio', 'multi_proposal_0', 'multi_proposal_1', 'proposal')


def test_contrib_vision_ops_match_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'contrib.json')
    assert sorted(theirs) == sorted(ours)
    for name, want in theirs.items():
        got = ours[name]
        tol = 1e-5 if name in _FLOAT32 else 1e-12
        assert len(got['out']) == len(want['out']), name
        for g, w in zip(got['out'], want['out']):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name + ' output')
        assert len(got.get('grads', [])) == len(want.get('grads', [])), name
        for i, (g, w) in enumerate(zip(got.get('grads', []), want.get('grads', []))):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol,
                                       err_msg='%s gradient of input %d' % (name, i))


def test_adaptive_avg_pooling_averages_overlapping_windows():
    x = nd.array(np.arange(5.0).reshape(1, 1, 1, 5))
    out = nd.contrib.AdaptiveAvgPooling2D(x, output_size=(1, 3)).asnumpy().ravel()
    # windows [0, 2), [1, 4), [3, 5) of a row of 5 pooled to 3
    np.testing.assert_allclose(out, [0.5, 2.0, 3.5])


def test_index_array_of_a_zero_dim_array_in_a_graph():
    with mx.np_shape():
        out = mx.sym.contrib.index_array(mx.sym.var('d')).eval(d=nd.ones(()))[0]
        assert out.shape == (0,) and out.dtype == np.int64
        grad = nd.ones(())
        exe = mx.sym.contrib.index_array(mx.sym.var('d')).bind(
            mx.cpu(), {'d': nd.ones(())}, args_grad={'d': grad})
        exe.forward(is_train=True)
        exe.backward(nd.ones((0,)))  # writes the 0-d gradient (a[:] = 0 on a 0-d array)
        assert grad.asnumpy() == 0


def test_rroi_align_of_an_unrotated_box_matches_roi_align():
    data = nd.array(np.random.RandomState(0).uniform(size=(1, 2, 8, 8)))
    # centre (4, 3.5), 5 x 4: corners (1.5, 1.5) and (6.5, 5.5)
    rotated = nd.contrib.RROIAlign(data, nd.array([[0, 4, 3.5, 5, 4, 0]]), pooled_size=(2, 2),
                                   spatial_scale=1.0, sampling_ratio=2)
    plain = nd.contrib.ROIAlign(data, nd.array([[0, 1.5, 1.5, 6.5, 5.5]]), pooled_size=(2, 2),
                                spatial_scale=1.0, sample_ratio=2)
    np.testing.assert_allclose(rotated.asnumpy(), plain.asnumpy(), rtol=1e-6)


def test_proposal_outputs_in_a_graph_follow_output_score():
    args = [mx.sym.var(n) for n in ('cls_prob', 'bbox_pred', 'im_info')]
    plain = mx.sym.contrib.MultiProposal(*args, rpn_post_nms_top_n=7, scales=(8,),
                                         ratios=(1,))
    assert plain.list_outputs() == ['multiproposal0_output']
    scored = mx.sym.contrib.Proposal(*args, rpn_post_nms_top_n=7, scales=(8,), ratios=(1,),
                                     output_score=True)
    assert scored.list_outputs() == ['proposal0_output', 'proposal0_score']
    rng = np.random.RandomState(1)
    outs = scored.eval(cls_prob=nd.array(rng.uniform(size=(1, 2, 3, 3))),
                       bbox_pred=nd.array(rng.uniform(-0.1, 0.1, size=(1, 4, 3, 3))),
                       im_info=nd.array([[48, 48, 1]]))
    assert [o.shape for o in outs] == [(7, 5), (7, 1)]
    # scores come sorted; fewer kept boxes than asked for are repeated in turn
    scores = outs[1].asnumpy().ravel()
    kept = len(set(scores.tolist()))
    assert np.all(np.diff(scores[:kept]) <= 0)
    np.testing.assert_array_equal(scores[kept:], scores[:7 - kept])


def test_proposal_takes_one_image():
    with pytest.raises(MXNetError, match='MultiProposal'):
        nd.contrib.Proposal(nd.ones((2, 2, 3, 3)), nd.ones((2, 4, 3, 3)), nd.ones((2, 3)),
                            scales=(8,), ratios=(1,))


def test_deformable_convolution_with_zero_offsets_is_a_convolution():
    rng = np.random.RandomState(2)
    x, w, b = (nd.array(rng.uniform(size=s)) for s in ((2, 4, 5, 6), (6, 2, 3, 3), (6,)))
    offset = nd.zeros((2, 2 * 18, 3, 4))
    got = nd.contrib.DeformableConvolution(x, offset, w, b, kernel=(3, 3), num_filter=6,
                                           num_group=2, num_deformable_group=2)
    want = nd.Convolution(x, w, b, kernel=(3, 3), num_filter=6, num_group=2)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_deformable_convolution_in_a_graph_infers_weight_and_lists_bias_by_no_bias():
    data, offset = mx.sym.var('data'), mx.sym.var('offset')
    conv = mx.sym.contrib.DeformableConvolution(data, offset, kernel=(3, 3), num_filter=5,
                                                pad=(1, 1), name='dc')
    assert conv.list_arguments() == ['data', 'offset', 'dc_weight', 'dc_bias']
    arg_shapes, out_shapes, _ = conv.infer_shape(data=(2, 4, 6, 7), offset=(2, 18, 6, 7))
    assert arg_shapes[2:] == [(5, 4, 3, 3), (5,)] and out_shapes == [(2, 5, 6, 7)]
    bare = mx.sym.contrib.ModulatedDeformableConvolution(
        data, offset, mx.sym.var('mask'), kernel=(3, 3), num_filter=5, no_bias=True,
        name='mdc')
    assert bare.list_arguments() == ['data', 'offset', 'mask', 'mdc_weight']
