"""Checkpoints of models built from ``mx.rnn`` cells: the weights are saved unpacked (one
array per gate, as the cells' ``unpack_weights`` gives them) and packed again on loading,
in MXNet 1.x's files."""
import warnings

from ..model import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ['rnn_unroll', 'save_rnn_checkpoint', 'load_rnn_checkpoint', 'do_rnn_checkpoint']


def _as_cells(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix='', layout='NTC'):
    """Deprecated: call ``cell.unroll`` (``input_prefix`` is ignored)."""
    warnings.warn('rnn_unroll is deprecated. Please call cell.unroll directly.')
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """Save ``prefix-symbol.json`` and ``prefix-%04d.params`` with the cells' weights
    unpacked.

    Parameters
    ----------
    cells : BaseRNNCell or list of BaseRNNCell
        The cells used to build ``symbol``.
    prefix : str
    epoch : int
    symbol : Symbol
    arg_params, aux_params : dict of str to NDArray
    """
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """Load a checkpoint written by :func:`save_rnn_checkpoint`, packing the cells' weights.

    Returns
    -------
    symbol : Symbol
    arg_params, aux_params : dict of str to NDArray
    """
    symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        arg_params = cell.pack_weights(arg_params)
    return symbol, arg_params, aux_params


def do_rnn_checkpoint(cells, prefix, period=1):
    """An ``epoch_end_callback`` saving a checkpoint (weights unpacked) every ``period``
    epochs.

    Parameters
    ----------
    cells : BaseRNNCell or list of BaseRNNCell
    prefix : str
    period : int, default 1

    Returns
    -------
    callable
        ``callback(iter_no, sym, arg, aux)``.
    """
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
