"""``mx.model``: checkpoint files and the record batch callbacks receive.

A checkpoint is MXNet 1.x's pair of files: ``prefix-symbol.json`` (the graph) and
``prefix-NNNN.params`` (MXNet's binary NDArray list with ``arg:``/``aux:`` names), so
checkpoints move both ways between MXNet and minigluon. MXNet's ``FeedForward`` (the
training API before Module) is not provided: ``mx.mod.Module`` replaces it.
"""
import logging
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu

__all__ = ['BatchEndParam', 'save_checkpoint', 'load_checkpoint', 'load_params']

BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])
BatchEndParam.__doc__ = """What a ``batch_end_callback`` receives after each batch: the
epoch, the batch number within it, the evaluation metric and the caller's locals()."""


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write a checkpoint: ``prefix-symbol.json`` and ``prefix-%04d.params``.

    Parameters
    ----------
    prefix : str
        The files' common prefix (a path).
    epoch : int
        The number in the parameter file's name.
    symbol : Symbol or None
        The graph; None writes the parameters only.
    arg_params, aux_params : dict of str to NDArray
        The learned arguments and the auxiliary states (BatchNorm's moving statistics),
        saved as ``arg:name`` and ``aux:name`` on the CPU.
    remove_amp_cast : bool, optional
        Passed to ``Symbol.save``.
    """
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {'arg:%s' % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({'aux:%s' % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = '%s-%04d.params' % (prefix, epoch)
    nd.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """The ``(arg_params, aux_params)`` dicts of ``prefix-%04d.params``.

    Names without an ``arg:``/``aux:`` prefix (a Gluon ``save_parameters`` file) are
    left out, as MXNet does.
    """
    fname = '%s-%04d.params' % (prefix, epoch)
    save_dict = nd.load(fname)
    arg_params, aux_params = {}, {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", fname)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise MXNetError('load_params: %s holds %d arrays without names; a checkpoint names '
                         'them arg:<name> and aux:<name> (write it with '
                         'mx.model.save_checkpoint)' % (fname, len(save_dict)))
    for key, value in save_dict.items():
        kind, _, name = key.partition(':')
        if kind == 'arg':
            arg_params[name] = value
        elif kind == 'aux':
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """Read a checkpoint ``save_checkpoint`` (or MXNet's) wrote.

    Returns
    -------
    symbol : Symbol
        The graph of ``prefix-symbol.json``.
    arg_params, aux_params : dict of str to NDArray
        The arrays of ``prefix-%04d.params``.
    """
    symbol = sym.load('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def __getattr__(name):
    if name == 'FeedForward':
        raise AttributeError(
            'mx.model.FeedForward (the training API MXNet deprecated for Module) is not '
            'provided; use mx.mod.Module(symbol, data_names, label_names, context).fit(...) '
            'and mx.model.save_checkpoint / load_checkpoint for its files')
    raise AttributeError("module 'minigluon.model' has no attribute %r" % name)
