"""``mx.util``: the NumPy-shape switch is kept per thread and scoped; NumPy arrays are
refused."""
import threading

import pytest

import minigluon as mx
from minigluon import util
from minigluon.base import MXNetError


def test_np_shape_scopes_nest_and_restore():
    assert not mx.is_np_shape()
    with mx.np_shape(True):
        assert util.is_np_shape()
        with mx.np_shape(False):
            assert not util.is_np_shape()
        assert util.is_np_shape()
    assert not util.is_np_shape()
    assert util.set_np_shape(True) is False and util.set_np_shape(False) is True
    decorated = util.use_np_shape(util.is_np_shape)
    assert decorated() is True and not util.is_np_shape()


def test_np_shape_is_per_thread():
    seen = []
    with mx.np_shape(True):
        thread = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
        thread.start()
        thread.join()
    assert seen == [False]


def test_set_np_turns_on_shapes_but_refuses_arrays():
    with pytest.raises(MXNetError, match='NumPy semantics'):
        util.set_np()
    util.set_np(shape=True, array=False)
    try:
        assert util.is_np_shape()
    finally:
        util.reset_np()
    assert not util.is_np_shape()
