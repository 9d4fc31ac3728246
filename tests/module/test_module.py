"""mx.mod.Module: training a symbol gives MXNet 1.9.1's numbers, on one device or split
over two, and the module's parts (binding, reshaping, input gradients, fixed
parameters, checkpoints) behave as MXNet's."""
import numpy as np
import pytest

import minigluon as mx
from minigluon.base import MXNetError


@pytest.fixture(autouse=True)
def fresh_names():
    with mx.name.NameManager():
        yield


def _mlp(batchnorm=False):
    data = mx.sym.var('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name='fc1')
    if batchnorm:
        fc1 = mx.sym.BatchNorm(fc1, fix_gamma=False, name='bn1')
    act = mx.sym.Activation(fc1, act_type='tanh', name='act1')
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name='fc2')
    return mx.sym.SoftmaxOutput(fc2, name='softmax')


class _Batches(mx.io.DataIter):
    """The rows of ``x``/``y`` in batches of ``batch_size``."""

    def __init__(self, x, y, batch_size):
        super().__init__(batch_size)
        self.x, self.y, self.i = x, y, 0
        self.provide_data = [mx.io.DataDesc('data', (batch_size,) + x.shape[1:])]
        self.provide_label = [mx.io.DataDesc('softmax_label', (batch_size,))]

    def reset(self):
        self.i = 0

    def next(self):
        if self.i >= len(self.x):
            raise StopIteration
        rows = slice(self.i, self.i + self.batch_size)
        self.i += self.batch_size
        return mx.io.DataBatch([mx.nd.array(self.x[rows])], [mx.nd.array(self.y[rows])], pad=0)


def _data(n=48, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 6).astype('float32')
    y = ((x[:, :3].sum(1) > 0).astype('float32') + (x[:, 3] > 1)).astype('float32')
    return x, y


def _initial(symbol, names=None, batch_size=12):
    if names is None:
        names = [n for n in symbol.list_arguments() if n not in ('data', 'softmax_label')]
    shapes = dict(zip(symbol.list_arguments(), symbol.infer_shape(data=(batch_size, 6))[0]))
    rng = np.random.RandomState(1)
    return {n: mx.nd.array(rng.uniform(-0.5, 0.5, shapes[n])) for n in names}


def _trained(contexts, kvstore, **fit_args):
    symbol = _mlp()
    mod = mx.mod.Module(symbol, context=contexts)
    x, y = _data()
    mod.fit(_Batches(x, y, 12), num_epoch=2, kvstore=kvstore, optimizer='sgd',
            optimizer_params={'learning_rate': 0.3, 'momentum': 0.9, 'wd': 0.01},
            arg_params=_initial(symbol), **fit_args)
    return mod


