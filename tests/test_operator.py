"""``mx.operator``: custom operators written in Python, imperatively (``nd.Custom``), in
graphs (``sym.Custom``) and in hybridized blocks, against numpy and MXNet 1.9.1."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError


# ---- the operators of the tests (MXNet's custom-op tutorial patterns) ----

class Softmax(mx.operator.CustomOp):
    """A softmax loss that makes its own gradient from the label (need_top_grad=False)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], mx.nd.array(y, dtype=x.dtype))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().ravel().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y, dtype=y.dtype))
        self.assign(in_grad[1], req[1], 0)


@mx.operator.register('test_softmax')
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


class ScaleCount(mx.operator.CustomOp):
    """Two outputs, ``scale * x`` and ``x * x``; counts its forward calls in an aux state."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        self.assign(out_data[0], req[0], x * self.scale)
        self.assign(out_data[1], req[1], x * x)
        aux[0][:] += 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0],
                    out_grad[0] * self.scale + 2 * in_data[0] * out_grad[1])


SEEN_KWARGS = []


@mx.operator.register('test_scale_count')
class ScaleCountProp(mx.operator.CustomOpProp):
    def __init__(self, scale='1', extra=None):
        super().__init__()
        SEEN_KWARGS.append((scale, extra))
        self.scale = float(scale)

    def list_outputs(self):
        return ['scaled', 'squared']

    def list_auxiliary_states(self):
        return ['count']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return ScaleCount(self.scale)


def _softmax_reference(x, label):
    y = np.exp(x - x.max(axis=1, keepdims=True))
    y /= y.sum(axis=1, keepdims=True)
    grad = y.copy()
    grad[np.arange(len(label)), label.astype(np.int64)] -= 1
    return y, grad


# ---- imperative ----

def test_softmax_custom_op_gives_numpy_gradient_and_trains():
    rng = np.random.RandomState(0)
    x_np = rng.randn(4, 3)
    label_np = np.array([0, 2, 1, 2], dtype=np.float64)
    x, label = mx.nd.array(x_np, dtype='float64'), mx.nd.array(label_np, dtype='float64')
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, label, op_type='test_softmax')
    y.backward(mx.nd.ones_like(y) * 5)  # need_top_grad=False: the head's gradient is unused
    want_y, want_grad = _softmax_reference(x_np, label_np)
    np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), want_grad, rtol=1e-12)

    net = mx.gluon.nn.Dense(3, in_units=3)
    net.initialize(mx.init.Xavier())
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0})
    data, label = mx.nd.array(x_np), mx.nd.array(label_np)
    losses = []
    for _ in range(30):
        with mx.autograd.record():
            prob = mx.nd.Custom(net(data), label, op_type='test_softmax')
        prob.backward()
        trainer.step(4)
        losses.append(-np.log(prob.asnumpy()[np.arange(4), label_np.astype(int)]).mean())
    assert losses[-1] < losses[0] / 2


def test_assign_honours_req():
    op = mx.operator.CustomOp()
    dst = mx.nd.ones((2,))
    op.assign(dst, 'null', mx.nd.array([5, 6]))
    assert dst.asnumpy().tolist() == [1, 1]
    op.assign(dst, 'add', mx.nd.array([5, 6]))
    assert dst.asnumpy().tolist() == [6, 7]
    op.assign(dst, 'write', np.array([2, 3]))
    assert dst.asnumpy().tolist() == [2, 3]
    op.assign(dst, 'inplace', 4)
    assert dst.asnumpy().tolist() == [4, 4]
    with pytest.raises(MXNetError, match='req must be'):
        op.assign(dst, 'overwrite', 1)


def test_multiple_outputs_kwargs_as_strings_and_aux_updated_in_place():
    del SEEN_KWARGS[:]
    x = mx.nd.array([1., 2., 3.])
    count = mx.nd.zeros((1,))
    x.attach_grad()
    with mx.autograd.record():
        scaled, squared = mx.nd.Custom(x, count, op_type='test_scale_count', scale=3,
                                       extra=(1, 2), name='sc')
        (scaled + squared).backward()
    assert SEEN_KWARGS == [('3', '(1, 2)')]
    assert scaled.asnumpy().tolist() == [3, 6, 9]
    assert squared.asnumpy().tolist() == [1, 4, 9]
    assert x.grad.asnumpy().tolist() == [5, 7, 9]  # 3 + 2x
    assert count.asnumpy().tolist() == [1]
    by_name = mx.nd.Custom(data=x, count=count, op_type='test_scale_count')
    assert by_name[1].asnumpy().tolist() == [1, 4, 9] and count.asnumpy().tolist() == [2]
    with pytest.raises(MXNetError, match='expects 2 inputs'):
        mx.nd.Custom(x, op_type='test_scale_count')


def test_unregistered_or_missing_op_type_and_errors_in_forward_are_clear():
    with pytest.raises(MXNetError, match="Cannot find custom operator 'no_such_op'.*"
                                         "mx.operator.register"):
        mx.nd.Custom(mx.nd.ones(2), op_type='no_such_op')
    with pytest.raises(MXNetError, match="Cannot find custom operator 'no_such_op'"):
        mx.sym.Custom(mx.sym.var('x'), op_type='no_such_op')
    with pytest.raises(MXNetError, match='op_type.*missing'):
        mx.nd.Custom(mx.nd.ones(2))

    class Broken(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ZeroDivisionError('boom')

    @mx.operator.register('test_broken')
    class BrokenProp(mx.operator.CustomOpProp):  # pylint: disable=unused-variable
        def create_operator(self, ctx, shapes, dtypes):
            return Broken()
    with pytest.raises(MXNetError, match="'test_broken', CustomOp.forward: ZeroDivisionError"):
        mx.nd.Custom(mx.nd.ones(2), op_type='test_broken')


# ---- graphs ----

def test_custom_op_in_a_symbol_graph_with_simple_bind():
    data = mx.sym.var('data')
    out = mx.sym.Custom(data, op_type='test_scale_count', scale=2, name='sc')
    assert out.list_arguments() == ['data']
    assert out.list_auxiliary_states() == ['sc_count']
    assert out.list_outputs() == ['sc_scaled', 'sc_squared']
    assert out.infer_shape(data=(2, 3)) == ([(2, 3)], [(2, 3), (2, 3)], [(1,)])
    node = json.loads(out.tojson())['nodes'][-1]
    assert node['op'] == 'Custom'
    assert node['attrs'] == {'op_type': 'test_scale_count', 'scale': '2'}

    ex = out.simple_bind(mx.cpu(), data=(2, 3), grad_req='add')
    x = np.arange(6.).reshape(2, 3)
    ex.arg_dict['data'][:] = x
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), 2 * x)
    np.testing.assert_allclose(ex.outputs[1].asnumpy(), x * x)
    assert ex.aux_dict['sc_count'].asnumpy().tolist() == [1]
    for _ in range(2):  # 'add' accumulates
        ex.backward([mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])
        ex.forward(is_train=True)
    np.testing.assert_allclose(ex.grad_dict['data'].asnumpy(), 2 * (2 + 2 * x))

    label = mx.sym.var('label')
    loss = mx.sym.Custom(data=mx.sym.FullyConnected(data, num_hidden=3, name='fc'),
                         label=label, op_type='test_softmax')
    arg_shapes, _, _ = loss.infer_shape(data=(4, 5))
    assert dict(zip(loss.list_arguments(), arg_shapes))['label'] == (4,)
    ex = loss.simple_bind(mx.cpu(), data=(4, 5), grad_req={'fc_weight': 'write'})
    ex.forward(is_train=True, data=mx.nd.ones((4, 5)), label=mx.nd.array([0, 1, 2, 0]))
    ex.backward()
    grad_out = ex.outputs[0].asnumpy().copy()
    grad_out[np.arange(4), [0, 1, 2, 0]] -= 1
    np.testing.assert_allclose(ex.grad_dict['fc_weight'].asnumpy(),
                               grad_out.T.dot(np.ones((4, 5))), rtol=1e-5, atol=1e-6)


class _CustomNet(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(3, in_units=3)

    def hybrid_forward(self, F, x, count):
        scaled, squared = F.Custom(self.dense(x), count, op_type='test_scale_count',
                                   scale=0.5)
        return scaled + squared


def test_custom_op_in_a_hybridized_block(tmp_path):
    x = mx.nd.array(np.random.RandomState(1).randn(2, 3))
    results = []
    for hybridize in (False, True):
        net = _CustomNet()
        net.initialize(mx.init.Constant(0.1))
        if hybridize:
            net.hybridize()
        count = mx.nd.zeros((1,))
        with mx.autograd.record():
            y = net(x, count)
        y.backward()
        results.append((y.asnumpy(), net.dense.weight.grad().asnumpy(), count.asnumpy()))
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    net.export(str(tmp_path / 'net'))
    graph = json.loads((tmp_path / 'net-symbol.json').read_text())
    custom = [n for n in graph['nodes'] if n['op'] == 'Custom']
    assert len(custom) == 1 and custom[0]['attrs']['op_type'] == 'test_scale_count'


# ---- against MXNet ----

def test_custom_ops_agree_with_mxnet(answers_of_both):
    mxnet_answers, ours = answers_of_both('''
        import json, sys
        import numpy as np
        import mxnet as mx

        seen = []

        class Op(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                seen.append(['forward', int(is_train), req])
                self.assign(out_data[0], req[0], in_data[0] * in_data[1])
                self.assign(out_data[1], req[1], mx.nd.exp(in_data[0]))
                aux[0][:] += in_data[1].sum()

            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                seen.append(['backward', req])
                self.assign(in_grad[0], req[0],
                            out_grad[0] * in_data[1] + out_grad[1] * out_data[1])
                self.assign(in_grad[1], req[1], out_grad[0] * in_data[0])

        @mx.operator.register('both_op')
        class Prop(mx.operator.CustomOpProp):
            def __init__(self, **kwargs):
                super().__init__()
                seen.append(['prop', sorted(kwargs.items())])

            def list_arguments(self):
                return ['a', 'b']

            def list_outputs(self):
                return ['prod', 'exp']

            def list_auxiliary_states(self):
                return ['total']

            def infer_shape(self, in_shape):
                return in_shape, [in_shape[0], in_shape[0]], [[1]]

            def create_operator(self, ctx, shapes, dtypes):
                seen.append(['create', shapes, dtypes])
                return Op()

        a = mx.nd.array([[0.5, -1.0], [2.0, 0.25]], dtype='float64')
        b = mx.nd.array([[1.5, 2.0], [-0.5, 3.0]], dtype='float64')
        total = mx.nd.zeros((1,), dtype='float64')
        a.attach_grad()
        with mx.autograd.record():
            prod, ex = mx.nd.Custom(a, b, total, op_type='both_op', k=3, t=(1, 2), n=None)
            (prod * 2 + ex).backward()
        sym = mx.sym.Custom(mx.sym.var('a'), op_type='both_op', name='c', k=0.5)
        exe = sym.simple_bind(mx.cpu(), a=(2, 2), c_b=(2, 2),
                              type_dict={'a': 'float64', 'c_b': 'float64'})
        exe.forward(is_train=False, a=a, c_b=b)
        exe.backward([mx.nd.ones((2, 2), dtype='float64')] * 2)
        out = {
            'prod': prod.asnumpy().tolist(), 'exp': ex.asnumpy().tolist(),
            'grad': a.grad.asnumpy().tolist(), 'total': total.asnumpy().tolist(),
            'args': sym.list_arguments(), 'aux': sym.list_auxiliary_states(),
            'outputs': sym.list_outputs(), 'shapes': sym.infer_shape(a=(2, 2), c_b=(2, 2)),
            'node': json.loads(sym.tojson())['nodes'][-1],
            'exe_out': [o.asnumpy().tolist() for o in exe.outputs],
            'exe_grads': {k: v.asnumpy().tolist() for k, v in exe.grad_dict.items()},
            'exe_total': exe.aux_dict['c_total'].asnumpy().tolist(),
            'seen': sorted(set(json.dumps(s) for s in seen)),
        }
        with open(sys.argv[1] + '/out.json', 'w') as f:
            json.dump(out, f)
    ''', 'out.json')
    assert ours == mxnet_answers


# ---- the operator registry's listing ----

def test_get_all_registered_operators_lists_mxnet_names():
    ops = mx.operator.get_all_registered_operators()
    assert isinstance(ops, list) and {'Activation', 'Convolution', '_plus_scalar'} <= set(ops)


def test_get_operator_arguments_as_mxnet_gives_them():
    """MXNet 1.9.1's answer for Activation; inputs come first, then the parameters."""
    args = mx.operator.get_operator_arguments('Activation')
    assert isinstance(args, mx.operator.OperatorArguments)
    assert args == (2, ['data', 'act_type'],
                    ['NDArray-or-Symbol',
                     "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"])
    conv = mx.operator.get_operator_arguments('Convolution')
    assert conv.names[:4] == ['data', 'weight', 'bias', 'kernel']
    assert conv.types[conv.names.index('no_bias')] == 'boolean, optional, default=0'
    assert mx.operator.get_operator_arguments('softmax').names[:2] == ['data', 'length']
    with pytest.raises(MXNetError, match='not supported'):
        mx.operator.get_operator_arguments('NoSuchOp')


