"""``mx.rnn``: MXNet 1.x's symbolic recurrent cells, the bucketing sentence iterator and the
checkpoint helpers that Module-era language models use (``mx.mod.BucketingModule``)."""
from . import rnn_cell
from .rnn_cell import *  # noqa: F401,F403
from . import rnn
from .rnn import *  # noqa: F401,F403
from . import io
from .io import *  # noqa: F401,F403
