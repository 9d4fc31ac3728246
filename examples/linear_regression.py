"""Linear regression with the Module API: the program of MXNet's distributed-training
talk, ``y = x0 + 2 * x1`` learned by one FullyConnected unit.

    python examples/linear_regression.py                       # one process
    python tools/launch.py -n 2 -s 1 --launcher local \\
        python examples/linear_regression.py --kv-store dist_sync

or started by hand as MXNet users do, the same command as scheduler, server and
workers: ``DMLC_ROLE=scheduler|server|worker DMLC_PS_ROOT_URI=127.0.0.1
DMLC_PS_ROOT_PORT=9091 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2 python
examples/linear_regression.py --kv-store dist_sync`` (importing minigluon under the
server and scheduler roles serves that role and exits).

With a distributed store every worker trains on its share of the examples: batch k of
worker r holds the rows a single process with ``--batch-size`` times the number of
workers would have in its batch k, so N workers end with the weights that process
ends with (``--no-shuffle`` keeps the order fixed to compare them).
"""
import argparse
import logging

import numpy as np

import minigluon as mx


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--kv-store', default='device',
                        help="the kvstore: device, local, dist_sync, dist_async ...")
    parser.add_argument('--num-epochs', type=int, default=20)
    parser.add_argument('--batch-size', type=int, default=1, help='examples per worker step')
    parser.add_argument('--num-examples', type=int, default=100)
    parser.add_argument('--lr', type=float, default=0.005)
    parser.add_argument('--momentum', type=float, default=0.9)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--no-shuffle', action='store_true', help='keep the order of the rows')
    parser.add_argument('--save-weights', default='',
                        help='write the learned weight and bias to this .npz file')
    return parser.parse_args(argv)


def my_rows(num_examples, batch_size, rank, workers):
    """The rows worker ``rank`` trains on: its slice of every joint batch."""
    rows = np.arange(num_examples)
    joint = batch_size * workers
    usable = num_examples // joint * joint
    return rows[:usable].reshape(-1, workers, batch_size)[:, rank].reshape(-1)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    kv = mx.kv.create(args.kv_store)
    rng = np.random.RandomState(args.seed)
    train_data = rng.uniform(0, 1, [args.num_examples, 2])
    train_label = train_data[:, 0] + 2 * train_data[:, 1]
    mine = my_rows(args.num_examples, args.batch_size, kv.rank, kv.num_workers)
    eval_data = np.array([[7, 2], [6, 10], [12, 2]])
    eval_label = np.array([11, 26, 16])

    mx.random.seed(args.seed)  # every worker draws the same numbers (the shuffles too)
    train_iter = mx.io.NDArrayIter(train_data[mine], train_label[mine], args.batch_size,
                                   shuffle=not args.no_shuffle, label_name='lin_reg_label')
    eval_iter = mx.io.NDArrayIter(eval_data, eval_label, 1, shuffle=False)

    x = mx.sym.Variable('data')
    y = mx.sym.Variable('lin_reg_label')
    fully_connected_layer = mx.sym.FullyConnected(data=x, name='fc1', num_hidden=1)
    lro = mx.sym.LinearRegressionOutput(data=fully_connected_layer, label=y, name='lro')
    model = mx.mod.Module(symbol=lro, data_names=['data'], label_names=['lin_reg_label'])
    model.fit(train_iter, eval_iter,
              optimizer_params={'learning_rate': args.lr, 'momentum': args.momentum},
              num_epoch=args.num_epochs, eval_metric='mae', kvstore=kv,
              initializer=mx.init.Uniform(0.01),
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 20))
    arg_params, _ = model.get_params()
    weight = arg_params['fc1_weight'].asnumpy()
    bias = arg_params['fc1_bias'].asnumpy()
    print('worker %d: weight %s bias %s' % (kv.rank, weight.ravel(), bias))
    print('worker %d: predictions for %s: %s' % (
        kv.rank, eval_data.tolist(), model.predict(eval_iter).asnumpy().ravel().round(3)))
    if args.save_weights:
        np.savez(args.save_weights, weight=weight, bias=bias)


if __name__ == '__main__':
    main()
