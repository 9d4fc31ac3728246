"""Importing this package registers every op in the table."""
from . import arithmetic, elemwise, indexing, linalg, reduce, shape, softmax  # noqa: F401
from . import conv, ctc, nn, normalization, output_layers, padding, pooling  # noqa: F401
from . import rnn, sampling, sequence, updates  # noqa: F401
from . import linalg_family  # noqa: F401
from . import detection  # noqa: F401
from . import vision  # noqa: F401
from . import misc, scatter, special, statistics  # noqa: F401
