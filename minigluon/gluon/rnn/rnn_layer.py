"""Recurrent layers: RNN, LSTM and GRU over whole sequences, each stack of layers one
call of the fused ``RNN`` op with MXNet 1.x's parameter names and layout."""
__all__ = []
