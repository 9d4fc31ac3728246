"""Importing this package registers every op in the table."""
from . import arithmetic, elemwise, indexing, linalg, reduce, shape, softmax  # noqa: F401
from . import conv, ctc, nn, normalization, output_layers, padding, pooling  # noqa: F401
from . import rnn, rnn_shapes, sampling, sequence, updates  # noqa: F401
from . import linalg_family  # noqa: F401
from . import detection  # noqa: F401
from . import vision  # noqa: F401
from . import adaptive_pooling, deformable_conv, proposal, psroi_pooling  # noqa: F401
from . import roi_rotated  # noqa: F401
from . import amp, misc, scatter, special, statistics  # noqa: F401
from . import attention, checks, correlation, im2col, quantization  # noqa: F401
