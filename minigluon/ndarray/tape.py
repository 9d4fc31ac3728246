"""The tape: recording and training flags, the nodes recorded ops leave behind, and the
backward walk, all on raw arrays.

While recording, every op whose inputs need a gradient creates a ``Node``: its backward
closure, one entry per input and the shape and dtype of each output. An input entry is
None (no gradient wanted), ``(node, output_index)`` for the output of a recorded op, or
any other object: a variable, which the tape only uses as a key. ``run_backward`` walks
the nodes from the heads in reverse topological order and returns the gradients that
reach the variables; what to do with them is the caller's business.

A node of an op from the table also keeps references to what a gradient rule written
with recorded ops needs (``saved``: its raw inputs, parameters and raw outputs; see
``dispatch.attach_node``). ``run_backward`` with ``node_grads`` calls that function
instead of the closures: this is how a backward is itself recorded (higher-order
gradients); the first-order walk never looks at ``saved``.
"""
import threading
import time

from ..base import MXNetError

# The profiler's recorder while it runs (``dispatch.set_profiler`` sets it); None when
# off, so a stopped profiler costs each backward node one test.
_profiler = None


class _State(threading.local):
    def __init__(self):
        self.recording = False
        self.training = False
        self.retain_graph = True  # the running backward's retain_graph
        self.finals = None  # the running node's _Finals, when backward hands them out


_state = _State()


def is_recording():
    """True inside ``autograd.record()`` (and not inside a nested ``pause()``)."""
    return _state.recording


def is_training():
    """True when layers such as Dropout and BatchNorm should act as in training."""
    return _state.training


def graph_retained():
    """False while a backward that frees the graph (``retain_graph=False``) runs: a
    node's backward may then drop what it holds as soon as it is done with it."""
    return _state.retain_graph


class _Finals:
    """The variables whose last consumer is the node now running backward, and how to
    hand one's complete gradient over (``take_final``)."""
    __slots__ = ('ids', 'variables', 'on_final', 'taken')

    def __init__(self, ids, variables, on_final):
        self.ids, self.variables, self.on_final = set(ids), variables, on_final
        self.taken = set()


def _once(ids, parents):
    """Those of the variables ``ids`` that are exactly one of ``parents``: a variable
    twice among a node's inputs gets its gradient from both, so none is final early."""
    counts = {}
    for parent in parents or ():
        if parent is not None and type(parent) is not tuple:
            counts[id(parent)] = counts.get(id(parent), 0) + 1
    return [v for v in ids if counts.get(v) == 1]


def take_final(variable, grad):
    """Hand ``grad``, the running node's last contribution to the gradient of
    ``variable`` (one of its parents), to the backward's ``on_final`` now, before the
    node's backward returns; True when taken, and the node then returns None for it.
    A node holding a whole graph (``symbol/graph_node.py``) calls this as each
    parameter's gradient completes, so a Trainer pushes it while backward goes on."""
    finals = _state.finals
    if finals is None or id(variable) not in finals.ids:
        return False
    finals.ids.discard(id(variable))
    finals.taken.add(id(variable))
    held = finals.variables.pop(id(variable), None)
    finals.on_final(variable, grad if held is None else held[1] + grad)
    return True


def set_recording(recording):
    """Set the recording flag; returns the previous value."""
    prev, _state.recording = _state.recording, bool(recording)
    return prev


def set_training(training):
    """Set the training flag; returns the previous value."""
    prev, _state.training = _state.training, bool(training)
    return prev


class Scope:
    """Set the recording and/or training flags (None: leave as is) for a ``with`` block."""
    __slots__ = ('recording', 'training', 'prev')

    def __init__(self, recording, training):
        self.recording, self.training = recording, training

    def __enter__(self):
        state = _state
        self.prev = (state.recording, state.training)
        if self.recording is not None:
            state.recording = self.recording
        if self.training is not None:
            state.training = self.training

    def __exit__(self, *exc):
        _state.recording, _state.training = self.prev


class Node:
    """One recorded op application (see the module docstring for ``parents``)."""
    __slots__ = ('backward', 'parents', 'outputs', 'xp', 'name', 'saved', 'rule')

    def __init__(self, backward, parents, outputs, xp, name, saved=None, rule=None):
        self.backward = backward
        self.parents = parents
        self.outputs = outputs  # (shape, dtype) per output: absent gradients are zeros
        self.xp = xp
        self.name = name
        self.saved = saved  # what a recorded gradient rule reads (see the module docstring)
        self.rule = rule  # that rule, when it is not the op's own (None: look it up by name)


