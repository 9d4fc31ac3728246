"""SequenceMask, SequenceLast and SequenceReverse against a numpy loop over the samples
and against MXNet 1.9.1 (gradients: op_cases.py)."""

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.base import MXNetError

rng = np.random.RandomState(3)
LENGTHS = [2, 4, 1]


def _reference(op, data, lengths, axis, value=0.0):
    """One sample at a time, time-major: the op as its documentation states it."""
    x = np.moveaxis(data, axis, 0)
    steps = x.shape[0]
    lengths = [steps] * x.shape[1] if lengths is None else lengths
    outs = []
    for n, length in enumerate(lengths):
        sample = x[:, n].copy()
        if op == 'SequenceMask':
            sample[length:] = value
        elif op == 'SequenceReverse':
            sample[:length] = sample[:length][::-1].copy()
        else:
            sample = sample[length - 1]
        outs.append(sample)
    out = np.stack(outs, axis=1 if op != 'SequenceLast' else 0)
    return out if op == 'SequenceLast' else np.moveaxis(out, 0, axis)


@pytest.mark.parametrize('op,axis', [('SequenceMask', 0), ('SequenceMask', 1),
                                     ('SequenceLast', 0), ('SequenceLast', 1),
                                     ('SequenceReverse', 0)])
@pytest.mark.parametrize('lengths', [LENGTHS, None])
def test_against_a_loop_over_samples(op, axis, lengths):
    shape = (4, 3, 2, 2) if axis == 0 else (3, 4, 2)
    data = rng.randn(*shape)
    kwargs = {'axis': axis}
    if op == 'SequenceMask':
        kwargs['value'] = 0.5
    args = [nd.array(data, dtype='float64')]
    if lengths is not None:
        args.append(nd.array(lengths, dtype='float32'))
        kwargs['use_sequence_length'] = True
    x = args[0]
    x.attach_grad()
    with autograd.record():
        out = getattr(nd, op)(*args, **kwargs)
    head = rng.randn(*out.shape)
    out.backward(nd.array(head, dtype='float64'))
    np.testing.assert_array_equal(out.asnumpy(),
                                  _reference(op, data, lengths, axis, kwargs.get('value')))
    # the gradient routes the head gradient back where the values came from
    if op == 'SequenceLast':
        moved = np.zeros(np.moveaxis(data, axis, 0).shape)
        for n, length in enumerate(lengths or [data.shape[axis]] * head.shape[0]):
            moved[length - 1, n] = head[n]
        expected = np.moveaxis(moved, 0, axis)
    else:
        expected = _reference(op, head, lengths, axis)
    np.testing.assert_array_equal(x.grad.asnumpy(), expected)


def test_symbol_lists_sequence_length_only_when_used():
    data, lengths = mx.sym.var('data'), mx.sym.var('lengths')
    masked = mx.sym.SequenceLast(data, lengths, use_sequence_length=True, axis=1)
    assert masked.list_arguments() == ['data', 'lengths']
    assert masked.infer_shape(data=(3, 5, 2))[:2] == ([(3, 5, 2), (3,)], [(3, 2)])
    assert mx.sym.SequenceReverse(data).list_arguments() == ['data']
    executor = masked.bind(mx.cpu(), {'data': nd.arange(12).reshape((2, 3, 2)),
                                      'lengths': nd.array([3, 1])})
    np.testing.assert_array_equal(executor.forward()[0].asnumpy(), [[4, 5], [6, 7]])


def test_errors_say_what_was_wrong():
    x = nd.zeros((3, 2))
    with pytest.raises(MXNetError, match='needs the sequence_length input'):
        nd.SequenceMask(x, use_sequence_length=True)
    with pytest.raises(MXNetError, match='must not exceed the 3 time steps'):
        nd.SequenceLast(x, nd.array([1, 4]), use_sequence_length=True)
    with pytest.raises(MXNetError, match='axis must be 0'):
        nd.SequenceReverse(x, axis=1)
    with pytest.raises(MXNetError, match=r'shape \(2,\)'):
        nd.SequenceMask(x, nd.array([1, 2, 3]), use_sequence_length=True)


MXNET_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
rng = np.random.RandomState(0)
data = rng.randn(4, 3, 2).astype('float32')
head = rng.randn(4, 3, 2).astype('float32')
lengths = mx.nd.array([2, 4, 1])
answers = {}
for op, kwargs in [('SequenceMask', dict(value=-2.0)), ('SequenceMask', dict(axis=1)),
                   ('SequenceLast', {}), ('SequenceLast', dict(axis=1)),
                   ('SequenceReverse', {})]:
    for use in (True, False):
        shape = data.shape if kwargs.get('axis', 0) == 0 else (3, 4, 2)
        x = mx.nd.array(data.reshape(shape))
        x.attach_grad()
        args = [x, lengths] if use else [x]
        with mx.autograd.record():
            out = getattr(mx.nd, op)(*args, use_sequence_length=use, **kwargs)
        key = '%s %s %s' % (op, sorted(kwargs.items()), use)
        answers[key] = [out.asnumpy().tolist()]
        # MXNet's SequenceLast backward without lengths reads uninitialised indices
        if op != 'SequenceLast' or use:
            out.backward(mx.nd.array(head.reshape(-1)[:out.size].reshape(out.shape)))
            answers[key].append(x.grad.asnumpy().tolist())
json.dump(answers, open(sys.argv[1] + '/answers.json', 'w'))
'''


def test_against_mxnet(answers_of_both):
    theirs, ours = answers_of_both(MXNET_SCRIPT, 'answers.json')
    assert sorted(theirs) == sorted(ours)
    for key in theirs:
        assert len(theirs[key]) == len(ours[key]), key
        for their, our in zip(theirs[key], ours[key]):
            np.testing.assert_allclose(our, their, rtol=0, atol=0, err_msg=key)
