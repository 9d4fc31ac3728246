"""Automatic differentiation: recording scopes, the tape and backward.

While recording, every op whose inputs need a gradient leaves a ``Node`` on its
outputs: the op's backward closure plus the entries of its inputs. ``backward``
walks those nodes from the heads in reverse topological order and accumulates
gradients into the leaves marked by ``attach_grad``/``mark_variables``.

The op dispatcher (``ndarray/registry.py``) reads the recording flag here and calls
``_record``; this module touches NDArray only through a few attributes
(``_data``, ``_ctx``, ``_node``, ``_out_idx``, ``_grad``, ``_grad_req``) and imports the
class lazily, so the two layers do not import each other at load time.
"""
import threading

from .base import MXNetError, shape_str

__all__ = ['record', 'pause', 'train_mode', 'predict_mode', 'is_recording', 'is_training',
           'set_recording', 'set_training', 'mark_variables', 'backward', 'grad', 'Function']


class _State(threading.local):
    def __init__(self):
        self.recording = False
        self.training = False


_state = _State()


def is_recording():
    """True inside ``record()`` (and not inside a nested ``pause()``)."""
    return _state.recording


def is_training():
    """True when layers such as Dropout and BatchNorm should act as in training."""
    return _state.training


def set_recording(is_recording):  # pylint: disable=redefined-outer-name
    """Set the recording flag; returns the previous value."""
    prev, _state.recording = _state.recording, bool(is_recording)
    return prev


def set_training(train_mode):  # pylint: disable=redefined-outer-name
    """Set the training flag; returns the previous value."""
    prev, _state.training = _state.training, bool(train_mode)
    return prev


class _scope:
    """Set the recording/training flags for a ``with`` block, restoring them after."""
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


def record(train_mode=True):  # pylint: disable=redefined-outer-name
    """Record operations for ``backward`` inside a ``with`` block.

    Parameters
    ----------
    train_mode : bool, default True
        Whether layers behave as in training (Dropout active, BatchNorm batch stats).
    """
    return _scope(True, train_mode)


def pause(train_mode=False):  # pylint: disable=redefined-outer-name
    """Stop recording inside a ``with`` block (e.g. for metrics inside ``record``)."""
    return _scope(False, train_mode)


def train_mode():
    """Training behaviour of layers without changing the recording flag."""
    return _scope(None, True)


def predict_mode():
    """Inference behaviour of layers without changing the recording flag."""
    return _scope(None, False)


class Node:
    """One recorded op application.

    ``parents`` holds, per op input, ``None`` (needs no gradient), the leaf NDArray
    itself, or ``(node, output_index)`` of the op that produced it. ``outputs`` holds
    ``(shape, dtype)`` per output so missing output gradients can be zero-filled.
    """
    __slots__ = ('backward', 'parents', 'outputs', 'ctx', 'name')

    def __init__(self, backward, parents, outputs, ctx, name):
        self.backward = backward
        self.parents = parents
        self.outputs = outputs
        self.ctx = ctx
        self.name = name


def _entry(arr):
    """The graph entry of an op input, or None when no gradient is needed."""
    node = getattr(arr, '_node', None)
    if node is not None:
        return (node, arr._out_idx)
    if getattr(arr, '_grad_req', 'null') not in ('null', None):
        return arr
    return None


def _requires_grad(arr):
    return arr._node is not None or (arr._grad_req is not None and arr._grad_req != 'null')


def _record(backward, inputs, outputs, ctx, name):
    """Attach a node for ``backward`` to ``outputs`` (called while recording)."""
    node = Node(backward, tuple(_entry(a) for a in inputs),
                tuple((o._data.shape, o._data.dtype) for o in outputs), ctx, name)
    for i, out in enumerate(outputs):
        out._node = node
        out._out_idx = i
    return node


def _check_inplace_target(arr):
    """In-place writes into arrays that are part of a graph corrupt their gradients."""
    if _state.recording and _requires_grad(arr):
        raise MXNetError(
            'cannot write in place into an NDArray (shape %s, %s) that is part of a '
            'recorded graph (it has attach_grad() or comes from a recorded op): its old '
            'value may be needed by backward. Use an out-of-place op (y = x + 1 instead '
            'of x += 1, nd.where instead of x[idx] = v), or do the write outside '
            'autograd.record().' % (shape_str(arr.shape), arr.context))


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


