"""``mx.nd.linalg`` (MXNet's ``_linalg_*`` operators): values against numpy in float64,
the names MXNet gives them, and every function against MXNet 1.9.1 (values, gradients
and graph nodes). The gradients are checked numerically in ``test_op_gradients.py``."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.base import MXNetError

rng = np.random.RandomState(0)


def _r(*shape):
    return rng.uniform(-1, 1, size=shape)


def _a(x):
    return nd.array(x, dtype='float64')


def _close(got, want):
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


def test_products_with_transposes_alpha_beta_and_a_row_axis():
    a, b, c = _r(2, 3, 4), _r(2, 5, 4), _r(2, 3, 5)
    _close(nd.linalg.gemm(_a(a), _a(b), _a(c), transpose_b=True, alpha=2.0, beta=-0.5),
           2 * a @ b.swapaxes(1, 2) - 0.5 * c)
    _close(nd.linalg.gemm2(_a(a), _a(c), transpose_a=True, alpha=3.0), 3 * a.swapaxes(1, 2) @ c)
    # rows on axis 0: the matrices are a[:, k, :] for each k of axis 1
    a, b = _r(3, 2, 4), _r(4, 2, 5)
    _close(nd.linalg.gemm2(_a(a), _a(b), axis=0), np.einsum('ikj,jkl->ikl', a, b))
    _close(nd.linalg.syrk(_a(a), alpha=0.5), 0.5 * a @ a.swapaxes(1, 2))
    _close(nd.linalg.syrk(_a(a), transpose=True), a.swapaxes(1, 2) @ a)
    with pytest.raises(MXNetError, match='cannot be multiplied'):
        nd.linalg.gemm2(_a(a), _a(a))


def test_cholesky_and_triangular_ops_read_one_triangle():
    x = _r(2, 3, 3)
    spd = x @ x.swapaxes(1, 2) + 3 * np.eye(3)
    noisy = spd + np.triu(_r(3, 3), 1)  # potrf(lower) must not read the upper triangle
    low = np.linalg.cholesky(spd)
    _close(nd.linalg.potrf(_a(noisy)), low)
    _close(nd.linalg.potrf(_a(spd), lower=False), low.swapaxes(1, 2))
    _close(nd.linalg.potri(_a(low + np.triu(_r(3, 3), 1))), np.linalg.inv(spd))
    _close(nd.linalg.potri(_a(low.swapaxes(1, 2)), lower=False), np.linalg.inv(spd))
    b = _r(2, 3, 4)
    _close(nd.linalg.trsm(_a(low), _a(b), alpha=2.0), 2 * np.linalg.solve(low, b))
    _close(nd.linalg.trsm(_a(low), _a(b.swapaxes(1, 2)), rightside=True, transpose=True),
           b.swapaxes(1, 2) @ np.linalg.inv(low.swapaxes(1, 2)))
    _close(nd.linalg.trmm(_a(low.swapaxes(1, 2)), _a(b), lower=False, alpha=-1.0),
           -low.swapaxes(1, 2) @ b)
    with pytest.raises(MXNetError, match='not symmetric positive definite'):
        nd.linalg.potrf(_a(-spd))
    # a zero on the diagonal gives inf/nan, as BLAS's trsm does, not an error
    assert not np.isfinite(nd.linalg.trsm(nd.zeros((2, 2)), nd.ones((2, 2))).asnumpy()).any()


def test_factorizations_inverse_and_determinants():
    a = _r(2, 3, 5)
    q, low = nd.linalg.gelqf(_a(a))
    _close(nd.linalg.gemm2(low, q), a)
    _close(nd.linalg.gemm2(q, q, transpose_b=True), np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert (np.triu(low.asnumpy(), 1) == 0).all()
    s = _r(2, 3, 3)
    s = s + s.swapaxes(1, 2)
    u, w = nd.linalg.syevd(_a(s))
    _close(w, np.linalg.eigvalsh(s))
    u = u.asnumpy()
    np.testing.assert_allclose(u.swapaxes(1, 2) @ (w.asnumpy()[:, :, None] * u), s, atol=1e-12)
    biggest = np.take_along_axis(u, np.abs(u).argmax(-1)[..., None], -1)
    assert (biggest > 0).all()
    m = _r(2, 3, 3) + 2 * np.eye(3)
    _close(nd.linalg.inverse(_a(m)), np.linalg.inv(m))
    _close(nd.linalg.det(_a(m)), np.linalg.det(m))
    sign, logabs = nd.linalg.slogdet(_a(-m))
    _close(sign, np.linalg.slogdet(-m)[0])
    _close(logabs, np.linalg.slogdet(-m)[1])
    _close(nd.linalg.sumlogdiag(_a(m)), np.log(np.diagonal(m, 0, 1, 2)).sum(-1))
    assert nd.linalg.det(_a(m[0])).shape == (1,)  # one matrix: (1,), as MXNet
    with pytest.raises(MXNetError, match='singular'):
        nd.linalg.inverse(nd.zeros((2, 2), dtype='float64'))
    with pytest.raises(MXNetError, match='float32 and float64 only'):
        nd.linalg.det(nd.ones((2, 2), dtype='int32'))


def test_diagonals_and_triangles_to_and_from_vectors():
    m = np.arange(18.0).reshape(2, 3, 3)
    _close(nd.linalg.extractdiag(_a(m), offset=1), np.diagonal(m, 1, 1, 2))
    _close(nd.linalg.makediag(_a(m[:, 0]), offset=-1),
           np.stack([np.diag(v, -1) for v in m[:, 0]]))
    # the lower triangle row by row, the upper one column by column (MXNet's packing)
    _close(nd.linalg.extracttrian(_a(m[0])), [0, 3, 4, 6, 7, 8])
    _close(nd.linalg.extracttrian(_a(m[0]), lower=False), [0, 1, 4, 2, 5, 8])
    _close(nd.linalg.extracttrian(_a(m[0]), offset=1), [1, 2, 5])
    for offset, lower in ((0, True), (-1, True), (2, False), (0, False)):
        packed = nd.linalg.extracttrian(_a(m), offset=offset, lower=lower)
        mask = np.tril(np.ones((3, 3)), offset) if offset < 0 or (offset == 0 and lower) \
            else np.triu(np.ones((3, 3)), offset)
        _close(nd.linalg.maketrian(packed, offset=offset, lower=lower), m * mask)
    with pytest.raises(MXNetError, match='no triangle'):
        nd.linalg.maketrian(nd.ones((4,)))


def test_names_as_mxnet_has_them():
    assert nd.linalg.gemm.__name__ == 'gemm' and nd.linalg_gemm.__name__ == 'linalg_gemm'
    assert not hasattr(nd, 'linalg_syevd') and hasattr(nd._internal, '_linalg_syevd')
    assert not hasattr(mx.sym, 'linalg_syevd')
    a = mx.sym.var('a')
    assert mx.sym.linalg.gemm2(a, a).name == 'gemm20'
    assert mx.sym.linalg_gemm2(a, a).name == 'linalg_gemm20'
    assert mx.sym.linalg.slogdet(a).list_outputs() == ['slogdet0_output0', 'slogdet0_output1']
    graph = mx.sym.load_json(mx.sym.linalg.potrf(a, lower=False).tojson())
    x = _r(3, 3) + 3 * np.eye(3)
    out = graph.eval(a=_a(x @ x.T))[0]
    _close(out, np.linalg.cholesky(x @ x.T).T)


_BOTH = '''
import json, sys
import numpy as np
import mxnet as mx

rng = np.random.RandomState(0)
la = mx.nd.linalg


def r(*shape):
    return rng.uniform(-1, 1, size=shape)


def tri(*shape):
    return r(*shape) * 0.5 + 2 * np.eye(shape[-1])


def spd(*shape):
    x = r(*shape)
    return x @ x.swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])


CALLS = [
    ('gemm', lambda a, b, c: la.gemm(a, b, c, transpose_b=True, alpha=2.0, beta=0.5, axis=1),
     [r(2, 3, 2, 2), r(2, 4, 2, 2), r(2, 3, 2, 4)]),
    ('gemm2', lambda a, b: mx.nd.linalg_gemm2(a, b, transpose_a=True, alpha=-1.5),
     [r(2, 3, 2), r(2, 3, 4)]),
    ('potrf', lambda a: la.potrf(a), [spd(2, 3, 3)]),
    ('potrf_upper', lambda a: la.potrf(a, lower=False), [spd(3, 3)]),
    ('potri', lambda a: la.potri(a), [tri(2, 3, 3)]),
    ('potri_upper', lambda a: la.potri(a, lower=False), [tri(3, 3)]),
    ('trsm', lambda a, b: la.trsm(a, b, alpha=2.0), [tri(2, 3, 3), r(2, 3, 2)]),
    ('trsm_right', lambda a, b: la.trsm(a, b, rightside=True, transpose=True, lower=False,
                                        alpha=-0.5), [tri(3, 3), r(4, 3)]),
    ('trmm', lambda a, b: la.trmm(a, b, transpose=True), [r(2, 3, 3), r(2, 3, 2)]),
    ('trmm_right', lambda a, b: la.trmm(a, b, rightside=True, lower=False, alpha=3.0),
     [r(3, 3), r(4, 3)]),
    ('syrk', lambda a: la.syrk(a, transpose=True, alpha=0.5), [r(2, 3, 2)]),
    ('gelqf', lambda a: la.gelqf(a), [r(2, 2, 4)]),
    ('syevd', lambda a: la.syevd(a), [spd(2, 3, 3)]),
    ('sumlogdiag', lambda a: la.sumlogdiag(a), [tri(3, 3)]),
    ('extractdiag', lambda a: la.extractdiag(a, offset=-1), [r(2, 3, 3)]),
    ('makediag', lambda a: la.makediag(a, offset=2), [r(2, 3)]),
    ('extracttrian', lambda a: la.extracttrian(a, offset=1), [r(2, 3, 3)]),
    ('extracttrian_upper', lambda a: la.extracttrian(a, lower=False), [r(3, 3)]),
    ('maketrian', lambda a: la.maketrian(a, offset=-1), [r(2, 6)]),
    ('maketrian_upper', lambda a: la.maketrian(a, lower=False), [r(3)]),
    ('inverse', lambda a: la.inverse(a), [tri(2, 3, 3)]),
    ('det', lambda a: la.det(a), [tri(3, 3)]),
    ('det_singular', lambda a: la.det(a), [np.array([[[1.0, 2.0], [2.0, 4.0]], tri(2, 2)])]),
    ('slogdet', lambda a: la.slogdet(a), [tri(2, 3, 3) * np.array([1, -1])[:, None, None]]),
]
answers = {}
for name, fn, values in CALLS:
    xs = [mx.nd.array(v, dtype='float64') for v in values]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        ys = fn(*xs)
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    heads = [mx.nd.array(rng.normal(size=y.shape), dtype='float64') for y in ys]
    mx.autograd.backward(ys, heads)
    answers[name] = {'outputs': [y.asnumpy().tolist() for y in ys],
                     'shapes': [list(y.shape) for y in ys],
                     'grads': [x.grad.asnumpy().tolist() for x in xs]}
singular = la.trsm(mx.nd.zeros((2, 2)), mx.nd.ones((2, 2)))
answers['trsm_singular'] = {'outputs': [singular.asnumpy().tolist()]}
nodes = {}
a = mx.sym.var('a')
for name in ('gemm', 'gemm2', 'trsm', 'trmm'):
    s = getattr(mx.sym.linalg, name)(a, a, a) if name == 'gemm' else \\
        getattr(mx.sym.linalg, name)(a, a)
    nodes[name] = [s.list_outputs(), json.loads(s.tojson())['nodes'][-1]['op']]
for name in ('potrf', 'potri', 'syrk', 'gelqf', 'syevd', 'sumlogdiag', 'extractdiag',
             'makediag', 'extracttrian', 'maketrian', 'inverse', 'det', 'slogdet'):
    s = getattr(mx.sym.linalg, name)(a)
    graph = json.loads(s.tojson())
    nodes[name] = [s.list_outputs(), graph['nodes'][-1]['op'], graph['node_row_ptr']]
nodes['alias'] = mx.sym.linalg_potrf(a).list_outputs()
answers['nodes'] = nodes
with open(sys.argv[1] + '/answers.json', 'w') as f:
    json.dump(answers, f)
'''


def test_every_function_as_mxnet_computes_it(answers_of_both):
    """Values, gradients (from a random head) and graph nodes of every linalg function,
    against MXNet 1.9.1, in float64."""
    theirs, ours = answers_of_both(_BOTH, 'answers.json')
    assert ours['nodes'] == theirs['nodes']
    assert ours.keys() == theirs.keys()
    for name in theirs:
        if name == 'nodes':
            continue
        assert ours[name].get('shapes') == theirs[name].get('shapes'), name
        for key in ('outputs', 'grads'):
            for k, (got, want) in enumerate(zip(ours[name].get(key, []),
                                                theirs[name].get(key, []))):
                np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-9,
                                           atol=1e-11, err_msg='%s %s %d' % (name, key, k))
