"""The backend's questions about raw arrays: which side of the host/device split an array
lives on, and the array module that goes with it."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import backend


def test_a_numpy_array_is_a_host_array_and_nothing_else_is():
    for array in (np.zeros(3, np.float32), np.zeros((2, 0)), np.ones((2, 3))[:, 1],
                  np.asarray(5.0)):
        assert backend.is_host_array(array) and not backend.is_device_array(array)
        assert backend.get_array_module(array) is np
    # numpy scalars, Python values and NDArrays are not raw arrays on either side
    for other in (np.float32(1.0), 1.0, [1.0, 2.0], b'\x00', None, mx.nd.zeros(3)):
        assert not backend.is_host_array(other) and not backend.is_device_array(other)


def test_an_ndarrays_cpu_handle_is_a_host_array():
    for ctx in (mx.cpu(0), mx.cpu(1), mx.Context('cpu_shared', 0)):
        assert backend.is_host_array(mx.nd.ones(2, ctx=ctx).handle)


@pytest.mark.skipif(mx.num_gpus() == 0,
                    reason='no GPU: %s' % backend.gpu_unavailable_reason(0))
def test_a_cupy_array_is_a_device_array_not_a_host_array():
    array = backend.to_device(np.arange(4.0), 0)
    assert backend.is_device_array(array) and not backend.is_host_array(array)
    assert backend.is_host_array(backend.to_host(array))
    assert backend.is_device_array(mx.nd.ones(2, ctx=mx.gpu(0)).handle)