def test_fit_matches_mxnet(answers_of_both):
    """One device and two (the batch split, gradients summed by the 'device' store);
    BatchNorm; an lr_mult on a variable; MXNet's Module rule that only *_weight and
    *_gamma decay; predict on batches of another size (a reshape)."""
    script = '''
    import json, sys
    import numpy as np
    import mxnet as mx

    rng = np.random.RandomState(0)
    X = rng.randn(48, 6).astype('float32')
    y = (X[:, :3].sum(1) > 0).astype('float32') + (X[:, 3] > 1)

    class Batches(mx.io.DataIter):
        def __init__(self, bs):
            super().__init__(bs)
            self.i = 0
            self.provide_data = [mx.io.DataDesc('data', (bs, 6))]
            self.provide_label = [mx.io.DataDesc('softmax_label', (bs,))]
        def reset(self):
            self.i = 0
        def next(self):
            if self.i >= len(X):
                raise StopIteration
            s = slice(self.i, self.i + self.batch_size)
            self.i += self.batch_size
            return mx.io.DataBatch([mx.nd.array(X[s])], [mx.nd.array(y[s])], pad=0)

    data = mx.sym.var('data')
    w1 = mx.sym.var('fc1_weight', lr_mult=0.5)
    fc1 = mx.sym.FullyConnected(data, weight=w1, num_hidden=8, name='fc1')
    bn = mx.sym.BatchNorm(fc1, fix_gamma=False, name='bn1')
    act = mx.sym.Activation(bn, act_type='tanh')
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name='fc2')
    out = mx.sym.SoftmaxOutput(fc2, name='softmax')
    results = {}
    for ctxs, kv in (([mx.cpu(0)], 'local'), ([mx.cpu(0), mx.cpu(1)], 'device')):
        mod = mx.mod.Module(out, context=ctxs)
        mod.bind(data_shapes=[('data', (12, 6))], label_shapes=[('softmax_label', (12,))])
        shapes = dict(zip(out.list_arguments(), out.infer_shape(data=(12, 6))[0]))
        init = np.random.RandomState(1)
        names = [n for n in out.list_arguments() if n not in ('data', 'softmax_label')]
        args = {n: mx.nd.array(init.uniform(-0.5, 0.5, shapes[n])) for n in names}
        mod.init_params(arg_params=args, allow_missing=True)
        mod.fit(Batches(12), num_epoch=2, kvstore=kv, optimizer='sgd',
                optimizer_params={'learning_rate': 0.3, 'momentum': 0.9, 'wd': 0.01})
        arg, aux = mod.get_params()
        results['%d-%s' % (len(ctxs), kv)] = {
            'params': {k: v.asnumpy().tolist() for k, v in sorted({**arg, **aux}.items())},
            'score': mod.score(Batches(12), ['acc', 'ce']),
            'pred': mod.predict(Batches(16)).asnumpy().tolist()}
    json.dump(results, open(sys.argv[1] + '/out.json', 'w'))
    '''
    theirs, ours = answers_of_both(script, 'out.json')
    assert sorted(theirs) == sorted(ours) == ['1-local', '2-device']
    for key in theirs:
        assert sorted(theirs[key]['params']) == sorted(ours[key]['params'])
        for name, value in theirs[key]['params'].items():
            np.testing.assert_allclose(ours[key]['params'][name], value, atol=1e-6,
                                       err_msg='%s %s' % (key, name))
        for (name, value), (our_name, our_value) in zip(theirs[key]['score'],
                                                        ours[key]['score']):
            assert name == our_name
            assert our_value == pytest.approx(value, abs=1e-6)
        np.testing.assert_allclose(ours[key]['pred'], theirs[key]['pred'], atol=1e-6)


def test_two_devices_take_the_step_of_one():
    """Splitting each batch over cpu(0) and cpu(1) (work loads 1:2) changes nothing."""
    one = _trained([mx.cpu(0)], 'local').get_params()[0]
    mod = mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1, 2])
    x, y = _data()
    mod.fit(_Batches(x, y, 12), num_epoch=2, kvstore='device', optimizer='sgd',
            optimizer_params={'learning_rate': 0.3, 'momentum': 0.9, 'wd': 0.01},
            arg_params=_initial(mod.symbol))
    assert [s.stop - s.start for s in mod._exec_group.slices] == [4, 8]
    two = mod.get_params()[0]
    for name in one:
        np.testing.assert_allclose(two[name].asnumpy(), one[name].asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def test_input_gradients_match_autograd():
    symbol = _mlp()
    mod = mx.mod.Module(symbol)
    mod.bind(data_shapes=[('data', (4, 6))], label_shapes=[('softmax_label', (4,))],
             inputs_need_grad=True)
    params = _initial(symbol, batch_size=4)
    mod.init_params(arg_params=params)
    x = mx.nd.array(np.random.RandomState(3).randn(4, 6))
    label = mx.nd.array([0, 1, 2, 1])
    mod.forward_backward(mx.io.DataBatch([x], [label]))
    x.attach_grad()
    with mx.autograd.record():
        hidden = mx.nd.tanh(mx.nd.FullyConnected(x, params['fc1_weight'], params['fc1_bias'],
                                                 num_hidden=8))
        logits = mx.nd.FullyConnected(hidden, params['fc2_weight'], params['fc2_bias'],
                                      num_hidden=3)
        loss = -mx.nd.pick(mx.nd.log_softmax(logits), label).sum()
    loss.backward()
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), x.grad.asnumpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                               mx.nd.softmax(logits).asnumpy(), rtol=1e-5)


def test_forward_of_another_batch_size_reshapes():
    mod = mx.mod.Module(_mlp().get_internals()['fc2_output'], label_names=None)
    mod.bind(data_shapes=[('data', (8, 6))], for_training=False)
    mod.init_params()
    x = np.random.RandomState(0).randn(8, 6).astype('float32')
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]))
    full = mod.get_outputs()[0].asnumpy()
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:3])]))
    assert mod.get_outputs()[0].shape == (3, 3)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), full[:3], rtol=1e-6)
    assert mod.data_shapes[0].shape == (3, 6)


