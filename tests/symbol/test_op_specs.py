"""The symbol op table: the names and attributes MXNet 1.x writes into graphs run the
kernels they mean."""
import json
import numbers
import os
import sys

import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd
from minigluon.ndarray import dispatch
from minigluon.ndarray.registry import all_ops
from minigluon.symbol import op_specs
from minigluon.symbol.attrs import from_string, to_string

v = mx.sym.var


def test_scalar_comparisons_on_either_side_run_the_comparison_written():
    """``x <= 0.1`` is ``_lesser_equal_scalar`` (which ran ``>=`` before: the flipped form
    of ``>=`` had taken the name)."""
    values = np.array([-1.0, 0.0, 0.1, 0.5, 2.0], dtype=np.float32)
    x, data = mx.sym.var('x'), nd.array(values)
    cases = {'x > 0.1': (x > 0.1, values > 0.1), 'x >= 0.1': (x >= 0.1, values >= 0.1),
             'x < 0.1': (x < 0.1, values < 0.1), 'x <= 0.1': (x <= 0.1, values <= 0.1),
             '0.1 < x': (0.1 < x, 0.1 < values), '0.1 >= x': (0.1 >= x, 0.1 >= values),
             'x == 0': (x == 0, values == 0), 'x != 0': (x != 0, values != 0),
             '1 - x': (1 - x, 1 - values), '1 / (x + 3)': (1 / (x + 3), 1 / (values + 3))}
    for text, (sym, expected) in cases.items():
        out = sym.eval(x=data)[0].asnumpy()
        np.testing.assert_allclose(out, expected.astype(np.float32), rtol=1e-6, err_msg=text)
    graph = mx.sym.load_json((x <= 0.1).tojson())
    assert [n['op'] for n in json.loads(graph.tojson())['nodes']] == \
        ['null', '_lesser_equal_scalar']
    np.testing.assert_array_equal(graph.eval(x=data)[0].asnumpy(), values <= 0.1)



# ---- every mx.sym function runs the op table's kernel ----

# The inputs of a representative call of each op come from its gradient-check case in
# op_cases.py (the arrays and arguments the case hands the kernel), or from here for ops
# that have none (those without a gradient, and add_n, which is no single kernel).
_rng = np.random.RandomState(3)


def _r(*shape):
    return _rng.uniform(-1, 1, size=shape)


def _ties(*shape):
    return _rng.randint(0, 3, size=shape).astype(np.float64)


_COMPARED = (_ties(2, 3), _ties(3))
EXTRA = {
    'BlockGrad': ([_r(2, 3)], {}),
    'add_n': ([_r(2, 3), _r(2, 3), _r(2, 3)], {}),
    'argmax': ([_r(2, 3)], {'axis': 1}),
    'argmax_channel': ([_r(2, 3)], {}),
    'argmin': ([_r(2, 3)], {'axis': 0, 'keepdims': True}),
    'argsort': ([_r(2, 3)], {'axis': -1, 'is_ascend': False}),
    'batch_take': ([_r(3, 4), np.array([0, 3, 1.0])], {}),
    'one_hot': ([np.array([0, 2, 1.0])], {'depth': 3, 'on_value': 2.0}),
    'logical_not': ([_ties(2, 3)], {}),
    'ones_like': ([_r(2, 3)], {}),
    'zeros_like': ([_r(2, 3)], {}),
    'shape_array': ([_r(2, 3)], {}),
    'size_array': ([_r(2, 3)], {}),
    'sgd_update': ([_r(3), _r(3)], {'lr': 0.1, 'wd': 0.01}),
    'sgd_mom_update': ([_r(3), _r(3), _r(3)], {'lr': 0.1, 'momentum': 0.9}),
    'nag_mom_update': ([_r(3), _r(3), _r(3)], {'lr': 0.1, 'momentum': 0.9}),
    'signsgd_update': ([_r(3), _r(3)], {'lr': 0.1}),
    'signum_update': ([_r(3), _r(3), _r(3)], {'lr': 0.1, 'momentum': 0.9}),
    'adam_update': ([_r(3), _r(3), _r(3), _r(3) ** 2], {'lr': 0.1}),
    'ftml_update': ([_r(3), _r(3), _r(3), _r(3) ** 2, _r(3)], {'lr': 0.1, 't': 2}),
    'ftrl_update': ([_r(3), _r(3), _r(3), _r(3) ** 2], {'lr': 0.1}),
    'rmsprop_update': ([_r(3), _r(3), _r(3) ** 2], {'lr': 0.1}),
    'rmspropalex_update': ([_r(3), _r(3), _r(3) ** 2 + 1, _r(3), _r(3)], {'lr': 0.1}),
    'khatri_rao': ([_r(3, 2), _r(2, 2)], {}),
    'ravel_multi_index': ([np.array([[3, 6, 6], [4, 5, 1.0]])], {'shape': (7, 6)}),
    'unravel_index': ([np.array([22, 41, 37.0])], {'shape': (7, 6)}),
    'all_finite': ([_r(2, 3)], {}),
    'multi_all_finite': ([_r(2, 3), _r(3)], {'num_arrays': 2}),
}
for _name in ('equal', 'not_equal', 'greater', 'greater_equal', 'lesser', 'lesser_equal',
              'logical_and', 'logical_or', 'logical_xor'):  # keyed by the op table's name
    EXTRA[_name] = (list(_COMPARED), {})

