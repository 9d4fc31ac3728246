"""The vision ops (UpSampling, ROIPooling, LRN, L2Normalization, GridGenerator,
BilinearSampler, SpatialTransformer, nd.image.adjust_lighting, nd.contrib.BilinearResize2D
and ROIAlign) against MXNet 1.9.1: outputs and gradients, one script run by both."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

# float32 where MXNet computes in float32 only (LRN, GridGenerator, adjust_lighting)
_FLOAT32 = ('lrn', 'lrn5', 'grid_affine', 'grid_warp', 'lighting_f32')

_SCRIPT = """
import json, sys
import numpy as np
import mxnet as mx

nd, autograd = mx.nd, mx.autograd

rng = np.random.RandomState(7)
results = {}


def run(name, fn, arrays, dtype='float64', grad=True):
    xs = [nd.array(a, dtype=dtype) for a in arrays]
    if grad:
        for x in xs:
            x.attach_grad()
    with autograd.record():
        out = fn(*xs)
    head = nd.array(np.cos(np.arange(out.size)).reshape(out.shape) + 0.3, dtype=dtype)
    entry = {'out': out.asnumpy().astype('float64').tolist()}
    if grad:
        out.backward(head)
        entry['grads'] = [x.grad.asnumpy().astype('float64').tolist() for x in xs]
    results[name] = entry


def u(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def bilinear_weight(c, scale):
    k = 2 * scale - scale % 2
    f = np.ceil(k / 2.0)
    centre = (2 * f - 1 - f % 2) / (2.0 * f)
    og = np.arange(k)
    w1 = 1 - np.abs(og / f - centre)
    return np.tile(np.outer(w1, w1), (c, 1, 1, 1))


x = u(2, 3, 3, 4)
run('up_nearest', lambda a: nd.UpSampling(a, scale=2, sample_type='nearest'), [x])
run('up_concat', lambda a, b: nd.UpSampling(a, b, scale=2, sample_type='nearest',
                                             num_args=2), [u(1, 2, 2, 2), u(1, 3, 4, 4)])
run('up_sum', lambda a, b: nd.UpSampling(a, b, scale=3, sample_type='nearest', num_args=2,
                                          multi_input_mode='sum'), [u(1, 2, 2, 2), u(1, 2, 6, 6)])
for s in (2, 3):
    run('up_bilinear%d' % s, lambda a, w: nd.UpSampling(a, w, scale=s, sample_type='bilinear',
                                                        num_filter=3, num_args=2),
        [x, bilinear_weight(3, s) + u(3, 1, 2 * s - s % 2, 2 * s - s % 2) * 0.1])
data = rng.permutation(2 * 2 * 8 * 9).reshape(2, 2, 8, 9) * 0.1 - 5
rois = np.array([[0, 0, 0, 4, 4], [1, 1.5, 2.2, 7.6, 6.1], [0, 3.3, 1, 3.4, 9], [1, -3, -2, 12, 20],
                 [0, 2.5, 2.5, 5.5, 3.5], [1, 6, 6, 30, 30]])
run('roipool', lambda d, r: nd.ROIPooling(d, r, pooled_size=(2, 3), spatial_scale=1.0),
    [data, rois])
run('roipool_scale', lambda d, r: nd.ROIPooling(d, r, pooled_size=(3, 2), spatial_scale=0.7),
    [data, rois])
run('lrn', lambda a: nd.LRN(a, nsize=3, alpha=0.1, beta=0.6, knorm=1.5), [u(2, 5, 2, 3)],
    dtype='float32')
run('lrn5', lambda a: nd.LRN(a, nsize=5), [u(1, 6, 2, 2) * 3], dtype='float32')
for mode in ('instance', 'channel', 'spatial'):
    run('l2_' + mode, lambda a: nd.L2Normalization(a, mode=mode, eps=1e-3), [u(2, 3, 2, 2)])
run('l2_2d', lambda a: nd.L2Normalization(a), [u(2, 5)])
theta = np.array([[0.9, 0.1, 0.05, -0.1, 1.1, -0.02], [0.7, -0.3, 0.1, 0.2, 0.8, 0.1]])
run('grid_affine', lambda t: nd.GridGenerator(t, transform_type='affine', target_shape=(3, 4)),
    [theta], dtype='float32')
run('grid_warp', lambda f: nd.GridGenerator(f, transform_type='warp'), [u(2, 2, 3, 4) * 2],
    dtype='float32')
grid = u(2, 2, 4, 5, lo=-1.3, hi=1.3)
run('sampler', lambda d, g: nd.BilinearSampler(d, g), [u(2, 3, 5, 6), grid])
run('stn', lambda d, l: nd.SpatialTransformer(d, l, target_shape=(4, 5), transform_type='affine',
                                               sampler_type='bilinear'), [u(2, 3, 5, 6), theta])
img = u(2, 3, 5, 6)
run('resize_size', lambda d: nd.contrib.BilinearResize2D(d, height=7, width=4), [img])
run('resize_noalign', lambda d: nd.contrib.BilinearResize2D(d, height=3, width=11,
                                                            align_corners=False), [img])
run('resize_scale', lambda d: nd.contrib.BilinearResize2D(d, scale_height=1.5, scale_width=0.6),
    [img])
run('resize_odd', lambda d: nd.contrib.BilinearResize2D(d, scale_height=2, scale_width=2,
                                                        mode='odd_scale'), [img])
run('resize_like', lambda d, l: nd.contrib.BilinearResize2D(d, l, mode='like'),
    [img, u(2, 3, 4, 9)])
run('resize_even', lambda d: nd.contrib.BilinearResize2D(d, mode='to_even_up'), [u(1, 2, 3, 5)])
fm = u(2, 8, 6, 7)
arois = np.array([[0, 1.2, 0.5, 9.7, 8.3], [1, -2, -1, 4, 3], [0, 3, 3, 3.5, 3.2],
                  [1, 0, 0, 13.9, 11.9], [0, 5, 4, 30, 30]])
run('align', lambda d, r: nd.contrib.ROIAlign(d, r, pooled_size=(2, 3), spatial_scale=0.5),
    [fm, arois])
run('align_ratio', lambda d, r: nd.contrib.ROIAlign(d, r, pooled_size=(3, 2), spatial_scale=0.5,
                                                    sample_ratio=2, aligned=True), [fm, arois])
run('align_ps', lambda d, r: nd.contrib.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=0.5,
                                                 position_sensitive=True), [fm, arois])