def test_fixed_parameters_stay():
    x, y = _data()
    mod = mx.mod.Module(_mlp(), fixed_param_names=['fc1_weight'])
    mod.fit(_Batches(x, y, 12), num_epoch=1, optimizer_params={'learning_rate': 0.5})
    before = mod.get_params()[0]['fc1_weight'].asnumpy().copy()
    with pytest.warns(UserWarning, match='already initialized'):  # as MXNet warns
        mod.fit(_Batches(x, y, 12), num_epoch=2, optimizer_params={'learning_rate': 0.5})
    after = mod.get_params()[0]
    np.testing.assert_array_equal(after['fc1_weight'].asnumpy(), before)


def test_checkpoint_round_trip(tmp_path):
    """save_checkpoint with optimizer states, then Module.load continues exactly as the
    module that saved it."""
    x, y = _data()
    mod = _trained([mx.cpu(0)], 'local')
    prefix = str(tmp_path / 'mlp')
    mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['mlp-0002.params', 'mlp-0002.states',
                                                        'mlp-symbol.json']
    loaded = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    loaded.bind(data_shapes=[('data', (12, 6))], label_shapes=[('softmax_label', (12,))])
    loaded.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.3,
                                                             'momentum': 0.9, 'wd': 0.01})
    batch = next(iter(_Batches(x, y, 12)))
    for module in (mod, loaded):
        module.forward_backward(batch)
        module.update()
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(loaded.get_params()[0][name].asnumpy(), value.asnumpy())


def test_bucketing_module_shares_parameters():
    def sym_gen(length):
        data = mx.sym.var('data')
        pooled = mx.sym.mean(mx.sym.reshape(data, shape=(0, length, 4)), axis=1)
        fc = mx.sym.FullyConnected(pooled, num_hidden=2, name='fc')
        return mx.sym.SoftmaxOutput(fc, name='softmax'), ('data',), ('softmax_label',)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    mod.bind(data_shapes=[('data', (2, 20))], label_shapes=[('softmax_label', (2,))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={'learning_rate': 1.0})
    rng = np.random.RandomState(0)
    for length in (3, 5, 3):
        batch = mx.io.DataBatch([mx.nd.array(rng.randn(2, length * 4))], [mx.nd.array([0, 1])],
                                bucket_key=length,
                                provide_data=[mx.io.DataDesc('data', (2, length * 4))],
                                provide_label=[mx.io.DataDesc('softmax_label', (2,))])
        before = mod.get_params()[0]['fc_weight'].asnumpy().copy()
        mod.forward_backward(batch)
        mod.update()
        assert mod.get_outputs()[0].shape == (2, 2)
        assert not np.allclose(mod.get_params()[0]['fc_weight'].asnumpy(), before)
    assert sorted(mod._buckets) == [3, 5]
    weights = [m._exec_group.param_arrays[0][0] for m in mod._buckets.values()]
    assert weights[0] is weights[1]  # one weight, one optimizer


def test_sequential_module_is_the_composed_graph():
    """Two modules chained (the second takes the labels) train as the one graph."""
    data = mx.sym.var('data')
    first = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name='fc1'),
                              act_type='tanh', name='act1')
    second = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3,
                                                        name='fc2'), name='softmax')
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first, label_names=None))
    seq.add(mx.mod.Module(second), take_labels=True, auto_wiring=True)
    x, y = _data()
    params = _initial(_mlp())
    seq.fit(_Batches(x, y, 12), num_epoch=2, optimizer='sgd', arg_params=params,
            optimizer_params={'learning_rate': 0.3, 'momentum': 0.9, 'wd': 0.01})
    whole = _trained([mx.cpu(0)], 'local').get_params()[0]
    for name, value in seq.get_params()[0].items():
        np.testing.assert_allclose(value.asnumpy(), whole[name].asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def test_clear_errors():
    with pytest.raises(ValueError, match='data_names.*not found.*Did you mean'):
        mx.mod.Module(_mlp(), data_names=['images'])
    mod = mx.mod.Module(_mlp())
    with pytest.raises(MXNetError, match='call bind'):
        mod.init_params()
    mod.bind(data_shapes=[('data', (4, 6))], label_shapes=[('softmax_label', (4,))])
    mod.init_params()
    with pytest.raises(MXNetError, match='init_optimizer'):
        mod.update()
    with pytest.raises(ValueError, match='data shapes name'):
        mx.mod.Module(_mlp()).bind(data_shapes=[('x', (4, 6))])
