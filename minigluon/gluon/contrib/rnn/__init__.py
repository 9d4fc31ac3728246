"""``gluon.contrib.rnn``: more recurrent cells (variational dropout, the projected LSTM,
convolutional RNN, LSTM and GRU cells), as MXNet 1.x's ``gluon.contrib.rnn``."""
from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403

__all__ = conv_rnn_cell.__all__ + rnn_cell.__all__
