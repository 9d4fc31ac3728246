"""``SequentialModule``: modules chained so that each one's outputs are the next one's
data, as MXNet's."""
import copy
import logging

from ..base import MXNetError
from ..initializer import Uniform
from .base_module import BaseModule

__all__ = ['SequentialModule']


class SequentialModule(BaseModule):
    """Modules run one after another; ``add(module, take_labels=True)`` gives a module
    the labels, ``auto_wiring=True`` renames the previous outputs to its data names."""

    META_TAKE_LABELS = 'take_labels'
    META_AUTO_WIRING = 'auto_wiring'

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Append ``module``; returns self, so calls chain."""
        unknown = set(kwargs) - self._meta_keys
        if unknown:
            raise MXNetError('SequentialModule.add: unknown meta %s; known are %s'
                             % (sorted(unknown), sorted(self._meta_keys)))
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        self._check_bound()
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        self._check_bound()
        return self._label_shapes

    @property
    def output_shapes(self):
        self._check_bound()
        return self._modules[-1].output_shapes

    def _check_bound(self):
        if not self.binded:
            raise MXNetError('SequentialModule: call bind() first')

    def _takes_labels(self, i):
        return bool(self._metas[i].get(self.META_TAKE_LABELS))

    def get_params(self):
        self._check_ready('get_params')
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        self._check_bound()
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        # one name, one parameter: two modules may not both define it
        for kind in (0, 1):
            owner = {}
            for i, module in enumerate(self._modules):
                for name in module.get_params()[kind]:
                    if name in owner:
                        raise MXNetError('Duplicated parameter names: name "%s" in layer %d '
                                         '(%s) is already used in layer %d (%s).'
                                         % (name, i, type(module).__name__, owner[name],
                                            type(self._modules[owner[name]]).__name__))
                    owner[name] = i
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if inputs_need_grad and not for_training:
            raise MXNetError('bind: inputs_need_grad=True needs for_training=True')
        if shared_module is not None:
            raise MXNetError('SequentialModule: shared_module is not supported')
        if not self._modules:
            raise MXNetError('Attempting to bind an empty SequentialModule')
        self.binded = True
        self._label_shapes = label_shapes
        shapes = data_shapes
        needs_label = False
        for i, module in enumerate(self._modules):
            labels = label_shapes if self._takes_labels(i) else None
            needs_label = needs_label or self._takes_labels(i)
            if self._metas[i].get(self.META_AUTO_WIRING):
                names = module.data_names
                if len(names) != len(shapes):
                    raise MXNetError('auto_wiring: module %d takes %d data inputs but gets %d'
                                     % (i, len(names), len(shapes)))
                shapes = [(name, tuple(desc[1])) for name, desc in zip(names, shapes)]
            # every module after the first passes gradients back to the one before
            module.bind(data_shapes=shapes, label_shapes=labels, for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        if not needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        self._check_ready('init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        self._check_ready('forward')
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if getattr(data_batch, 'provide_data', None) is not None:
                names = [name for name, _ in module.output_shapes]
                data_batch.provide_data = [(name, x.shape)
                                           for name, x in zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        self._check_ready('backward')
        for i in reversed(range(len(self._modules))):
            self._modules[i].backward(out_grads=out_grads)
            if i > 0:
                out_grads = self._modules[i].get_input_grads()

    def update(self):
        self._check_ready('update', optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        self._check_ready('get_outputs')
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready('get_input_grads')
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._check_ready('update_metric')
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._check_bound()
        for module in self._modules:
            module.install_monitor(mon)
