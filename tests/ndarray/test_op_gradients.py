"""A float64 numerical gradient check for every differentiable op in the table.

``CASES`` (``op_cases.py``) maps each op name to one or more cases; a differentiable op
registered without a case fails ``test_every_differentiable_op_has_a_case``, so a new
op cannot land without its gradient check.
"""
import pytest

import minigluon as mx
from minigluon.ndarray.registry import all_ops
from minigluon.test_utils import check_numeric_gradient
from op_cases import CASES


def _case_params():
    for name, cases in sorted(CASES.items()):
        for i, case in enumerate(cases):
            yield pytest.param(name, case, id='%s-%d' % (name, i))


def _unit_heads(case, ctx):
    """Gradients of ones for the outputs of a ``unit_head`` case, else None."""
    if not case.unit_head:
        return None
    out = case.fn(*[mx.nd.array(a, ctx=ctx, dtype=a.dtype) for a in case.inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [mx.nd.ones(o.shape, ctx=ctx, dtype=o.dtype) for o in outs]


def test_every_differentiable_op_has_a_case():
    missing = sorted(n for n, op in all_ops().items() if op.differentiable and n not in CASES)
    assert not missing, 'differentiable ops without a gradient check: %s' % missing
    unknown = sorted(n for n in CASES if n not in all_ops())
    assert not unknown, 'cases for ops that are not registered: %s' % unknown


@pytest.mark.parametrize('name,case', list(_case_params()))
def test_numeric_gradient(name, case, ctx):
    fn = case.fn
    if name == '_copyto' and ctx.is_gpu:
        fn = lambda a: a.as_in_context(mx.cpu(0)) * 2  # noqa: E731  gpu -> cpu and back
    op = all_ops()[name]
    forward, calls = op.forward, []

    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)
    op.forward = counted  # so the case provably exercises its own op
    try:
        check_numeric_gradient(fn, case.inputs, grad_nodes=case.grad_nodes,
                               rtol=case.rtol, atol=case.atol, ctx=ctx,
                               head_grad=_unit_heads(case, ctx))
    finally:
        op.forward = forward
    assert calls, 'the case for %r never ran that op' % name
