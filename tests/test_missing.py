"""The 1.x modules minigluon leaves out load (mx.np, mx.npx, mx.nd.sparse) or are named
(mx.engine, mx.contrib.quantization), and using them says what to do instead."""
import pytest

import minigluon as mx
from minigluon.base import MXNetError


@pytest.mark.parametrize('module,name,advice', [
    (mx.np, 'zeros', 'use mx.nd'),
    (mx.npx, 'relu', 'NumPy semantics are never on'),
    (mx.nd.sparse, 'csr_matrix', 'every array is dense'),
])
def test_placeholder_modules_refuse_every_public_name(module, name, advice):
    with pytest.raises(MXNetError, match=r'\.%s: .*%s' % (name, advice)):
        getattr(module, name)
    assert not hasattr(module, '__wrapped__')  # dunder lookups stay plain AttributeErrors


def test_left_out_modules_say_what_to_use_instead():
    assert not hasattr(mx, 'engine')
    with pytest.raises(AttributeError, match='mx.engine: MXNet 1.x has it, minigluon does not'):
        mx.engine  # noqa: B018
    with pytest.raises(AttributeError, match='INT8 quantization'):
        mx.contrib.quantization  # noqa: B018
