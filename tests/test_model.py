"""mx.model: checkpoint files written and read here, and exchanged with MXNet 1.9.1."""
import json

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd

X = np.arange(8, dtype=np.float32).reshape(2, 4) / 10


def _net():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    bn = mx.sym.BatchNorm(fc, name='bn')
    act = mx.sym.Activation(bn, act_type='relu', name='relu')
    return mx.sym.FullyConnected(act, num_hidden=2, name='out')


def _params():
    rng = np.random.RandomState(0)
    args = {'fc_weight': rng.randn(3, 4), 'fc_bias': rng.randn(3), 'bn_gamma': rng.rand(3) + .5,
            'bn_beta': rng.randn(3), 'out_weight': rng.randn(2, 3), 'out_bias': rng.randn(2)}
    auxs = {'bn_moving_mean': rng.randn(3), 'bn_moving_var': rng.rand(3) + .5}
    return ({k: nd.array(v) for k, v in args.items()}, {k: nd.array(v) for k, v in auxs.items()})


def _predict(symbol, args, auxs):
    exe = symbol.bind(mx.cpu(), dict(args, data=nd.array(X)), grad_req='null', aux_states=auxs)
    return exe.forward(is_train=False)[0].asnumpy()


def test_checkpoint_round_trip(tmp_path):
    prefix = str(tmp_path / 'net')
    args, auxs = _params()
    mx.model.save_checkpoint(prefix, 3, _net(), args, auxs)
    assert sorted(nd.load(prefix + '-0003.params')) == sorted(
        ['arg:' + k for k in args] + ['aux:' + k for k in auxs])
    symbol, args2, auxs2 = mx.model.load_checkpoint(prefix, 3)
    assert symbol.tojson() == _net().tojson()
    for mine, theirs in ((args, args2), (auxs, auxs2)):
        assert sorted(mine) == sorted(theirs)
        for name in mine:
            np.testing.assert_array_equal(mine[name].asnumpy(), theirs[name].asnumpy())
    assert mx.model.load_params(prefix, 3)[1].keys() == auxs.keys()


def test_parameters_only_and_names_without_a_prefix(tmp_path):
    prefix = str(tmp_path / 'p')
    mx.model.save_checkpoint(prefix, 0, None, {'w': nd.ones((2,))}, {})
    assert not (tmp_path / 'p-symbol.json').exists()
    nd.save(prefix + '-0001.params', {'arg:w': nd.ones((1,)), 'dense0_weight': nd.ones((1,))})
    assert list(mx.model.load_params(prefix, 1)[0]) == ['w']
    nd.save(prefix + '-0002.params', [nd.ones((1,))])
    with pytest.raises(mx.MXNetError, match='without names'):
        mx.model.load_params(prefix, 2)


def test_feedforward_points_to_module():
    with pytest.raises(AttributeError, match='mx.mod.Module'):
        mx.model.FeedForward  # pylint: disable=pointless-statement
    assert mx.model.BatchEndParam(1, 2, None, {}).nbatch == 2


def test_checkpoints_move_both_ways_with_mxnet(tmp_path, run_mxnet):
    args, auxs = _params()
    mx.model.save_checkpoint(str(tmp_path / 'mine'), 3, _net(), args, auxs)
    run_mxnet(tmp_path, '''
        import json, os, sys
        import numpy as np
        import mxnet as mx
        folder = sys.argv[1]
        X = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) / 10)
        def predict(sym, args, auxs):
            exe = sym.bind(mx.cpu(), dict(args, data=X), grad_req='null', aux_states=auxs)
            return exe.forward(is_train=False)[0].asnumpy().tolist()
        sym, args, auxs = mx.model.load_checkpoint(os.path.join(folder, 'mine'), 3)
        answer = {'read': predict(sym, args, auxs), 'args': sorted(args), 'auxs': sorted(auxs)}
        args = {k: v + 1 for k, v in args.items()}
        auxs = {k: v * 2 for k, v in auxs.items()}
        mx.model.save_checkpoint(os.path.join(folder, 'theirs'), 7, sym, args, auxs)
        answer['written'] = predict(sym, args, auxs)
        json.dump(answer, open(os.path.join(folder, 'answer.json'), 'w'))
    ''')
    answer = json.loads((tmp_path / 'answer.json').read_text())
    assert answer['args'] == sorted(args) and answer['auxs'] == sorted(auxs)
    np.testing.assert_allclose(answer['read'], _predict(_net(), args, auxs), rtol=1e-5)
    symbol, args2, auxs2 = mx.model.load_checkpoint(str(tmp_path / 'theirs'), 7)
    np.testing.assert_allclose(args2['fc_weight'].asnumpy(), args['fc_weight'].asnumpy() + 1)
    np.testing.assert_allclose(_predict(symbol, args2, auxs2), answer['written'], rtol=1e-5)
