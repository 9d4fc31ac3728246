"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

``step(batch_size)`` is ``allreduce_grads()`` (the kvstore sums each parameter's
gradients over devices and workers) followed by ``update(batch_size)``. Gradients
are rescaled by ``1 / (batch_size * num_workers)``: with a distributed store, N
workers each calling ``step(b)`` take the same step as one process calling
``step(N * b)`` on the union of their batches (MXNet sums instead). The Trainer never
touches the network; the kvstore does.

As in MXNet 1.x, the kvstore key and the optimizer's index of a parameter is its
position in the Trainer (a ParameterDict is taken in the sorted order of its names,
so every worker of a job numbers the parameters alike), and the store is chosen on
first use: ``update_on_kvstore`` follows the user, else ``MXNET_UPDATE_ON_KVSTORE``
(default 1), except where only one choice can work.

Summing the gradients over devices and workers is the gradient reducer's
(reducer.py): with a store that can, it pushes each gradient while backward still
runs and lets the next forward wait only for the weights it uses (``overlap``).
"""
import os
import weakref

import numpy as np

from .. import optimizer as opt
from .. import profiler
from ..base import MXNetError, MXNetTypeError, MXNetUsageError, MXNetValueError
from ..kvstore import KVStoreBase, create as create_kvstore
from ..ndarray.serialization import atomic_write
from .parameter import DeferredInitializationError, Parameter, ParameterDict
from .reducer import GradientReducer, overlap_from_env, weak_hook

# A 'local' store updating huge arrays on the host would be slow: MXNet's limit.
_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16


def _stale_message(param, ctx):
    return ('Gradient of Parameter `%s` on context %s has not been updated by backward since '
            'last `step`. This could mean a bug in your model that made it only use a subset of '
            'the Parameters (Blocks) for this iteration. If you are intentionally only using a '
            'subset, call step with ignore_stale_grad=True to suppress this warning and skip '
            'updating of Parameters with stale gradient' % (param.name, ctx))


class Trainer:
    """Applies an Optimizer on a set of Parameters.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        The parameters to optimise; one shared by several blocks counts once.
    optimizer : str or Optimizer
    optimizer_params : dict, optional
        Keyword arguments of the optimizer when it is given by name.
    kvstore : str or KVStore, default 'device'
        Where gradients are aggregated. With a name and a single device, no store is
        needed and none is created (as in MXNet), unless the name is distributed.
    compression_params : dict, optional
        e.g. ``{'type': '2bit', 'threshold': 0.5}``.
    update_on_kvstore : bool, optional
        Run the optimizer inside the kvstore (on the servers when distributed) instead
        of on the devices. By default ``MXNET_UPDATE_ON_KVSTORE`` (1) decides, except
        that a 'local' store holding a huge parameter, and a store that cannot run an
        optimizer, update on the devices, and ``dist_async`` always updates on the
        servers. Asking for a combination that cannot work raises ValueError.
    overlap : bool, optional
        Push each gradient while backward is still running and let the next forward
        wait only for the weights it uses (see reducer.py), with stores that can
        (``kvstore.overlaps``: the distributed stores, and one's own that implements
        ``pull_async``). By default ``MINIGLUON_KVSTORE_OVERLAP`` (1) decides for them;
        other stores do not overlap unless asked.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None, overlap=None):
        if isinstance(params, ParameterDict):
            # Ordered by path in the model (``features.0.weight``), which every process
            # that builds the same model agrees on; 1.x orders by name, whose counters
            # depend on what else the process built. Positions are the kvstore keys.
            params = sorted(params.values(), key=lambda p: (p._structural_name, p.name))
        elif isinstance(params, dict):
            params = [params[name] for name in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise MXNetValueError('Trainer: params must be a ParameterDict, dict or list of '
                                  'Parameters, got %s' % type(params).__name__)
        self._params, seen = [], set()
        for p in params:
            if not isinstance(p, Parameter):
                raise MXNetValueError('Trainer: expected Parameters, got a list of %s'
                                      % type(p).__name__)
            if id(p) not in seen:  # shared parameters are updated once
                seen.add(id(p))
                self._params.append(p)
        self._param2idx = {id(p): i for i, p in enumerate(self._params)}
        self._compression_params = compression_params
        self._kvstore_params = {'kvstore': kvstore, 'update_on_kvstore': update_on_kvstore}
        self._contexts = None
        self._kvstore = None
        self._overlap_arg = overlap
        self._reducer = GradientReducer(self._params)
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad
        self._reset_kvstore()
        me = weakref.ref(self)
        for p in self._params:
            p.register_hook('load', weak_hook(me, Trainer._on_load))

    def _on_load(self, _param):
        """A parameter took a value from a file: the store's copy of it is stale."""
        if self._kv_initialized and self._update_on_kvstore:
            self._reset_kvstore()

    def _param_dict(self):
        """The optimizer's view of the parameters (lr_mult, wd_mult) by kvstore key."""
        return dict(enumerate(self._params))

    def _init_optimizer(self, optimizer, optimizer_params):
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise MXNetError('Trainer: optimizer_params must be None when optimizer is an '
                                 'Optimizer instance; set them on the instance')
            self._optimizer = optimizer
            self._optimizer.param_dict = self._param_dict()  # not a copy: lr_mult stays live
        else:
            self._optimizer = opt.create(optimizer, param_dict=self._param_dict(),
                                         **(optimizer_params or {}))
        # Devices hold identical weights and (after allreduce) identical gradients: one
        # updater updates the first device's copy, which is then copied to the others.
        self._updaters = [opt.get_updater(self._optimizer)]

    # ---- properties -------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The optimizer's current learning rate (its scheduler's, when it has one)."""
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """The Optimizer the Trainer updates with (the servers run a copy of it when distributed)."""
        return self._optimizer

    def set_learning_rate(self, lr):
        """Set a new learning rate (also on the kvstore's copy of the optimizer)."""
        self._optimizer.set_learning_rate(lr)
        if self._kv_initialized and self._update_on_kvstore:
            self._send_optimizer('learning rate')

    # ---- the kvstore, set up on first use (shapes may be deferred until a forward) ----
    def _reset_kvstore(self):
        """Forget the store (e.g. after new weights were loaded): the next step sets up a
        new one from the parameters' current values."""
        if self._kvstore is not None and self._kvstore.is_distributed:
            raise MXNetError('Cannot reset a distributed KVStore: every worker would have to '
                             'do it at the same time')
        self._reducer.detach()
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _check_contexts(self):
        contexts = None
        for p in self._params:
            ctx = p.list_ctx()
            if contexts is None:
                contexts = ctx
            elif ctx != contexts:
                raise MXNetError('Trainer: all Parameters must live on the same contexts; %s is '
                                 'on %s but others are on %s' % (p.name, ctx, contexts))
        return contexts or []

    def _create_kvstore(self, arg):
        """The store for ``arg`` and whether it should update, before the user's say."""
        update_on_kvstore = bool(int(os.environ.get('MXNET_UPDATE_ON_KVSTORE', '1')))
        if arg is None:
            return None, False
        if isinstance(arg, KVStoreBase):
            kv = arg
        elif isinstance(arg, str):
            # (as MXNet decides, by the name: the store does not exist yet)
            if len(self._contexts) == 1 and not arg.lower().startswith('dist'):
                return None, False  # one device, one process: nothing to aggregate
            kv = create_kvstore(arg)
            if arg == 'local':
                largest = max((int(np.prod(p.shape)) for p in self._params), default=0)
                if largest > _LOCAL_UPDATE_LIMIT:
                    update_on_kvstore = False
        else:
            raise MXNetTypeError('Trainer: kvstore must be a KVStore, a type name or None, got '
                                 '%r' % (arg,))
        return kv, update_on_kvstore and kv.is_capable(KVStoreBase.OPTIMIZER)

    def _init_kvstore(self, batch_size=None):
        """Choose the store and whether it updates; hand it the optimizer.

        With ``batch_size`` (the first ``step``), the optimizer goes to the store
        already rescaled for it, so a distributed store receives it once.
        """
        self._contexts = self._check_contexts()
        asked = self._kvstore_params['update_on_kvstore']
        kv, update_on_kvstore = self._create_kvstore(self._kvstore_params['kvstore'])
        if kv is not None and kv.is_async:
            if asked is False:
                raise MXNetValueError('Please set update_on_kvstore=True when training in async '
                                      "mode: kvstore '%s' applies each push as it arrives"
                                      % kv.type)
            update_on_kvstore = True
        if asked is not None:
            update_on_kvstore = bool(asked)
        if kv is None:
            if asked:
                raise MXNetValueError('Trainer: update_on_kvstore=True needs a kvstore; with one '
                                      'device pass kvstore=mx.kv.create(...) explicitly')
            if self._compression_params:
                raise MXNetError('Trainer: compression_params need a kvstore (several devices '
                                 'or a distributed store)')
            if len(self._contexts) > 1:
                raise MXNetError('Trainer(kvstore=None) cannot aggregate the gradients of %d '
                                 "devices; use kvstore='device' or 'local'" % len(self._contexts))
            update_on_kvstore = None
        elif update_on_kvstore and not kv.is_capable(KVStoreBase.OPTIMIZER):
            raise MXNetValueError('Please set update_on_kvstore=False when training with %s: '
                                  'it cannot run an optimizer' % type(kv).__name__)
        elif kv.restarts_allowed and not update_on_kvstore:
            raise MXNetValueError('Trainer: this job replaces a dead worker (PS_WORKER_RECOVERY_'
                                  "TIMEOUT, which the launcher's --max-restarts sets), but with "
                                  'update_on_kvstore=False the optimizer state lives in each '
                                  'worker and a replacement could not get it back; keep the '
                                  'optimizer on the servers (update_on_kvstore=True, the '
                                  'default) or launch without --max-restarts')
        if batch_size is not None:
            self._optimizer.rescale_grad = self._rescale(batch_size, kv)
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            # before any key: no push may reach a store without it (a replacement worker
            # takes the servers' optimizer instead)
            if update_on_kvstore and not kv.is_recovery:
                kv.set_optimizer(self._optimizer)
        self._kvstore, self._update_on_kvstore = kv, update_on_kvstore
        if kv is not None:
            overlap = self._overlap_arg
            if overlap is None:
                overlap = kv.overlaps and overlap_from_env()
            self._reducer.attach(kv, update_on_kvstore, overlap)
        self._kv_initialized = True

    def _init_params(self):
        """Put the parameters not yet in the store there (worker 0's values win and every
        device and worker starts from them); those still deferred wait for a later call."""
        waiting = []
        for p in self._params_to_init:
            try:
                data = p.list_data()
            except DeferredInitializationError:
                waiting.append(p)
                continue
            if self._kvstore is not None:
                self._kvstore.broadcast(self._param2idx[id(p)], data[0], out=data)
        self._params_to_init = waiting

    def init_kvstore(self, batch_size=None):
        """Set up the kvstore and put the parameters there now rather than at the first
        ``step``, so every device and worker computes its first gradients with worker 0's
        weights (``mx.mod.Module`` calls it from ``init_optimizer``, as MXNet's Module
        initializes its store there). ``batch_size`` is that of the coming steps."""
        self._prepare(batch_size)

    def _prepare(self, batch_size=None):
        if not self._kv_initialized:
            self._init_kvstore(batch_size)
        if self._params_to_init:
            if self._kvstore is not None and self._kvstore.is_recovery:
                self._rejoin_store()
            else:
                self._init_params()

    def _rejoin_store(self):
        """In a replacement worker the servers hold the weights, the optimizer and its
        state: take the optimizer, and resume every trained key at the first step whose
        pushes from this rank the servers do not all hold (the one its predecessor died
        in), with the weights from before that step."""
        kv = self._kvstore
        for p in self._params:
            try:
                p.list_data()
            except DeferredInitializationError:
                raise MXNetError('Trainer: a replacement worker takes every parameter from the '
                                 'servers at once, but %s has no shape yet; run a forward pass '
                                 'before the first step or recover()' % p.name) from None
        optimizer = kv.get_optimizer()
        if optimizer is None:  # the job is so young that the servers wait for it
            kv.set_optimizer(self._optimizer)
            optimizer = self._optimizer
        for key, p in enumerate(self._params):
            kv.init(key, p.list_data()[0])  # what the servers hold stays
        trained = [k for k, p in enumerate(self._params) if p.grad_req != 'null']
        steps = min((kv.num_pushes(k) for k in trained), default=0)
        for key in trained:
            kv.resume(key, steps)  # a push of that step the servers hold is not counted twice
        for key, p in enumerate(self._params):
            kv.pull(key, p.list_data())
        optimizer.param_dict = self._optimizer.param_dict
        optimizer.num_update = steps
        optimizer._index_update_count = dict.fromkeys(trained, steps)
        self._optimizer = optimizer
        self._updaters = [opt.get_updater(optimizer)]
        self._params_to_init = []

    def recover(self):
        """In a worker that replaces a dead one (``kvstore.is_recovery``), take from the
        servers now, instead of at the first ``step``, the weights as the job has them,
        the optimizer (its state stays on the servers) and the update count, and return
        that count: the number of steps the job has completed, where the program resumes.
        The parameters' shapes must be known (run a forward pass first)."""
        self._prepare()
        if self._kvstore is None or not self._kvstore.is_recovery:
            raise MXNetError('Trainer.recover() is for a worker that replaces a dead one '
                             '(kvstore.is_recovery); this one starts with the job')
        return self._optimizer.num_update

    def _rescale(self, batch_size, kv):
        workers = kv.num_workers if kv is not None else 1
        return self._scale / (batch_size * workers)

    def _check_and_rescale_grad(self, batch_size):
        scale = self._rescale(batch_size, self._kvstore)
        if scale != self._optimizer.rescale_grad:
            self._optimizer.rescale_grad = scale
            if self._update_on_kvstore:
                self._send_optimizer('batch size')  # its copy must rescale too

    def _send_optimizer(self, what):
        """Give the store the optimizer as changed now (see
        ``GradientReducer.before_optimizer_change``)."""
        self._reducer.before_optimizer_change(what)
        self._kvstore.set_optimizer(self._optimizer)

    # ---- the training step ------------------------------------------------------------
    def step(self, batch_size, ignore_stale_grad=False):
        """One optimizer step: ``allreduce_grads()`` then ``update(batch_size)``.

        Gradients are scaled by ``1 / batch_size`` (times ``1 / num_workers`` with a
        distributed store), so ``batch_size`` is the number of samples this process
        used for the gradients, summed over its devices.
        """
        start = profiler.now_if_recording()
        self._prepare(batch_size)
        self._check_and_rescale_grad(batch_size)
        if not ignore_stale_grad:
            self._check_fresh()  # before any push: stale gradients must not reach the store
        reduce_start = profiler.now_if_recording()
        self._allreduce_grads()
        if reduce_start is not None:
            profiler.record_range(reduce_start, 'gluon', 'Trainer.allreduce_grads')
        update_start = profiler.now_if_recording()
        self._update(ignore_stale_grad)
        if update_start is not None:
            profiler.record_range(update_start, 'gluon', 'Trainer.update')
        if start is not None:
            profiler.record_range(start, 'gluon', 'Trainer.step', {'batch_size': batch_size})

    def _check_fresh(self):
        for p in self._params:
            stale = p.stale_grad_contexts() if p.grad_req != 'null' else ()
            if stale:
                raise UserWarning(_stale_message(p, stale[0]))

    def allreduce_grads(self):
        """Sum each parameter's gradients over devices (and workers) through the kvstore.

        Call it, then adjust gradients (e.g. ``clip_global_norm``), then ``update``.
        Not available with ``update_on_kvstore``, where the store applies the update.
        """
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            raise MXNetUsageError('allreduce_grads() when parameters are updated on kvstore is '
                                  'not supported. Try setting `update_on_kvstore` to False '
                                  'when creating trainer.')
        self._allreduce_grads()

    def _allreduce_grads(self):
        if self._kvstore is not None:
            self._reducer.reduce()

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer to every parameter (after ``allreduce_grads``)."""
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            raise MXNetUsageError('update() when parameters are updated on kvstore is not '
                                  'supported. Try setting `update_on_kvstore` to False when '
                                  'creating trainer.')
        self._check_and_rescale_grad(batch_size)
        if not ignore_stale_grad:
            self._check_fresh()
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad):
        updater = self._updaters[0]
        for i, p in enumerate(self._params):
            if p.grad_req == 'null':
                continue
            if not (self._kvstore is not None and self._update_on_kvstore):
                data = p.list_data()
                if not ignore_stale_grad or not p.stale_grad_contexts():
                    updater(i, p._grad[0], data[0])
                    for d in data[1:]:
                        data[0].copyto(d)
            p.mark_grad_used()
        self._reducer.arm(ready=not self._params_to_init)

    # ---- states -----------------------------------------------------------------------
    def save_states(self, fname):
        """Save optimizer states (and the optimizer) to ``fname``; never a pickle.

        The parameters' ``lr_mult`` and ``wd_mult`` are not saved: they are the
        Parameters' own.
        """
        self._prepare()
        self._reducer.wait()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise MXNetError('Cannot save trainer states while some parameters are not '
                                 'yet initialized in the kvstore; run a forward pass first')
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            blob = self._updaters[0].get_states(dump_optimizer=True)
            atomic_write(fname, lambda f: f.write(blob))

    def load_states(self, fname):
        """Load what ``save_states`` wrote; training continues exactly where it stopped."""
        self._prepare()
        self._reducer.wait()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            local = getattr(self._kvstore, '_updater', None)  # in-process stores only
            if local is not None:
                self._optimizer = local.optimizer
        else:
            with open(fname, 'rb') as f:
                blob = f.read()
            try:
                self._updaters[0].set_states(blob, ctx=self._contexts[0])
            except MXNetError as exc:
                raise MXNetError('Trainer.load_states: %s: %s' % (fname, exc)) from None
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = self._param_dict()
        # The saved optimizer carries the last step's rescale_grad; _scale stays the user's.
