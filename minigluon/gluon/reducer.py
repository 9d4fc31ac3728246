"""The gradient reducer: sums the Trainer's gradients through a kvstore, overlapping the
communication with backward where the store can (PyTorch's DDP Reducer, in Gluon's shape).

The Trainer owns one per store. Without overlap, ``reduce()`` is one ``pushpull`` of
every gradient (MXNet's Trainer). With it (``overlap``, ``MINIGLUON_KVSTORE_OVERLAP``,
for stores whose ``overlaps`` is true) a gradient is pushed as soon as backward has
completed it on every device, in buckets, with the pull of its result started right
behind it; ``reduce()`` pushes only what backward did not, and with
``update_on_kvstore`` returns without waiting: ``Parameter.data()`` waits for that
parameter's new weights when the next forward reaches it. The numbers are those of the
plain step.

Backward can only push what the step will push: it does so for ``grad_req='write'``
parameters that the previous step saw written as many times (one backward, or one per
device) as this step has now, when the program did not take the gradients between
backward and step (``grad()``, ``list_grad()``, e.g. to clip them; the next step then
pushes in ``reduce()``). A pushed gradient is read-only until the step.

The Parameters know nothing of this module: they raise events (``grad_write``,
``grad_ready``, ``grad_access``) to the hooks the reducer registers, and wait in
``data()`` for what ``Parameter.expect_data`` gave them. The store is used through its
public protocol only (``push``/``push_held``, ``pull_async``, ``release``, ``pushpull``).
"""
import os
import warnings
import weakref

import numpy as np

from .. import autograd, backend
from ..base import MXNetError, MXNetValueError
from ..context import cpu
from ..kvstore import KVStoreBase
from ..ndarray import NDArray

OVERLAP_VARIABLE = 'MINIGLUON_KVSTORE_OVERLAP'
BUCKET_BYTES = 1 << 20  # gradients made final during backward go out together up to this


def overlap_from_env():
    """``MINIGLUON_KVSTORE_OVERLAP`` (default 1) as a bool."""
    value = os.environ.get(OVERLAP_VARIABLE, '1').strip()
    if value not in ('0', '1'):
        raise MXNetValueError('%s=%r: use 1 to overlap kvstore communication with backward '
                              '(the default) or 0 to communicate in Trainer.step only'
                              % (OVERLAP_VARIABLE, value))
    return value == '1'


def pushpull_keys(kv, keys, values, outs):
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


def weak_hook(ref, method):
    """A Parameter hook calling ``method(owner, param)`` while ``ref()`` (a weak reference
    to its owner) lives: parameters must not keep a dropped Trainer alive."""
    def hook(param):
        owner = ref()
        if owner is not None:
            method(owner, param)
    return hook


def _host_array(arr):
    """The host memory of NDArray ``arr``, or None when it lives on a device."""
    raw = arr._data  # pylint: disable=protected-access
    return raw if backend.is_host_array(raw) else None


class _NewWeights:
    """The pull of a parameter's new weights into ``buffer``: ``wait()`` (from
    ``Parameter.data()`` and friends) lets it finish and copies them into every device's
    array."""
    __slots__ = ('_pull', '_buffer', '_arrays')

    def __init__(self, pull, buffer, arrays):
        self._pull, self._buffer, self._arrays = pull, buffer, arrays

    def wait(self):
        self._pull.wait()
        with autograd.pause():  # (a forward under record() may be what asks)
            for d in self._arrays:
                self._buffer.copyto(d)