def _topo_order(heads):
    """Nodes reachable from ``heads``, each after every node that consumes it."""
    order, seen = [], set()
    for head in heads:
        if id(head) in seen:
            continue
        stack = [(head, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            if node.parents is None:
                continue
            for parent in node.parents:
                if type(parent) is tuple and id(parent[0]) not in seen:
                    stack.append((parent[0], False))
    order.reverse()  # heads first, producers last
    return order


def first_order_rule(out_grads):
    """The higher-order rule of a node recorded without its inputs and outputs (inside
    a block hybridized with ``static_alloc=True``, ``dispatch.first_order_only``)."""
    raise MXNetError(
        'autograd.grad(create_graph=True) reached an op recorded inside a block hybridized '
        'with static_alloc=True, which keeps only what first-order gradients need (so its '
        'intermediate arrays are freed after the forward); hybridize that block without '
        'static_alloc to take gradients of gradients through it')


def freed_error(node):
    """The MXNetError raised when backward reaches ``node`` whose saved inputs an
    earlier backward already freed (it names the op and suggests ``retain_graph=True``).
    """
    return MXNetError(
        'backward through op %r whose graph was already freed by an earlier backward; '
        'pass retain_graph=True to the first backward to differentiate the same graph '
        'again, or record the computation again' % node.name)


def _last_uses(order):
    """``{position in order: [id(variable), ...]}``: each variable under the position of
    the last node that consumes it; past that node its gradient is complete."""
    last = {}
    for i, node in enumerate(order):
        for parent in node.parents or ():
            if parent is not None and type(parent) is not tuple:
                last[id(parent)] = i
    by_position = {}
    for var, i in last.items():
        by_position.setdefault(i, []).append(var)
    return by_position


def run_backward(heads, retain_graph, wanted=(), on_final=None, node_grads=None):
    """Propagate gradients from ``heads``, a list of ``(node, output_index, gradient or
    None for ones)``.

    Returns ``(variables, outputs)``: ``{id(variable): [variable, summed gradient]}`` for
    every variable reached, and the gradient reaching each ``(node, output_index)`` in
    ``wanted`` (None where none did). Without ``retain_graph`` the walked nodes drop
    their closures. With ``on_final``, each variable's gradient is instead handed to
    ``on_final(variable, gradient)`` as soon as the last node consuming it has run (in
    the order backward completes them) and left out of ``variables``.

    With ``node_grads``, ``node_grads(node, output_gradients)`` (None for an output no
    gradient reached) computes each node's input gradients instead of its closure; the
    gradients are then whatever it works on (recorded NDArrays) and every head needs one.
    """
    grads = {}  # id(node) -> output gradients, summed over consumers
    for node, idx, grad in heads:
        if node.backward is None:
            raise freed_error(node)
        if grad is None:
            shape, dtype = node.outputs[idx]
            grad = node.xp.ones(shape, dtype)
        slots = grads.setdefault(id(node), [None] * len(node.outputs))
        slots[idx] = grad if slots[idx] is None else slots[idx] + grad
    wanted_grads = {(id(node), idx): None for node, idx in wanted}
    variables = {}
    order = _topo_order([node for node, _, _ in heads])
    finals = _last_uses(order) if on_final is not None else {}
    state = _state
    prev, state.retain_graph = state.retain_graph, bool(retain_graph)
    try:
        for position, node in enumerate(order):
            slots = grads.pop(id(node), None)
            if slots is not None:
                here = None
                if position in finals:
                    here = _Finals(_once(finals[position], node.parents), variables,
                                   on_final)
                _backward_handing_over(here, node, slots, grads, variables, wanted_grads,
                                       retain_graph, node_grads)
            for var in finals.get(position, ()):
                done = variables.pop(var, None)
                if done is not None:
                    on_final(*done)
    finally:
        state.retain_graph = prev
    return variables, [wanted_grads[(id(node), idx)] for node, idx in wanted]


def _backward_handing_over(finals, node, *args):
    """``_backward_node(node, *args)`` with ``finals`` (a ``_Finals``, or None) open to
    the node's ``take_final`` calls while it runs."""
    _state.finals = finals
    try:
        _backward_node(node, *args)
    finally:
        _state.finals = None
    if finals is not None and finals.taken & finals.variables.keys():
        raise MXNetError('backward of %r returned a gradient for an input whose final '
                         'gradient it had handed over (take_final)' % node.name)


def _backward_node(node, slots, grads, variables, wanted_grads, retain_graph, node_grads):
    """Run one node's backward: its input gradients go to its producers' slots in
    ``grads`` and to the variables' sums in ``variables``."""
    if node.backward is None:
        raise freed_error(node)
    for k, grad in enumerate(slots):
        if (id(node), k) in wanted_grads:
            wanted_grads[(id(node), k)] = grad
    profiler = _profiler
    if profiler is not None:
        start = time.perf_counter()
    if node_grads is not None:
        in_grads = node_grads(node, slots)
    elif len(node.outputs) == 1:
        in_grads = node.backward(slots[0])
    else:
        in_grads = node.backward(tuple(
            g if g is not None else node.xp.zeros(shape, dtype)
            for g, (shape, dtype) in zip(slots, node.outputs)))
    if not isinstance(in_grads, (tuple, list)):
        in_grads = (in_grads,)
    if profiler is not None:
        profiler.backward_done(node, in_grads, start)
    if len(in_grads) != len(node.parents):
        raise MXNetError('backward of op %r returned %d gradients for %d inputs'
                         % (node.name, len(in_grads), len(node.parents)))
    for parent, g in zip(node.parents, in_grads):
        if parent is None or g is None:
            continue
        if type(parent) is tuple:
            pnode, pidx = parent
            dtype = pnode.outputs[pidx][1]
            if g.dtype != dtype:
                g = g.astype(dtype)
            pslots = grads.setdefault(id(pnode), [None] * len(pnode.outputs))
            pslots[pidx] = g if pslots[pidx] is None else pslots[pidx] + g
        else:
            acc = variables.get(id(parent))
            if acc is None:
                variables[id(parent)] = [parent, g]
            else:
                acc[1] = acc[1] + g
    if not retain_graph:
        node.backward = None
        node.parents = None
        node.saved = None