# Functions that make MXNet's same-shape elementwise ops: their inputs are the case's,
# broadcast to one shape.
_SAME_SHAPE = frozenset(['elemwise_add', 'elemwise_sub', 'elemwise_mul', 'elemwise_div',
                         'maximum', 'minimum', 'hypot', 'power', 'pow'])


def _op_cases():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                    'ndarray'))
    try:
        from op_cases import CASES  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    return CASES


def _captured_calls(op, cases):
    """``(raw inputs, params)`` of the first call each case makes of ``op``'s kernel."""
    forward = op.forward
    for case in cases:
        calls = []

        def capture(xp, *args, **kwargs):
            if not calls:
                kwargs.pop('needs_grad', None)
                calls.append(([a.copy() if hasattr(a, 'copy') else a for a in args], kwargs))
            return forward(xp, *args, **kwargs)
        op.forward = capture
        try:
            case.fn(*[nd.array(a, dtype=a.dtype) for a in case.inputs])
        finally:
            op.forward = forward
        if calls:
            yield calls[0]


def _representative(fname, spec, cases):
    """``(input arrays (None where the call leaves one out), params)`` for ``fname``."""
    name = spec.op.name if spec.op is not None else spec.mx_name
    if name in EXTRA:
        return EXTRA[name]
    for inputs, params in _captured_calls(spec.op, cases.get(name, ())):
        if any(isinstance(a, numbers.Number) for a in inputs):
            continue  # a scalar operand is another node (``_plus_scalar``)
        if any(params.get(k) != v for k, v in spec.fixed.items()):
            continue
        if fname in _SAME_SHAPE:
            inputs = [np.array(a) for a in np.broadcast_arrays(*inputs)]
        return inputs, params
    raise AssertionError('mx.sym.%s: no case in op_cases.py calls its kernel with arrays; '
                         'add one there or to EXTRA here' % fname)


def _floating(array):
    return np.dtype(array.dtype).kind == 'f'


def _reference(fname, spec, arrays, params, heads_of):
    """Outputs and input gradients of the imperative call (autograd)."""
    for a in arrays:
        if a is not None and _floating(a):
            a.attach_grad()
    mx.random.seed(11)
    with autograd.record():
        if spec.op is not None:
            out = dispatch.invoke(spec.op, arrays, dict(params, **spec.fixed))
        else:
            out = getattr(nd, fname)(*arrays, **params)
    outs = out if isinstance(out, list) else [out]
    heads = heads_of(outs)
    recorded = [o for o in outs if o._node is not None]  # pylint: disable=protected-access
    if recorded:
        autograd.backward(recorded, [h for o, h in zip(outs, heads)
                                     if o._node is not None])  # pylint: disable=protected-access
    grads = [None if a is None or not _floating(a) else a.grad.asnumpy() for a in arrays]
    return [o.asnumpy() for o in outs], grads


def _graph_run(sym, names, arrays, heads_of):
    """Outputs and gradients of ``sym`` bound to ``arrays`` (by variable name)."""
    given = dict(zip(names, arrays))
    aux_names = sym.list_auxiliary_states()
    args = {n: given[n] for n in sym.list_arguments()}
    grads = {n: nd.zeros(a.shape, dtype=a.dtype) for n, a in args.items() if _floating(a)}
    exe = sym.bind(mx.cpu(), args, args_grad=grads,
                   grad_req={n: 'write' for n in grads}, aux_states={n: given[n]
                                                                     for n in aux_names})
    mx.random.seed(11)
    outs = exe.forward(is_train=True)
    exe.backward(heads_of(outs))
    return [o.asnumpy() for o in outs], {n: g.asnumpy() for n, g in grads.items()}


def _same(a, b, what):
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == 'f'), what


@pytest.fixture(scope='module')
def op_cases():
    return _op_cases()


