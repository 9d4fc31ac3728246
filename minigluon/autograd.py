"""Automatic differentiation, the public face: recording scopes, ``backward``, ``grad``,
``mark_variables``, ``get_symbol`` and custom ``Function``s.

The machinery lies below, in ``ndarray/tape.py`` (flags, nodes, the backward walk on raw
arrays) and ``ndarray/dispatch.py`` (ops recorded on NDArrays, gradients written into
them); this module gives it MXNet's names.
"""
from .base import MXNetError
from .ndarray import NDArray
from .ndarray import grad_rules, tape
from .ndarray.dispatch import attach_node, compute_gradients, requires_grad
from .ndarray.tape import is_recording, is_training, set_recording, set_training
from .symbol.recorded import tape_symbol

__all__ = ['record', 'pause', 'train_mode', 'predict_mode', 'is_recording', 'is_training',
           'set_recording', 'set_training', 'mark_variables', 'backward', 'grad', 'get_symbol',
           'Function']


def record(train_mode=True):  # pylint: disable=redefined-outer-name
    """Record operations for ``backward`` inside a ``with`` block.

    Parameters
    ----------
    train_mode : bool, default True
        Whether layers behave as in training (Dropout active, BatchNorm batch stats).

    Returns
    -------
    context manager
        Restores the previous recording and training flags on exit.
    """
    return tape.Scope(True, train_mode)


def pause(train_mode=False):  # pylint: disable=redefined-outer-name
    """Stop recording inside a ``with`` block (e.g. for metrics inside ``record``).

    Parameters
    ----------
    train_mode : bool, default False
        Whether layers behave as in training inside the block.

    Returns
    -------
    context manager
        Restores the previous recording and training flags on exit.
    """
    return tape.Scope(False, train_mode)


def train_mode():
    """Training behaviour of layers inside a ``with`` block, recording unchanged.

    Returns
    -------
    context manager
    """
    return tape.Scope(None, True)


def predict_mode():
    """Inference behaviour of layers inside a ``with`` block, recording unchanged.

    Returns
    -------
    context manager
    """
    return tape.Scope(None, False)


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
    train_mode : bool, default True
        Accepted for MXNet compatibility; the backward rules do not depend on it.

    Raises
    ------
    MXNetError
        If ``head_grads`` and ``heads`` differ in number.
    """
    heads = _as_list(heads)
    if head_grads is not None:
        head_grads = _as_list(head_grads)
        if len(head_grads) != len(heads):
            raise MXNetError('backward: got %d heads but %d head_grads'
                             % (len(heads), len(head_grads)))
    compute_gradients(heads, head_grads, retain_graph)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # pylint: disable=redefined-outer-name,unused-argument
    """Gradients of ``heads`` with respect to ``variables``, returned, not stored.

    The variables' ``.grad`` buffers are left untouched. With ``create_graph=True``
    the backward is itself recorded (whether or not inside ``record()``), so the
    gradients can be differentiated again: by ``backward`` on a function of them, or by
    ``grad`` again. Every op on the way needs a gradient rule
    (``minigluon.ndarray.grad_rules``); one without raises an error naming it.

    Parameters
    ----------
    heads : NDArray or list of NDArray
        Outputs of recorded computations.
    variables : NDArray or list of NDArray
        Marked variables (``attach_grad`` or ``mark_variables``) to differentiate by.
    head_grads : NDArray or list of (NDArray or None), optional
        Gradients flowing into each head; ones when omitted.
    retain_graph : bool, optional
        Keep the graph so it can be differentiated again; defaults to
        ``create_graph``.
    create_graph : bool, default False
        Record the backward, for higher-order gradients.
    train_mode : bool, default True
        With ``create_graph``, whether the recorded backward runs in training mode
        (BatchNorm's rule needs it); otherwise accepted for MXNet compatibility.

    Returns
    -------
    list of NDArray
        One gradient per variable, a list even when ``variables`` is one NDArray (as
        MXNet 1.x returns).
    """
    if retain_graph is None:
        retain_graph = create_graph
    variables = _as_list(variables)
    heads = _as_list(heads)
    if head_grads is not None:
        head_grads = _as_list(head_grads)
    if not create_graph:
        return compute_gradients(heads, head_grads, retain_graph, variables)
    with tape.Scope(True, train_mode):
        out = compute_gradients(heads, head_grads, retain_graph, variables,
                                node_grads=grad_rules.node_grads)
        # a gradient that is a head gradient as given (y = x + c) must not alias it
        given = {id(g) for g in list(head_grads or ()) + variables if g is not None}
        return [g.copy() if id(g) in given else g for g in out]


def get_symbol(x):
    """The computation recorded to compute ``x``, as a Symbol (MXNet's node names
    ``node_0``..., variables ``var0``... for the arrays it read)."""
    return tape_symbol(x)


def mark_variables(variables, gradients, grad_reqs='write'):
    """Mark NDArrays as variables whose gradients ``backward`` writes into ``gradients``.

    Each variable starts a new graph: operations recorded before the call no longer
    lead to it.

    Parameters
    ----------
    variables : NDArray or list of NDArray
        The arrays to differentiate by.
    gradients : NDArray or list of NDArray
        One buffer per variable, of its shape, that receives its gradient.
    grad_reqs : str or list of str, default 'write'
        'write' overwrites the buffer, 'add' accumulates into it, 'null' computes
        no gradient; one for all variables or one per variable.

    Raises
    ------
    MXNetError
        If the lists differ in length, a buffer's shape differs from its variable's,
        or a ``grad_req`` is unknown.
    """
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
        """Keep ``args`` (typically NDArrays from ``forward``) as ``self.saved_tensors``.

        Call it in ``forward``; a later call replaces what an earlier one saved.
        """
        self.saved_tensors = args

    def forward(self, *inputs):
        """Compute the outputs; define it in a subclass.

        It runs with recording paused, so the operations inside are not themselves
        differentiated: ``backward`` gives their gradient.

        Parameters
        ----------
        *inputs : NDArray
            The arguments the instance was called with.

        Returns
        -------
        NDArray or list of NDArray
        """
        raise NotImplementedError

    def backward(self, *output_grads):
        """Compute the gradients of the inputs from those of the outputs; define it in a
        subclass.

        Parameters
        ----------
        *output_grads : NDArray
            One gradient per output of ``forward``, in order.

        Returns
        -------
        NDArray or list of (NDArray or None)
            One gradient per input of ``forward``, shaped like it; None for an input
            that needs none.
        """
        raise NotImplementedError

    def __call__(self, *inputs):
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if is_recording() and any(isinstance(a, NDArray) and requires_grad(a) for a in inputs):
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

            attach_node(run_backward, inputs, outs, type(self).__name__)
        return outs[0] if single else outs
