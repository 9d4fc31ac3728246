"""Recurrent cells: one time step of RNN, LSTM and GRU maths, and the cells that
combine them (stacks, bidirectional, dropout, zoneout, residual), with ``unroll``."""
__all__ = []
