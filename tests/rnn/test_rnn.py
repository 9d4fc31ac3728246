"""mx.rnn checkpoints (weights saved unpacked, packed on loading) move both ways with
MXNet 1.9.1, and a tiny BucketingModule language model built from mx.rnn cells learns."""
import inspect
import json

import numpy as np

import minigluon as mx


def _model(mx):
    """Cells (a stack and a fused cell), the stack's graph and weights for all of them, as
    numpy arrays; the same source runs under MXNet and minigluon."""
    import numpy as np
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(3, prefix='l0_'))
    stack.add(mx.rnn.GRUCell(3, prefix='l1_'))
    fused = mx.rnn.FusedRNNCell(3, mode='gru', bidirectional=True, prefix='f_')
    outputs, _ = stack.unroll(2, mx.sym.Variable('data'), merge_outputs=True)
    shapes, _, _ = outputs.infer_shape(data=(2, 2, 4))
    shapes = dict(zip(outputs.list_arguments(), shapes))
    del shapes['data']
    shapes['f_parameters'] = (2 * 3 * 3 * (4 + 3 + 2),)
    args = {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        args[name] = (np.arange(int(np.prod(shape))).reshape(shape) * 0.01 + i).astype('float32')
    return [stack, fused], outputs, args


def _mxnet_side(mx, folder):
    """Load minigluon's checkpoint and save MXNet's own."""
    import json
    import os
    cells, outputs, args = _model(mx)
    sym, arg, aux = mx.rnn.load_rnn_checkpoint(cells, os.path.join(folder, 'mg'), 3)
    answer = {'args': {k: v.asnumpy().tolist() for k, v in arg.items()},
              'outputs': sym.list_outputs(), 'aux': len(aux)}
    mx.rnn.save_rnn_checkpoint(cells, os.path.join(folder, 'mx'), 5, outputs,
                               {k: mx.nd.array(v) for k, v in args.items()}, {})
    with open(os.path.join(folder, 'loaded.json'), 'w') as f:
        json.dump(answer, f)


def test_rnn_checkpoints_move_both_ways_with_mxnet(tmp_path, run_mxnet):
    cells, outputs, args = _model(mx)
    mx.rnn.save_rnn_checkpoint(cells, str(tmp_path / 'mg'), 3, outputs,
                               {k: mx.nd.array(v) for k, v in args.items()}, {})
    run_mxnet(tmp_path, 'import sys\nimport mxnet as mx\n%s\n%s\n_mxnet_side(mx, sys.argv[1])\n'
              % (inspect.getsource(_model), inspect.getsource(_mxnet_side)))
    theirs = json.loads((tmp_path / 'loaded.json').read_text())
    assert theirs['outputs'] == outputs.list_outputs() and theirs['aux'] == 0
    assert sorted(theirs['args']) == sorted(args)
    for name, value in args.items():
        np.testing.assert_array_equal(np.array(theirs['args'][name], dtype='float32'), value)

    sym, arg, aux = mx.rnn.load_rnn_checkpoint(cells, str(tmp_path / 'mx'), 5)
    assert sym.list_arguments() == outputs.list_arguments() and aux == {}
    assert sorted(arg) == sorted(args)
    for name, value in args.items():
        np.testing.assert_array_equal(arg[name].asnumpy(), value)
    # Both files hold the same unpacked names (one array per gate).
    names = sorted(mx.nd.load(str(tmp_path / 'mx-0005.params')))
    assert names == sorted(mx.nd.load(str(tmp_path / 'mg-0003.params')))
    assert 'arg:l0_i2h_f_weight' in names and 'arg:f_r0_h2h_z_bias' in names


def test_bucketing_language_model_learns(tmp_path):
    vocab, hidden = 10, 12
    rng = np.random.RandomState(0)
    # Each sentence counts up from a random word: the next word is predictable.
    sentences = []
    for _ in range(48):
        start, length = rng.randint(vocab), rng.choice([3, 6])
        sentences.append([(start + k) % vocab + 1 for k in range(length)])
    data = mx.rnn.BucketSentenceIter(sentences, 8, buckets=[3, 6], invalid_label=0)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(hidden, prefix='lstm_l0_'))

    def sym_gen(seq_len):
        embed = mx.sym.Embedding(mx.sym.Variable('data'), input_dim=vocab + 1, output_dim=8,
                                 name='embed')
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, hidden)),
                                     num_hidden=vocab + 1, name='pred')
        label = mx.sym.Reshape(mx.sym.Variable('softmax_label'), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name='softmax'), ('data',), ('softmax_label',)

    mx.random.seed(1)
    model = mx.mod.BucketingModule(sym_gen, default_bucket_key=data.default_bucket_key)
    model.bind(data.provide_data, data.provide_label)
    model.init_params(mx.init.Xavier(factor_type='in', magnitude=2.34))
    before = dict(model.score(data, mx.metric.Perplexity(0)))['perplexity']
    data.reset()  # fit, as MXNet's, resets its data only after each epoch
    model.fit(data, num_epoch=4, optimizer='adam', optimizer_params={'learning_rate': 0.05},
              eval_metric=mx.metric.Perplexity(0),
              epoch_end_callback=mx.rnn.do_rnn_checkpoint(stack, str(tmp_path / 'lm'), 2))
    after = dict(model.score(data, mx.metric.Perplexity(0)))['perplexity']
    assert after < before / 2, (before, after)
    # The checkpoint of the last epoch holds the module's weights (per gate on disk).
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'lm-0002.params', 'lm-0004.params', 'lm-symbol.json']
    assert 'arg:lstm_l0_i2h_o_weight' in mx.nd.load(str(tmp_path / 'lm-0004.params'))
    _, arg, _ = mx.rnn.load_rnn_checkpoint(stack, str(tmp_path / 'lm'), 4)
    for name, value in model.get_params()[0].items():
        np.testing.assert_array_equal(arg[name].asnumpy(), value.asnumpy())
