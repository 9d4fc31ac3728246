"""Executors: bind/simple_bind, forward and backward with every grad_req, the list and
dict forms, reshape, copy_params_from, and the same numbers as the ops run imperatively."""
import re

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError

v = mx.sym.var


def _net():
    fc = mx.sym.FullyConnected(v('x'), num_hidden=3, name='fc')
    return mx.sym.sum(mx.sym.tanh(fc) * v('scale'), axis=1)


def _arrays(seed=0):
    rng = np.random.RandomState(seed)
    return {'x': nd.array(rng.normal(size=(4, 5))), 'fc_weight': nd.array(rng.normal(size=(3, 5))),
            'fc_bias': nd.array(rng.normal(size=3)), 'scale': nd.array(rng.normal(size=(4, 3)))}


def _imperative(arrays, head):
    """Outputs and gradients of ``_net`` run op by op with autograd."""
    arrays = {k: a.copy() for k, a in arrays.items()}
    for a in arrays.values():
        a.attach_grad()
    with autograd.record():
        out = nd.sum(nd.tanh(nd.FullyConnected(arrays['x'], arrays['fc_weight'],
                                               arrays['fc_bias'], num_hidden=3))
                     * arrays['scale'], axis=1)
    out.backward(head)
    return out.asnumpy(), {k: a.grad.asnumpy() for k, a in arrays.items()}


def test_forward_and_backward_are_the_imperative_ops_bit_for_bit():
    net, arrays = _net(), _arrays()
    head = nd.array(np.linspace(-1, 1, 4))
    expected_out, expected_grads = _imperative(arrays, head)
    grads = {k: nd.zeros(a.shape) for k, a in arrays.items()}
    exe = net.bind(mx.cpu(), args=arrays, args_grad=grads)
    outs = exe.forward(is_train=True)
    assert outs is exe.outputs and len(outs) == 1
    np.testing.assert_array_equal(outs[0].asnumpy(), expected_out)
    exe.backward(head)
    for name, grad in grads.items():
        np.testing.assert_array_equal(grad.asnumpy(), expected_grads[name], err_msg=name)
        assert exe.grad_dict[name] is grad
    assert list(exe.output_dict) == net.list_outputs()


def test_grad_req_write_add_null_in_list_and_dict_forms():
    net, arrays = _net(), _arrays()
    names = net.list_arguments()
    head = nd.ones((4,))
    _, expected = _imperative(arrays, head)
    grads = [nd.ones(arrays[n].shape) for n in names]
    reqs = {'x': 'null', 'fc_weight': 'add', 'fc_bias': 'write', 'scale': 'write'}
    exe = net.bind(mx.cpu(), [arrays[n] for n in names], args_grad=grads,
                   grad_req=[reqs[n] for n in names])
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward([head])
    by_name = dict(zip(names, grads))
    np.testing.assert_array_equal(by_name['x'].asnumpy(), np.ones((4, 5)))  # untouched
    np.testing.assert_allclose(by_name['fc_weight'].asnumpy(), 1 + 2 * expected['fc_weight'],
                               rtol=1e-6)
    np.testing.assert_array_equal(by_name['fc_bias'].asnumpy(), expected['fc_bias'])
    # a dict of grad_req leaves out what needs none; args_grad may leave them out too
    exe = net.bind(mx.cpu(), arrays, args_grad={'scale': nd.zeros((4, 3))},
                   grad_req={'scale': 'write'})
    assert exe.grad_arrays[:3] == [None, None, None]
    exe.forward(is_train=True)
    exe.backward(head)
    np.testing.assert_array_equal(exe.grad_dict['scale'].asnumpy(), expected['scale'])


def test_backward_may_follow_an_inference_forward():
    """MXNet's executor differentiates the last forward whatever its mode."""
    net, arrays = _net(), _arrays()
    _, expected = _imperative(arrays, nd.ones((4,)))
    exe = net.simple_bind(mx.cpu(), x=(4, 5), scale=(4, 3))
    exe.copy_params_from(arrays)
    exe.forward()
    exe.backward(nd.ones((4,)))
    np.testing.assert_array_equal(exe.grad_dict['fc_weight'].asnumpy(), expected['fc_weight'])
    with pytest.raises(MXNetError, match='run forward again'):
        exe.backward(nd.ones((4,)))