@pytest.mark.parametrize('fname', sorted(op_specs.functions()))
def test_every_function_runs_the_kernel_of_its_nd_call_bit_for_bit(fname, op_cases):
    """A one-node graph of ``mx.sym.<fname>``, bound and run forwards and backwards (and
    again after a JSON round trip), gives exactly the imperative call's outputs and
    gradients: one implementation, reached through the node's string attributes."""
    spec = op_specs.functions()[fname]
    inputs, params = _representative(fname, spec, op_cases)
    params = dict(params)
    if spec.variadic:
        names = ['arg%d' % i for i in range(len(inputs))]
        slots = list(range(len(inputs)))
    else:
        given = dict(zip(spec._inputs, inputs))  # pylint: disable=protected-access
        names = spec.input_names({k: to_string(p) for k, p in params.items()})
        if any(given.get(n) is None for n in names):  # an optional input left out
            params['no_bias'] = True
            names = spec.input_names({k: to_string(p) for k, p in params.items()})
        assert all(given.get(n) is not None for n in names), (fname, names)
        assert {n for n, a in given.items() if a is not None} == set(names), (fname, names)
        slots = [spec._inputs.index(n) for n in names]  # pylint: disable=protected-access
        inputs = [given[n] for n in names]
    rng = np.random.RandomState(5)
    heads = {}

    def heads_of(outs):  # one fixed random head per output, for both runs
        for i, o in enumerate(outs):
            heads.setdefault(i, rng.normal(size=o.shape))
        return [nd.array(heads[i], dtype=o.dtype) for i, o in enumerate(outs)]

    def arrays():
        return [nd.array(a, dtype=a.dtype) for a in inputs]

    width = len(inputs) if spec.variadic else len(spec._inputs)  # pylint: disable=W0212

    def kernel_arrays():  # the kernel's every input, None where the node leaves one out
        full = [None] * width
        for slot, a in zip(slots, arrays()):
            full[slot] = a
        return full
    expected_outs, expected_grads = _reference(fname, spec, kernel_arrays(), params, heads_of)
    expected_grads = [expected_grads[slot] for slot in slots]
    variables = [v(n) for n in names]
    function = getattr(mx.sym, fname)
    sym = function(variables, **params) if spec.variadic else function(*variables, **params)
    for graph in (sym, mx.sym.load_json(sym.tojson())):
        outs, grads = _graph_run(graph, names, arrays(), heads_of)
        assert len(outs) == len(expected_outs), fname
        for k, (got, want) in enumerate(zip(outs, expected_outs)):
            _same(got, want, '%s output %d' % (fname, k))
        for name, want in zip(names, expected_grads):
            if want is not None and name in grads:
                _same(grads[name], want, '%s gradient of %s' % (fname, name))


def test_every_op_of_the_table_is_a_function_or_internal():
    """Each op of the table (but NDArray-only internals) is reachable from ``mx.sym``."""
    reachable = {id(s.op) for s in op_specs.functions().values() if s.op is not None}
    reachable |= {id(op_specs.spec_of(n).op) for n in op_specs.names()
                  if op_specs.spec_of(n).op is not None}
    missing = sorted(n for n, op in all_ops().items()
                     if id(op) not in reachable and not n.startswith('_'))
    assert not missing, missing


def test_each_kernel_case_runs_on_zeros_once(monkeypatch):
    """A cell unrolled over time repeats its nodes, and a graph is inferred again at bind
    and per input shape: the output shapes of one op with the same input shapes, dtypes
    and attributes come from one run of its kernel."""
    monkeypatch.setattr(op_specs, '_ZEROS_RUNS', {})
    op = op_specs.spec_of('FullyConnected').op
    runs = []
    forward = op.forward

    def counting(xp, data, weight, *args, **kwargs):
        runs.append((data.shape, weight.shape))
        return forward(xp, data, weight, *args, **kwargs)
    monkeypatch.setattr(op, 'forward', counting)
    cell = mx.rnn.LSTMCell(6, prefix='l_')
    out, _ = cell.unroll(5, v('data'), layout='NTC', merge_outputs=True)
    for batch in (3, 3, 4):
        assert out.infer_shape(data=(batch, 5, 7))[1] == [(batch, 5, 6)]
    assert sorted(runs) == [((1, 6), (24, 6)), ((1, 7), (24, 7))]  # h2h and i2h, on one sample
    # a kernel's error is raised on every inference, not remembered as an answer
    bad = mx.sym.FullyConnected(v('x'), v('w'), no_bias=True, num_hidden=4)
    for _ in range(2):
        with pytest.raises(mx.base.MXNetError, match='does not fit data'):
            bad.infer_shape(x=(2, 3), w=(4, 5))


def test_attribute_values_parse_once_and_are_never_shared_mutably():
    assert from_string('(3, 3)') == (3, 3) and from_string('relu') == 'relu'
    assert from_string(' True ') is True and from_string('1e-05') == 1e-05
    nested = from_string('[[1, 2], [3]]')
    nested[0].append(9)  # a caller changing what it got changes nothing for the next
    assert from_string('[[1, 2], [3]]') == ([1, 2], [3])
