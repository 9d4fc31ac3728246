"""``mx.npx``: MXNet's NumPy-extension operators, which minigluon leaves out.

The module exists so that scripts importing it load; using any of its names raises an
error that says what to use instead.
"""
from ._missing import refuse_every_name

__getattr__ = refuse_every_name(
    'mx.npx', 'the mx.np / mx.npx array API is not part of minigluon (NumPy semantics are '
    'never on); use mx.nd, whose functions and NDArray methods follow MXNet 1.x')
