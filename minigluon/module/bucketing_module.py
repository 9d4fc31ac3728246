"""``BucketingModule``: one Module per input length (bucket), all sharing the default
bucket's parameters and optimizer, as MXNet's does for variable-length sequences."""
import logging
import warnings

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..context import cpu
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, check_input_names
from .module import Module

__all__ = ['BucketingModule']


class BucketingModule(BaseModule):
    """Modules made on demand by ``sym_gen(bucket_key) -> (symbol, data_names,
    label_names)``; the batch's ``bucket_key`` picks the one that runs it.

    Parameters
    ----------
    sym_gen : callable
    default_bucket_key
        The bucket bound first, whose parameters every other bucket shares; it should
        be the largest, so that the others fit in its memory.
    logger, context, work_load_list, fixed_param_names, state_names, group2ctxs,
    compression_params
        As for ``Module``.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=cpu(),
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNetError('BucketingModule: default_bucket_key is required')
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        check_input_names(symbol, list(data_names or []), 'data', True)
        check_input_names(symbol, list(label_names or []), 'label', False)
        check_input_names(symbol, state_names, 'state', True)
        check_input_names(symbol, fixed_param_names, 'fixed_param', True)
        self._module_args = dict(logger=logger, context=context, work_load_list=work_load_list,
                                 fixed_param_names=fixed_param_names, state_names=state_names,
                                 group2ctxs=group2ctxs, compression_params=compression_params)
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        with NameManager():  # every bucket names its auto-created variables alike
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, bucket_key, symbol=None):
        made, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(symbol if symbol is not None else made, data_names, label_names,
                      **self._module_args)

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        self._check_bound()
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        self._check_bound()
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        self._check_bound()
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        self._check_bound()
        return self._curr_module.symbol

    def _check_bound(self):
        if not self.binded:
            raise MXNetError('BucketingModule: call bind() first')

    # ---- parameters --------------------------------------------------------------------
    def get_params(self):
        if not self.params_initialized:
            raise MXNetError('get_params: call init_params() first')
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init)
            return
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. set_params '
                          'call ignored.', stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        self._check_bound()
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        self._check_ready('get_states')
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready('set_states')
        self._curr_module.set_states(states, value)

    # ---- binding and buckets -----------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Bind the default bucket."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if shared_module is not None:
            raise MXNetError('shared_module for BucketingModule is not supported')
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        module = self._buckets.get(self._default_bucket_key)
        if module is None:
            module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key`` current, binding its module (sharing the default bucket's
        parameters) the first time."""
        self._check_bound()
        module = self._buckets.get(bucket_key)
        if module is None:
            module = self._buckets[bucket_key] = self._new_module(bucket_key)
        if not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        self._check_ready('init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the batch's bucket ahead of its forward."""
        self._check_ready('prepare')
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    # ---- computing ---------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        self._check_ready('forward')
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._check_ready('backward')
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        self._check_ready('update', optimizer=True)
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        self._check_ready('get_outputs')
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready('get_input_grads')
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._check_ready('update_metric')
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._check_bound()
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # ---- checkpoints -------------------------------------------------------------------
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Write the parameters, one ``prefix-<bucket>-symbol.json`` per bucket and the
        bucket keys (``prefix.buckets``), as MXNet does."""
        if not self._buckets:
            raise MXNetError('Empty BucketingModule cannot be saved')
        self.save_params('%s-%04d.params' % (prefix, epoch))
        for key in self._buckets:
            symbol = self._call_sym_gen(key)[0]
            symbol.save('%s-%s-symbol.json' % (prefix, key), remove_amp_cast=remove_amp_cast)
        nd.save('%s.buckets' % prefix, nd.array(list(self._buckets), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule of ``save_checkpoint``'s files; bind it before use."""
        if sym_gen is None or default_bucket_key is None:
            raise MXNetError('BucketingModule.load needs sym_gen and default_bucket_key')
        keys = [int(k) for k in nd.load('%s.buckets' % prefix)[0].asnumpy().astype('int32')]
        symbols = {k: sym.load('%s-%s-symbol.json' % (prefix, k)) for k in keys}
        arg_params, aux_params = load_params(prefix, epoch)
        return BucketingModule.load_dict(symbols, sym_gen, default_bucket_key, arg_params,
                                         aux_params, **kwargs)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule of ``{bucket key: symbol}`` and its parameters."""
        for what, value in (('sym_dict', sym_dict), ('arg_params', arg_params),
                            ('aux_params', aux_params),
                            ('default_bucket_key', default_bucket_key)):
            if value is None:
                raise MXNetError('BucketingModule.load_dict needs %s' % what)
        module = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key, symbol in sym_dict.items():
            module._buckets[key] = module._new_module(key, symbol)
        module._curr_module = module._buckets[default_bucket_key]
        module._curr_module._arg_params = arg_params
        module._curr_module._aux_params = aux_params
        module._curr_module.params_initialized = True
        module.params_initialized = True
        return module
