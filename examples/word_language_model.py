"""Word-level language model on the Penn Treebank: MXNet's Gluon example, distributed.

Alone, as in MXNet's ``example/gluon/word_language_model`` (a 2-layer LSTM, 650 units,
dropout 0.5, tied embedding and decoder, SGD at learning rate 20, clipping at 0.25):

    python examples/word_language_model.py --data ~/ptb --tied --epochs 40

On one machine, two workers and one parameter server, each worker training on its half
of every batch (``--batch-size`` is per worker, as in examples/cifar10_dist.py):

    python tools/launch.py -n 2 -s 1 --launcher local \\
        python examples/word_language_model.py --kvstore dist_sync --batch-size 10 --tied

``--data DIR`` holds ``ptb.train.txt``, ``ptb.valid.txt`` and ``ptb.test.txt`` (one
sentence a line, tokens separated by spaces, ``<eos>`` added at every line end). When
they are not there, the program says so and trains on a synthetic corpus in the same
format that ``datasets/synthetic_ptb.py`` writes into ``DIR/synthetic-N``; the figures
are then not Penn Treebank results. ``--synthetic N`` asks for it (N training
sentences) even when the real files are present.

The training text is cut into ``--batch-size`` columns (times the number of workers)
read in segments of ``--bptt`` tokens; the recurrent state runs on from one segment to
the next but is detached, so gradients flow back one segment at most (truncated
backpropagation through time). Each step the gradients are summed over the workers
(``Trainer.allreduce_grads``), clipped to a global norm of ``--clip`` per token
(``gluon.utils.clip_global_norm``), then applied (``Trainer.update``): N workers take
the steps that one process would take on their batches together. Every worker then
measures the same model on the whole validation set, so all of them print the same
validation perplexity, and all divide the learning rate by 4 when it did not improve.
Worker 0 saves the parameters of the best epoch to ``--save``.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import minigluon as mx
from minigluon import autograd, gluon, kv
from minigluon.gluon import nn, rnn

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = ('train', 'valid', 'test')
MODES = ('lstm', 'gru', 'rnn_tanh', 'rnn_relu')
DEFAULT_SYNTHETIC = 10000   # training sentences of the stand-in corpus


def parse_args(argv=None):
    p = argparse.ArgumentParser(description='Train a recurrent word-level language model on '
                                            'the Penn Treebank (or a synthetic stand-in).')
    p.add_argument('--data', default=os.path.join(os.environ.get('MINIGLUON_HOME') or
                                                  '~/.minigluon', 'datasets', 'ptb'),
                   help='folder of ptb.train.txt, ptb.valid.txt and ptb.test.txt')
    p.add_argument('--synthetic', type=int, default=0, metavar='N',
                   help='train on a synthetic corpus of N sentences (valid, test: N/10 each) '
                        'even if the Penn Treebank is in --data')
    p.add_argument('--model', default='lstm', choices=MODES, help='type of recurrent layer')
    p.add_argument('--emsize', type=int, default=650, help='size of the word embeddings')
    p.add_argument('--nhid', type=int, default=650, help='hidden units per layer')
    p.add_argument('--nlayers', type=int, default=2, help='number of recurrent layers')
    p.add_argument('--lr', type=float, default=20.0, help='initial learning rate (SGD)')
    p.add_argument('--clip', type=float, default=0.25,
                   help='largest global gradient norm, per token')
    p.add_argument('--epochs', type=int, default=40)
    p.add_argument('--batch-size', type=int, default=20, help='columns per worker')
    p.add_argument('--eval-batch-size', type=int, default=10,
                   help='columns of the validation and test text')
    p.add_argument('--bptt', type=int, default=35, help='segment length (time steps)')
    p.add_argument('--dropout', type=float, default=0.5,
                   help='dropout on the embeddings, between layers and on the outputs')
    p.add_argument('--tied', action='store_true',
                   help='the decoder uses the embedding matrix (needs --emsize == --nhid)')
    p.add_argument('--cuda', action='store_true', help='train on gpu(0)')
    p.add_argument('--kvstore', default='device',
                   help='dist_sync under tools/launch.py; device (default) alone')
    p.add_argument('--gctype', default='none', choices=('none', '2bit'),
                   help='gradient compression on the kvstore')
    p.add_argument('--gcthreshold', type=float, default=0.5,
                   help='threshold of 2bit gradient compression')
    p.add_argument('--log-interval', type=int, default=200, metavar='N',
                   help='batches between progress lines')
    p.add_argument('--save', default='model.params',
                   help='where worker 0 saves the parameters of the best epoch')
    p.add_argument('--hybridize', action='store_true', help='run the model as a cached graph')
    p.add_argument('--static-alloc', action='store_true', help='hybridize(static_alloc=True)')
    p.add_argument('--static-shape', action='store_true', help='hybridize(static_shape=True)')
    p.add_argument('--seed', type=int, default=42)
    args = p.parse_args(argv)
    if args.tied and args.emsize != args.nhid:
        p.error('--tied shares one matrix between the embedding and the decoder, so '
                '--emsize (%d) must equal --nhid (%d)' % (args.emsize, args.nhid))
    for name in ('epochs', 'batch_size', 'eval_batch_size', 'bptt', 'emsize', 'nhid',
                 'nlayers', 'log_interval'):
        if getattr(args, name) < 1:
            p.error('--%s must be positive' % name.replace('_', '-'))
    if args.synthetic < 0:
        p.error('--synthetic must be a number of sentences')
    return args


# ---- data -------------------------------------------------------------------------------
def synthetic_corpus(data_dir, sentences):
    """Write (once) a synthetic corpus of ``sentences`` training sentences; its folder."""
    sys.path.insert(0, os.path.join(HERE, '..', 'datasets'))
    import synthetic_ptb
    folder = os.path.join(data_dir, 'synthetic-%d' % sentences)
    if not os.path.exists(os.path.join(folder, synthetic_ptb.MARKER)):
        held_out = max(sentences // 10, 1)
        synthetic_ptb.make_ptb(folder, sentences, held_out, held_out, seed=0)
    return folder


def corpus_folder(args):
    """The folder to read: --data when it holds the three files, else a synthetic one."""
    data_dir = os.path.expanduser(args.data)
    if args.synthetic:
        folder = synthetic_corpus(data_dir, args.synthetic)
        print('Training on a synthetic corpus of %d sentences in %s (--synthetic)'
              % (args.synthetic, folder))
        return folder
    paths = [os.path.join(data_dir, 'ptb.%s.txt' % split) for split in SPLITS]
    missing = [path for path in paths if not os.path.exists(path)]
    if not missing:
        return data_dir
    if len(missing) < len(paths):
        raise SystemExit('%s holds only part of the Penn Treebank: %s missing. Put all three '
                         'ptb.{train,valid,test}.txt there, or pass --synthetic N'
                         % (data_dir, ', '.join(os.path.basename(m) for m in missing)))
    folder = synthetic_corpus(data_dir, DEFAULT_SYNTHETIC)
    print('The Penn Treebank is not in %s (no ptb.train.txt, ptb.valid.txt, ptb.test.txt); '
          'training on a synthetic corpus in its format instead (datasets/synthetic_ptb.py, '
          '%d sentences, in %s), so perplexities are not PTB results.'
          % (data_dir, DEFAULT_SYNTHETIC, folder))
    return folder


def read_corpus(folder):
    """(vocabulary, {split: int32 array of word ids}) of the three files in ``folder``;
    words are numbered in order of first appearance, ``<eos>`` ends every line."""
    word_ids, ids = {}, {}
    for split in SPLITS:
        tokens = []
        with open(os.path.join(folder, 'ptb.%s.txt' % split), encoding='utf-8') as f:
            for line in f:
                for word in line.split() + ['<eos>']:
                    tokens.append(word_ids.setdefault(word, len(word_ids)))
        ids[split] = np.array(tokens, dtype=np.int32)
    return list(word_ids), ids


def batchify(ids, columns):
    """``ids`` cut into ``columns`` equal stretches side by side: (length, columns)."""
    rows = len(ids) // columns
    if rows < 2:
        raise SystemExit('a text of %d tokens is too short for %d columns; use a smaller '
                         '--batch-size or a larger corpus' % (len(ids), columns))
    return ids[:rows * columns].reshape(columns, rows).T


def segments(source, bptt):
    """(inputs, targets) of ``bptt`` steps each (the last one shorter): the targets are
    the inputs one token on."""
    for i in range(0, source.shape[0] - 1, bptt):
        length = min(bptt, source.shape[0] - 1 - i)
        yield source[i:i + length], source[i + 1:i + 1 + length].reshape((-1,))


# ---- model ------------------------------------------------------------------------------
class RNNModel(gluon.HybridBlock):
    """Embedding, a recurrent layer and a dense decoder, with dropout between them.

    Inputs: ``inputs`` (time, batch) of word ids and the recurrent ``hidden`` states.
    Outputs: scores (time * batch, vocabulary) and the new states.
    """

    def __init__(self, mode, vocab_size, num_embed, num_hidden, num_layers, dropout=0.5,
                 tie_weights=False, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(vocab_size, num_embed,
                                        weight_initializer=mx.init.Uniform(0.1))
            layers = {'lstm': lambda: rnn.LSTM(num_hidden, num_layers, dropout=dropout,
                                               input_size=num_embed),
                      'gru': lambda: rnn.GRU(num_hidden, num_layers, dropout=dropout,
                                             input_size=num_embed),
                      'rnn_tanh': lambda: rnn.RNN(num_hidden, num_layers, 'tanh',
                                                  dropout=dropout, input_size=num_embed),
                      'rnn_relu': lambda: rnn.RNN(num_hidden, num_layers, 'relu',
                                                  dropout=dropout, input_size=num_embed)}
            self.rnn = layers[mode]()
            # tied: the decoder's weight is the embedding matrix (Press & Wolf, 2017)
            self.decoder = nn.Dense(vocab_size, in_units=num_hidden,
                                    params=self.encoder.params if tie_weights else None)
        self.num_hidden = num_hidden

    def hybrid_forward(self, F, inputs, hidden):
        emb = self.drop(self.encoder(inputs))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output.reshape((-1, self.num_hidden)))
        return decoded, hidden

    def begin_state(self, *args, **kwargs):
        return self.rnn.begin_state(*args, **kwargs)


def detach(hidden):
    """The states cut from the graph of the segment that made them."""
    return [h.detach() for h in hidden]


# ---- training ---------------------------------------------------------------------------
def evaluate(model, loss_fn, source, bptt, ctx):
    """Mean cross-entropy per token of ``model`` on ``source`` (length, columns)."""
    total, count = 0.0, 0
    hidden = model.begin_state(func=mx.nd.zeros, batch_size=source.shape[1], ctx=ctx)
    for data, target in segments(source, bptt):
        output, hidden = model(data, hidden)
        losses = loss_fn(output, target)
        total += losses.sum().asscalar()
        count += losses.size
    return total / count


def train_epoch(model, loss_fn, trainer, source, args, epoch, ctx, num_workers):
    """One pass over this worker's columns of the training text."""
    params = [p for p in model.collect_params().values() if p.grad_req != 'null']
    hidden = model.begin_state(func=mx.nd.zeros, batch_size=source.shape[1], ctx=ctx)
    num_batches = -(-(source.shape[0] - 1) // args.bptt)
    total, count, start = 0.0, 0, time.time()
    for batch, (data, target) in enumerate(segments(source, args.bptt), 1):
        hidden = detach(hidden)
        with autograd.record():
            output, hidden = model(data, hidden)
            losses = loss_fn(output, target)
        losses.backward()   # the sum over this worker's tokens
        tokens = target.shape[0]
        trainer.allreduce_grads()   # summed over all workers' tokens
        # clipping the sum at clip * tokens clips the mean per token at clip
        gluon.utils.clip_global_norm([p.grad(ctx) for p in params],
                                     args.clip * tokens * num_workers)
        trainer.update(tokens)      # divides by tokens * num_workers
        total += losses.sum().asscalar()
        count += tokens
        if batch % args.log_interval == 0 or batch == num_batches:
            loss = total / count
            print('| epoch %3d | batch %5d/%5d | lr %.2f | ms/batch %7.1f | loss %5.2f | '
                  'ppl %8.2f' % (epoch, batch, num_batches, trainer.learning_rate,
                                 (time.time() - start) * 1000 / batch, loss, math.exp(loss)))
            sys.stdout.flush()
            total, count = 0.0, 0


def main(argv=None):
    args = parse_args(argv)
    store = kv.create(args.kvstore) if 'dist' in args.kvstore else args.kvstore
    rank, num_workers = (store.rank, store.num_workers) if 'dist' in args.kvstore else (0, 1)
    print('Total number of workers: %d' % num_workers)
    print("This worker's rank: %d" % rank)
    ctx = mx.gpu(0) if args.cuda else mx.cpu(0)
    mx.random.seed(args.seed)

    vocab, ids = read_corpus(corpus_folder(args))
    # every worker cuts the text the same way and takes its own columns of each batch
    columns = args.batch_size * num_workers
    train_data = batchify(ids['train'], columns)[:, rank * args.batch_size:
                                                  (rank + 1) * args.batch_size]
    train_data = mx.nd.array(train_data, ctx=ctx, dtype='int32')
    val_data, test_data = (mx.nd.array(batchify(ids[split], args.eval_batch_size), ctx=ctx,
                                       dtype='int32') for split in ('valid', 'test'))
    print('Vocabulary: %d words; %d training tokens, %d batches of %d x %d per epoch on this '
          'worker' % (len(vocab), len(ids['train']), -(-(train_data.shape[0] - 1) // args.bptt),
                      args.bptt, args.batch_size))
    sys.stdout.flush()

    model = RNNModel(args.model, len(vocab), args.emsize, args.nhid, args.nlayers,
                     args.dropout, args.tied)
    model.initialize(mx.init.Xavier(), ctx=ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    if args.hybridize:
        model.hybridize(static_alloc=args.static_alloc, static_shape=args.static_shape)
        loss_fn.hybridize(static_alloc=args.static_alloc, static_shape=args.static_shape)
    compression = None if args.gctype == 'none' else {'type': args.gctype,
                                                      'threshold': args.gcthreshold}
    # the gradients come back summed so that they can be clipped before the update
    trainer = gluon.Trainer(model.collect_params(), 'sgd',
                            {'learning_rate': args.lr, 'momentum': 0, 'wd': 0},
                            kvstore=store, compression_params=compression,
                            update_on_kvstore=False)
    trainer.init_kvstore()   # every worker starts from worker 0's weights
    mx.random.seed(args.seed + rank)   # and draws its own dropout masks

    best_val, best_test, start = float('inf'), None, time.time()
    for epoch in range(1, args.epochs + 1):
        epoch_start = time.time()
        train_epoch(model, loss_fn, trainer, train_data, args, epoch, ctx, num_workers)
        val_loss = evaluate(model, loss_fn, val_data, args.bptt, ctx)
        print('| end of epoch %3d | time: %6.2fs | valid loss %5.2f | valid ppl %8.2f'
              % (epoch, time.time() - epoch_start, val_loss, math.exp(val_loss)))
        if val_loss < best_val:
            best_val = val_loss
            best_test = evaluate(model, loss_fn, test_data, args.bptt, ctx)
            if rank == 0:
                model.save_parameters(args.save)
            print('| end of epoch %3d | test loss %5.2f | test ppl %8.2f | best so far%s'
                  % (epoch, best_test, math.exp(best_test),
                     ', saved to %s' % args.save if rank == 0 else ''))
        else:
            # the same decision on every worker: they all measured the same model
            trainer.set_learning_rate(trainer.learning_rate * 0.25)
            print('| end of epoch %3d | valid ppl did not improve: lr now %.2f'
                  % (epoch, trainer.learning_rate))
        sys.stdout.flush()
    print('| end of training | %.1f s | best valid ppl %8.2f | its test ppl %8.2f'
          % (time.time() - start, math.exp(best_val), math.exp(best_test)))
    if 'dist' in args.kvstore:
        store.close()


if __name__ == '__main__':
    main()
