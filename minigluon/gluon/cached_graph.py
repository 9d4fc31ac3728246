"""What a hybridized HybridBlock runs: the graph its ``hybrid_forward`` traced with
symbols, planned once and replayed on NDArrays (MXNet 1.x's CachedOp).

The replay runs each graph node through the op table (``GraphProgram``), with the
block's inputs and its parameters' current arrays, inside the caller's autograd
state: autograd records op by op exactly as the imperative code would, so outputs
and gradients are the imperative ones. Inputs and outputs cross the graph flat;
Gluon's nesting formats (``_flatten``/``_regroup``: 0 one array, n > 0 a Symbol of n
outputs, -1 None, a list for a nested list) put the structure back.
"""
import json

from .. import nesting
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.dispatch import first_order_only, op_monitor, profiling
from ..ndarray.tape import is_recording
from ..symbol import Symbol
from ..symbol.executor import GraphProgram, cached_op_monitor_names, node_error
from ..symbol.graph_node import GraphNode
from ..symbol.op_specs import spec_of
from ..nesting import regroup

__all__ = ['CachedGraph', 'flatten', 'regroup', 'formats_compatible', 'graph_attrs']

FORMATS_ATTR = 'minigluon_formats'
STRUCTURE_ATTR = 'minigluon_structure'


def _leaf_format(arg):
    if isinstance(arg, NDArray):
        return 0
    if isinstance(arg, Symbol):
        length = len(arg)
        return length if length > 1 else 0
    return -1 if arg is None else None


def flatten(args, what):
    """``(flat list, format)`` of an NDArray, Symbol, None or (nested) list of them."""
    return nesting.flatten(args, _leaf_format, lambda arg: ValueError(
        'When hybridized, the %s of HybridBlock must be (nested) list of Symbol or NDArray, '
        'but got %s of type %s' % (what, arg, type(arg))))


def formats_compatible(stored, given):
    """True when inputs of format ``given`` fit a graph traced with ``stored``: equal,
    or differing only by trailing None arguments (left to their defaults), as MXNet
    accepts."""
    if given == stored:
        return True
    if not isinstance(stored, list) or not isinstance(given, list):
        return False
    short, longer = (given, stored) if len(given) < len(stored) else (stored, given)
    return short == longer[:len(short)] and all(f == -1 for f in longer[len(short):])


def graph_attrs(in_format, out_format, structure):
    """The graph attributes an exported file carries beyond MXNet's (MXNet reads and
    ignores them): the nesting of inputs and outputs (MXNet issue 17488) and each
    parameter's structural name (``features.0.weight``, issue 15103), as JSON text.

    Parameters
    ----------
    in_format, out_format : int or (nested) list of int
        ``flatten``'s formats.
    structure : dict of str to str
        Parameter name -> structural name.
    """
    return {FORMATS_ATTR: json.dumps({'in': in_format, 'out': out_format}),
            STRUCTURE_ATTR: json.dumps(structure, sort_keys=True)}


