"""``mx.gluon``: the imperative neural-network API."""
from .parameter import Parameter, Constant, ParameterDict, DeferredInitializationError
from .block import Block, HybridBlock
from .symbol_block import SymbolBlock
from .trainer import Trainer
from . import nn, loss, model_zoo
from . import data, utils
from . import rnn
from . import contrib
