"""Arguments of the shape ops as MXNet 1.x takes them: Reshape's deprecated
``target_shape``/``keep_highest``, reshape_like's negative ranges, slice_axis without
``end``, tile's invalid reps, transpose's shape rule; and MXNet 1.9.1's answers on them."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError
from minigluon.ndarray.registry import get_op

X = np.arange(2 * 3 * 5 * 5, dtype=np.float32).reshape(2, 3, 5, 5)


@pytest.mark.parametrize('target, keep_highest, expected', [
    ((2, 0), False, (2, 75)),
    ((0, 10), False, (15, 10)),
    ((6, 25), False, (6, 25)),
    ((7, 0, 5), True, (2, 15, 5)),   # the first dimension stays the input's
])
def test_reshape_takes_the_deprecated_target_shape(target, keep_highest, expected):
    out = nd.reshape(nd.array(X), target_shape=target, keep_highest=keep_highest)
    np.testing.assert_array_equal(out.asnumpy(), X.reshape(expected))
    net = mx.sym.Reshape(mx.sym.var('data'), target_shape=target, keep_highest=keep_highest)
    net = mx.sym.load_json(net.tojson())
    assert net.infer_shape(data=X.shape)[1] == [expected]


def test_reshape_target_shape_of_another_size_is_an_error():
    with pytest.raises(MXNetError, match='target_shape'):
        nd.reshape(nd.array(X), target_shape=(7, 0, 0))


@pytest.mark.parametrize('lhs, rhs, ranges, expected', [
    ((3, 5), (1, 15, 4), dict(lhs_begin=0, rhs_begin=1, rhs_end=-1), (15,)),
    ((30, 12), (4, 2, 2, 3), dict(lhs_begin=-1, rhs_begin=1), (30, 2, 2, 3)),
    ((1, 1, 7, 3, 1, 1), (81, 1, 1, 21), dict(lhs_begin=1, lhs_end=-1, rhs_begin=1),
     (1, 1, 1, 21, 1)),
])
def test_reshape_like_ranges_count_negative_ends_from_the_end(lhs, rhs, ranges, expected):
    a = np.arange(int(np.prod(lhs)), dtype=np.float32).reshape(lhs)
    out = nd.reshape_like(nd.array(a), nd.zeros(rhs), **ranges)
    np.testing.assert_array_equal(out.asnumpy(), a.reshape(expected))


def test_reshape_like_rejects_an_empty_range():
    with pytest.raises(MXNetError, match='lhs_begin=1, lhs_end=1'):
        nd.reshape_like(nd.zeros((2, 3)), nd.zeros((3, 2)), lhs_begin=1, lhs_end=1)


def test_slice_axis_end_defaults_to_the_end():
    a = nd.array(X[0, 0])
    np.testing.assert_array_equal(nd.slice_axis(a, axis=1, begin=2).asnumpy(), X[0, 0, :, 2:])
    net = mx.sym.slice_axis(mx.sym.var('x'), axis=0, begin=-2, end=None)
    assert net.infer_shape(x=(5, 4))[1] == [(2, 4)]


def test_tile_rejects_negative_reps_and_zero_outside_np_shape():
    a = nd.ones((4, 4))
    with pytest.raises(MXNetError, match='reps'):
        nd.tile(a, (1, 2, -3))
    with pytest.raises(MXNetError, match='np_shape'):
        nd.tile(a, (1, 0, 3))
    with mx.np_shape():
        assert nd.tile(a, (1, 0, 3)).shape == (1, 0, 12)


@pytest.mark.parametrize('data, axes, out, expected', [
    ((0, 0), None, (2, 3), (3, 2)),
    ((4, 0, 0), (1, 2, 0), (2, 3, 4), (4, 2, 3)),
    ((0, 5, 0), (2, 0, 1), (0, 7, 5), (7, 5, 0)),   # what the output knows, no more
])
def test_transpose_rule_takes_the_input_shape_from_the_output(data, axes, out, expected):
    rule = get_op('transpose').infer_shape
    assert rule(data, axes=axes, out_shapes=[out]) == (expected,)


MXNET_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx

x = mx.nd.array(np.arange(150, dtype=np.float32).reshape(2, 3, 5, 5))
answers = {}
for target, keep in (((2, 0), False), ((0, 10), False), ((7, 0, 5), True)):
    out = mx.nd.reshape(x, target_shape=target, keep_highest=keep)
    answers['target %s %s' % (target, keep)] = out.asnumpy().tolist()
for lhs, rhs, ranges in (((3, 5), (1, 15, 4), dict(lhs_begin=0, rhs_begin=1, rhs_end=-1)),
                         ((30, 12), (4, 2, 2, 3), dict(lhs_begin=-1, rhs_begin=1))):
    a = mx.nd.array(np.arange(np.prod(lhs), dtype=np.float32).reshape(lhs))
    out = mx.nd.reshape_like(a, mx.nd.zeros(rhs), **ranges)
    answers['like %s %s' % (lhs, sorted(ranges.items()))] = [list(out.shape)]
out = mx.nd.slice_axis(x, axis=2, begin=3, end=None)
answers['slice_axis'] = out.asnumpy().tolist()
for reps in ((1, 2, -3), (1, 0, 3)):
    try:
        mx.nd.tile(x, reps).wait_to_read()
        answers['tile %s' % (reps,)] = ['ran']
    except mx.base.MXNetError:
        answers['tile %s' % (reps,)] = ['error']
with open(sys.argv[1] + '/answers.json', 'w') as f:
    json.dump(answers, f)
'''


def test_against_mxnet(answers_of_both):
    theirs, ours = answers_of_both(MXNET_SCRIPT, 'answers.json')
    assert theirs == ours


@pytest.mark.parametrize('op, shape, block', [
    ('depth_to_space', (1, 4, 0, 3), 2), ('depth_to_space', (1, 4, 2, 2), 0),
    ('depth_to_space', (1, 3, 2, 2), 2), ('depth_to_space', (4, 2, 2), 2),
    ('space_to_depth', (1, 1, 1, 2), 2), ('space_to_depth', (1, 1, 2, 2), 0),
    ('space_to_depth', (1, 0, 2, 2), 2)])
def test_depth_space_reject_what_mxnet_rejects(op, shape, block):
    """An empty axis, a block size of 0, channels or sides that do not divide: an
    MXNetError saying so (never a ZeroDivisionError)."""
    with pytest.raises(MXNetError, match=op):
        getattr(nd, op)(nd.array(np.ones(shape)), block)


@pytest.mark.parametrize('shape, kwargs', [
    ((3, 4), {'k': 5}), ((3, 4), {'k': -4}), ((2, 3, 4), {'k': 5, 'axis1': 1, 'axis2': 2}),
    ((2, 3), {'axis1': 1, 'axis2': -1}), ((2, 3), {'axis1': 2})])
def test_diag_rejects_what_mxnet_rejects(shape, kwargs):
    """MXNet 1.9.1: a diagonal outside the matrix, twice the same axis, an axis out of range."""
    with pytest.raises(MXNetError):
        nd.diag(nd.ones(shape), **kwargs)


def test_diag_just_outside_the_matrix_is_empty():
    """MXNet 1.9.1: k=4 of a 3x4 matrix is an empty diagonal, not an error."""
    assert nd.diag(nd.ones((3, 4)), k=4).shape == (0,)
    assert nd.diag(nd.ones((3, 4)), k=-3).shape == (0,)
