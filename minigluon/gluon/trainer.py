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

With a distributed store the communication overlaps the computation (``overlap``,
``MINIGLUON_KVSTORE_OVERLAP``): a gradient is pushed as soon as backward has completed
it, on every device, with the pull of its result started right behind it; ``step``
pushes only what backward did not, and with ``update_on_kvstore`` returns without
waiting: ``Parameter.data()`` waits for that parameter's new weights when the next
forward reaches it. The numbers are those of the plain step. Backward can only push
what the step will push: it does so for ``grad_req='write'`` parameters that the
previous step saw written as many times (one backward, or one per device) as this
step has now, when the program did not take the gradients between backward and step
(``grad()``, ``list_grad()``, e.g. to clip them; the next step then pushes in
``step``). A pushed gradient is read-only until ``step``.
"""
import os
import warnings

import numpy as np

from .. import autograd
from .. import optimizer as opt
from .. import profiler
from ..base import MXNetError, MXNetTypeError, MXNetUsageError, MXNetValueError
from ..context import cpu
from ..kvstore import KVStoreBase, create as create_kvstore
from ..ndarray import NDArray
from ..ndarray.serialization import atomic_write
from .parameter import DeferredInitializationError, Parameter, ParameterDict

# A 'local' store updating huge arrays on the host would be slow: MXNet's limit.
_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16
_OVERLAP_VARIABLE = 'MINIGLUON_KVSTORE_OVERLAP'
BUCKET_BYTES = 1 << 20  # gradients made final during backward go out together up to this


def _overlap_from_env():
    value = os.environ.get(_OVERLAP_VARIABLE, '1').strip()
    if value not in ('0', '1'):
        raise MXNetValueError('%s=%r: use 1 to overlap kvstore communication with backward '
                              '(the default) or 0 to communicate in Trainer.step only'
                              % (_OVERLAP_VARIABLE, value))
    return value == '1'


def _stale_message(param, ctx):
    return ('Gradient of Parameter `%s` on context %s has not been updated by backward since '
            'last `step`. This could mean a bug in your model that made it only use a subset of '
            'the Parameters (Blocks) for this iteration. If you are intentionally only using a '
            'subset, call step with ignore_stale_grad=True to suppress this warning and skip '
            'updating of Parameters with stale gradient' % (param.name, ctx))


def _pushpull_keys(kv, keys, values, outs):
    """``pushpull`` of several keys in as few round trips as the store allows.

    A store with its own ``pushpull`` (MXNet's contract: one key a call) is called once
    per key; one that pushes and pulls through KVStoreBase's ``pushpull`` gets all the
    keys at once.
    """
    if type(kv).pushpull is KVStoreBase.pushpull:
        kv.pushpull(list(keys), list(values), out=list(outs))
        return
    for k, v, o in zip(keys, values, outs):
        kv.pushpull(k, v, out=o)


class _NewWeights:
    """The pull of a parameter's new weights into ``buffer``: ``wait()`` (from
    ``Parameter.data()`` and friends) lets it finish and copies them into every device's
    array."""
    __slots__ = ('_pull', '_buffer', '_param')

    def __init__(self, pull, buffer, param):
        self._pull, self._buffer, self._param = pull, buffer, param

    def wait(self):
        self._pull.wait()
        with autograd.pause():  # (a forward under record() may be what asks)
            for d in self._param._data:
                self._buffer.copyto(d)


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
        wait only for the weights it uses (see the module's documentation). By default
        ``MINIGLUON_KVSTORE_OVERLAP`` (1) decides, for distributed stores only.
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
                p._set_trainer(self)
        self._param2idx = {id(p): i for i, p in enumerate(self._params)}
        self._compression_params = compression_params
        self._kvstore_params = {'kvstore': kvstore, 'update_on_kvstore': update_on_kvstore}
        self._contexts = None
        self._kvstore = None
        self._overlap_arg = overlap
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad
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
        if self._kvstore is not None and 'dist' in self._kvstore.type:
            raise MXNetError('Cannot reset a distributed KVStore: every worker would have to '
                             'do it at the same time')
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)
        self._overlap = False         # communicate during backward and the next forward
        self._hold = False            # the servers apply those pushes after every step
        self._overlapping = False     # this backward may push (read by Parameters' hooks)
        self._expected = {}           # index -> gradient writes per device in the last step
        self._early = {}              # index -> its gradient's read-only arrays, pushed
        self._pulls = {}              # index -> the Pending pull of its result
        self._bucket = []             # (index, parameter) made final, not yet sent
        self._bucket_bytes = 0
        self._buffers = {}            # index -> host array the summed gradient comes to
        self._grads_taken = False     # the program took gradients before the step
        self._consumed = False        # gradients were sent since the last backward

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
            if len(self._contexts) == 1 and 'dist' not in arg:
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
        distributed = kv is not None and 'dist' in kv.type
        if distributed and 'async' in kv.type:
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
        self._distributed = distributed
        overlap = self._overlap_arg
        if overlap is None:
            overlap = distributed and _overlap_from_env()
        self._overlap = bool(overlap) and kv is not None
        # a dist_sync server holds the updates of pushes made during backward until worker
        # 0's step has sent the optimizer for them (a new batch size, learning rate)
        self._hold = (self._overlap and bool(update_on_kvstore) and distributed and
                      'async' not in kv.type)
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
        """Give the store the optimizer as changed now: after the rounds of earlier steps
        (their updates keep the optimizer they were pushed under). With ``_hold`` this
        step's early rounds wait for it (see ``_send``); otherwise they may not."""
        self._drain(skip=self._early if self._hold else ())
        if self._early and not self._hold:
            warnings.warn('Trainer: the %s changed after backward had pushed %d gradient(s) '
                          'of this step to the kvstore (overlap); their update may use the '
                          'optimizer as it was. Change it between steps, or pass '
                          'overlap=False (%s=0) for the exact numbers of a plain step'
                          % (what, len(self._early), _OVERLAP_VARIABLE), stacklevel=3)
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
        if self._hold:
            self._kvstore.release()
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
        if self._kvstore is None:
            return
        self._learn_backward()
        self._send_bucket()
        early, self._early = self._early, {}
        for arrays in early.values():
            for a in arrays:
                a.flags.writeable = True
        keys, grads, outs, late = [], [], [], []
        for i, p in enumerate(self._params):
            if p.grad_req == 'null' or i in early:
                continue
            if self._overlap:
                late.append((i, p))
                continue
            keys.append(i)
            grads.append(p._grad)
            # with update_on_kvstore the store returns the new weights
            outs.append(p.list_data() if self._update_on_kvstore else grads[-1])
        if keys:
            _pushpull_keys(self._kvstore, keys, grads, outs)
        if late:
            self._send_many(late)
        if self._overlap and not self._update_on_kvstore:
            for i, p in enumerate(self._params):
                if p.grad_req != 'null':
                    self._pulls.pop(i).wait()
                    for g in p._grad:
                        self._buffers[i].copyto(g)
        elif self._overlap:  # from the step on, the weights are the new ones once here
            for i in list(self._pulls):
                self._params[i]._pending = _NewWeights(self._pulls.pop(i), self._buffers[i],
                                                       self._params[i])

    # ---- overlap: gradients sent during backward, weights waited for when used ----------
    def _send_many(self, items):
        """Push the gradients of ``items`` = [(index, parameter)] and start pulling the
        results (the new weights or the summed gradients) into buffers that ``step`` hands
        on: until the step the parameters keep their weights, as without overlap. One push
        and one pull: a message per server, not one per parameter and server."""
        kv = self._kvstore
        for i, p in items:
            p._wait_pending()  # the last pull into the data has to be done before the next
            previous = self._pulls.pop(i, None)
            if previous is not None:
                previous.wait()
        keys = [i for i, _ in items]
        grads = [p._grad for _, p in items]
        if self._hold:
            kv.push_held(keys, grads, priority=-keys[0])
        else:
            kv.push(keys, grads, priority=-keys[0])
        outs = []
        for i, p in items:
            out = self._buffers.get(i)
            if out is None:
                like = p._data[0] if self._update_on_kvstore else p._grad[0]
                out = self._buffers[i] = NDArray(np.empty(like.shape, like._data.dtype),
                                                  cpu(0))
            outs.append(out)
        pull = kv.pull_async(keys, outs, priority=-keys[0])
        for i in keys:
            self._pulls[i] = pull

    def _send_bucket(self):
        if self._bucket:
            bucket, self._bucket, self._bucket_bytes = self._bucket, [], 0
            self._send_many(bucket)

    def _on_grad(self, p, written):
        """Backward writes ``p``'s gradient on one device (see ``Parameter._on_grad``)."""
        i = self._param2idx.get(id(p))
        if i is None:
            return
        if not written:
            if i in self._early:
                raise MXNetError(
                    'Trainer: backward writes the gradient of %s again, but it had been '
                    'written as often as in the previous step (%s time(s) per device) and '
                    'went to the kvstore already (overlap). Call step() after the same '
                    'number of backward passes every time, or pass overlap=False to the '
                    'Trainer (or set %s=0)'
                    % (p.name, '/'.join(map(str, self._expected[i])), _OVERLAP_VARIABLE))
            return
        if self._expected.get(i) != p._grad_writes_since_used():
            return
        # gradients go out in buckets of at least BUCKET_BYTES (or the last of the step):
        # a message per parameter cost the workers and servers 10% more CPU than one push
        # in step() at 10 Gbit/s
        self._bucket.append((i, p))
        self._bucket_bytes += sum(g._data.nbytes for g in p._grad)
        # protected until the step: a change now could not reach the store
        self._early[i] = [g._data for g in p._grad if isinstance(g._data, np.ndarray)
                          and g._data.flags.writeable]
        for a in self._early[i]:
            a.flags.writeable = False
        if self._bucket_bytes >= BUCKET_BYTES or len(self._early) == len(self._expected):
            self._send_bucket()

    def _on_grad_access(self, p):
        """The program takes ``p``'s gradient buffers (see ``Parameter._grad_accessed``)."""
        if not self._consumed and any(p._grad_writes_since_used()):
            self._grads_taken = True

    def _learn_backward(self):
        """Before the gradients are sent: how many times backward wrote each one (the
        next step pushes a gradient during backward when it is written as often)."""
        self._expected = {}
        for i, p in enumerate(self._params):
            if p.grad_req == 'write':
                writes = p._grad_writes_since_used()
                if writes and all(writes):
                    self._expected[i] = writes
        self._consumed = True

    def _arm(self):
        """After a step: whether the next backward may push."""
        self._overlapping = (self._overlap and not self._grads_taken and
                             not self._params_to_init)
        self._grads_taken = self._consumed = False

    def _drain(self, skip=()):
        """Wait for every pull under way but those of the parameters in ``skip``."""
        for i, p in enumerate(self._params):
            if i not in skip:
                p._wait_pending()
        for i in [i for i in self._pulls if i not in skip]:
            self._pulls.pop(i).wait()

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
        self._arm()

    # ---- states -----------------------------------------------------------------------
    def save_states(self, fname):
        """Save optimizer states (and the optimizer) to ``fname``; never a pickle.

        The parameters' ``lr_mult`` and ``wd_mult`` are not saved: they are the
        Parameters' own.
        """
        self._prepare()
        self._drain()
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
        self._drain()
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
