"""mx.monitor.Monitor on a bound 2-layer MLP: the names, order and values MXNet 1.9.1
reports (recorded from MXNet running MXNet's test_module.py test_monitor network)."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd

# MXNet 1.9.1: Monitor(1, mean |x|) on forward(is_train=True) + backward, then toc()
MXNET_FORWARD_BACKWARD = [
    ('fc_0_output', 0.385), ('act_0_output', 0.59507716), ('fc_1_output', 1.1654137),
    ('act_1_output', 0.7621468), ('softmax_output', 0.7621468),
    ('softmax_backward_output0', 0.4792183), ('softmax_backward_output1', None),
    ('act_1_backward_output', 0.088298395), ('fc_1_backward_output0', 0.038860314),
    ('fc_1_backward_output1', 0.05254436), ('fc_1_backward_output2', 0.088298395),
    ('act_0_backward_output', 0.009362806), ('fc_0_backward_output0', None),
    ('fc_0_backward_output1', 0.00070221035), ('fc_0_backward_output2', 0.009362806),
    ('data', 0.075), ('fc_0_weight', 0.225), ('fc_0_bias', 0.35), ('fc_1_weight', 0.475),
    ('fc_1_bias', 0.6), ('softmax_label', 0.5)]  # None: a gradient MXNet does not compute
# with monitor_all, MXNet reports each node's inputs first (a variable also by its name)
MXNET_ALL_FORWARD = [
    'data', 'fc_0_data', 'fc_0_weight', 'fc_0_weight', 'fc_0_bias', 'fc_0_bias', 'fc_0_output',
    'act_0_input0', 'act_0_output', 'fc_1_data', 'fc_1_weight', 'fc_1_weight', 'fc_1_bias',
    'fc_1_bias', 'fc_1_output', 'act_1_input0', 'act_1_output', 'softmax_data', 'softmax_label',
    'softmax_label', 'softmax_output']


def _mean_abs(x):
    return nd.sum(nd.abs(x)) / x.size


def _executor():
    x = mx.sym.var('data')
    x = mx.sym.FullyConnected(name='fc_0', data=x, num_hidden=2)
    x = mx.sym.Activation(name='act_0', data=x, act_type='sigmoid')
    x = mx.sym.FullyConnected(name='fc_1', data=x, num_hidden=2)
    x = mx.sym.Activation(name='act_1', data=x, act_type='sigmoid')
    x = mx.sym.LinearRegressionOutput(data=x, name='softmax', grad_scale=2)
    learned = {n: 'write' for n in x.list_arguments() if n.endswith(('weight', 'bias'))}
    exe = x.simple_bind(mx.cpu(), grad_req=learned, data=(1, 2), softmax_label=(1, 2))
    values = {'data': [[0.05, .10]], 'softmax_label': [[.01, 0.99]],
              'fc_0_weight': [[.15, .20], [.25, .30]], 'fc_0_bias': [.35, .35],
              'fc_1_weight': [[.40, .45], [.50, .55]], 'fc_1_bias': [.60, .60]}
    for name, value in values.items():
        exe.arg_dict[name][:] = nd.array(value)
    return exe


def test_names_order_and_values_as_mxnet():
    exe = _executor()
    mon = mx.mon.Monitor(1, stat_func=_mean_abs)
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=True)
    exe.backward()
    res = mon.toc()
    assert [name for _, name, _ in res] == [name for name, _ in MXNET_FORWARD_BACKWARD]
    for (step, name, text), (_, expected) in zip(res, MXNET_FORWARD_BACKWARD):
        assert step == 1 and text.endswith('\t')
        if expected is not None:
            assert float(text) == pytest.approx(expected, rel=1e-5), name


def test_monitor_leaves_gradients_alone():
    plain, watched = _executor(), _executor()
    mon = mx.monitor.Monitor(1, pattern='.*backward.*', sort=True)
    mon.install(watched)
    mon.tic()
    for exe in (plain, watched):
        exe.forward(is_train=True)
        exe.backward()
    for name, grad in plain.grad_dict.items():
        if grad is not None:
            np.testing.assert_array_equal(watched.grad_dict[name].asnumpy(), grad.asnumpy())
    names = [name for _, name, _ in mon.toc()]
    assert len(names) == 10 and names == sorted(names)


def test_monitor_all_interval_and_print(caplog):
    exe = _executor()
    mon = mx.monitor.Monitor(2, pattern='.*_(output|data|label|input0)$', monitor_all=True)
    mon.install(exe)
    seen = []
    for _ in range(3):
        mon.tic()
        exe.forward(is_train=False)
        seen.append([name for _, name, _ in mon.toc()])
    expected = [n for n in MXNET_ALL_FORWARD if n.endswith(('_output', '_data', '_label', '_input0'))]
    assert seen == [expected + ['softmax_label'], [], expected + ['softmax_label']]
    caplog.set_level('INFO')
    mon.tic()
    mon.tic()  # the 5th batch is collected
    exe.forward()
    mon.toc_print()
    line = caplog.records[0].getMessage()
    assert line.startswith('Batch: %7d %-30s ' % (5, 'fc_0_data')) and line.endswith('\t')
    assert float(line.split()[-1]) == pytest.approx(np.sqrt(0.05 ** 2 + .1 ** 2) / np.sqrt(2),
                                                    rel=1e-6)  # the default statistic