class CachedGraph:
    """A traced graph ready to run: its program (planned once) and where each of its
    variables comes from, an input (its index among the non-None inputs) or a
    Parameter.

    Parameters
    ----------
    inputs : list of Symbol
        The data variables, in the order of the non-None inputs.
    outputs : Symbol
        The graph's outputs (a Group), flat.
    params : list of Parameter
        The parameters the graph may use; a variable is matched to the Parameter
        whose ``var()`` it is.
    lean : bool, default False
        Record the graph's ops with only what first-order gradients need
        (``dispatch.first_order_only``): intermediates nothing else needs are freed
        after the forward (``hybridize(static_alloc=True)``).

    Raises
    ------
    MXNetError
        When a variable is neither an input nor a parameter's variable (a ``sym.var``
        made inside ``hybrid_forward``).
    """

    def __init__(self, inputs, outputs, params, lean=False):
        self.inputs = inputs
        self.lean = lean
        self.outputs = outputs
        self.program = GraphProgram(outputs._outputs)  # pylint: disable=protected-access
        data_index = {id(s._outputs[0][0]): i  # pylint: disable=protected-access
                      for i, s in enumerate(inputs)}
        by_var, by_name = {}, {}
        for param in params:
            if param._var is not None:  # pylint: disable=protected-access
                by_var.setdefault(id(param.var()._outputs[0][0]), param)
            by_name.setdefault(param.name, param)
        self.feeds = []  # (True, input index) or (False, Parameter), per program variable
        for node in self.program.variables:
            if id(node) in data_index:
                self.feeds.append((True, data_index[id(node)]))
            elif id(node) in by_var:
                self.feeds.append((False, by_var[id(node)]))
            elif node.name in by_name:
                # a copy of a parameter's variable (a control-flow node's copy of one made
                # inside its loop body): matched by name, as MXNet matches every input
                self.feeds.append((False, by_name[node.name]))
            else:
                raise MXNetError('Unknown input to HybridBlock: %s (a variable of the graph '
                                 'that is neither an input nor a Parameter of the block; '
                                 'register it as a Parameter instead of making it with '
                                 'sym.var)' % node.name)
        self.params = [source for is_data, source in self.feeds if not is_data]
        used = {i for is_data, i in self.feeds if is_data}
        self.unused_inputs = [i for i in range(len(inputs)) if i not in used]
        self._labels = None
        self._whole = None  # the GraphNode running the program, made on the first run

    def run(self, data, ctx, callback=None, monitor_all=False):
        """The flat outputs for the non-None inputs ``data``, with each parameter's
        array on ``ctx``; ``callback(name, op_name, array)`` sees every node's output
        (and inputs, with ``monitor_all``) under MXNet's monitor names."""
        values = []
        for is_data, source in self.feeds:
            if is_data:
                values.append(data[source])
                continue
            # the common case (one copy, on ctx, no kvstore pull pending) without the
            # checks of Parameter.data, which stays the path for everything else
            arrays = source._data  # pylint: disable=protected-access
            if arrays is not None and len(arrays) == 1 and source._pending is None:
                arr = arrays[0]
                if arr._ctx is ctx or arr._ctx == ctx:  # pylint: disable=protected-access
                    values.append(arr)
                    continue
            values.append(source.data(ctx))
        if callback is None and self._runs_whole(values):
            return self._whole.run(values, ctx)
        if self.lean:
            with first_order_only():
                return self._run(values, ctx, callback, monitor_all)
        return self._run(values, ctx, callback, monitor_all)

    def _runs_whole(self, values):
        """True when this run can be one ``GraphNode`` run: the graph allows it, no hook
        or profiler watches each op, and either the block keeps only first-order
        gradients (``lean``) or nothing is recorded."""
        if self._whole is None:
            self._whole = GraphNode(self.program)
        return (self._whole.supported and op_monitor() is None and not profiling() and
                (self.lean or not is_recording()) and
                all(getattr(v, '_data', None) is not None for v in values))

    def _run(self, values, ctx, callback, monitor_all):
        if callback is None:
            return self.program.run(values, ctx)
        return self._run_monitored(values, ctx, callback, monitor_all)

    def _run_monitored(self, values, ctx, callback, monitor_all):
        program = self.program
        if self._labels is None:
            self._labels = [cached_op_monitor_names(node, spec_of(node.op))
                            for _, _, _, _, node in program.steps]
        slots = [None] * program.num_nodes
        for slot, value in zip(program.var_slots, values):
            slots[slot] = [value]
        for (index, runner, inputs, release, node), (in_labels, out_labels) in zip(
                program.steps_for(values), self._labels):
            args = [slots[s][k] for s, k in inputs]
            if monitor_all:
                for label, arr in zip(in_labels, args):
                    callback(label, node.op, arr)
            try:
                slots[index] = runner(args, ctx)
            except MXNetError as exc:
                raise node_error(exc, node) from exc
            for label, arr in zip(out_labels, slots[index]):
                callback(label, node.op, arr)
            for s in release:
                slots[s] = None
        return [slots[s][k] for s, k in program.heads]
