"""``BaseModule``: the training loop of MXNet's Module API (``fit``, ``score``,
``predict``) written once over the abstract steps (``bind``, ``forward``, ``backward``,
``update``) that each kind of module implements."""
import logging
import time

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..base import MXNetError
from ..context import cpu
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam
from ..ndarray import NDArray

__all__ = ['BaseModule']


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def check_input_names(symbol, names, typename, throw):
    """Check that ``names`` (data, label, state or fixed-parameter names) are arguments
    of ``symbol``; raise (or warn) naming the candidates when one is not."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(('_weight', '_bias', '_gamma', '_beta'))]
        msg = ('You created Module with Module(..., %s_names=%s) but input with name %r is not '
               'found in symbol.list_arguments(). Did you mean one of:\n\t%s'
               % (typename, list(names), name, '\n\t'.join(candidates)))
        if throw:
            raise ValueError(msg)
        logging.warning(msg)


def parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """``data_shapes``/``label_shapes`` as DataDescs, checked against the module's names."""
    def parse(names, shapes, what):
        shapes = [s if isinstance(s, DataDesc) else DataDesc(*s) for s in shapes]
        given = [s.name for s in shapes]
        if sorted(given) != sorted(names):
            raise ValueError('Module: the %s shapes name %s but the module\'s %s_names are %s'
                             % (what, given, what, list(names)))
        return shapes
    data_shapes = parse(data_names, data_shapes, 'data')
    if label_shapes is not None:
        label_shapes = parse(label_names, label_shapes, 'label')
    else:
        if label_names:
            logging.debug('Module: no label shapes given; binding without labels %s',
                          list(label_names))
        label_shapes = None
    return data_shapes, label_shapes


