"""mx.io.NDArrayIter: batch contents, pads and epoch boundaries as MXNet 1.9.1's."""
import numpy as np
import pytest

import minigluon as mx

# Two epochs of every last_batch_handle mode, dict/list/array inputs, shuffling, a batch
# bigger than the data; the answer is every batch's arrays, pad and the descriptions.
_EPOCHS_SCRIPT = '''
import json, os, sys
import numpy as np
import mxnet as mx

def epochs(it, n=2):
    out = []
    for _ in range(n):
        out.append([[[a.asnumpy().tolist() for a in b.data],
                     [a.asnumpy().tolist() for a in b.label], b.pad] for b in it])
        it.reset()
    return out

def desc(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]

x = np.arange(20, dtype=np.float32).reshape(10, 2)
y = np.arange(10, dtype=np.int32)
answer = {}
for mode in ['pad', 'discard', 'roll_over']:
    it = mx.io.NDArrayIter({'b': x, 'a': x * 10}, y, batch_size=4, last_batch_handle=mode,
                           label_name='lin_reg_label')
    answer[mode] = [epochs(it, 3), desc(it.provide_data), desc(it.provide_label)]
    np.random.seed(7)
    it = mx.io.NDArrayIter([x, x + 100], None, batch_size=3, shuffle=True,
                           last_batch_handle=mode)
    answer[mode + '-shuffle'] = [epochs(it), desc(it.provide_data), desc(it.provide_label)]
it = mx.io.NDArrayIter(mx.nd.array(y, dtype='int32'), batch_size=25)
answer['tiled'] = [epochs(it, 1), desc(it.provide_data), it.num_data]
it = mx.io.NDArrayIter(x, y, batch_size=4, last_batch_handle='roll_over')
for _ in it:
    pass
it.hard_reset()
answer['hard_reset'] = epochs(it, 1)
it = mx.io.NDArrayIter(x, y, batch_size=4)
steps = []
while it.iter_next():
    steps.append([it.getdata()[0].asnumpy().tolist(), it.getpad(), it.getindex()])
answer['steps'] = steps
with open(os.path.join(sys.argv[1], 'answer.json'), 'w') as f:
    json.dump(answer, f)
'''


def test_batches_match_mxnet(answers_of_both):
    mxnet, minigluon = answers_of_both(_EPOCHS_SCRIPT, 'answer.json')
    assert minigluon.keys() == mxnet.keys()
    for key in mxnet:
        assert minigluon[key] == mxnet[key], key


def _contents(it):
    return [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]


def test_roll_over_starts_the_next_epoch_with_the_remainder():
    it = mx.io.NDArrayIter(np.arange(10).reshape(10, 1), batch_size=4,
                           last_batch_handle='roll_over')
    assert _contents(it) == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]
    it.reset()
    # MXNet counts the examples carried over as the first batch's pad
    assert _contents(it) == [([8, 9, 0, 1], 2), ([2, 3, 4, 5], 0), ([6, 7, 8, 9], 0)]


def test_names_are_sorted_and_numpy_input_becomes_float32():
    it = mx.io.NDArrayIter({'zeta': np.ones((4, 2), np.int64), 'alpha': np.zeros((4, 3))},
                           [np.ones(4), np.ones(4)], batch_size=2)
    assert [d.name for d in it.provide_data] == ['alpha', 'zeta']
    assert [d.name for d in it.provide_label] == ['_0_softmax_label', '_1_softmax_label']
    assert it.provide_data[1] == ('zeta', (2, 2)) and it.provide_data[1].dtype == np.float32
    assert len(it.next().label) == 2


def test_sparse_input_is_refused_clearly():
    scipy_sparse = pytest.importorskip('scipy.sparse')
    with pytest.raises(NotImplementedError, match='sparse storage'):
        mx.io.NDArrayIter({'data': scipy_sparse.csr_matrix(np.eye(3))}, batch_size=1)


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(TypeError, match='tuple'):
        mx.io.NDArrayIter((np.ones(3), np.ones(3)))
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.ones(3), last_batch_handle='keep')
    with pytest.raises(ValueError, match="'softmax_label' .* shape \\(2,\\)"):
        mx.io.NDArrayIter(np.ones(3), np.ones(2))
