"""One executor per device, each bound to its slice of the batch: MXNet's
``DataParallelExecutorGroup``, the engine room of ``mx.mod.Module``.

The weights live in Gluon ``Parameter``s (one array and one gradient per device), and
every executor is bound to its device's arrays of them, so the Trainer that updates
the Parameters updates what the executors compute with, with no copy in between.
"""
import logging
from collections import OrderedDict

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..gluon.parameter import Parameter
from ..initializer import Zero
from ..io import DataDesc
from .. import ndarray as nd
from ..symbol.attrs import DTYPE_NAMES

__all__ = ['DataParallelExecutorGroup', 'make_params', 'split_input_slice']


def split_input_slice(batch_size, work_load_list):
    """The slice of the batch each device takes, in proportion to ``work_load_list``."""
    total = sum(work_load_list)
    counts = [int(round(w * batch_size / total)) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = min(end, batch_size)
        end = min(begin + count, batch_size)
        if begin >= end:
            raise MXNetError('a batch of %d cannot be split over %d devices with work loads %s: '
                             'some devices would get no example; use a larger batch or fewer '
                             'devices' % (batch_size, len(work_load_list), work_load_list))
        slices.append(slice(begin, end))
    return slices


def _as_desc(desc):
    return desc if isinstance(desc, DataDesc) else DataDesc(*desc)


def _load(sources, targets, axes):
    """Copy each source array (a whole batch, or one array per device) into the devices'
    bound input arrays, cutting it along its batch axis."""
    for src, dsts, axis in zip(sources, targets, axes):
        if isinstance(src, (list, tuple)):  # already one per device
            for s, (_, dst) in zip(src, dsts):
                s.copyto(dst)
            continue
        for piece, dst in dsts:
            if axis < 0 or (piece.start == 0 and piece.stop == src.shape[axis]):
                part = src
            else:
                part = nd.slice_axis(src, axis=axis, begin=piece.start, end=piece.stop)
            if part.shape != dst.shape:
                raise MXNetError('Module.forward: an input of shape %s does not fit the bound '
                                 'array of shape %s; reshape the module or give batches of '
                                 'the bound shape' % (part.shape, dst.shape))
            part.copyto(dst)


def merge_devices(outputs, axes):
    """One array per output: the devices' pieces joined along the batch axis."""
    merged = []
    for pieces, axis in zip(outputs, axes):
        if axis >= 0 and len(pieces) > 1:
            first = pieces[0].context
            merged.append(nd.concat(*[p.as_in_context(first) for p in pieces], dim=axis))
        else:
            merged.append(pieces[0])
    return merged


def make_params(symbol, param_names, input_descs):
    """Parameters (not yet initialized) for the learned arguments ``param_names`` and the
    auxiliary states of ``symbol``, of the shapes and dtypes the inputs ``input_descs``
    (DataDescs) imply."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(**{d.name: d.shape for d in input_descs})
    if arg_shapes is None:
        raise MXNetError('bind: the shapes %s do not determine every parameter'
                         % [(d.name, d.shape) for d in input_descs])
    arg_types, _, aux_types = symbol.infer_type(**{d.name: d.dtype for d in input_descs})
    params = OrderedDict()
    for name, shape, dtype in zip(symbol.list_arguments(), arg_shapes, arg_types):
        if name in param_names:
            params[name] = Parameter(name, shape=shape, dtype=dtype or np.float32)
    for name, shape, dtype in zip(symbol.list_auxiliary_states(), aux_shapes, aux_types):
        params[name] = Parameter(name, shape=shape, dtype=dtype or np.float32,
                                 grad_req='null', differentiable=False)
    return params


def _grad_reqs(grad_req, arg_names, param_names, data_names, fixed, inputs_need_grad):
    """Each argument's grad_req as MXNet's executor group decides it."""
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError('grad_req: %d values for %d arguments %s'
                             % (len(grad_req), len(arg_names), arg_names))
        return dict(zip(arg_names, grad_req))
    if not isinstance(grad_req, (str, dict)):
        raise MXNetError('grad_req must be a str, list, tuple or dict, got %s'
                         % type(grad_req).__name__)
    default = grad_req if isinstance(grad_req, str) else 'write'
    reqs = {}
    for name in arg_names:
        if name in param_names:
            reqs[name] = 'null' if name in fixed else default
        elif name in data_names:
            reqs[name] = default if inputs_need_grad else 'null'
        else:
            reqs[name] = 'null'
    if isinstance(grad_req, dict):
        reqs.update(grad_req)
    return reqs


class DataParallelExecutorGroup:
    """Executors of ``symbol`` on ``contexts``, the batch split by ``workload``.

    Parameters
    ----------
    symbol : Symbol
    contexts : list of Context
    workload : list of float
        The share of the batch each context takes.
    data_shapes, label_shapes : list of DataDesc or (name, shape)
    param_names : list of str
        The arguments that are learned (the rest are data, labels and states).
    for_training, inputs_need_grad : bool
    shared_group : DataParallelExecutorGroup, optional
        A group whose parameters (and input memory) this one shares, as the buckets of a
        ``BucketingModule`` do.
    fixed_param_names : list of str, optional
        Parameters that are not learned (``grad_req`` 'null').
    grad_req : str, list or dict
    state_names : list of str, optional
        Arguments that are states the user sets (e.g. an RNN's begin state).
    params : dict of str to Parameter, optional
        The Parameters holding the learned arguments and auxiliary states; made here
        (zeros) when not given.
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req='write', state_names=None, group2ctxs=None,
                 params=None):
        if group2ctxs:
            raise MXNetError('group2ctxs (model parallelism over context groups) is not '
                             'supported; place the whole symbol on each device instead')
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        data_shapes = [_as_desc(d) for d in data_shapes]
        label_shapes = None if label_shapes is None else [_as_desc(d) for d in label_shapes]
        self.grad_req = _grad_reqs(grad_req if for_training else 'null', self.arg_names,
                                   self.param_names, [d.name for d in data_shapes],
                                   self.fixed_param_names, inputs_need_grad)
        if params is None:
            params = shared_group.params if shared_group is not None else None
        if params is None:  # a group of its own: zero Parameters on its contexts
            params = make_params(symbol, self.param_names, data_shapes + (label_shapes or []))
            for name, param in params.items():
                if name in self.param_names:
                    param.grad_req = self.grad_req[name]
                param.initialize(init=Zero(), ctx=self.contexts)
        self.params = params
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in self.contexts])
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr('__layout__'))
                               for i in range(self.num_outputs)]
        self.batch_size = None
        self.slices = None
        self.execs = []
        self._default_execs = None
        self._total_exec_bytes = 0
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # ---- the learned arrays ------------------------------------------------------------
    # ---- binding -----------------------------------------------------------------------
    def decide_slices(self, data_shapes):
        """Each input's batch axis; the first one found fixes ``batch_size`` and
        ``slices``."""
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for desc, axis in zip(data_shapes, axes):
            if axis == -1:
                continue
            size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise MXNetError('all inputs must have the same batch size: batch_size = %d, '
                                 'but %s has shape %s' % (self.batch_size, desc.name, desc.shape))
        return axes

    def _sliced_shapes(self, shapes, i, axes):
        out = []
        for desc, axis in zip(shapes, axes):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind one executor per context (or reshape the ones bound)."""
        if self.execs and not reshape:
            raise MXNetError('bind_exec: already bound; use reshape')
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = (self.decide_slices(label_shapes) if label_shapes is not None
                              else None)
        for i in range(len(self.contexts)):
            inputs = self._sliced_shapes(data_shapes, i, self.data_layouts)
            if label_shapes is not None:
                inputs += self._sliced_shapes(label_shapes, i, self.label_layouts)
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **{d.name: d.shape for d in inputs})
            else:
                self.execs.append(self._bind_ith_exec(i, inputs))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes is not None else None
        self._collect_arrays()

    def _bind_ith_exec(self, i, inputs):
        ctx = self.contexts[i]
        shapes = {d.name: d.shape for d in inputs}
        types = {d.name: d.dtype for d in inputs}
        attrs = self.symbol.attr_dict()
        for name in list(types):
            declared = attrs.get(name, {}).get('__dtype__')
            if declared not in (None, '-1'):
                types[name] = np.dtype(DTYPE_NAMES[int(declared)])
        arg_shapes, _, _ = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise MXNetError('bind: the input shapes %s do not determine every argument of '
                             'the symbol' % shapes)
        arg_types, _, _ = self.symbol.infer_type(**types)
        shared = self.shared_data_arrays[i]
        args, grads = [], []
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            req = self.grad_req[name]
            if name in self.params:
                param = self.params[name]
                if tuple(param.shape) != tuple(shape):
                    raise MXNetError('bind: parameter %r has shape %s but the inputs %s need %s'
                                     % (name, param.shape, shapes, tuple(shape)))
                args.append(param.list_data()[i])
                grads.append(param.list_grad()[i] if req != 'null' else None)
                continue
            dtype = np.dtype(dtype or np.float32)
            arr = shared.get(name)
            if arr is None or arr.size < int(np.prod(shape)) or arr.dtype != dtype:
                arr = nd.zeros(shape, ctx=ctx, dtype=dtype)
                shared[name] = arr  # inputs of other buckets reuse the largest one's memory
            else:
                arr = arr.reshape(-1)[:int(np.prod(shape))].reshape(shape)
            args.append(arr)
            grads.append(nd.zeros(shape, ctx=ctx, dtype=dtype) if req != 'null' else None)
        aux = [self.params[name].list_data()[i] for name in self.aux_names]
        executor = self.symbol.bind(ctx, args, args_grad=grads,
                                    grad_req=[self.grad_req[n] for n in self.arg_names],
                                    aux_states=aux)
        self._total_exec_bytes += sum(a.size * np.dtype(a.dtype).itemsize for a in args)
        return executor

    def _collect_arrays(self):
        """The per-device arrays, grouped as MXNet's group exposes them."""
        slices = self.slices or [slice(i, i + 1) for i in range(len(self.execs))]
        self.data_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                            for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in self.execs] for name in self.state_names]
        self.label_arrays = None if self.label_shapes is None else [
            [(slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
            for name in self.label_names]
        self.param_arrays = [[e.arg_arrays[i] for e in self.execs]
                             for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.grad_arrays = None if not self.for_training else [
            [e.grad_arrays[i] for e in self.execs]
            for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.input_grad_arrays = None if not self.inputs_need_grad else [
            [e.grad_arrays[self.arg_names.index(name)] for e in self.execs]
            for name in self.data_names if name in self.arg_names]
        self.aux_arrays = [[e.aux_arrays[i] for e in self.execs]
                           for i in range(len(self.aux_names))]

    def reshape(self, data_shapes, label_shapes):
        """Rebind for new input shapes, sharing memory with the first binding."""
        data_shapes = [_as_desc(d) for d in data_shapes]
        label_shapes = None if label_shapes is None else [_as_desc(d) for d in label_shapes]
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # ---- parameters --------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy ``arg_params``/``aux_params`` (name -> NDArray) into every device."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Write the devices' mean of each parameter into ``arg_params``/``aux_params``."""
        for names, blocks, target in ((self.param_names, self.param_arrays, arg_params),
                                      (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                mean = block[0].copyto(cpu())
                for w in block[1:]:
                    mean += w.copyto(cpu())
                if len(block) > 1:
                    mean /= len(block)
                mean.astype(target[name].dtype).copyto(target[name])

    # ---- computing ---------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Load the batch (a DataBatch, or a list of them, one per device) and run every
        executor forward."""
        if isinstance(data_batch, list):
            data = [[b.data[i] for b in data_batch] for i in range(len(self.data_arrays))]
            label = ([[b.label[i] for b in data_batch] for i in range(len(self.label_arrays))]
                     if self.label_arrays is not None and data_batch[0].label else None)
        else:
            data = data_batch.data
            label = data_batch.label if self.label_arrays is not None else None
        _load(data, self.data_arrays, self.data_layouts)
        if label:
            _load(label, self.label_arrays, self.label_layouts)
        if is_train is None:
            is_train = self.for_training
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Run every executor backward, each with its slice of ``out_grads``."""
        if not self.for_training:
            raise MXNetError('backward: the module is bound with for_training=False; bind it '
                             'again with for_training=True')
        for i, (exe, piece) in enumerate(zip(self.execs, self.slices)):
            mine = []
            for grad, axis in zip(out_grads or [], self.output_layouts):
                if axis >= 0:
                    grad = nd.slice_axis(grad, axis=axis, begin=piece.start, end=piece.stop)
                mine.append(grad.as_in_context(self.contexts[i]))
            exe.backward(out_grads=mine or None)

    def get_output_shapes(self):
        """``[(output name, shape)]`` for the whole batch."""
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """The outputs of the last forward: one array per output (merged over devices)
        or, without merging, one list per output of the devices' arrays."""
        end = self.num_outputs if end is None else end
        outputs = [[exe.outputs[i] for exe in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return merge_devices(outputs, self.output_layouts[begin:end])
        return outputs

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bound with ``inputs_need_grad``)."""
        if not self.inputs_need_grad:
            raise MXNetError('get_input_grads: bind with inputs_need_grad=True first')
        if merge_multi_context:
            return merge_devices(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        """The state arrays, one list per state of the devices' arrays."""
        if merge_multi_context:
            raise MXNetError('get_states: merge_multi_context=True is not supported; pass '
                             'False')
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Set the states from ``states`` (one list per state) or all to ``value``."""
        if (states is None) == (value is None):
            raise MXNetError('set_states: give exactly one of states and value')
        if states is not None:
            for src, dsts in zip(states, self.state_arrays):
                for s, d in zip(src, dsts):
                    s.copyto(d)
        else:
            for dsts in self.state_arrays:
                for d in dsts:
                    d[:] = value

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Give ``eval_metric`` each device's outputs with its slice of ``labels``."""
        for i, (exe, piece) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                mine = labels[i]
            else:
                mine = []
                for label, axis in zip(labels, self.label_layouts or [0] * len(labels)):
                    if axis == 0:
                        mine.append(label[piece])
                    elif axis > 0:
                        mine.append(nd.slice_axis(label, axis=axis, begin=piece.start,
                                                  end=piece.stop))
                    else:
                        mine.append(label)
            eval_metric.update_dict(OrderedDict(zip(self.label_names or [], mine)),
                                    OrderedDict(zip(self.output_names, exe.outputs)))

    def install_monitor(self, mon):
        """Have ``mon`` watch every executor."""
        for exe in self.execs:
            mon.install(exe)
