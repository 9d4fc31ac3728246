"""The key-value store tutorial, step by step, printing what the tutorial prints.

    python examples/kvstore_tutorial.py                       # one process: 'local'
    python tools/launch.py -n 2 -s 1 --launcher local python examples/kvstore_tutorial.py

Alone it uses the 'local' store, and pushing ones and twos from two devices pulls 3
everywhere. Under the launcher (DMLC_ROLE is set) it uses 'dist': two workers each
pushing [1, 2] pull 6. Two GPUs are used when present, else cpu(0) and cpu(1).
"""
import os

import minigluon as mx
from minigluon import kv, nd


def allreduce(data, data_name, store):
    """The tutorial's helper: sum a list of per-device arrays through the store, in place."""
    store.push(data_name, data)
    store.pull(data_name, out=data)


def main():
    kind = 'dist' if os.environ.get('DMLC_ROLE') == 'worker' else 'local'
    store = kv.create(kind)
    mx.random.seed(0)
    shape = (2, 3)
    x = nd.random_uniform(shape=shape)
    store.init('weight', x)
    print('=== init "weight" ==={}'.format(x))

    ctx = [mx.gpu(0), mx.gpu(1)] if mx.num_gpus() >= 2 else [mx.cpu(0), mx.cpu(1)]
    y = [nd.zeros(shape, ctx=c) for c in ctx]
    store.pull('weight', out=y)
    print('=== pull "weight" to {} ===\n{}'.format(ctx, y))

    z = [nd.ones(shape, ctx=ctx[i]) + i for i in range(len(ctx))]
    store.push('weight', z)
    print('=== push to "weight" ===\n{}'.format(z))
    store.pull('weight', out=y)
    print('=== pull "weight" ===\n{}'.format(y))

    data = [nd.ones(shape, ctx=c) * (i + 1) for i, c in enumerate(ctx)]
    store.init('gradient', nd.zeros(shape))
    allreduce(data, 'gradient', store)
    print('=== allreduce of [1, 2] from {} devices ===\n{}'.format(len(ctx), data))

    print('total number of workers: %d' % store.num_workers)
    print('my rank among workers: %d' % store.rank)
    store.close()


if __name__ == '__main__':
    main()
