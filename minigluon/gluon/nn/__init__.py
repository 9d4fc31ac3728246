"""``gluon.nn``: neural-network layers."""
from .activations import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from ..block import Block, HybridBlock  # noqa: F401  (nn.Block, as in MXNet)
from ..symbol_block import SymbolBlock  # noqa: F401  (nn.SymbolBlock, as in MXNet)