def _freed_error(node):
    return MXNetError(
        'backward through op %r whose graph was already freed by an earlier backward; '
        'pass retain_graph=True to the first backward to differentiate the same graph '
        'again, or record the computation again' % node.name)


def _run_backward(heads, head_grads, retain_graph, want=None):
    """Propagate gradients from ``heads``.

    Without ``want``, gradients are written into the leaves' ``.grad`` per their
    ``grad_req``. With ``want`` (a list of NDArrays), nothing is written and their
    gradients are returned in order (``autograd.grad``).
    """
    head_nodes = []
    grads = {}  # id(node) -> list of output gradients (raw arrays or None)
    leaf_grads = {}  # id(leaf) -> [leaf, accumulated raw gradient]
    for i, head in enumerate(heads):
        if head._node is None:
            raise MXNetError(
                'backward: head %d (shape %s, %s) was not produced by a recorded '
                'operation. Call attach_grad() on the inputs and compute the head inside '
                '`with autograd.record():`.' % (i, shape_str(head.shape), head.context))
        node, idx = head._node, head._out_idx
        if node.backward is None:
            raise _freed_error(node)
        hg = head_grads[i] if head_grads is not None else None
        if hg is None:
            hg = node.ctx.xp.ones(head._data.shape, head._data.dtype)
        else:
            if hg.shape != head.shape:
                raise MXNetError('backward: head_grads[%d] has shape %s but the head has shape '
                                 '%s' % (i, hg.shape, head.shape))
            if hg.context != head.context:
                raise MXNetError('backward: head_grads[%d] is on %s but the head is on %s'
                                 % (i, hg.context, head.context))
            hg = hg._data
        slots = grads.setdefault(id(node), [None] * len(node.outputs))
        slots[idx] = hg if slots[idx] is None else slots[idx] + hg
        head_nodes.append(node)

    wanted_nodes = {}
    if want is not None:
        for arr in want:
            if arr._node is not None:
                wanted_nodes[(id(arr._node), arr._out_idx)] = None

    order = _topo_order(head_nodes)
    for node in order:
        slots = grads.pop(id(node), None)
        if slots is None:
            continue  # no gradient reached this node
        if node.backward is None:
            raise _freed_error(node)
        for k in range(len(slots)):
            if (id(node), k) in wanted_nodes:
                wanted_nodes[(id(node), k)] = slots[k]
        xp = node.ctx.xp
        if len(node.outputs) == 1:
            in_grads = node.backward(slots[0])
        else:
            in_grads = node.backward(tuple(
                g if g is not None else xp.zeros(shape, dtype)
                for g, (shape, dtype) in zip(slots, node.outputs)))
        if not isinstance(in_grads, (tuple, list)):
            in_grads = (in_grads,)
        if len(in_grads) != len(node.parents):
            raise MXNetError('backward of op %r returned %d gradients for %d inputs'
                             % (node.name, len(in_grads), len(node.parents)))
        for parent, g in zip(node.parents, in_grads):
            if parent is None or g is None:
                continue
            if type(parent) is tuple:
                pnode, pidx = parent
                shape, dtype = pnode.outputs[pidx]
                if g.dtype != dtype:
                    g = g.astype(dtype)
                pslots = grads.setdefault(id(pnode), [None] * len(pnode.outputs))
                pslots[pidx] = g if pslots[pidx] is None else pslots[pidx] + g
            else:
                if g.dtype != parent._data.dtype:
                    g = g.astype(parent._data.dtype)
                acc = leaf_grads.get(id(parent))
                if acc is None:
                    leaf_grads[id(parent)] = [parent, g]
                else:
                    acc[1] = acc[1] + g
        if not retain_graph:
            node.backward = None
            node.parents = None

    if want is not None:
        out = []
        for arr in want:
            if arr._node is not None:
                g = wanted_nodes.get((id(arr._node), arr._out_idx))
            else:
                acc = leaf_grads.get(id(arr))
                g = acc[1] if acc is not None else None
            if g is None:
                g = arr._ctx.xp.zeros(arr._data.shape, arr._data.dtype)
            out.append(g)
        return out

    for leaf, g in leaf_grads.values():
        buf = leaf._grad
        if leaf._grad_req == 'add':
            buf._data += g
        else:
            buf._data[...] = g
        buf._fresh_grad = True
    return None


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name,unused-argument
    """Compute the gradients of ``heads`` with respect to the marked variables.

    Parameters
    ----------
    heads : NDArray or list of NDArray
        Outputs of recorded computations.
    head_grads : NDArray or list of (NDArray or None), optional
        Gradients flowing into each head; ones when omitted.
    retain_graph : bool, default False
        Keep the graph so it can be differentiated again.
    """
    heads = _as_list(heads)
    if head_grads is not None:
        head_grads = _as_list(head_grads)
        if len(head_grads) != len(heads):
            raise MXNetError('backward: got %d heads but %d head_grads'
                             % (len(heads), len(head_grads)))
    _run_backward(heads, head_grads, retain_graph)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # pylint: disable=redefined-outer-name,unused-argument
    """Gradients of ``heads`` with respect to ``variables``, returned, not stored.

    The variables' ``.grad`` buffers are left untouched. ``create_graph=True``
    (differentiating the gradients again) is not supported: the backward rules run
    on raw arrays and are not themselves recorded.
    """
    if create_graph:
        raise MXNetError('autograd.grad(create_graph=True): higher-order gradients are not '
                         'supported by minigluon; compute second derivatives numerically or '
                         'restructure the loss')
    if retain_graph is None:
        retain_graph = create_graph
    single = not isinstance(variables, (list, tuple))
    variables = _as_list(variables)
    heads = _as_list(heads)
    if head_grads is not None:
        head_grads = _as_list(head_grads)
    raw = _run_backward(heads, head_grads, retain_graph, want=variables)
    from .ndarray.ndarray import NDArray
    out = [NDArray(g, v._ctx) for g, v in zip(raw, variables)]
    return out[0] if single else out


