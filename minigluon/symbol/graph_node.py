"""A planned graph run on raw arrays and recorded as one autograd node: how a block
hybridized with ``static_alloc=True`` trains (MXNet 1.x's static CachedOp).

``GraphProgram.run`` sends every node through ``dispatch.invoke``, which wraps each
output in an NDArray and records a tape node per op; for a small model that per-op
work is most of a step. ``GraphNode.run`` calls the same kernels with the same
arguments in the same order on the raw arrays, so values are bit-identical, and keeps
each kernel's backward closure. Recording leaves one tape node for the whole graph;
its backward walks the kept closures in reverse, and only for nodes a gradient can
reach from an input that needs one (a dense layer on the data then skips the data's
gradient, as MXNet's graph pass does).

Like ``dispatch.first_order_only``, the node keeps only what first-order gradients
need: gradients of gradients through it raise ``tape.first_order_rule``'s error.
"""
from ..backend import NO_DEVICE
from ..base import MXNetError
from ..ndarray import tape
from ..ndarray.dispatch import (KERNEL_ERRORS, attach_node, kernel_error, kernel_outputs,
                                output_context, requires_grad)
from .executor import node_error
from .op_specs import kernel_inputs, spec_of

NODE_NAME = '_CachedOp'  # the recorded node's name, MXNet's


class GraphNode:
    """``program`` (a ``GraphProgram``) run without per-op dispatch.

    ``supported`` is False when a node is not one kernel call (a control-flow op, an op
    with its own output context), a node's shape depends on each run's input shapes,
    or an output is an input itself: such graphs run through ``GraphProgram.run``.
    """

    def __init__(self, program):
        self.program = program
        self._plans = {}
        self._kernels = {}
        heads = {s for s, _ in program.heads}
        self.supported = not program.has_open_shapes and not heads & set(program.var_slots)
        for index, _, _, _, node in program.steps:
            kernel = spec_of(node.op).kernel(node.attrs)
            if kernel is None or kernel[0].output_context is not None:
                self.supported = False
                return
            self._kernels[index] = kernel

    def _plan(self, need):
        """The steps for inputs of which ``need`` (a bool per variable, or None when
        nothing is recorded) need gradients: per step, the kernel, its arguments, where
        its inputs go, what to release, and, on a gradient's path, which of the kernel's
        inputs get a gradient; and ``completing``: after which entry of the recorded
        path (walked in reverse) each variable's gradient is whole."""
        plan = self._plans.get(need)
        if plan is not None:
            return plan
        program = self.program
        on_path = {s for s, wanted in zip(program.var_slots, need or ()) if wanted}
        steps, complete, recorded = [], {}, 0  # recorded: the path's length so far
        for index, _, inputs, release, node in program.steps:
            op, params, fill = self._kernels[index]
            width = len(inputs) if fill is None else len(fill[0])
            positions = list(range(len(inputs))) if fill is None else fill[1]
            grad_to = None
            if op.differentiable and any(s in on_path for s, _ in inputs):
                on_path.add(index)
                grad_to = [(position, s, k) for position, (s, k) in zip(positions, inputs)
                           if s in on_path]
                for _, s, _ in grad_to:
                    complete.setdefault(s, recorded)
                recorded += 1
            if op.takes_needs_grad:
                needs = [False] * width
                for position, _, _ in grad_to or ():
                    needs[position] = True
                params = dict(params, needs_grad=tuple(needs))
            steps.append((index, op, params, fill, inputs, release, node, grad_to))
        completing, variables = {}, set(program.var_slots)
        for slot, at in complete.items():
            if slot in variables:
                completing.setdefault(at, []).append(slot)
        plan = self._plans[need] = (steps, completing)
        return plan

    def run(self, values, ctx):
        """The graph's outputs (NDArrays) for ``values``, one NDArray per variable;
        recorded as one node when recording and an input needs a gradient."""
        program = self.program
        need = None
        if tape.is_recording():
            need = tuple(requires_grad(v) for v in values)
            if not any(need):
                need = None
        steps, completing = self._plan(need)
        slots = [None] * program.num_nodes
        for slot, value in zip(program.var_slots, values):
            slots[slot] = (value._data,)
        path = [] if need is not None else None
        xp = ctx.xp
        scope = ctx.device()
        if scope is NO_DEVICE:
            self._forward(steps, slots, path, xp)
        else:
            with scope:
                self._forward(steps, slots, path, xp)
        wrap, out_ctx = type(values[0]), output_context(ctx)
        outs = [wrap(slots[s][k], out_ctx) for s, k in program.heads]
        if path:
            variables = [v if v._node is None else None for v in values]
            backward = _backward(path, completing, program, variables, xp)
            # what autograd.get_symbol splices in for the node (symbol/recorded.py)
            backward.graph = (program, [v._data for v in values])
            attach_node(backward, values, outs, NODE_NAME, rule=tape.first_order_rule)
        return outs

    @staticmethod
    def _forward(steps, slots, path, xp):
        for index, op, params, fill, inputs, release, node, grad_to in steps:
            raw = kernel_inputs(fill, [slots[s][k] for s, k in inputs])
            try:
                result = op.forward(xp, *raw, **params)
            except MXNetError as exc:
                raise node_error(exc, node) from exc
            except KERNEL_ERRORS as exc:
                raise node_error(kernel_error(op, raw, params, exc), node) from exc
            if op.differentiable:
                result, backward = result
            slots[index] = outs = kernel_outputs(op, result)
            if grad_to is not None and path is not None:
                path.append((index, backward, grad_to,
                             tuple((o.shape, o.dtype) for o in outs)))
            for s in release:
                slots[s] = None