def test_outputs_are_the_executors_arrays():
    x = v('x')
    exe = (x * 2).bind(mx.cpu(), {'x': nd.array([1, 2])})
    held = exe.outputs[0]  # allocated by bind, as MXNet's
    exe.forward()
    exe.forward(x=nd.array([3, 4]))
    assert exe.outputs[0] is held and held.asnumpy().tolist() == [6, 8]
    assert exe.arg_dict['x'].asnumpy().tolist() == [3, 4]
    with pytest.raises(MXNetError, match="'y' is not an argument"):
        exe.forward(y=nd.array([1, 2]))


def test_simple_bind_allocates_by_shape_and_dtype():
    net = mx.sym.BatchNorm(mx.sym.Convolution(v('data'), kernel=(1, 1), num_filter=2,
                                              name='c'), name='bn')
    exe = net.simple_bind(mx.cpu(), data=(2, 3, 4, 4), type_dict={'data': 'float64'},
                          grad_req={'c_weight': 'write'})
    assert exe.arg_dict['c_weight'].shape == (2, 3, 1, 1)
    assert exe.arg_dict['data'].dtype == np.float64
    assert exe.aux_dict['bn_moving_var'].shape == (2,)
    assert [n for n, g in exe.grad_dict.items() if g is not None] == ['c_weight']
    with pytest.raises(MXNetError, match='do not determine every argument'):
        net.simple_bind(mx.cpu())


def test_training_backward_updates_the_auxiliary_states():
    # as MXNet 1.x on the CPU: BatchNorm's moving statistics change in its backward
    net = mx.sym.BatchNorm(v('x'), name='bn', momentum=0.5)
    for req in ('null', 'write'):
        exe = net.simple_bind(mx.cpu(), x=(4, 2), grad_req=req)
        exe.arg_dict['x'][:] = nd.array(np.arange(8).reshape(4, 2))
        exe.arg_dict['bn_gamma'][:] = 1
        exe.aux_dict['bn_moving_var'][:] = 1
        exe.forward(is_train=False)
        exe.forward(is_train=True)
        np.testing.assert_array_equal(exe.aux_dict['bn_moving_mean'].asnumpy(), [0, 0])
    exe.backward(nd.ones((4, 2)))
    np.testing.assert_allclose(exe.aux_dict['bn_moving_mean'].asnumpy(), [1.5, 2])


def test_reshape_shares_memory_as_mxnet_does():
    y = mx.sym.FullyConnected(v('x'), num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req='null')
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))
    small.forward()
    assert (small.outputs[0].asnumpy() == 4).all()
    assert (exe.outputs[0].asnumpy()[:3] == 4).all()  # the outputs share memory
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert (exe.arg_arrays[0].asnumpy() == 1).all()  # a larger array is a new one
    assert big.arg_arrays[1] is exe.arg_arrays[1]  # an unchanged one is shared
    with pytest.raises(MXNetError, match='allow_up_sizing'):
        exe.reshape(x=(6, 4))
    with pytest.raises(MXNetError, match='partial_shaping'):
        mx.sym.elemwise_add(v('a'), v('b')).simple_bind(
            mx.cpu(), a=(2, 2), b=(2, 2)).reshape(a=(1, 2))


def test_gradients_stop_at_blockgrad_and_plans_keep_less():
    """A graph whose every path to the output is cut by BlockGrad records nothing: its
    plan holds no more than an inference plan, and its gradients are zeros."""
    data = v('data')
    chain = data
    for _ in range(5):
        chain = chain * chain

    def planned(sym, **kwargs):
        exe = sym.simple_bind(mx.cpu(), data=(256, 1024), **kwargs)  # 1 MB a value
        return int(re.search(r'Total (\d+) MB allocated', exe.debug_str()).group(1)), exe
    recorded, _ = planned(chain)
    inference, _ = planned(chain, grad_req='null')
    blocked, exe = planned(mx.sym.stop_gradient(chain))
    assert recorded > blocked == inference
    exe.arg_dict['data'][:] = 1
    exe.grad_dict['data'][:] = 5
    exe.forward(is_train=True)
    exe.backward()
    assert (exe.grad_dict['data'].asnumpy() == 0).all()


