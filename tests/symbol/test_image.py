"""``mx.sym.image``: the image ops of ``nd.image`` as graph nodes, named and written as
MXNet 1.9.1 writes them."""
import json

import numpy as np

import minigluon as mx
from minigluon import nd
from minigluon.test_utils import check_numeric_gradient, check_symbolic_backward


def test_normalize_forward_backward_and_json():
    data = mx.sym.var('data')
    norm = mx.sym.image.normalize(data=data, mean=(0, 1, 2), std=(3, 2, 1))
    node = json.loads(norm.tojson())['nodes'][1]
    assert (node['op'], node['name']) == ('_image_normalize', 'normalize0')
    x = np.random.RandomState(0).rand(2, 3, 4, 5).astype(np.float32)
    want = (x - np.array([0, 1, 2]).reshape(3, 1, 1)) / np.array([3, 2, 1]).reshape(3, 1, 1)
    np.testing.assert_allclose(norm.eval(data=nd.array(x))[0].asnumpy(), want, rtol=1e-6)
    grad = np.ones_like(x) / np.array([3.0, 2.0, 1.0]).reshape(3, 1, 1)
    check_symbolic_backward(norm, [x], [np.ones_like(x)], [grad], rtol=1e-6)
    check_numeric_gradient(norm, [x[0]], atol=1e-3)
    loaded = mx.sym.load_json(norm.tojson())
    np.testing.assert_allclose(loaded.eval(data=nd.array(x))[0].asnumpy(), want, rtol=1e-6)


def test_to_tensor_and_flip_as_nd_image():
    image = nd.array(np.arange(24).reshape(2, 4, 3), dtype='uint8')
    tensor = mx.sym.image.to_tensor(mx.sym.var('img'))
    flip = mx.sym.image.flip_left_right(mx.sym.var('img'))
    np.testing.assert_array_equal(tensor.eval(img=image)[0].asnumpy(),
                                  nd.image.to_tensor(image).asnumpy())
    np.testing.assert_array_equal(flip.eval(img=image)[0].asnumpy(),
                                  nd.image.flip_left_right(image).asnumpy())
    assert tensor.infer_shape(img=(2, 4, 3))[1] == [(3, 2, 4)]


def test_image_names_leave_the_top_level_alone():
    # mx.sym.crop is slice's alias, mx.sym.image.crop the image op, as in MXNet
    x = mx.sym.var('x')
    assert json.loads(mx.sym.crop(x, begin=(0,), end=(1,)).tojson())['nodes'][1]['op'] == \
        'slice'
    assert json.loads(mx.sym.image.crop(x, x=0, y=0, width=1, height=1).tojson())[
        'nodes'][1]['op'] == '_image_crop'
