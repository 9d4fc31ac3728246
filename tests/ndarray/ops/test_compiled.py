"""``MINIGLUON_CPU_KERNELS``: auto, numba and numpy, and clear errors for the rest."""
import sys

import pytest

from minigluon.base import MXNetError
from minigluon.ndarray.ops import compiled


@pytest.fixture
def mode(monkeypatch):
    def set_mode(value):
        monkeypatch.setenv(compiled.VARIABLE, value)
        compiled.reset()
    yield set_mode
    monkeypatch.undo()
    compiled.reset()


def test_numpy_turns_the_compiled_kernels_off(mode):
    mode('numpy')
    assert not compiled.enabled()


def test_auto_uses_numba_exactly_when_it_imports(mode):
    mode('auto')
    try:
        import numba  # noqa: F401
        importable = True
    except Exception:
        importable = False
    assert compiled.enabled() == importable


def test_without_numba_auto_falls_back_and_numba_says_how_to_install_it(mode, monkeypatch):
    monkeypatch.setitem(sys.modules, 'numba', None)  # what an absent package raises
    mode('auto')
    assert not compiled.enabled()
    mode('numba')
    with pytest.raises(MXNetError, match=r"MINIGLUON_CPU_KERNELS=numba but numba does not "
                                         r"import .*pip install numba"):
        compiled.enabled()


def test_an_unknown_mode_is_an_error_that_lists_the_modes(mode):
    mode('fast')
    with pytest.raises(MXNetError, match=r"MINIGLUON_CPU_KERNELS='fast' is not one of "
                                         r"auto, numba, numpy"):
        compiled.enabled()
