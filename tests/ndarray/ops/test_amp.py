"""Mixed precision's casts, ``amp_cast`` and ``amp_multicast``: dtypes, values and
gradients as MXNet 1.9.1 gives them."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError


def test_amp_cast_converts_float16_and_float32_only():
    x = nd.array([1.5, -2.25])
    x.attach_grad()
    with autograd.record():
        y = nd.amp_cast(x, dtype='float16')
    y.backward()
    assert y.dtype == np.float16 and y.asnumpy().tolist() == [1.5, -2.25]
    assert x.grad.dtype == np.float32 and x.grad.asnumpy().tolist() == [1.0, 1.0]
    assert nd.amp_cast(nd.array([1, 2], dtype='int32'), dtype='float16').dtype == np.int32
    assert nd.amp_cast(nd.array([1, 2], dtype='float64'), dtype='float16').dtype == np.float64


@pytest.mark.parametrize('dtypes, cast_narrow, expected', [
    (('float16', 'float32'), False, ('float32', 'float32')),
    (('float64', 'float16'), False, ('float64', 'float64')),   # the first array's dtype
    (('float16', 'float32'), True, ('float16', 'float16')),
    (('float64', 'float32'), True, ('float64', 'float32')),
    (('int32', 'float16'), False, ('int32', 'int32'))])
def test_amp_multicast_dtypes(dtypes, cast_narrow, expected):
    """MXNet 1.9.1's ``infer_type``; the arrays get the same dtypes."""
    x, y = mx.sym.var('x'), mx.sym.var('y')
    sym = mx.sym.amp_multicast(x, y, num_outputs=2, cast_narrow=cast_narrow, name='cast')
    assert sym.infer_type(x=dtypes[0], y=dtypes[1])[1] == [np.dtype(d) for d in expected]
    assert sym.list_outputs() == ['cast_output0', 'cast_output1']
    outs = nd.amp_multicast(nd.ones(2, dtype=dtypes[0]), nd.ones(2, dtype=dtypes[1]),
                            num_outputs=2, cast_narrow=cast_narrow)
    assert [o.dtype for o in outs] == [np.dtype(d) for d in expected]


def test_amp_multicast_gradients_keep_the_inputs_dtypes():
    a, b = nd.ones(2, dtype='float16'), nd.ones(2)
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        first, second = nd.amp_multicast(a, b, num_outputs=2)
        loss = first * 2 + second * 3
    loss.backward()
    assert a.grad.dtype == np.float16 and a.grad.asnumpy().tolist() == [2.0, 2.0]
    assert b.grad.asnumpy().tolist() == [3.0, 3.0]
    with pytest.raises(MXNetError, match='num_outputs'):
        nd.amp_multicast(a, b, num_outputs=3)


def test_amp_cast_in_a_graph_has_its_output_dtype_before_forward():
    x = mx.sym.var('x', dtype=np.float32)
    exe = mx.sym.amp_cast(x, dtype=np.float16).bind(mx.cpu(), {'x': nd.array([1e5, 0.1])})
    assert exe.outputs[0].dtype == np.float16
    with np.errstate(over='ignore'):  # 1e5 overflows float16, as intended
        out = exe.forward()[0].asnumpy()
    assert np.isinf(out[0]) and out[1] == np.float16(0.1)
