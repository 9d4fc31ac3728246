"""contrib.quantize and contrib.dequantize: MXNet's integers and ranges."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError


def test_int8_keeps_zero_at_zero():
    data = nd.array([[0.1392, 0.5928], [0.6027, -0.8579]])
    q, low, high = nd.contrib.quantize(data, nd.array([-0.5]), nd.array([1.0]), out_type='int8')
    assert q.dtype == np.int8
    # the range is widened to [-1, 1]; 0.1392 * 127 + 0.5 = 18.18 -> 18
    np.testing.assert_array_equal(q.asnumpy(), [[18, 75], [77, -109]])
    assert (low.asscalar(), high.asscalar()) == (-1.0, 1.0)
    back = nd.contrib.dequantize(q, low, high)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back.asnumpy(), q.asnumpy() / np.float32(127), rtol=1e-6)


def test_uint8_spans_the_range_it_is_given():
    data = nd.array([-0.3, 0.0, 0.35, 1.0])
    q, low, high = nd.contrib.quantize(data, nd.array([-0.3]), nd.array([1.0]))
    assert q.dtype == np.uint8
    np.testing.assert_array_equal(q.asnumpy(), [0, 59, 128, 255])
    assert np.float32(low.asscalar()) == np.float32(-0.3) and high.asscalar() == 1.0
    back = nd.contrib.dequantize(q, low, high).asnumpy()
    np.testing.assert_allclose(back, data.asnumpy(), atol=1.3 / 255 / 2 + 1e-7)


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(MXNetError, match="'int8' or 'uint8'"):
        nd.contrib.quantize(nd.ones((2,)), nd.zeros((1,)), nd.ones((1,)), out_type='int4')
    with pytest.raises(MXNetError, match='float32 data'):
        nd.contrib.quantize(nd.ones((2,), dtype='float64'), nd.zeros((1,)), nd.ones((1,)))
    with pytest.raises(MXNetError, match='min_range holds one value'):
        nd.contrib.quantize(nd.ones((2,)), nd.zeros((2,)), nd.ones((1,)))
    with pytest.raises(MXNetError, match='int8, uint8 or int32'):
        nd.contrib.dequantize(nd.ones((2,)), nd.zeros((1,)), nd.ones((1,)))


def test_graphs_show_three_outputs():
    q = mx.sym.contrib.quantize(mx.sym.var('x'), mx.sym.var('lo'), mx.sym.var('hi'),
                                out_type='int8')
    assert q.list_outputs() == ['quantize0_output0', 'quantize0_output1',
                                'quantize0_output2']
    out = q.eval(x=nd.array([0.5, -1.0]), lo=nd.array([-1.0]), hi=nd.array([1.0]))
    np.testing.assert_array_equal(out[0].asnumpy(), [64, -127])


_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
rng = np.random.RandomState(0)
data = rng.uniform(-2, 3, (50,)).astype(np.float32)
answers = {}
# (MXNet's CPU build, oneDNN, quantizes to uint8 from 0 whatever min_range says, and
# saturates int8 at -128 where its own kernel stops at -127, as here: avoided)
for out_type, lo, hi in (('int8', -1.5, 2.5), ('uint8', 0.0, 2.0), ('int8', -3.0, 0.5)):
    q, l, h = mx.nd.contrib.quantize(mx.nd.array(data), mx.nd.array([lo]), mx.nd.array([hi]),
                                     out_type=out_type)
    back = mx.nd.contrib.dequantize(q, l, h)
    answers['%s %s %s' % (out_type, lo, hi)] = [q.asnumpy().tolist(), l.asscalar().item(),
                                                h.asscalar().item(), back.asnumpy().tolist()]
json.dump(answers, open(sys.argv[1] + '/q.json', 'w'))
'''


def test_integers_equal_mxnets(answers_of_both):
    theirs, ours = answers_of_both(_SCRIPT, 'q.json')
    for key in theirs:
        assert ours[key][:3] == theirs[key][:3], key
        if key.startswith('int8'):
            # MXNet's CPU build dequantizes with oneDNN, which divides by 127.5 where its
            # own kernel (and its GPU's) divides by 127, as here: 0.4% apart
            np.testing.assert_allclose(ours[key][3], theirs[key][3], rtol=4.1e-3, err_msg=key)