def _backward(path, completing, program, variables, xp):
    """The recorded node's backward: output gradients in, one gradient (or None) per
    graph variable out, through the kept closures in reverse. The gradient of an
    autograd variable among the inputs (``variables``: the input, or None) is handed to
    the tape as soon as the last closure adding to it has run (``completing``, from the
    plan; ``tape.take_final``)."""
    heads = program.heads
    var_slots = program.var_slots
    outputs = {index: meta for index, _, _, meta in path}  # what each node's outputs are
    variable_of = dict(zip(var_slots, variables))

    def backward(out_grads):
        if len(heads) == 1:
            out_grads = (out_grads,)
        grads = [None] * program.num_nodes
        for (s, k), grad in zip(heads, out_grads):
            if grad is None or s not in outputs:
                continue
            _add(grads, s, k, grad, outputs)
        keep = tape.graph_retained()
        for at in range(len(path) - 1, -1, -1):
            index, closure, grad_to, meta = path[at]
            if not keep:  # what the closure holds goes once it has run, as the tape's
                path[at] = None
            given = grads[index]
            if given is not None:
                grads[index] = None
                _step_back(closure, given, meta, grad_to, grads, outputs, xp)
            for s in completing.get(at, ()):
                if grads[s] is not None and variable_of[s] is not None and \
                        tape.take_final(variable_of[s], grads[s][0]):
                    grads[s] = None
        return tuple(grads[s][0] if grads[s] is not None else None for s in var_slots)
    return backward


def _step_back(closure, given, meta, grad_to, grads, outputs, xp):
    """One node's backward: its output gradients ``given`` (None for an output none
    reached: zeros) through its ``closure``, summed into its inputs' slots."""
    if len(meta) == 1:
        in_grads = closure(given[0])
    else:
        in_grads = closure(tuple(g if g is not None else xp.zeros(shape, dtype)
                                 for g, (shape, dtype) in zip(given, meta)))
    if not isinstance(in_grads, (tuple, list)):
        in_grads = (in_grads,)
    for position, s, k in grad_to:
        grad = in_grads[position]
        if grad is not None:
            _add(grads, s, k, grad, outputs)


def _add(grads, slot, k, grad, outputs):
    """Sum ``grad`` into output ``k`` of ``slot`` (a variable's, or a node's in
    ``outputs``, cast to that output's dtype as the tape does)."""
    meta = outputs.get(slot)
    held = grads[slot]
    if held is None:
        held = grads[slot] = [None] * (len(meta) if meta is not None else 1)
    if meta is not None and grad.dtype != meta[k][1]:
        grad = grad.astype(meta[k][1])
    held[k] = grad if held[k] is None else held[k] + grad
