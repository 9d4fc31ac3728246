"""mx.io.ResizeIter and mx.io.PrefetchingIter, against MXNet 1.9.1 and on their own."""
import threading

import numpy as np
import pytest

import minigluon as mx

_SCRIPT = '''
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

x = np.arange(10, dtype=np.float32).reshape(5, 2)
answer = {}
for internal in (True, False):
    it = mx.io.ResizeIter(mx.io.NDArrayIter(x, np.arange(5), batch_size=2), 4,
                          reset_internal=internal)
    answer['resize-%s' % internal] = [epochs(it, 3), it.batch_size,
                                      [list(d.shape) for d in it.provide_data]]
one = mx.io.NDArrayIter({'data': x}, np.arange(5), batch_size=2)
two = mx.io.NDArrayIter({'data': x * 2}, np.arange(5) * 2, batch_size=2)
it = mx.io.PrefetchingIter([one, two], rename_data=[{'data': 'd1'}, {'data': 'd2'}])
answer['prefetch'] = [epochs(it, 2), [[d.name, list(d.shape)] for d in it.provide_data],
                      [[d.name, list(d.shape)] for d in it.provide_label], it.batch_size]
with open(os.path.join(sys.argv[1], 'answer.json'), 'w') as f:
    json.dump(answer, f)
'''


def test_wrappers_match_mxnet(answers_of_both):
    mxnet, minigluon = answers_of_both(_SCRIPT, 'answer.json')
    for key in mxnet:
        assert minigluon[key] == mxnet[key], key


class _Failing(mx.io.NDArrayIter):
    def next(self):
        raise OSError('disk gone')


def test_prefetching_raises_the_error_of_its_thread_and_close_stops_it():
    before = threading.active_count()
    it = mx.io.PrefetchingIter(_Failing(np.ones((4, 1)), batch_size=2))
    with pytest.raises(OSError, match='disk gone'):
        it.next()
    it.close()
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match='closed'):
        it.next()


def test_prefetching_refuses_iterators_of_different_lengths():
    it = mx.io.PrefetchingIter([mx.io.NDArrayIter(np.ones((4, 1)), batch_size=2),
                                mx.io.NDArrayIter(np.ones((2, 1)), batch_size=2)])
    it.next()
    with pytest.raises(ValueError, match='different numbers'):
        it.next()
    it.close()
