"""The control-flow operators of graphs: ``_foreach``, ``_while_loop`` and ``_cond``, nodes
that hold subgraphs (``Node.subgraphs``), with MXNet 1.x's attributes.

Their inputs are the union of what the subgraphs read, and integer lists say where each
goes (MXNet's ``src/operator/control_flow.cc``):

* ``_foreach`` (one subgraph): inputs are the data arrays, the initial states, then the
  rest; ``in_data_locs``, ``in_state_locs`` and ``remain_locs`` are their positions among
  the subgraph's inputs; its first ``num_out_data`` outputs are stacked step outputs and
  the others the final states.
* ``_while_loop`` (cond, func): ``cond_input_locs`` and ``func_input_locs`` pick each
  subgraph's inputs among the node's, ``func_var_locs`` the loop variables among func's;
  outputs are ``num_out_data`` stacked step outputs (``max_iterations`` rows) and then
  the final loop variables.
* ``_cond`` (pred, then, else): ``cond_input_locs``, ``then_input_locs``,
  ``else_input_locs`` pick each subgraph's inputs.

A node runs its subgraphs through ``GraphProgram`` (so through the op table's kernels)
inside ``nd.contrib``'s loops, the functions imperative code calls: autograd records
the steps op by op, gradients come from the ops' own backward functions, and a
hybridized block computes exactly what the imperative one does. Shapes and dtypes are
inferred through the subgraphs, both ways.
"""
import numpy as np

from ..base import MXNetError
from ..ndarray import contrib as nd_contrib
from ..ndarray.creation import zeros
from ..util import is_np_shape
from . import shape_inference
from .executor import GraphProgram
from .graph import topological_order
from .op_specs import OpSpec, _add  # pylint: disable=protected-access

__all__ = ['SubgraphOpSpec']


class SubgraphOpSpec(OpSpec):
    """An operator that runs subgraphs: ``make_runner(params, subgraphs)`` plans a node,
    ``shapes``/``types`` infer through its subgraphs (see ``infer_shapes``)."""

    def __init__(self, mx_name, accepted, make_runner, shapes, types):
        super().__init__(mx_name, hint=mx_name, run=make_runner, variadic=True,
                         accepted=accepted)
        self._make_runner, self._shapes, self._types = make_runner, shapes, types

    @property
    def differentiable(self):
        return True

    def num_outputs(self, attrs):
        return int(attrs.get('num_outputs', 1))

    def runner(self, attrs, subgraphs=()):
        if not subgraphs:
            raise MXNetError('op %s needs its subgraphs: this node has none' % self.mx_name)
        return self._make_runner(self.params(attrs), [_Subgraph(s) for s in subgraphs])

    def infer_shapes(self, node, ins, outs):
        """``(input shapes, output shapes)`` learnt from the subgraphs given what is
        known (None: unknown; -1: an unknown dimension)."""
        return self._shapes(self.params(node.attrs), [_Subgraph(s, plan=False)
                                                      for s in node.subgraphs], ins, outs)

    def infer_types(self, node, ins, outs):
        """``(input dtypes, output dtypes)`` learnt from the subgraphs (None: unknown)."""
        return self._types(self.params(node.attrs), [_Subgraph(s, plan=False)
                                                     for s in node.subgraphs], ins, outs)


class _Subgraph:
    """A subgraph's heads, its variables (its inputs, in MXNet's order), and once planned
    its program."""

    def __init__(self, heads, plan=True):
        self.heads = heads
        self.order = topological_order(heads)
        self.variables = [n for n in self.order if n.is_variable]
        self.program = GraphProgram(heads) if plan else None

    def run(self, values, ctx):
        return self.program.run(values, ctx)

    def shapes(self, in_shapes, out_shapes=()):
        """The subgraph's input and output shapes from those known of them."""
        given = {v.name: s for v, s in zip(self.variables, in_shapes) if s is not None}
        known = [(n, i, s) for (n, i), s in zip(self.heads, out_shapes) if s is not None]
        found = shape_inference.entry_shapes(self.order, given, is_np_shape(), known)
        return ([found.get((id(v), 0)) for v in self.variables],
                [found.get((id(n), i)) for n, i in self.heads])

    def types(self, in_types):
        """The subgraph's input and output dtypes from those known of its inputs."""
        given = {v.name: t for v, t in zip(self.variables, in_types) if t is not None}
        found = shape_inference.infer_types(self.order, given)
        return ([found.get((id(v), 0)) for v in self.variables],
                [found.get((id(n), i)) for n, i in self.heads])


def _pick(values, locs):
    return [values[i] for i in locs]


def _scatter(size, locs, values):
    out = [None] * size
    for loc, value in zip(locs, values):
        out[loc] = value
    return out


def _first(*values):
    return next((v for v in values if v is not None), None)