def test_loss_layer_gradient_needs_no_head():
    net = mx.sym.SoftmaxOutput(v('x'), name='sm')
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    exe.arg_dict['x'][:] = nd.array([[1, 2, 3], [0, 0, 0]])
    exe.arg_dict['sm_label'][:] = nd.array([2, 0])
    exe.forward(is_train=True)
    exe.backward()
    prob = exe.outputs[0].asnumpy()
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), prob - np.eye(3)[[2, 0]],
                               rtol=1e-6)


def test_monitor_sees_every_output():
    seen = []
    x = v('x')
    exe = mx.sym.Group([x + 1, x * 3]).bind(mx.cpu(), {'x': nd.ones((2,))})
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy().tolist())))
    exe.forward()
    names = exe._symbol.list_outputs()  # pylint: disable=protected-access
    assert seen == [(names[0], [2, 2]), (names[1], [3, 3])]


@pytest.mark.parametrize('call, match', [
    (lambda s: s.bind(mx.cpu(), {'x': nd.ones(2)}), r"no array given for \['y'\]"),
    (lambda s: s.bind(mx.cpu(), [nd.ones(2)]), 'got 1 arrays for 2 names'),
    (lambda s: s.bind(mx.cpu(), {'x': nd.ones(2), 'y': np.ones(2)}), 'must be an NDArray'),
    (lambda s: s.bind(mx.cpu(1), {'x': nd.ones(2), 'y': nd.ones(2)}), 'as_in_context'),
    (lambda s: s.bind(mx.cpu(), {'x': nd.ones(2), 'y': nd.ones(2)},
                      args_grad={'x': nd.ones(3)}), 'gradient of .x. has shape'),
    (lambda s: s.bind(mx.cpu(), {'x': nd.ones(2), 'y': nd.ones(2)}, grad_req='sometimes'),
     "'write', 'add' or 'null'"),
    (lambda s: s.bind(mx.cpu(), {'x': nd.ones(2), 'y': nd.ones(3)}), 'inconsistent shapes'),
])
def test_misuse_gives_clear_errors(call, match):
    with pytest.raises(MXNetError, match=match):
        call(mx.sym.elemwise_add(v('x'), v('y')))


def test_bind_leaves_out_names_the_symbol_does_not_have():
    """As MXNet: one dict of arrays may serve graphs with and without a bias."""
    exe = mx.sym.elemwise_add(v('x'), v('y')).bind(
        mx.cpu(), {'x': nd.ones(2), 'y': nd.ones(2), 'b': nd.ones(2)},
        args_grad={'x': nd.zeros(2), 'b': nd.zeros(3)}, aux_states={'m': nd.ones(1)})
    assert sorted(exe.arg_dict) == ['x', 'y'] and exe.aux_dict == {}
    exe.forward(is_train=True)
    exe.backward(nd.array([2, 3]))
    assert exe.grad_dict['x'].asnumpy().tolist() == [2, 3]


@pytest.mark.parametrize('make, grad', [
    (lambda x: x * x, [2, 4]),
    (lambda x: mx.sym.repeat(x, repeats=2, axis=0), [2, 2]),
])
def test_backward_before_forward_differentiates_at_the_bound_arrays(make, grad):
    """MXNet runs backward on the arrays as they are; forward alone writes the outputs."""
    g = nd.zeros(2)
    exe = make(v('x')).bind(mx.cpu(), [nd.array([1, 2])], args_grad=[g])
    exe.backward(nd.ones(exe.outputs[0].shape))
    assert g.asnumpy().tolist() == grad
    assert not exe.outputs[0].asnumpy().any()