# ---- MXNet's deprecated PythonOp family, run through the custom-op path ----

class _NumpySquare(mx.operator.NumpyOp):
    """``x * y`` of two inputs, on numpy arrays (MXNet's NumpyOp tutorial shape)."""

    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ['x', 'y']

    def list_outputs(self):
        return ['product']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] * in_data[1]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0] * in_data[1]
        in_grad[1][:] = out_grad[0] * in_data[0]


class _NDArrayCopy(mx.operator.NDArrayOp):
    """The default PythonOp behaviour (a copy; gradient of ones), on NDArrays."""

    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], mx.nd.NDArray)
        super().forward(in_data, out_data)


def test_numpy_op_runs_forward_and_backward_in_a_graph():
    with pytest.warns(DeprecationWarning, match='CustomOp'):
        op = _NumpySquare()
    node = op(mx.sym.var('a'), mx.sym.var('b'), name='prod')
    assert node.list_arguments() == ['a', 'b'] and node.list_outputs() == ['prod_product']
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, -5.0, 0.5])
    grads = {'a': mx.nd.zeros((3,)), 'b': mx.nd.zeros((3,))}
    exe = node.bind(mx.cpu(), args={'a': mx.nd.array(a), 'b': mx.nd.array(b)},
                    args_grad=grads)
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), a * b)
    exe.backward(mx.nd.array([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(grads['a'].asnumpy(), b * [1, 10, 100])
    np.testing.assert_allclose(grads['b'].asnumpy(), a * [1, 10, 100])


def test_ndarray_op_defaults_copy_forward_and_give_ones_back():
    with pytest.warns(DeprecationWarning):
        node = _NDArrayCopy().get_symbol(mx.sym.var('x'))
    x, dx = mx.nd.array([[1.0, -2.0]]), mx.nd.zeros((1, 2))
    exe = node.bind(mx.cpu(), args=[x], args_grad={'x': dx})
    np.testing.assert_array_equal(exe.forward(is_train=True)[0].asnumpy(), [[1, -2]])
    exe.backward(mx.nd.array([[5.0, 5.0]]))
    np.testing.assert_array_equal(dx.asnumpy(), [[1, 1]])
