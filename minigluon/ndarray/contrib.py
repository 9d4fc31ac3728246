"""``mx.nd.contrib``: control flow on NDArrays (``foreach``, ``while_loop``, ``cond``), as
MXNet 1.x has it.

The loop bodies and branches are Python functions run step by step on NDArrays: each
op they call goes through the op table, so autograd records through a loop as through
any other code, and no op is implemented here. The graph operators ``_foreach``,
``_while_loop`` and ``_cond`` (``mx.sym.contrib``) run their subgraphs through these
same functions, so a hybridized block computes what the imperative one does.
"""
from ..base import MXNetTypeError, MXNetValueError
from ..nesting import flatten, regroup
from .creation import zeros
from .ndarray import NDArray, op_function
from .registry import all_ops, get_op

__all__ = ['foreach', 'while_loop', 'cond']

# The op table's ``_contrib_<name>`` ops, here as ``<name>`` (``box_nms``), as in MXNet.
for _name, _op in all_ops().items():
    if _name.startswith('_contrib_'):
        globals()[_name[len('_contrib_'):]] = op_function(_op)
        __all__.append(_name[len('_contrib_'):])
# ops of the main namespace that MXNet also registers as ``_contrib_<name>``
CTCLoss = ctc_loss = op_function(get_op('CTCLoss'))
__all__ += ['CTCLoss', 'ctc_loss']

_stack = op_function(get_op('stack'))
_concat = op_function(get_op('concat'))


def _flatten(args, what):
    """``(flat list, format)`` of an NDArray or a (nested) list of them."""
    return flatten(args, lambda arg: 0 if isinstance(arg, NDArray) else None,
                   lambda arg: MXNetTypeError('%s must be an NDArray or a (nested) list of '
                                              'NDArrays, got %s' % (what, type(arg).__name__)))


def _as_list(value):
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _to_scalar(value, type_, what):
    """``value`` (an NDArray of one element, a number) as a Python ``type_``."""
    if isinstance(value, NDArray):
        if value.size != 1:
            raise MXNetValueError('%s must hold one element, got an array of shape %s'
                                  % (what, value.shape))
        value = value.asscalar()
    try:
        return type_(value)
    except (TypeError, ValueError):
        raise MXNetValueError('Cannot convert %s (%r) to python %s'
                              % (what, value, type_.__name__)) from None


def foreach(body, data, init_states):
    """Run ``body`` on each slice of ``data`` along its first axis, carrying states.

    ``out, states = body(data_slice, states)`` at each step, where ``data_slice`` is
    ``data[i]`` (a list of them when ``data`` is a list) and ``states`` starts as
    ``init_states``. It computes::

        states = init_states
        outs = []
        for i in range(data.shape[0]):
            out, states = body(data[i], states)
            outs.append(out)
        outs = stack(*outs)

    Parameters
    ----------
    body : callable
        ``body(data_slice, states) -> (out, new_states)``; ``out`` is an NDArray or a
        (nested) list of them, the same at every step.
    data : NDArray or list of NDArray
        The arrays to iterate over (all of one length along axis 0).
    init_states : NDArray or (nested) list of NDArray
        The initial states.

    Returns
    -------
    (outputs, states)
        ``outputs``: each step's ``out`` stacked on a new first axis, in ``out``'s
        structure; ``states``: the states after the last step.
    """
    flat_data, _ = _flatten(data, 'foreach data')
    _flatten(init_states, 'foreach init_states')
    single = isinstance(data, NDArray)
    num_iters = data.shape[0] if single else flat_data[0].shape[0]
    states = init_states
    outputs, out_fmt = [], None
    for i in range(num_iters):
        slices = data[i] if single else [d[i] for d in data]
        outs, states = body(slices, states)
        outs, out_fmt = _flatten(outs, 'the output of a foreach body')
        outputs.append(outs)
    if out_fmt is None:  # no step ran: no output can be stacked
        return [], states
    stacked = [_stack(*items) for items in zip(*outputs)]
    return regroup(stacked, out_fmt), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run ``func`` while ``cond`` holds, at most ``max_iterations`` times.

    ``cond(*loop_vars)`` returns an NDArray of one element (the loop goes on while it
    is non-zero); ``func(*loop_vars)`` returns ``(step_output, new_loop_vars)``, the
    new loop variables as many as the old, of the same shapes and dtypes.

    Parameters
    ----------
    cond : callable
        The loop condition.
    func : callable
        The loop body.
    loop_vars : NDArray or (nested) list of NDArray
        The initial loop variables.
    max_iterations : int
        The most steps taken (required).

    Returns
    -------
    (outputs, states)
        ``outputs``: each output of the steps stacked on a new first axis of length
        ``max_iterations`` (as in MXNet, the rows after the last step are undefined:
        here they are zeros), or ``[]`` when no step ran; ``states``: the final loop
        variables (one NDArray when ``loop_vars`` was one).
    """
    if max_iterations is None:
        raise MXNetValueError('max_iterations should be specified')
    max_iterations = _to_scalar(max_iterations, int, 'max_iterations')
    if len(loop_vars) == 0:
        raise MXNetValueError('loop_vars should contain at least one element')
    single = isinstance(loop_vars, NDArray)
    loop_vars = _as_list(loop_vars)
    steps, outputs, out_fmt = 0, [], None
    while steps < max_iterations and \
            _to_scalar(cond(*loop_vars), bool, 'the return value of cond'):
        step_output, new_vars = func(*loop_vars)
        step_output = [] if step_output is None else step_output
        new_vars = _as_list([] if new_vars is None else new_vars)
        if len(new_vars) != len(loop_vars):
            raise MXNetValueError('The length of loop_vars should be consistent during the '
                                  'loop: func returned %d for %d'
                                  % (len(new_vars), len(loop_vars)))
        loop_vars = new_vars
        step_output, out_fmt = _flatten(_as_list(step_output) if isinstance(
            step_output, tuple) else step_output, 'the step output of while_loop')
        if outputs and len(step_output) != len(outputs[0]):
            raise MXNetValueError('Number of elements in step_output should be the same in '
                                  'each step')
        outputs.append(step_output)
        steps += 1
    stacked = []
    for i, items in enumerate(zip(*outputs)):
        shapes = {x.shape for x in items}
        if len(shapes) > 1:
            raise MXNetValueError('Shapes of the %d-th elements in step_outputs are '
                                  'inconsistent: %s' % (i + 1, [x.shape for x in items]))
        out = _stack(*items)
        if steps < max_iterations:
            pad = zeros((max_iterations - steps,) + out.shape[1:], ctx=out.context,
                        dtype=out.dtype)
            out = _concat(out, pad, dim=0)
        stacked.append(out)
    if out_fmt is not None:
        stacked = regroup(stacked, out_fmt)
    return stacked, loop_vars[0] if single else loop_vars


def cond(pred, then_func, else_func):
    """``then_func()`` if ``pred`` (an NDArray of one element) is non-zero, else
    ``else_func()``; both return an NDArray or a (nested) list of them of one
    structure, shapes and dtypes."""
    if _to_scalar(pred, bool, 'pred'):
        return then_func()
    return else_func()