def mark_variables(variables, gradients, grad_reqs='write'):
    """Mark NDArrays as variables whose gradients ``backward`` writes into ``gradients``."""
    variables, gradients = _as_list(variables), _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise MXNetError('mark_variables: got %d variables, %d gradients and %d grad_reqs'
                         % (len(variables), len(gradients), len(grad_reqs)))
    for var, g, req in zip(variables, gradients, grad_reqs):
        var._mark(g, req)


class Function:
    """A custom differentiable operation.

    Subclass it and define ``forward(self, *inputs)`` and ``backward(self,
    *output_grads)``, both on NDArrays; ``backward`` returns one gradient per input.
    Save what backward needs with ``self.save_for_backward(...)`` and read it back from
    ``self.saved_tensors``. Call an instance like a function, once per use.

    Example::

        class Sigmoid(autograd.Function):
            def forward(self, x):
                y = 1 / (1 + nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)
    """

    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        from .ndarray.ndarray import NDArray
        with pause(train_mode=_state.training):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if _state.recording and any(isinstance(a, NDArray) and _requires_grad(a) for a in inputs):
            ctx = outs[0]._ctx
            # Outputs that alias an input would steal its graph entry: give them fresh handles.
            outs = [NDArray(o._data, o._ctx) for o in outs]

            def run_backward(dys):
                dys = dys if isinstance(dys, tuple) else (dys,)
                with pause():
                    in_grads = self.backward(*[NDArray(d, ctx) for d in dys])
                in_grads = in_grads if isinstance(in_grads, (list, tuple)) else (in_grads,)
                if len(in_grads) != len(inputs):
                    raise MXNetError('%s.backward returned %d gradients for %d inputs'
                                     % (type(self).__name__, len(in_grads), len(inputs)))
                return tuple(None if g is None else g._data for g in in_grads)

            _record(run_backward, inputs, outs, ctx, type(self).__name__)
        return outs[0] if single else outs
