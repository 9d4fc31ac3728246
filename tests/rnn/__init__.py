"""Tests of ``mx.rnn``, MXNet 1.x's symbolic cells (a package, because its file names are
also those of ``gluon.rnn``'s and the ops' tests)."""