@pytest.mark.parametrize('first, second', [((2, 3), (-1, -1)), ((2, -1), (3, -1)),
                                           ((2, 0), (3, 0))])
def test_ones_of_unknown_dimensions_get_them_through_a_transpose(first, second):
    net = mx.sym.ones(shape=first) + mx.sym.transpose(mx.sym.ones(shape=second))
    out = net.bind(mx.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2))


def test_monitor_names_deconvolution_arrays_without_a_bias():
    """Deconvolution has no bias unless asked (no_bias defaults to True in MXNet)."""
    net = mx.sym.Deconvolution(v('data', shape=(1, 3, 4, 4)), kernel=(2, 2), num_filter=1,
                               name='deconv')
    assert net.list_arguments() == ['data', 'deconv_weight']
    seen = []
    exe = net.simple_bind(mx.cpu(), grad_req='null')
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward()
    assert seen == ['data', 'deconv_data', 'deconv_weight', 'deconv_weight', 'deconv_output']


def test_copy_params_from_and_eval():
    net = _net()
    exe = net.simple_bind(mx.cpu(), x=(4, 5), scale=(4, 3))
    arrays = _arrays()
    exe.copy_params_from({k: a for k, a in arrays.items()})
    with pytest.raises(MXNetError, match="'extra' is not a parameter"):
        exe.copy_params_from({'extra': nd.ones(1)})
    exe.copy_params_from({'extra': nd.ones(1)}, allow_extra_params=True)
    expected = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(net.eval(ctx=mx.cpu(), **arrays)[0].asnumpy(), expected)
    assert exe.get_optimized_symbol().tojson() == net.tojson()


def test_common_subexpressions_are_merged_unless_switched_off(monkeypatch):
    a, b = v('a'), v('b')
    twice = (a + b) * (a + b)
    exe = twice.simple_bind(mx.cpu(), a=(2,), b=(2,))
    assert len(exe.get_optimized_symbol().get_internals()) == \
        len(twice.get_internals()) - 1
    exe.forward(is_train=True, a=nd.array([1, 2]), b=nd.array([3, 4]))
    exe.backward(nd.ones((2,)))
    assert exe.outputs[0].asnumpy().tolist() == [16, 36]
    assert exe.grad_dict['a'].asnumpy().tolist() == [8, 12]  # 2 (a + b)
    # outputs that become one value stay two arrays (a copy), as in MXNet
    group = mx.sym.Group([a * 2, a * 2])
    optimized = group.simple_bind(mx.cpu(), a=(1,)).get_optimized_symbol()
    assert [n.split('_')[-1] for n in optimized.list_outputs()] == ['output', 'output']
    assert optimized.get_internals().list_outputs()[-1].endswith('_0_copy_output')
    # random draws are never merged
    dropped = mx.sym.Dropout(a) + mx.sym.Dropout(a)
    assert len(dropped.simple_bind(mx.cpu(), a=(2,)).get_optimized_symbol()
               .get_internals()) == len(dropped.get_internals())
    monkeypatch.setenv('MXNET_ELIMINATE_COMMON_EXPR', '0')
    assert twice.simple_bind(mx.cpu(), a=(2,), b=(2,)).get_optimized_symbol().tojson() == \
        twice.tojson()


def test_backward_takes_out_grads_in_the_outputs_dtype():
    """MXNet 1.9.1: the head gradient [0.7, 1.6] of an int32 output is read as [0, 1]."""
    grad = nd.zeros(2)
    exe = (mx.sym.cast(v('a'), dtype='int32') * 2).bind(mx.cpu(), {'a': nd.array([5., 7.])},
                                                       args_grad=[grad])
    exe.forward(is_train=True)
    exe.backward([nd.array([0.7, 1.6])])
    assert grad.asnumpy().tolist() == [0., 2.]


def test_reshaped_executor_keeps_the_monitor_callback():
    seen = []
    exe = mx.sym.relu(v('x'), name='r').simple_bind(mx.cpu(), x=(2, 3))
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    exe.reshape(allow_up_sizing=True, x=(4, 3)).forward()
    assert seen == [('r_output', (4, 3))]