pic = np.array([[[10, 200, 250], [0, 1, 2]], [[30, 60, 90], [255, 255, 255]]])
run('lighting_u8', lambda p: nd.image.adjust_lighting(p, alpha=(0.1, 0.2, 0.3)), [pic],
    dtype='uint8', grad=False)
run('lighting_f32', lambda p: nd.image.adjust_lighting(p, alpha=(-1.1, 0.02, 0.3)), [pic],
    dtype='float32')
with open(sys.argv[1] + '/vision.json', 'w') as f:
    json.dump(results, f)
"""


def test_vision_ops_match_mxnet(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'vision.json')
    assert sorted(theirs) == sorted(ours)
    for name, want in theirs.items():
        got = ours[name]
        tol = 2e-6 if name in _FLOAT32 else 1e-12
        np.testing.assert_allclose(got['out'], want['out'], rtol=tol, atol=tol,
                                   err_msg=name + ' output')
        assert len(got.get('grads', [])) == len(want.get('grads', [])), name
        for i, (g, w) in enumerate(zip(got.get('grads', []), want.get('grads', []))):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol,
                                       err_msg='%s gradient of input %d' % (name, i))


def test_bilinear_upsampling_in_a_graph_infers_its_weight_and_lists_data_weight():
    data, weight = mx.sym.var('data'), mx.sym.var('weight')
    up = mx.sym.UpSampling(data, weight, scale=2, sample_type='bilinear', num_filter=3,
                           num_args=2)
    arg_shapes, out_shapes, _ = up.infer_shape(data=(1, 3, 4, 5))
    assert arg_shapes == [(1, 3, 4, 5), (3, 1, 4, 4)] and out_shapes == [(1, 3, 8, 10)]
    x, w = nd.ones((1, 3, 4, 5)), nd.ones((3, 1, 4, 4))
    want = nd.UpSampling(x, w, scale=2, sample_type='bilinear', num_filter=3)
    got = up.eval(data=x, weight=w)[0]
    assert np.array_equal(got.asnumpy(), want.asnumpy())


def test_contrib_resize_in_a_graph_takes_like_only_in_mode_like():
    x = mx.sym.var('x')
    assert mx.sym.contrib.BilinearResize2D(x, height=3, width=2).list_arguments() == ['x']
    like = mx.sym.contrib.BilinearResize2D(x, mx.sym.var('y'), mode='like')
    assert like.list_arguments() == ['x', 'y']
    out = like.eval(x=nd.ones((1, 1, 2, 2)), y=nd.zeros((1, 1, 3, 5)))[0]
    assert out.shape == (1, 1, 3, 5) and np.allclose(out.asnumpy(), 1)


def test_clear_errors():
    x = nd.ones((1, 2, 4, 4))
    with pytest.raises(MXNetError, match='odd nsize'):
        nd.LRN(x, nsize=4)
    with pytest.raises(MXNetError, match='rois must be'):
        nd.ROIPooling(x, nd.ones((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match='weight must have shape'):
        nd.UpSampling(x, nd.ones((2, 1, 3, 3)), scale=2, sample_type='bilinear')
    with pytest.raises(MXNetError, match='HWC image'):
        nd.image.adjust_lighting(nd.ones((1, 2, 2, 3)), alpha=(0.1, 0.1, 0.1))