class BaseModule:
    """The interface and training loop shared by ``Module``, ``BucketingModule`` and
    ``SequentialModule``.

    A module is used in four steps: ``bind`` (allocate for input shapes),
    ``init_params``, ``init_optimizer``, then ``forward``/``backward``/``update`` per
    batch; ``fit`` runs them all.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ---- high level --------------------------------------------------------------------
    def forward_backward(self, data_batch):
        """``forward`` in training mode, then ``backward``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _check_ready(self, what, optimizer=False):
        if not self.binded:
            raise MXNetError('%s: call bind() first' % what)
        if not self.params_initialized:
            raise MXNetError('%s: call init_params() (or set_params) first' % what)
        if optimizer and not self.optimizer_initialized:
            raise MXNetError('%s: call init_optimizer() first' % what)

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run ``eval_data`` forward and return ``eval_metric``'s ``[(name, value)]``."""
        self._check_ready('score')
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            if isinstance(batch, list):
                self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            done += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=done, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, batch number, batch)`` for each batch of ``eval_data``, the
        padding of the last batch cut off the outputs."""
        self._check_ready('iter_predict')
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            yield [out[0:out.shape[0] - pad] for out in self.get_outputs()], nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs for ``eval_data`` (a DataIter, or one batch as an array).

        With ``merge_batches`` the batches' outputs are joined (one array per output;
        the array itself when there is one output, unless ``always_output_list``);
        without, a list per batch.
        """
        self._check_ready('predict')
        if isinstance(eval_data, (NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError('eval_data must be of type NDArray or DataIter, got %s'
                             % type(eval_data).__name__)
        outputs = [[out.copy() for out in outs] for outs, _, _ in
                   self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not outputs or not merge_batches:
            return outputs
        count = len(outputs[0])
        if any(len(outs) != count for outs in outputs):
            raise MXNetError('predict: cannot merge batches with different numbers of outputs '
                             '(bucketing?); pass merge_batches=False')
        merged = [nd.concat(*[outs[i] for outs in outputs], dim=0) for i in range(count)]
        return merged[0] if count == 1 and not always_output_list else merged

    def fit(self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None,
            batch_end_callback=None, kvstore='local', optimizer='sgd',
            optimizer_params=(('learning_rate', 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train on ``train_data`` for epochs ``begin_epoch .. num_epoch - 1``.

        Logs ``Epoch[e] Train-<metric>=<value>``, ``Epoch[e] Time cost=<s>`` and, with
        ``eval_data``, ``Epoch[e] Validation-<metric>=<value>`` each epoch, as MXNet does;
        callbacks get a ``BatchEndParam`` after every batch and
        ``(epoch, symbol, arg_params, aux_params)`` after every epoch.
        """
        if num_epoch is None:
            raise ValueError('fit: please specify number of epochs (num_epoch)')
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            batches = iter(train_data)
            try:
                next_batch = next(batches)
            except StopIteration:
                raise MXNetError('fit: train_data gave no batch in epoch %d; is it empty, or '
                                 'not reset?' % epoch) from None
            nbatch, end = 0, False
            while not end:
                data_batch = next_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [b.label for b in data_batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_batch = next(batches)
                    self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end = True
                if monitor is not None:
                    monitor.toc_print()
                if end:
                    train_values = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, value in train_values:
                self.logger.info('Epoch[%d] Train-%s=%f', epoch, name, value)
            self.logger.info('Epoch[%d] Time cost=%.3f', epoch, time.time() - tic)
            # bring the devices' values home, and every device to the same values
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, value in res:
                    self.logger.info('Epoch[%d] Validation-%s=%f', epoch, name, value)
            train_data.reset()

    # ---- what each module defines ------------------------------------------------------
    @property
    def data_names(self):
        """The names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """The names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """``[DataDesc]`` of the data inputs."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """``[DataDesc]`` of the label inputs (None when bound without labels)."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the outputs."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The symbol this module computes."""
        return self._symbol

    def get_params(self):
        """``(arg_params, aux_params)``: name -> NDArray, copies on the CPU."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters (``arg_params``/``aux_params`` first, then
        ``initializer``)."""
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter and auxiliary-state values."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def save_params(self, fname):
        """Save the parameters in MXNet's ``.params`` format (``arg:``/``aux:`` names)."""
        arg_params, aux_params = self.get_params()
        blob = {'arg:%s' % k: v.copyto(cpu()) for k, v in arg_params.items()}
        blob.update({'aux:%s' % k: v.copyto(cpu()) for k, v in aux_params.items()})
        nd.save(fname, blob)

    def load_params(self, fname):
        """Load what ``save_params`` (or MXNet's) wrote."""
        arg_params, aux_params = {}, {}
        for key, value in nd.load(fname).items():
            kind, _, name = key.partition(':')
            if kind == 'arg' and name:
                arg_params[name] = value
            elif kind == 'aux' and name:
                aux_params[name] = value
            else:
                raise ValueError('Invalid param file %s: the key %r is neither arg:NAME nor '
                                 'aux:NAME' % (fname, key))
        self.set_params(arg_params, aux_params)

    # Gluon's names for the same files (MXNet's own image_classification.py calls
    # ``mod.save_parameters``, which 1.x's Module lacks)
    save_parameters = save_params
    load_parameters = load_params

    def get_states(self, merge_multi_context=True):
        """The state arrays (see ``state_names``); none for a module without states."""
        if not (self.binded and self.params_initialized):
            raise MXNetError('get_states: bind and initialize the module first')
        return []

    def set_states(self, states=None, value=None):
        """Set the states; a module without states has nothing to set."""
        if not (self.binded and self.params_initialized):
            raise MXNetError('set_states: bind and initialize the module first')
        if states:
            raise MXNetError('set_states: this module has no states')

    def install_monitor(self, mon):
        """Have ``mon`` watch the executors."""
        raise NotImplementedError()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for ``data_batch`` (switching buckets, for a BucketingModule)."""
        if sparse_row_id_fn is not None:
            raise MXNetError('sparse_row_id_fn: sparse (row_sparse) parameters are not '
                             'supported')

    def forward(self, data_batch, is_train=None):
        """Compute the outputs for ``data_batch``."""
        raise NotImplementedError()

    def backward(self, out_grads=None):
        """Compute the gradients of the last forward."""
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bound with ``inputs_need_grad``)."""
        raise NotImplementedError()

    def update(self):
        """Apply the optimizer to the gradients of the last backward."""
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Accumulate ``eval_metric`` over the outputs of the last forward."""
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Allocate for inputs of ``data_shapes``/``label_shapes``."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Set up the optimizer (and the kvstore that aggregates gradients)."""
        raise NotImplementedError()
