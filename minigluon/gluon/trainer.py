"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

``step(batch_size)`` is ``allreduce_grads()`` (the kvstore sums each parameter's
gradients over devices and workers) followed by ``update(batch_size)``. Gradients
are rescaled by ``1 / (batch_size * num_workers)``: with a distributed store, N
workers each calling ``step(b)`` take the same step as one process calling
``step(N * b)`` on the union of their batches (MXNet sums instead). The Trainer never
touches the network; the kvstore does.
"""
import numpy as np

from .. import optimizer as opt
from ..base import MXNetError
from ..kvstore import KVStoreBase, create as create_kvstore
from ..ndarray.serialization import atomic_write
from .parameter import Parameter, ParameterDict

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
        of on every device. Default: True whenever a kvstore is used.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise MXNetError('Trainer: params must be a ParameterDict, dict or list of '
                             'Parameters, got %s' % type(params).__name__)
        self._params, seen = [], set()
        for p in params:
            if not isinstance(p, Parameter):
                raise MXNetError('Trainer: expected Parameters, got %s' % type(p).__name__)
            if id(p) not in seen:  # shared parameters are updated once
                seen.add(id(p))
                self._params.append(p)
        self._keys = self._make_keys()
        self._compression_params = compression_params
        self._kvstore_arg = kvstore
        self._update_on_kvstore_arg = update_on_kvstore
        self._kvstore = None
        self._update_on_kvstore = False
        self._ready = False
        self._contexts = None
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad

    def _make_keys(self):
        """kvstore keys from parameter names: identical in every process of a job."""
        keys, counts = [], {}
        for p in self._params:
            name = p.name
            counts[name] = counts.get(name, 0) + 1
            keys.append(name if counts[name] == 1 else '%s#%d' % (name, counts[name] - 1))
        return keys

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = dict(zip(self._keys, self._params))  # lr_mult/wd_mult by kvstore key
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise MXNetError('Trainer: optimizer_params must be None when optimizer is an '
                                 'Optimizer instance; set them on the instance')
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict,
                                         **(optimizer_params or {}))
        self._updater = None

    # ---- properties -------------------------------------------------------------------
    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        return self._optimizer

    def set_learning_rate(self, lr):
        """Set a new learning rate (also on the kvstore's copy of the optimizer)."""
        self._optimizer.set_learning_rate(lr)
        if self._ready and self._update_on_kvstore:
            self._kvstore.set_optimizer(self._optimizer)

    # ---- set-up on first use (shapes may be deferred until the first forward) --------
    def _make_ready(self, batch_size=None):
        """The lazy set-up, once: contexts, the store and the updater; with a store, the
        first sync (the optimizer, rescaled for ``batch_size`` when it is known, so it
        goes once with its final ``rescale_grad``; then every key)."""
        if self._ready:
            return
        self._init_kvstore()
        if batch_size is not None:
            self._set_rescale(batch_size)
        if self._kvstore is not None:
            self._sync_with_store()
        self._ready = True

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

    def _init_kvstore(self):
        """Choose the store and whether it updates (once: the updater marks it done)."""
        if self._updater is not None:
            return
        self._contexts = self._check_contexts()
        kv, arg = None, self._kvstore_arg
        update_on_kvstore = True
        if isinstance(arg, KVStoreBase):
            kv = arg
        elif isinstance(arg, str):
            if len(self._contexts) > 1 or 'dist' in arg:
                kv = create_kvstore(arg)
                if arg == 'local':
                    largest = max((int(np.prod(p.shape)) for p in self._params), default=0)
                    update_on_kvstore = largest <= _LOCAL_UPDATE_LIMIT
        elif arg is not None:
            raise MXNetError('Trainer: kvstore must be a name, a KVStore or None, got %r' % arg)
        if self._update_on_kvstore_arg is not None:
            update_on_kvstore = bool(self._update_on_kvstore_arg)
        if kv is None:
            if self._update_on_kvstore_arg:
                raise MXNetError('Trainer: update_on_kvstore=True needs a kvstore; with one '
                                 'device pass kvstore=mx.kv.create(...) explicitly')
            update_on_kvstore = False
        elif kv.type.startswith('dist_async') and not update_on_kvstore:
            raise MXNetError("Trainer: kvstore '%s' applies updates on the servers as they "
                             'arrive; it needs update_on_kvstore=True' % kv.type)
        elif kv.restarts_allowed and not update_on_kvstore:
            raise MXNetError('Trainer: this job replaces a dead worker (PS_WORKER_RECOVERY_'
                             "TIMEOUT, which the launcher's --max-restarts sets), but with "
                             'update_on_kvstore=False the optimizer state lives in each worker '
                             'and a replacement could not get it back; keep the optimizer on '
                             'the servers (update_on_kvstore=True, the default) or launch '
                             'without --max-restarts')
        self._kvstore, self._update_on_kvstore = kv, update_on_kvstore
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
        elif self._compression_params:
            raise MXNetError('Trainer: compression_params need a kvstore (several devices or a '
                             'distributed store)')
        elif len(self._contexts) > 1:
            raise MXNetError('Trainer(kvstore=None) cannot aggregate the gradients of %d devices; '
                             "use kvstore='device' or 'local'" % len(self._contexts))
        # Devices hold identical weights and (after allreduce) identical gradients: update
        # once on the first and copy, so step counts and states exist once.
        self._updater = opt.get_updater(self._optimizer)

    def _sync_with_store(self):
        """First use of the store: optimizer (with its final rescale_grad), then the keys.

        Worker 0's values win and every worker starts from them. Sending the optimizer
        before the keys means no push can reach a server that lacks it.
        """
        kv = self._kvstore
        if kv.is_recovery:
            self._rejoin_store()
            return
        if self._update_on_kvstore:
            kv.set_optimizer(self._optimizer)
        for key, p in zip(self._keys, self._params):
            kv.init(key, p.list_data()[0])
            kv.pull(key, p.list_data())

    def _rejoin_store(self):
        """In a replacement worker the servers hold the weights, the optimizer and its
        state: take the optimizer, and resume every trained key at the first step whose
        pushes from this rank the servers do not all hold (the one its predecessor died
        in), with the weights from before that step."""
        kv = self._kvstore
        optimizer = kv.get_optimizer()
        if optimizer is None:  # the job is so young that the servers wait for it
            kv.set_optimizer(self._optimizer)
            optimizer = self._optimizer
        for key, p in zip(self._keys, self._params):
            kv.init(key, p.list_data()[0])  # what the servers hold stays
        trained = [k for k, p in zip(self._keys, self._params) if p.grad_req != 'null']
        steps = min((kv.num_pushes(k) for k in trained), default=0)
        for key in trained:
            kv.resume(key, steps)  # a push of that step the servers hold is not counted twice
        for key, p in zip(self._keys, self._params):
            kv.pull(key, p.list_data())
        optimizer.param_dict = self._optimizer.param_dict
        optimizer.num_update = steps
        optimizer._index_update_count = dict.fromkeys(trained, steps)
        self._optimizer = optimizer

    def recover(self):
        """In a worker that replaces a dead one (``kvstore.is_recovery``), take from the
        servers now, instead of at the first ``step``, the weights as the job has them,
        the optimizer (its state stays on the servers) and the update count, and return
        that count: the number of steps the job has completed, where the program resumes.
        The parameters' shapes must be known (run a forward pass first)."""
        self._init_kvstore()
        if self._kvstore is None or not self._kvstore.is_recovery:
            raise MXNetError('Trainer.recover() is for a worker that replaces a dead one '
                             '(kvstore.is_recovery); this one starts with the job')
        self._make_ready()
        return self._optimizer.num_update

    def _rescale(self, batch_size):
        workers = self._kvstore.num_workers if self._kvstore is not None else 1
        return self._scale / (batch_size * workers)

    # ---- the training step ------------------------------------------------------------
    def step(self, batch_size, ignore_stale_grad=False):
        """One optimizer step: ``allreduce_grads()`` then ``update(batch_size)``.

        Gradients are scaled by ``1 / batch_size`` (times ``1 / num_workers`` with a
        distributed store), so ``batch_size`` is the number of samples this process
        used for the gradients, summed over its devices.
        """
        self._make_ready(batch_size)
        self._rescale_for(batch_size)
        if not ignore_stale_grad:
            self._check_fresh()  # before any push: stale gradients must not reach the store
        self.allreduce_grads()
        self._update(ignore_stale_grad)

    def _check_fresh(self):
        for p in self._params:
            stale = p.stale_grad_contexts() if p.grad_req != 'null' else ()
            if stale:
                raise UserWarning(_stale_message(p, stale[0]))

    def _set_rescale(self, batch_size):
        """Set the optimizer's ``rescale_grad`` for ``batch_size``; True if it changed."""
        scale = self._rescale(batch_size)
        changed = scale != self._optimizer.rescale_grad
        self._optimizer.rescale_grad = scale
        return changed

    def _rescale_for(self, batch_size):
        if self._set_rescale(batch_size) and self._update_on_kvstore:
            self._kvstore.set_optimizer(self._optimizer)  # its copy must rescale too

    def allreduce_grads(self):
        """Sum each parameter's gradients over devices (and workers) through the kvstore.

        Call it, then adjust gradients (e.g. ``clip_global_norm``), then ``update``.
        Not available with ``update_on_kvstore``, where the store applies the update.
        """
        self._make_ready()
        if self._kvstore is None:
            return
        for i, (key, p) in enumerate(zip(self._keys, self._params)):
            if p.grad_req == 'null':
                continue
            self._kvstore.push(key, p.list_grad(), priority=-i)
            if not self._update_on_kvstore:
                self._kvstore.pull(key, p.list_grad(), priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer to every parameter (after ``allreduce_grads``)."""
        self._init_kvstore()  # enough to know; a refused call must not sync with the store
        if self._update_on_kvstore:
            raise MXNetError('Trainer.update() is not available with update_on_kvstore=True: '
                             'the kvstore applies the update during allreduce_grads(); call '
                             'step() or create the Trainer with update_on_kvstore=False')
        self._make_ready(batch_size)
        self._rescale_for(batch_size)
        if not ignore_stale_grad:
            self._check_fresh()
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad):
        for i, (key, p) in enumerate(zip(self._keys, self._params)):
            if p.grad_req == 'null':
                continue
            if self._kvstore is not None and self._update_on_kvstore:
                self._kvstore.pull(key, p.list_data(), priority=-i)
            else:
                data = p.list_data()
                if not ignore_stale_grad or not p.stale_grad_contexts():
                    self._updater(key, p.list_grad()[0], data[0])
                    for d in data[1:]:
                        data[0].copyto(d)
            p.mark_grad_used()

    # ---- states -----------------------------------------------------------------------
    def save_states(self, fname):
        """Save optimizer states (and the optimizer) to ``fname``; never a pickle."""
        self._make_ready()
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            blob = self._updater.get_states(dump_optimizer=True)
            atomic_write(fname, lambda f: f.write(blob))

    def load_states(self, fname):
        """Load what ``save_states`` wrote; training continues exactly where it stopped."""
        self._make_ready()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            local = getattr(self._kvstore, '_updater', None)  # in-process stores only
            if local is not None:
                self._optimizer = local.optimizer
        else:
            with open(fname, 'rb') as f:
                self._updater.set_states(f.read(), ctx=self._contexts[0])
            self._optimizer = self._updater.optimizer
        self._optimizer.param_dict = dict(zip(self._keys, self._params))
        # The saved optimizer carries the last step's rescale_grad; _scale stays the user's.
