"""``mx.gluon.rnn``: recurrent layers (one fused ``RNN`` op per layer stack) and cells
(the same maths one step at a time, with ``unroll``)."""
from .rnn_cell import *  # noqa: F401,F403
from .rnn_layer import *  # noqa: F401,F403
