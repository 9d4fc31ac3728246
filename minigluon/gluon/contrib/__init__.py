"""``gluon.contrib``: extensions beside the core Gluon API, laid out as MXNet 1.x's."""
from . import estimator, rnn
