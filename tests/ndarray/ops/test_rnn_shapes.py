"""The fused RNN op's output rule: graph shape inference gets the shapes the kernel gives,
and the errors it raises, without running the kernel (a whole forward pass)."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError
from minigluon.ndarray.ops.rnn import param_layout
from minigluon.ndarray.registry import get_op

T, N, C, H = 3, 2, 5, 4

# (mode, layers, bidirectional, projection_size, state_outputs, use_sequence_length)
CASES = [('lstm', 2, True, None, True, False), ('lstm', 1, False, 3, True, False),
         ('gru', 2, True, None, False, False), ('rnn_tanh', 1, False, None, True, True),
         ('rnn_relu', 3, True, None, True, False), ('lstm', 1, True, None, False, True)]


@pytest.fixture
def kernel_runs(monkeypatch):
    """How many times the RNN kernel has run."""
    op = get_op('RNN')
    runs = []
    forward = op.forward

    def counting(*args, **kwargs):
        runs.append(1)
        return forward(*args, **kwargs)
    monkeypatch.setattr(op, 'forward', counting)
    return runs


def _graph(mode, layers, bidirectional, proj, state_outputs, lengths):
    args = [mx.sym.var(n) for n in ('data', 'parameters', 'state')]
    if mode == 'lstm':
        args.append(mx.sym.var('state_cell'))
    if lengths:
        args.append(mx.sym.var('sequence_length'))
    return mx.sym.RNN(*args, state_size=H, num_layers=layers, bidirectional=bidirectional,
                      mode=mode, projection_size=proj, state_outputs=state_outputs,
                      use_sequence_length=lengths, name='rnn')


@pytest.mark.parametrize('case', CASES)
def test_inferred_shapes_are_the_kernels_without_running_it(case, kernel_runs):
    mode, layers, bidirectional, proj, state_outputs, lengths = case
    net = _graph(*case)
    dirs = 2 if bidirectional else 1
    _, outs, _ = net.infer_shape(data=(T, N, C))
    assert not kernel_runs

    size = param_layout(mode, layers, C, H, bidirectional, proj)[1]
    inputs = [nd.ones((T, N, C)), nd.ones((size,)) * 0.1, nd.zeros((layers * dirs, N, proj or H))]
    if mode == 'lstm':
        inputs.append(nd.zeros((layers * dirs, N, H)))
    if lengths:
        inputs.append(nd.array([T, 1]))
    result = nd.RNN(*inputs, state_size=H, num_layers=layers, bidirectional=bidirectional,
                    mode=mode, projection_size=proj, state_outputs=state_outputs,
                    use_sequence_length=lengths)
    result = result if isinstance(result, list) else [result]
    assert outs == [r.shape for r in result]


def test_inference_reports_what_the_kernel_would(kernel_runs):
    data = mx.sym.var('data')
    net = mx.sym.RNN(data, mx.sym.var('p'), mx.sym.var('s'), mx.sym.var('c'), state_size=H,
                     num_layers=1, mode='lstm', projection_size=H + 1)
    with pytest.raises(MXNetError, match=r'projection_size \(5\) must not exceed'):
        net.infer_shape(data=(T, N, C))
    net = mx.sym.RNN(data, mx.sym.var('p'), mx.sym.var('s'), state_size=H, num_layers=1,
                     mode='gru', lstm_state_clip_min=-1, lstm_state_clip_max=1)
    with pytest.raises(MXNetError, match='only apply to mode lstm'):
        net.infer_shape(data=(T, N, C))
    assert not kernel_runs


def test_a_fused_cell_binds_and_runs_the_kernel_only_to_compute(kernel_runs):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode='lstm', bidirectional=True,
                               get_next_state=True, prefix='f_')
    out, _ = cell.unroll(T, mx.sym.var('data'), layout='NTC', merge_outputs=True)
    exe = out.simple_bind(mx.cpu(), data=(N, T, C))
    assert not kernel_runs
    exe.arg_dict['data'][:] = np.random.RandomState(0).uniform(size=(N, T, C))
    exe.forward(is_train=False)
    assert len(kernel_runs) == 1 and exe.outputs[0].shape == (N, T, 2 * H)