def _merge_back(total, locs, values):
    """``total`` slots, slot ``locs[i]`` given ``values[i]`` (first known one wins)."""
    out = [None] * total
    for loc, value in zip(locs, values):
        out[loc] = _first(out[loc], value)
    return out


# ---- _foreach ----

def _slice_shape(shape):
    """The shape of one step of an array of ``shape`` (MXNet's: (1,) for a 1-D array)."""
    return tuple(shape[1:]) if len(shape) > 1 else (1,)


def _foreach_runner(params, subgraphs):
    body = subgraphs[0]
    data_locs, state_locs = params['in_data_locs'], params['in_state_locs']
    remain_locs, num_out_data = params['remain_locs'], params['num_out_data']
    num_data, num_states = len(data_locs), len(state_locs)

    def run(inputs, ctx):
        values = _scatter(len(body.variables), remain_locs, inputs[num_data + num_states:])

        def step(slices, states):
            for loc, value in zip(data_locs, slices):
                values[loc] = value
            for loc, value in zip(state_locs, states):
                values[loc] = value
            outs = body.run(values, ctx)
            return outs[:num_out_data], outs[num_out_data:]
        outs, states = nd_contrib.foreach(step, list(inputs[:num_data]),
                                          list(inputs[num_data:num_data + num_states]))
        return list(outs) + list(states)
    return run


def _foreach_shapes(params, subgraphs, ins, outs):
    body = subgraphs[0]
    data_locs, state_locs = params['in_data_locs'], params['in_state_locs']
    remain_locs, num_out_data = params['remain_locs'], params['num_out_data']
    num_data, num_states = len(data_locs), len(state_locs)
    data, states, rest = ins[:num_data], ins[num_data:num_data + num_states], \
        ins[num_data + num_states:]
    sub_in = _scatter(len(body.variables), data_locs,
                      [None if s is None else _slice_shape(s) for s in data])
    for loc, shape in zip(state_locs + remain_locs, list(states) + list(rest)):
        sub_in[loc] = shape
    sub_out = [None if s is None or len(s) < 2 else tuple(s[1:]) for s in outs[:num_out_data]]
    sub_out += [_first(o, s) for o, s in zip(outs[num_out_data:], states)]
    sub_in, sub_out = body.shapes(sub_in, sub_out)
    length = _first(*[s[0] for s in data if s is not None] or [None])
    length = -1 if length is None else length
    new_data = []
    for shape, loc in zip(data, data_locs):
        inner = sub_in[loc]
        if shape is not None and len(shape) == 1:
            new_data.append((length,))
        else:
            new_data.append(None if inner is None else (length,) + tuple(inner))
    new_states = [_first(sub_in[loc], sub_out[num_out_data + k])
                  for k, loc in enumerate(state_locs)]
    new_ins = new_data + new_states + _pick(sub_in, remain_locs)
    new_outs = [None if s is None else (length,) + tuple(s) for s in sub_out[:num_out_data]]
    new_outs += [_first(s, new_states[k]) for k, s in enumerate(sub_out[num_out_data:])]
    return new_ins, new_outs


def _foreach_types(params, subgraphs, ins, outs):
    body = subgraphs[0]
    locs = list(params['in_data_locs']) + list(params['in_state_locs']) + \
        list(params['remain_locs'])
    sub_in, sub_out = body.types(_scatter(len(body.variables), locs, ins))
    return _pick(sub_in, locs), sub_out


# ---- _while_loop ----

def _while_loop_runner(params, subgraphs):
    cond_graph, func_graph = subgraphs
    cond_locs, func_locs = params['cond_input_locs'], params['func_input_locs']
    var_locs, num_out_data = params['func_var_locs'], params['num_out_data']
    max_iterations = params['max_iterations']
    # where each loop variable is among cond's inputs (None: cond does not read it)
    in_cond = [cond_locs.index(func_locs[j]) if func_locs[j] in cond_locs else None
               for j in var_locs]

    def run(inputs, ctx):
        cond_values, func_values = _pick(inputs, cond_locs), _pick(inputs, func_locs)

        def cond(*loop_vars):
            for k, value in zip(in_cond, loop_vars):
                if k is not None:
                    cond_values[k] = value
            return cond_graph.run(cond_values, ctx)[0]

        def func(*loop_vars):
            for j, value in zip(var_locs, loop_vars):
                func_values[j] = value
            outs = func_graph.run(func_values, ctx)
            return outs[:num_out_data], outs[num_out_data:]
        loop_vars = _pick(func_values, var_locs)
        outs, final = nd_contrib.while_loop(cond, func, loop_vars, max_iterations)
        if num_out_data and not outs:
            outs = _unstepped_outputs(func_graph, func_values, num_out_data, max_iterations,
                                      ctx)
        return list(outs) + list(final)
    return run


