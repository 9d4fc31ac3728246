"""MXNet's legacy output layers give MXNet 1.9.1's outputs and data gradients when a
symbol is bound and run backward with no head gradients, as ``Module`` trains them."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd

SCRIPT = r'''
import json, os, sys
import numpy as np
import mxnet as mx

rng = np.random.RandomState(0)


def uniform(*shape):
    return rng.uniform(-1.5, 1.5, size=shape).astype('float32')


# (name, layer, its arguments, data, label or None, head gradients or None)
CASES = [
    ('linear (N, 1), label (N,)', 'LinearRegressionOutput', {}, uniform(4, 1), uniform(4), None),
    ('linear (N, 3), grad_scale', 'LinearRegressionOutput', {'grad_scale': 0.5},
     uniform(3, 3), uniform(3, 3), None),
    ('linear (N, 2, 3), label (N, 6)', 'LinearRegressionOutput', {}, uniform(2, 2, 3),
     uniform(2, 6), None),
    ('logistic (N, 1)', 'LogisticRegressionOutput', {}, uniform(4, 1),
     np.array([0, 1, 1, 0], 'float32'), None),
    ('logistic (N, 2), grad_scale', 'LogisticRegressionOutput', {'grad_scale': 2.0},
     uniform(3, 2), rng.randint(0, 2, (3, 2)).astype('float32'), None),
    ('mae (N, 1)', 'MAERegressionOutput', {}, uniform(4, 1), uniform(4), None),
    ('mae (N, 2), a zero error, grad_scale', 'MAERegressionOutput', {'grad_scale': 3.0},
     np.array([[0.5, -1], [2, 0.25]], 'float32'),
     np.array([[0.5, 1], [-2, 1]], 'float32'), None),
    ('svm L2', 'SVMOutput', {}, uniform(4, 3), np.array([0, 2, 1, 1], 'float32'), None),
    ('svm L1, labels out of range', 'SVMOutput', {'use_linear': True}, uniform(4, 3),
     np.array([0, -1, 3, 2], 'float32'), None),
    ('svm margin, coefficient, 3-D', 'SVMOutput',
     {'margin': 0.5, 'regularization_coefficient': 2.0}, uniform(2, 2, 3),
     np.array([[0, 2], [1, 1]], 'float32'), None),
    ('softmax', 'SoftmaxOutput', {}, uniform(3, 4), np.array([1, 3, 0], 'float32'), None),
    ('softmax batch, grad_scale', 'SoftmaxOutput',
     {'normalization': 'batch', 'grad_scale': 2.0}, uniform(3, 4),
     np.array([1, 3, 0], 'float32'), None),
    ('softmax valid, use_ignore', 'SoftmaxOutput',
     {'normalization': 'valid', 'use_ignore': True}, uniform(4, 3),
     np.array([1, -1, 0, 2], 'float32'), None),
    ('softmax valid, ignore_label, no use_ignore', 'SoftmaxOutput',
     {'normalization': 'valid', 'ignore_label': 2}, uniform(4, 3),
     np.array([1, 2, 0, 2], 'float32'), None),
    ('softmax flattens (N, 2, 3), batch', 'SoftmaxOutput', {'normalization': 'batch'},
     uniform(2, 2, 3), np.array([[5, 0], [1, 2]], 'float32'), None),
    ('softmax preserve_shape, batch', 'SoftmaxOutput',
     {'preserve_shape': True, 'normalization': 'batch'}, uniform(2, 3, 4),
     rng.randint(0, 4, (2, 3)).astype('float32'), None),
    ('softmax multi_output', 'SoftmaxOutput', {'multi_output': True}, uniform(2, 3, 4),
     rng.randint(0, 3, (2, 4)).astype('float32'), None),
    ('softmax multi_output, batch, grad_scale', 'SoftmaxOutput',
     {'multi_output': True, 'normalization': 'batch', 'grad_scale': 3.0}, uniform(2, 3, 2, 2),
     rng.randint(0, 3, (2, 4)).astype('float32'), None),
    ('softmax multi_output, valid, use_ignore', 'SoftmaxOutput',
     {'multi_output': True, 'normalization': 'valid', 'use_ignore': True}, uniform(2, 3, 4),
     np.array([[0, -1, 2, 1], [-1, -1, 1, 0]], 'float32'), None),
    ('softmax probabilities', 'SoftmaxOutput', {'grad_scale': 0.5}, uniform(2, 3),
     np.array([[0.2, 0.3, 0.5], [1, 0, 0]], 'float32'), None),
    ('softmax smooth_alpha, use_ignore', 'SoftmaxOutput',
     {'smooth_alpha': 0.1, 'use_ignore': True}, uniform(3, 4),
     np.array([1, -1, 3], 'float32'), None),
    ('softmax out_grad', 'SoftmaxOutput', {'out_grad': True}, uniform(2, 3),
     np.array([2, 0], 'float32'), uniform(2, 3)),
    ('makeloss', 'MakeLoss', {}, uniform(3, 2), None, None),
    ('makeloss batch, grad_scale', 'MakeLoss', {'normalization': 'batch', 'grad_scale': 2.0},
     uniform(3, 2), None, None),
    ('makeloss batch, 1-D', 'MakeLoss', {'normalization': 'batch'}, uniform(4), None, None),
    ('makeloss batch, 3-D', 'MakeLoss', {'normalization': 'batch'}, uniform(2, 3, 2), None,
     None),
    ('makeloss valid', 'MakeLoss', {'normalization': 'valid', 'valid_thresh': 0.25},
     uniform(3, 4), None, None),
    ('makeloss valid, none valid', 'MakeLoss', {'normalization': 'valid', 'valid_thresh': 5.0},
     uniform(2, 2), None, None),
    ('make_loss', 'make_loss', {}, uniform(3, 2), None, None),
]

out = {}
for name, layer, kwargs, data, label, head in CASES:
    sym = getattr(mx.sym, layer)(mx.sym.var('data'), name='layer', **kwargs)
    args = {'data': mx.nd.array(data)}
    if label is not None:
        args['layer_label'] = mx.nd.array(label)
    grad = mx.nd.zeros(data.shape)
    exe = sym.bind(mx.cpu(), args=args, args_grad={'data': grad},
                   grad_req={n: 'write' if n == 'data' else 'null' for n in args})
    exe.forward(is_train=True)
    exe.backward() if head is None else exe.backward([mx.nd.array(head)])
    out[name] = {'arguments': sym.list_arguments(), 'outputs': sym.list_outputs(),
                 'label shape': sym.infer_shape(data=data.shape)[0][1:],
                 'forward': exe.outputs[0].asnumpy().tolist(), 'gradient': grad.asnumpy().tolist()}

# BlockGrad: its input gets no gradient, the other path does
x = mx.sym.var('data')
for name, sym in (('blockgrad beside a path', x * 2 + mx.sym.BlockGrad(x * 3)),
                  ('blockgrad alone', mx.sym.BlockGrad(x * x)),
                  ('stop_gradient in a group', mx.sym.Group([mx.sym.stop_gradient(x * 3),
                                                             mx.sym.MakeLoss(x * x)]))):
    grad = mx.nd.zeros((2, 3))
    exe = sym.bind(mx.cpu(), args={'data': mx.nd.array(uniform(2, 3))}, args_grad=[grad])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3)) for _ in exe.outputs])
    out[name] = {'outputs': sym.list_outputs(), 'gradient': grad.asnumpy().tolist()}

# the talk's linear regression network
fc = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=1, name='fc')
net = mx.sym.LinearRegressionOutput(data=fc, label=mx.sym.Variable('lin_reg_label'),
                                    name='lin_reg')
out['lin_reg'] = {'arguments': net.list_arguments(), 'outputs': net.list_outputs(),
                  'shapes': net.infer_shape(data=(5, 3)),
                  'nodes': [(n['op'], n['name'], n.get('attrs', {}))
                            for n in json.loads(net.tojson())['nodes']]}
auto = mx.sym.SVMOutput(fc, margin=0.5, name='svm')
out['svm'] = {'arguments': auto.list_arguments(),
              'nodes': [(n['op'], n['name'], n.get('attrs', {}))
                        for n in json.loads(auto.tojson())['nodes']]}
with open(os.path.join(sys.argv[1], 'layers.json'), 'w') as f:
    json.dump(out, f, sort_keys=True)
'''


def _close(got, expected, where):
    if isinstance(expected, list) and expected and isinstance(expected[0], (int, float, list)) \
            and not isinstance(expected[0], str):
        np.testing.assert_allclose(np.array(got, dtype=float), np.array(expected, dtype=float),
                                   rtol=1e-5, atol=1e-6, err_msg=where)
    else:
        assert got == expected, where


def test_layers_answer_as_mxnet_does(answers_of_both):
    expected, got = answers_of_both(SCRIPT, 'layers.json')
    assert sorted(got) == sorted(expected)
    for case, answers in expected.items():
        assert sorted(got[case]) == sorted(answers), case
        for key, value in answers.items():
            if key in ('forward', 'gradient'):
                _close(got[case][key], value, '%s: %s' % (case, key))
            else:
                assert got[case][key] == value, '%s: %s' % (case, key)


def test_labels_are_variables_named_and_shaped_as_mxnet_makes_them():
    fc = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=1, name='fc')
    net = mx.sym.LinearRegressionOutput(data=fc, label=mx.sym.Variable('lin_reg_label'),
                                        name='lin_reg')
    assert net.list_arguments() == ['data', 'fc_weight', 'fc_bias', 'lin_reg_label']
    assert net.list_outputs() == ['lin_reg_output']
    assert net.infer_shape(data=(5, 3))[0][-1] == (5,)  # (N,) for an output (N, 1)
    x = mx.sym.var('x')
    assert mx.sym.MAERegressionOutput(x, name='mae').infer_shape(x=(5, 2))[0] == [(5, 2)] * 2
    assert mx.sym.SVMOutput(x).infer_shape(x=(2, 3, 4))[0][1] == (2, 3)
    # one class per position, the positions flattened, as MXNet infers it
    assert mx.sym.SoftmaxOutput(x, multi_output=True, name='s').infer_shape(
        x=(2, 3, 4, 5))[0][1] == (2, 20)
    assert mx.sym.make_loss(x, name='l').list_outputs() == ['l_loss']


def test_softmax_out_grad_multiplies_by_the_output():
    """MXNet 1.x hands SoftmaxOutput's backward its output where the head gradient goes."""
    data = nd.array([[0.1, 0.5, -0.3], [1.0, 0.2, 0.3]])
    data.attach_grad()
    with autograd.record():
        out = nd.SoftmaxOutput(data, nd.array([2, 0]), out_grad=True)
    out.backward(nd.full((2, 3), 3.0))
    prob = out.asnumpy()
    np.testing.assert_allclose(data.grad.asnumpy(), (prob - np.eye(3)[[2, 0]]) * prob,
                               rtol=1e-6)


def test_regression_backward_ignores_the_head_gradient():
    data, label = nd.array([[1.0, 2.0], [3.0, 5.0]]), nd.array([[0.0, 2.0], [1.0, 1.0]])
    data.attach_grad()
    with autograd.record():
        out = nd.LinearRegressionOutput(data, label, grad_scale=4.0)
    out.backward(nd.full((2, 2), 7.0))
    assert data.grad.asnumpy().tolist() == [[2.0, 0.0], [4.0, 8.0]]  # 4 * (out - label) / 2


@pytest.mark.parametrize('op,label', [('LinearRegressionOutput', (3, 2)),
                                      ('SVMOutput', (4, 2)), ('SoftmaxOutput', (3,))])
def test_a_label_that_does_not_fit_is_refused(op, label):
    with pytest.raises(mx.MXNetError, match='label of shape'):
        getattr(nd, op)(nd.ones((4, 2)), nd.zeros(label))


def test_normalization_must_be_one_of_mxnets():
    with pytest.raises(mx.MXNetError, match="normalization must be 'null', 'batch' or 'valid'"):
        nd.MakeLoss(nd.ones((2, 2)), normalization='mean')
