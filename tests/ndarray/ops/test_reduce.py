"""norm's ``out_dtype``, as MXNet 1.9.1 has it."""
import numpy as np

import minigluon as mx
from minigluon import autograd, nd


def test_norm_out_dtype_sets_the_output_dtype_only():
    """MXNet 1.9.1 (MXNET_SAFE_ACCUMULATION=1): [6.] in float64, the gradient float32."""
    x = nd.array([[1., 2., -3.]])
    x.attach_grad()
    with autograd.record():
        y = nd.norm(x, ord=1, axis=1, out_dtype='float64')
    y.backward()
    assert y.dtype == np.float64 and y.asnumpy().tolist() == [6.0]
    assert x.grad.dtype == np.float32 and x.grad.asnumpy().tolist() == [[1., 1., -1.]]
    sym = mx.sym.norm(mx.sym.var('x'), out_dtype='float64')
    assert sym.infer_type(x='float32') == ([np.float32], [np.float64], [])


def test_norm_of_float16_accumulates_in_float32():
    """In float16 the sum of squares of these 1000 values is off by 3e-4."""
    data = np.random.RandomState(0).uniform(size=1000).astype(np.float16)
    y = nd.norm(nd.array(data, dtype='float16'), out_dtype='float32')
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), [np.sqrt((data.astype(np.float64) ** 2).sum())],
                               rtol=1e-6)
