"""all_finite, multi_all_finite and contrib.allclose: flags, dtypes and shapes as MXNet
1.9.1 gives them, ``out=`` with ``init_output=False``, and graphs."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError


@pytest.mark.parametrize('values,flag', [([0.0, 1e30], 1.0), ([1.0, np.inf], 0.0),
                                         ([np.nan, 2.0], 0.0), ([-np.inf], 0.0)])
def test_all_finite_flags(values, flag, ctx):
    out = nd.all_finite(nd.array(values, ctx=ctx))
    assert out.shape == (1,) and out.dtype == np.float32 and out.asscalar() == flag


def test_float64_beyond_float32_counts_as_overflow():
    assert nd.all_finite(nd.array([1e300], dtype='float64')).asscalar() == 0
    assert nd.all_finite(nd.array([1e30], dtype='float16')).asscalar() == 0  # inf in fp16


def test_multi_all_finite_and_a_shared_flag():
    good, bad = nd.ones((2, 3)), nd.array([1.0, np.nan])
    assert nd.multi_all_finite(good, good, num_arrays=2).asscalar() == 1
    assert nd.multi_all_finite(good, bad, num_arrays=2).asscalar() == 0
    flag = nd.full((1,), 5.0)
    nd.multi_all_finite(good, good, num_arrays=2, init_output=False, out=flag)
    assert flag.asscalar() == 5  # untouched, as MXNet leaves it
    nd.all_finite(bad, init_output=False, out=flag)
    nd.all_finite(good, init_output=False, out=flag)
    assert flag.asscalar() == 0  # a later finite array does not undo the overflow
    nd.all_finite(good, out=flag)
    assert flag.asscalar() == 1
    with pytest.raises(MXNetError, match='num_arrays=3 but 2 arrays'):
        nd.multi_all_finite(good, good, num_arrays=3)


def test_graphs_count_inputs_by_num_arrays():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    z = mx.sym.multi_all_finite(a, b, num_arrays=2)
    assert z.list_arguments() == ['a', 'b']
    assert '"num_arrays": "2"' in z.tojson() and 'num_args' not in z.tojson()
    loaded = mx.sym.load_json(z.tojson())
    assert loaded.list_arguments() == ['a', 'b']
    exe = loaded.bind(mx.cpu(), {'a': nd.ones((2,)), 'b': nd.array([np.inf])})
    assert exe.forward()[0].asscalar() == 0
    assert z.infer_type(a='float16', b='float16')[1] == [np.float32]
    assert mx.sym.all_finite(a).infer_type(a='float64')[1] == [np.float32]


def test_allclose_as_mxnet():
    a = nd.array([1.0, 2.0, np.nan])
    out = nd.contrib.allclose(a, a)
    assert out.shape == () and out.dtype == np.uint8 and out.asscalar() == 1
    assert nd.contrib.allclose(a, a, equal_nan=False).asscalar() == 0
    b = nd.array([1.0, 2.00002, np.nan])
    assert nd.contrib.allclose(a, b).asscalar() == 0
    assert nd.contrib.allclose(a, b, rtol=2e-5).asscalar() == 1
    assert nd.contrib.allclose(nd.array([0.0]), nd.array([1e-9]), atol=1e-8).asscalar() == 1
    assert nd.contrib.allclose(nd.array([1e-9]), nd.array([0.0]), atol=1e-10).asscalar() == 0
    with pytest.raises(MXNetError, match='one shape'):
        nd.contrib.allclose(nd.ones((2,)), nd.ones((3,)))
    close = mx.sym.contrib.allclose(mx.sym.var('a'), mx.sym.var('b'))
    assert close.infer_type(a='float32', b='float32')[1] == [np.uint8]
