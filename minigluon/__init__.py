"""minigluon: the MXNet Gluon API on numpy (CPU) and CuPy (GPU).

Write ``import minigluon as mx`` and use ``mx.nd``, ``mx.autograd``, ``mx.cpu()``...
"""
__version__ = '0.1.0'

from . import base
from .base import MXNetError, MinigluonError
from . import context
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from . import autograd
from . import ndarray
from . import ndarray as nd
from . import attribute
from .attribute import AttrScope
from . import symbol
from . import symbol as sym
from . import operator
from . import visualization
from . import visualization as viz
from . import recordio
from . import random
from . import initializer
from . import initializer as init
from . import optimizer
from . import kvstore
from . import kvstore as kv
# Under DMLC_ROLE=server or scheduler, importing minigluon serves that role and exits,
# before the layers above the kvstore load (a quarter of the import: they serve no role).
from .kvstore.ps.roles import serve_if_asked as _serve_if_asked
_serve_if_asked()
from . import test_utils
from . import lr_scheduler
from . import metric
from . import name
from . import gluon
from . import io
from . import model
from . import callback
from . import monitor
from . import monitor as mon
from . import profiler
from . import module
from . import module as mod
from . import rnn
from . import contrib
from . import image
from . import image as img
from . import runtime
from . import util
from .util import is_np_shape, np_shape, set_np_shape, use_np_shape
from . import random as rnd
# mx.np / mx.npx import as in MXNet; using them says what to use instead
from . import numpy, numpy_extension
from . import numpy as np, numpy_extension as npx


def __getattr__(name):
    # modules of MXNet 1.x that minigluon leaves out: an error saying what to use instead
    from ._missing import MODULES, missing
    raise missing('minigluon', MODULES, name)