def _unstepped_outputs(func_graph, values, count, max_iterations, ctx):
    """The step outputs of a loop that took no step: arrays of the shapes and dtypes the
    steps would have had (as MXNet's graph gives them), zeros."""
    _, shapes = func_graph.shapes([v.shape for v in values])
    _, dtypes = func_graph.types([v.dtype for v in values])
    out = []
    for shape, dtype in zip(shapes[:count], dtypes[:count]):
        if shape is None or any(d < 0 for d in shape):
            raise MXNetError('_while_loop: the loop took no step and the shape of its step '
                             'outputs cannot be inferred from its inputs')
        out.append(zeros((max_iterations,) + tuple(shape), ctx=ctx,
                         dtype=dtype if dtype is not None else np.float32))
    return out


def _while_loop_shapes(params, subgraphs, ins, outs):
    cond_graph, func_graph = subgraphs
    cond_locs, func_locs = params['cond_input_locs'], params['func_input_locs']
    var_locs, num_out_data = params['func_var_locs'], params['num_out_data']
    cond_in, _ = cond_graph.shapes(_pick(ins, cond_locs))
    func_ins = _pick(ins, func_locs)
    sub_out = [None if s is None or len(s) < 2 else tuple(s[1:]) for s in outs[:num_out_data]]
    sub_out += [_first(o, func_ins[j]) for o, j in zip(outs[num_out_data:], var_locs)]
    func_in, sub_out = func_graph.shapes(func_ins, sub_out)
    new_ins = _merge_back(len(ins), list(func_locs) + list(cond_locs), func_in + cond_in)
    new_outs = [None if s is None else (params['max_iterations'],) + tuple(s)
                for s in sub_out[:num_out_data]]
    new_outs += [_first(s, func_in[j]) for s, j in zip(sub_out[num_out_data:], var_locs)]
    return new_ins, new_outs


def _while_loop_types(params, subgraphs, ins, outs):
    cond_graph, func_graph = subgraphs
    cond_locs, func_locs = params['cond_input_locs'], params['func_input_locs']
    cond_in, _ = cond_graph.types(_pick(ins, cond_locs))
    func_in, sub_out = func_graph.types(_pick(ins, func_locs))
    return _merge_back(len(ins), list(func_locs) + list(cond_locs), func_in + cond_in), sub_out


# ---- _cond ----

def _cond_runner(params, subgraphs):
    pred_graph, then_graph, else_graph = subgraphs
    pred_locs = params['cond_input_locs']
    then_locs, else_locs = params['then_input_locs'], params['else_input_locs']

    def run(inputs, ctx):
        pred = pred_graph.run(_pick(inputs, pred_locs), ctx)[0]
        return nd_contrib.cond(pred, lambda: then_graph.run(_pick(inputs, then_locs), ctx),
                               lambda: else_graph.run(_pick(inputs, else_locs), ctx))
    return run


def _cond_shapes(params, subgraphs, ins, outs):
    pred_graph, then_graph, else_graph = subgraphs
    locs = [params['cond_input_locs'], params['then_input_locs'], params['else_input_locs']]
    pred_in, _ = pred_graph.shapes(_pick(ins, locs[0]))
    then_in, then_out = then_graph.shapes(_pick(ins, locs[1]), outs)
    else_in, else_out = else_graph.shapes(_pick(ins, locs[2]), outs)
    new_ins = _merge_back(len(ins), list(locs[1]) + list(locs[2]) + list(locs[0]),
                          then_in + else_in + pred_in)
    return new_ins, [_first(t, e) for t, e in zip(then_out, else_out)]


def _cond_types(params, subgraphs, ins, outs):
    pred_graph, then_graph, else_graph = subgraphs
    locs = [params['cond_input_locs'], params['then_input_locs'], params['else_input_locs']]
    pred_in, _ = pred_graph.types(_pick(ins, locs[0]))
    then_in, then_out = then_graph.types(_pick(ins, locs[1]))
    else_in, else_out = else_graph.types(_pick(ins, locs[2]))
    new_ins = _merge_back(len(ins), list(locs[1]) + list(locs[2]) + list(locs[0]),
                          then_in + else_in + pred_in)
    return new_ins, [_first(t, e) for t, e in zip(then_out, else_out)]


_add(SubgraphOpSpec('_foreach', ('num_outputs', 'num_out_data', 'in_state_locs',
                                 'in_data_locs', 'remain_locs'),
                    _foreach_runner, _foreach_shapes, _foreach_types), public=False)
_add(SubgraphOpSpec('_while_loop', ('num_outputs', 'num_out_data', 'max_iterations',
                                    'cond_input_locs', 'func_input_locs', 'func_var_locs'),
                    _while_loop_runner, _while_loop_shapes, _while_loop_types), public=False)
_add(SubgraphOpSpec('_cond', ('num_outputs', 'cond_input_locs', 'then_input_locs',
                              'else_input_locs'),
                    _cond_runner, _cond_shapes, _cond_types), public=False)
