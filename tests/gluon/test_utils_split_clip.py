"""gluon.utils: split_data / split_and_load over devices and clip_global_norm."""
import warnings

import numpy as np
import pytest

import minigluon as mx
from minigluon import gluon, nd
from minigluon.base import MXNetError


@pytest.mark.parametrize('num_slice,axis,even', [(8, 0, True), (3, 1, True), (4, 1, False),
                                                 (15, 1, False)])
def test_split_data_matches_numpy_array_split(num_slice, axis, even):
    x = np.random.RandomState(0).uniform(size=(16, 33, 2)).astype(np.float32)
    parts = gluon.utils.split_data(nd.array(x), num_slice, axis, even_split=even)
    assert len(parts) == num_slice
    for part, ref in zip(parts, np.array_split(x, num_slice, axis=axis)):
        np.testing.assert_array_equal(part.asnumpy(), ref)


def test_split_data_refuses_uneven_or_too_many_slices_with_value_error():
    x = nd.zeros((10, 3))
    with pytest.raises(ValueError, match='evenly split') as info:
        gluon.utils.split_data(x, 4)
    assert isinstance(info.value, MXNetError)
    with pytest.raises(ValueError, match='too many slices'):
        gluon.utils.split_data(x, 11, even_split=False)


def test_split_and_load_puts_one_slice_on_each_device():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    parts = gluon.utils.split_and_load(x, ctxs)
    assert [p.context for p in parts] == ctxs
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x)


@pytest.mark.parametrize('check_isfinite', [True, False])
def test_clip_global_norm(check_isfinite):
    x1, x2 = nd.ones((3, 3)), nd.ones((4, 4))
    norm = gluon.utils.clip_global_norm([x1, x2], 1.0, check_isfinite=check_isfinite)
    assert float(norm if check_isfinite else norm.asscalar()) == pytest.approx(5.0)
    np.testing.assert_allclose(x1.asnumpy(), np.ones((3, 3)) / 5, rtol=1e-6)
    np.testing.assert_allclose(x2.asnumpy(), np.ones((4, 4)) / 5, rtol=1e-6)
    x3 = nd.array([1.0, 2.0, float('nan')])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        gluon.utils.clip_global_norm([x1, x3], 2.0, check_isfinite=check_isfinite)
    assert len(caught) == int(check_isfinite)
