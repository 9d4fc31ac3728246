"""zeros and ones outside NumPy shape semantics: as in MXNet 1.x, a shape of () or with a
0 dimension is "unknown" there and cannot be made; inside ``mx.np_shape()`` it can."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError


@pytest.mark.parametrize('make', [nd.zeros, nd.ones])
@pytest.mark.parametrize('shape', [(), (0, 1, 3, 0), (0,), 0])
def test_unknown_shapes_are_errors_outside_np_shape(make, shape):
    with pytest.raises(MXNetError, match='np_shape'):
        make(shape=shape)


@pytest.mark.parametrize('make', [nd.zeros, nd.ones])
def test_scalars_and_empty_arrays_inside_np_shape(make):
    with mx.np_shape():
        assert make(shape=()).shape == ()
        assert make(shape=(0, 1, 0, 4)).shape == (0, 1, 0, 4)
    prev = mx.util.set_np_shape(True)
    try:
        assert make(()).asnumpy().shape == ()
    finally:
        mx.util.set_np_shape(prev)
    assert nd.empty((0, 3)).shape == (0, 3)  # MXNet's empty makes any shape


@pytest.mark.parametrize('args, dtype, expected', [
    # MXNet 1.9.1: start and step truncated for an integer dtype, the count from the floats
    ((1.3, 8.0, 1.3), 'int32', [1, 2, 3, 4, 5, 6]),
    ((50, 40, -4), 'uint8', [50, 46, 42]),
    ((2.5, -5, -2.5), 'uint8', [2, 0, 254]),
    ((-3, 0), 'uint8', [253, 254, 255]),
    ((0, 1, 0.25), 'float32', [0.0, 0.25, 0.5, 0.75])])
def test_arange_computes_in_the_output_dtype(args, dtype, expected):
    out = nd.arange(*args, dtype=dtype)
    assert out.dtype == np.dtype(dtype) and out.asnumpy().tolist() == expected


def test_arange_float32_values_are_start_plus_index_times_step():
    """MXNet 1.9.1's arange(1.3, 10, 1.3): 3.8999999 and 9.0999994 in float32, where
    rounding the float64 values would give 3.9000001 and 9.1000004."""
    expected = [1.2999999523162842, 2.5999999046325684, 3.8999998569488525, 5.199999809265137,
                6.5, 7.800000190734863, 9.09999942779541]
    assert nd.arange(1.3, 10, 1.3).asnumpy().tolist() == expected
