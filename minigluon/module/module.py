"""``mx.mod.Module``: a symbol trained with MXNet's Module API.

The learned arguments and auxiliary states are Gluon ``Parameter``s, the executors are
bound to their arrays, and ``update`` is a Gluon ``Trainer`` step: the kvstore choice,
``update_on_kvstore``, the averaging over workers (N workers with batches of b take
the step one process takes on the union of their N*b examples), gradient compression
and the replacement of a dead worker are the Trainer's, not a second set of rules.
"""
import logging
import warnings


from .. import optimizer as opt
from ..base import MXNetError
from ..context import Context, cpu
from ..gluon.trainer import Trainer
from ..initializer import InitDesc, Uniform, Zero
from ..io import DataDesc
from ..model import load_checkpoint
from .. import ndarray as nd
from .base_module import BaseModule, check_input_names, parse_data_desc
from .executor_group import DataParallelExecutorGroup, make_params

__all__ = ['Module']


def _attr_float(attrs, key):
    value = attrs.get(key)
    return None if value is None else float(value)


class Module(BaseModule):
    """A symbol bound on one or more devices, with its parameters and optimizer.

    Parameters
    ----------
    symbol : Symbol
    data_names, label_names : list of str
        The arguments fed from ``DataBatch.data`` / ``DataBatch.label``.
    logger : logging.Logger
    context : Context or list of Context
        Several contexts split each batch between them (data parallelism).
    work_load_list : list of float, optional
        The share of the batch each context takes (equal by default).
    fixed_param_names : list of str, optional
        Parameters that are not learned.
    state_names : list of str, optional
        Arguments that are states the program sets (``set_states``), not learned.
    group2ctxs : optional
        Model parallelism over context groups; not supported.
    compression_params : dict, optional
        Gradient compression for the kvstore (``{'type': '2bit', 'threshold': 0.5}``).
    """

    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=cpu(), work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, Context):
            context = [context]
        self._context = list(context)
        work_load_list = [1] * len(self._context) if work_load_list is None else work_load_list
        if len(work_load_list) != len(self._context):
            raise MXNetError('Module: work_load_list has %d entries for %d contexts'
                             % (len(work_load_list), len(self._context)))
        self._work_load_list = list(work_load_list)
        if group2ctxs:
            raise MXNetError('Module: group2ctxs (model parallelism over context groups) is '
                             'not supported; each context runs the whole symbol')
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        check_input_names(symbol, data_names, 'data', True)
        check_input_names(symbol, label_names, 'label', False)
        check_input_names(symbol, state_names, 'state', True)
        check_input_names(symbol, fixed_param_names, 'fixed_param', True)
        inputs = data_names + label_names + state_names
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._params = None           # name -> Parameter, learned and auxiliary
        self._compression_params = compression_params
        self._optimizer = None
        self._trainer = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ---- checkpoints -------------------------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module of the checkpoint ``prefix``/``epoch`` (``save_checkpoint``'s files,
        or MXNet's); bind it before use. ``kwargs`` go to ``Module()``."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = '%s-%04d.states' % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` and, with
        ``save_optimizer_states``, ``prefix-%04d.states``."""
        self._symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
        param_name = '%s-%04d.params' % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = '%s-%04d.states' % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # ---- properties --------------------------------------------------------------------
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        """The names of the label inputs."""
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._check_bound('data_shapes')
        return self._data_shapes

    @property
    def label_shapes(self):
        self._check_bound('label_shapes')
        return self._label_shapes

    @property
    def output_shapes(self):
        self._check_bound('output_shapes')
        return self._exec_group.get_output_shapes()

    @property
    def _kvstore(self):
        """The store the Trainer aggregates through (None: one device, one process)."""
        return self._trainer._kvstore if self._trainer is not None else None

    @property
    def _update_on_kvstore(self):
        return self._trainer._update_on_kvstore if self._trainer is not None else None

    @property
    def _updater(self):
        """The updater that applies the optimizer here (None when the store does)."""
        if self._trainer is None or self._update_on_kvstore:
            return None
        return self._trainer._updaters[0]

    def _check_bound(self, what):
        if not self.binded:
            raise MXNetError('%s: call bind() first' % what)

    # ---- parameters --------------------------------------------------------------------
    def get_params(self):
        """``(arg_params, aux_params)`` on the CPU, the devices' current values."""
        if not self.params_initialized:
            raise MXNetError('get_params: the parameters are not initialized; call '
                             'init_params() first')
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Fill the parameters: from ``arg_params``/``aux_params`` where they have the
        name, else (with ``allow_missing``, or no dicts at all) from ``initializer``."""
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. init_params '
                          'call ignored.', stacklevel=2)
            return
        self._check_bound('init_params')

        def fill(desc, arr, given):
            if given is None:
                initializer(desc, arr)
            elif str(desc) in given:
                if given[str(desc)] is not arr:
                    value = given[str(desc)]
                    if tuple(value.shape) != tuple(arr.shape):
                        raise MXNetError('init_params: %s has shape %s in the given params but '
                                         'the symbol needs %s' % (desc, value.shape, arr.shape))
                    value.copyto(arr)
            elif not allow_missing:
                raise RuntimeError('%s is not presented' % desc)
            elif initializer is not None:
                initializer(desc, arr)
        attrs = self._symbol.attr_dict()
        for params, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name, arr in sorted(params.items()):
                fill(InitDesc(name, attrs.get(name)), arr, given)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign values (name -> NDArray); with ``allow_missing`` the others stay."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. set_params '
                          'call ignored.', stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    def _make_params(self, data_shapes, label_shapes):
        """The Parameters for the input shapes, with the learning-rate and weight-decay
        multipliers the symbol's attributes give."""
        params = make_params(self._symbol, self._param_names,
                             data_shapes + (label_shapes or []))
        attrs = self._symbol.attr_dict()
        for name, param in params.items():
            mine = attrs.get(name, {})
            lr_mult, wd_mult = _attr_float(mine, '__lr_mult__'), _attr_float(mine, '__wd_mult__')
            param.lr_mult = 1.0 if lr_mult is None else lr_mult
            param.wd_mult = wd_mult if wd_mult is not None else (
                1.0 if name.endswith(('_weight', '_gamma')) else 0.0)  # MXNet's Module rule
        return params

    def _set_grad_reqs(self, for_training, grad_req):
        """Each learned Parameter's grad_req for this binding."""
        for name in self._param_names:
            if not for_training or name in self._fixed_param_names:
                req = 'null'
            elif isinstance(grad_req, dict):
                req = grad_req.get(name, 'write')
            elif isinstance(grad_req, (list, tuple)):
                req = grad_req[self._symbol.list_arguments().index(name)]
            else:
                req = grad_req
            self._params[name].grad_req = req

    # ---- binding -----------------------------------------------------------------------
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Bind executors for inputs of ``data_shapes``/``label_shapes`` (lists of
        DataDesc or ``(name, shape)``); with ``shared_module`` the parameters are that
        module's (the buckets of a BucketingModule)."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if not for_training and inputs_need_grad:
            raise MXNetError('bind: inputs_need_grad=True needs for_training=True')
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded and
                    shared_module.params_initialized):
                raise MXNetError('bind: shared_module must be a bound Module with initialized '
                                 'parameters')
            shared_group = shared_module._exec_group
            self._params = shared_module._params
        else:
            fresh = self._make_params(self._data_shapes, self._label_shapes)
            if self._params is None or any(
                    tuple(fresh[n].shape) != tuple(self._params[n].shape) for n in fresh):
                for param in fresh.values():
                    param.initialize(init=Zero(), ctx=self._context)
                self._params = fresh
            self._set_grad_reqs(for_training, grad_req)
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes,
            self._label_shapes, self._param_names, for_training, inputs_need_grad,
            shared_group, logger=self.logger, fixed_param_names=self._fixed_param_names,
            grad_req=grad_req, state_names=self._state_names, params=self._params)
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            self._arg_params = {n: nd.zeros(self._params[n].shape, dtype=self._params[n].dtype)
                                for n in self._param_names}
            self._aux_params = {n: nd.zeros(self._params[n].shape, dtype=self._params[n].dtype)
                                for n in self._aux_names}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Rebind for new input shapes (e.g. another batch size), keeping the parameters."""
        self._check_bound('reshape')
        self._data_shapes, self._label_shapes = parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # ---- the optimizer -----------------------------------------------------------------
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Set up the optimizer and, through a Gluon Trainer, the kvstore.

        Gradients are scaled by ``1 / batch_size`` (the bound batch, summed over this
        process's devices) unless ``optimizer_params`` gives ``rescale_grad``; with a
        distributed store, also by ``1 / num_workers``, so the workers together take
        the step of one process on all their examples.
        """
        self._check_ready('init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring...')
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        batch_size = self._exec_group.batch_size
        idx2name = dict(enumerate(self._param_names))
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault('rescale_grad', 1.0 / batch_size)
            optimizer = opt.create(optimizer, param_idx2name=idx2name, **optimizer_params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != 1.0 / batch_size:
                warnings.warn('Optimizer created manually outside Module but rescale_grad is '
                              'not normalized to 1.0/batch_size (%s vs. %s); the Module uses '
                              'it as given (and divides by the number of workers of a '
                              'distributed store). Is this intended?'
                              % (optimizer.rescale_grad, 1.0 / batch_size), stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise MXNetError('init_optimizer: optimizer must be a name or an Optimizer, got %s'
                             % type(optimizer).__name__)
        self._take_multipliers(optimizer)
        learned = [self._params[n] for n in self._param_names]
        self._trainer = Trainer(learned, optimizer, kvstore=kvstore,
                                compression_params=self._compression_params, overlap=False)
        # as MXNet's Module: the store holds worker 0's weights before the first batch
        self._trainer.init_kvstore(batch_size=1)
        store = self._kvstore
        if store is not None and store.restarts_allowed:
            # fit() would start a replacement worker at the first batch again, out of
            # step with the others: refuse rather than hang
            raise MXNetError('Module: this job replaces dead workers (the launcher\'s '
                             '--max-restarts), which Module.fit cannot resume in step with the '
                             'others; launch without --max-restarts, or train with a Gluon '
                             'Trainer and Trainer.recover()')
        self._optimizer = self._trainer.optimizer
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _take_multipliers(self, optimizer):
        """Multipliers the optimizer was given by index or name (``set_lr_mult``) win over
        the symbol's attributes; the Parameters carry them to the Trainer."""
        for i, name in enumerate(self._param_names):
            param = self._params[name]
            for table, attr in ((optimizer.lr_mult, 'lr_mult'), (optimizer.wd_mult, 'wd_mult')):
                for key in (i, name):
                    if key in table:
                        setattr(param, attr, float(table[key]))
                        break

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer and store (the buckets of a
        BucketingModule share one)."""
        if not shared_module.optimizer_initialized:
            raise MXNetError('borrow_optimizer: the shared module has no optimizer yet')
        self._optimizer = shared_module._optimizer
        self._trainer = shared_module._trainer
        self.optimizer_initialized = True

    # ---- computing ---------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Compute the outputs of ``data_batch`` (rebinding first when its shapes differ
        from the bound ones); ``is_train`` defaults to ``for_training``."""
        self._check_ready('forward')
        current = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):
            shapes = []
            for i in range(len(data_batch[0].data)):
                shape = data_batch[0].data[i].shape
                if any(b.data[i].shape != shape for b in data_batch):
                    raise MXNetError('forward: the batches of a list must have the same shapes')
                shapes.append((len(data_batch) * shape[0],) + tuple(shape[1:]))
            new = tuple(shapes)
        else:
            new = tuple(tuple(d.shape) for d in data_batch.data)
        if current != new:
            provided = getattr(data_batch, 'provide_data', None)
            data_shapes = provided or [DataDesc(d.name, s, d.dtype, d.layout)
                                       for d, s in zip(self._data_shapes, new)]
            provided = getattr(data_batch, 'provide_label', None)
            label = getattr(data_batch, 'label', None)
            if provided:
                label_shapes = provided
            elif label and self._label_shapes:
                label_shapes = [DataDesc(d.name, lbl.shape, d.dtype, d.layout)
                                for d, lbl in zip(self._label_shapes, label)]
            else:
                label_shapes = None
            self.reshape(data_shapes, label_shapes)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Compute the gradients of the last forward (``out_grads``: the outputs'
        gradients, for outputs that are not loss layers)."""
        self._check_ready('backward')
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """One optimizer step with the gradients of the last backward."""
        self._check_ready('update', optimizer=True)
        self._params_dirty = True
        if self._param_names:
            # the gradients are already scaled for the bound batch by rescale_grad
            self._trainer.step(1, ignore_stale_grad=True)

    def get_outputs(self, merge_multi_context=True):
        self._check_ready('get_outputs')
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready('get_input_grads')
        if not self.inputs_need_grad:
            raise MXNetError('get_input_grads: bind with inputs_need_grad=True first')
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._check_ready('get_states')
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready('set_states')
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    # ---- optimizer states, monitor -----------------------------------------------------
    def save_optimizer_states(self, fname):
        """Save the optimizer and its states (never a pickle)."""
        self._check_ready('save_optimizer_states', optimizer=True)
        self._trainer.save_states(fname)

    def load_optimizer_states(self, fname):
        """Load what ``save_optimizer_states`` wrote."""
        self._check_ready('load_optimizer_states', optimizer=True)
        self._trainer.load_states(fname)
        self._optimizer = self._trainer.optimizer

    def install_monitor(self, mon):
        self._check_bound('install_monitor')
        self._exec_group.install_monitor(mon)