class GradientReducer:
    """Sums the gradients of ``params`` (kvstore key = position) through a kvstore.

    Built with the Trainer; ``attach`` gives it the store once the Trainer has chosen
    one, ``detach`` takes it away. It listens to the parameters from the start: whether
    the program takes the gradients before the first step decides whether the second
    backward may push.
    """

    def __init__(self, params):
        self._params = list(params)
        self._index = {id(p): i for i, p in enumerate(self._params)}
        self._kv = None
        self._update_on_kvstore = False
        self.overlap = self.holds = False
        self._grads_taken = False   # the program took gradients before the step
        self._consumed = False      # gradients were sent since the last backward
        self._fetching = False      # the reducer itself is taking gradients
        self._reset()
        self._ref = weakref.ref(self)  # a Trainer dropped stops listening
        for p in self._params:
            p.register_hook('grad_access', weak_hook(self._ref, GradientReducer._on_access))
        self._backward_hooks = []

    def _reset(self):
        self._armed = False         # this backward may push
        self._expected = {}         # index -> gradient writes per device in the last step
        self._early = {}            # index -> its gradient's read-only arrays, pushed
        self._pulls = {}            # index -> the Pending pull of its result
        self._bucket = []           # (index, parameter) made final, not yet sent
        self._bucket_bytes = 0
        self._buffers = {}          # index -> host array the result comes to

    def attach(self, kvstore, update_on_kvstore, overlap):
        """Sum through ``kvstore`` from now on.

        Parameters
        ----------
        kvstore : KVStoreBase
        update_on_kvstore : bool
            The store runs the optimizer: pulls bring the new weights, not summed
            gradients.
        overlap : bool
            Communicate during backward and the next forward (through the store's
            protocol; with a store whose ``overlaps`` is false its synchronous defaults
            run then).
        """
        self.detach()
        self._kv = kvstore
        self._update_on_kvstore = bool(update_on_kvstore)
        self.overlap = bool(overlap)
        # the store may hold the updates of pushes made during backward until every
        # worker's step has sent the optimizer for them (a new batch size, learning rate)
        self.holds = self.overlap and self._update_on_kvstore and kvstore.holds_pushes
        if self.overlap:
            for p in self._params:
                self._backward_hooks += [
                    p.register_hook('grad_write', weak_hook(self._ref, GradientReducer._on_write)),
                    p.register_hook('grad_ready', weak_hook(self._ref, GradientReducer._on_ready))]

    def detach(self):
        """Forget the store (the Trainer resets it); transfers under way are waited for."""
        if self._kv is not None:
            self.wait()
        for handle in self._backward_hooks:
            handle.remove()
        self._backward_hooks = []
        self._kv = None
        self.overlap = self.holds = False
        self._reset()

    # ---- the step -----------------------------------------------------------------------
    def reduce(self):
        """Sum every trained gradient over devices and workers: into the gradients, or,
        with ``update_on_kvstore``, the new weights into the data (now, or when the
        parameter is next used)."""
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
            if self.overlap:
                late.append((i, p))
                continue
            keys.append(i)
            grads.append(self._grads(p))
            # with update_on_kvstore the store returns the new weights
            outs.append(p.list_data() if self._update_on_kvstore else grads[-1])
        if keys:
            pushpull_keys(self._kv, keys, grads, outs)
        if late:
            self._send_many(late)
        if self.overlap and not self._update_on_kvstore:
            for i, p in enumerate(self._params):
                if p.grad_req != 'null':
                    self._pulls.pop(i).wait()
                    for g in self._grads(p):
                        self._buffers[i].copyto(g)
        elif self.overlap:  # from the step on, the weights are the new ones once here
            for i in list(self._pulls):
                p = self._params[i]
                p.expect_data(_NewWeights(self._pulls.pop(i), self._buffers[i],
                                          p.list_data()))
        if self.holds:
            self._kv.release()

    def arm(self, ready=True):
        """After a step: whether the next backward may push (``ready``: every parameter
        is in the store)."""
        self._armed = self.overlap and ready and not self._grads_taken
        self._grads_taken = self._consumed = False

    def wait(self, skip=()):
        """Wait for every pull under way but those of the parameter indices in ``skip``."""
        for i, p in enumerate(self._params):
            if i not in skip:
                p.wait_data()
        for i in [i for i in self._pulls if i not in skip]:
            self._pulls.pop(i).wait()

    def before_optimizer_change(self, what):
        """The optimizer is about to change (``what``: 'learning rate', 'batch size') and
        go to the store: let the rounds of earlier steps finish with the old one. Pushes
        of this step that the store holds wait for the new one; unheld ones may not."""
        self.wait(skip=self._early if self.holds else ())
        if self._early and not self.holds:
            warnings.warn('Trainer: the %s changed after backward had pushed %d gradient(s) '
                          'of this step to the kvstore (overlap); their update may use the '
                          'optimizer as it was. Change it between steps, or pass '
                          'overlap=False (%s=0) for the exact numbers of a plain step'
                          % (what, len(self._early), OVERLAP_VARIABLE), stacklevel=4)

    # ---- overlap: gradients sent during backward, weights waited for when used ----------
    def _send_many(self, items):
        """Push the gradients of ``items`` = [(index, parameter)] and start pulling the
        results (the new weights or the summed gradients) into buffers that the step hands
        on: until the step the parameters keep their weights, as without overlap. One push
        and one pull: a message per server, not one per parameter and server."""
        kv = self._kv
        for i, p in items:
            p.wait_data()  # the last pull into the data has to be done before the next
            previous = self._pulls.pop(i, None)
            if previous is not None:
                previous.wait()
        keys = [i for i, _ in items]
        grads = [self._grads(p) for _, p in items]
        if self.holds:
            kv.push_held(keys, grads, priority=-keys[0])
        else:
            kv.push(keys, grads, priority=-keys[0])
        outs = []
        for i, p in items:
            out = self._buffers.get(i)
            if out is None:
                like = p.list_data()[0] if self._update_on_kvstore else grads[keys.index(i)][0]
                out = self._buffers[i] = NDArray(np.empty(like.shape, like.dtype), cpu(0))
            outs.append(out)
        pull = kv.pull_async(keys, outs, priority=-keys[0])
        for i in keys:
            self._pulls[i] = pull

    def _send_bucket(self):
        if self._bucket:
            bucket, self._bucket, self._bucket_bytes = self._bucket, [], 0
            self._send_many(bucket)

    def _on_write(self, p):
        """Backward is about to write ``p``'s gradient on one device."""
        i = self._index[id(p)]
        if self._armed and i in self._early:
            raise MXNetError(
                'Trainer: backward writes the gradient of %s again, but it had been '
                'written as often as in the previous step (%s time(s) per device) and '
                'went to the kvstore already (overlap). Call step() after the same '
                'number of backward passes every time, or pass overlap=False to the '
                'Trainer (or set %s=0)'
                % (p.name, '/'.join(map(str, self._expected[i])), OVERLAP_VARIABLE))

    def _on_ready(self, p):
        """Backward has written ``p``'s gradient on one device: once it is as complete as
        in the last step, it joins the bucket."""
        if not self._armed:
            return
        i = self._index[id(p)]
        if self._expected.get(i) != p.grad_writes_since_used():
            return
        grads = self._grads(p)
        # gradients go out in buckets of at least BUCKET_BYTES (or the last of the step):
        # a message per parameter cost the workers and servers 10% more CPU than one push
        # in step() at 10 Gbit/s
        self._bucket.append((i, p))
        self._bucket_bytes += sum(g.size * np.dtype(g.dtype).itemsize for g in grads)
        # protected until the step: a change now could not reach the store
        self._early[i] = [a for a in (_host_array(g) for g in grads)
                          if a is not None and a.flags.writeable]
        for a in self._early[i]:
            a.flags.writeable = False
        if self._bucket_bytes >= BUCKET_BYTES or len(self._early) == len(self._expected):
            self._send_bucket()

    def _grads(self, p):
        """``p``'s gradients, taken without counting as the program's access."""
        self._fetching = True
        try:
            return p.list_grad()
        finally:
            self._fetching = False

    def _on_access(self, p):
        """The program takes ``p``'s gradient buffers."""
        if not self._fetching and not self._consumed and any(p.grad_writes_since_used()):
            self._grads_taken = True

    def _learn_backward(self):
        """Before the gradients are sent: how many times backward wrote each one (the
        next step pushes a gradient during backward when it is written as often)."""
        self._expected = {}
        for i, p in enumerate(self._params):
            if p.grad_req == 'write':
                writes = p.grad_writes_since_used()
                if writes and all(writes):
                    self._expected[i] = writes
        self._consumed = True
