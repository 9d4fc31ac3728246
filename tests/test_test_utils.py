"""mx.test_utils: the helpers must catch what they claim to catch."""
import numpy as np
import pytest

import minigluon as mx
from minigluon import autograd, nd, test_utils


def test_assert_almost_equal_passes_and_fails_with_location():
    test_utils.assert_almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))
    with pytest.raises(AssertionError, match=r'worst at index \(1,\)'):
        test_utils.assert_almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.1]))
    with pytest.raises(AssertionError, match='shape mismatch'):
        test_utils.assert_almost_equal(np.zeros(2), np.zeros(3))


def test_assert_almost_equal_broadcasts_as_mxnet_unless_told_not_to():
    test_utils.assert_almost_equal(np.ones((1, 3, 2)), np.ones((3, 2)))
    with pytest.raises(AssertionError, match=r'worst at index \(0, 2, 1\)'):
        test_utils.assert_almost_equal(np.ones((1, 3, 2)), np.eye(3, 2) * 0 + np.array(
            [[1, 1], [1, 1], [1, 0]]))
    with pytest.raises(AssertionError, match='shape mismatch'):
        test_utils.assert_almost_equal(np.ones((1, 3, 2)), np.ones((3, 2)), use_broadcast=False)


def test_almost_equal_and_same():
    assert test_utils.almost_equal(np.array([1.0]), np.array([1.0 + 1e-9]))
    assert not test_utils.almost_equal(np.array([1.0]), np.array([1.1]))
    assert test_utils.same(nd.array([1, 2]), np.array([1, 2], dtype=np.float32))
    assert not test_utils.same(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))


def test_float16_tolerance_is_looser():
    a = np.array([1.0], dtype=np.float16)
    test_utils.assert_almost_equal(a, np.array([1.004], dtype=np.float16))
    with pytest.raises(AssertionError):
        test_utils.assert_almost_equal(np.array([1.0]), np.array([1.004]))


def test_rand_helpers_and_default_context():
    shape = test_utils.rand_shape_nd(3, dim=4)
    assert len(shape) == 3 and all(1 <= s <= 4 for s in shape)
    arr = test_utils.rand_ndarray((2, 5), dtype='float64')
    assert arr.shape == (2, 5) and arr.dtype == np.float64
    assert ((arr.asnumpy() >= 0) & (arr.asnumpy() < 1)).all()
    assert test_utils.default_context() == mx.cpu(0)
    test_utils.set_default_context(mx.cpu(1))
    try:
        assert test_utils.rand_ndarray((2,)).context == mx.cpu(1)
    finally:
        test_utils.set_default_context(mx.cpu(0))


def test_check_numeric_gradient_catches_a_wrong_backward():
    class WrongSquare(autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x

        def backward(self, dy):
            x, = self.saved_tensors
            return dy * x * 2.02  # 1% off

    class RightSquare(WrongSquare):
        def backward(self, dy):
            x, = self.saved_tensors
            return dy * x * 2

    x = np.array([0.5, -1.5, 2.0])
    test_utils.check_numeric_gradient(lambda a: RightSquare()(a), [x], rtol=1e-4)
    with pytest.raises(AssertionError, match='autograd grad of input 0'):
        test_utils.check_numeric_gradient(lambda a: WrongSquare()(a), [x], rtol=1e-4)


def test_check_numeric_gradient_named_inputs_and_grad_nodes():
    loc = {'x': np.array([1.0, 2.0]), 'idx': np.array([1.0, 0.0])}
    test_utils.check_numeric_gradient(lambda x, idx: nd.take(x, idx) * x, loc, grad_nodes=['x'])


# ---- checks of symbols (MXNet's check_symbolic_forward/backward, check_numeric_gradient) -

def _product():
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    y = np.array([[1.0, 2.0, -0.5], [0.5, 3.0, 1.25]])
    return a * b, x, y


def test_check_symbolic_forward_takes_lists_or_dicts_and_names_the_output():
    sym, x, y = _product()
    outs = test_utils.check_symbolic_forward(sym, [x, y], [x * y])
    assert outs[0].dtype == np.float32    # numpy inputs become float32, as in MXNet
    test_utils.check_symbolic_forward(sym, {'b': y, 'a': x}, {sym.list_outputs()[0]: x * y},
                                      dtype=np.float64, rtol=1e-12, atol=0)
    test_utils.check_symbolic_forward(sym, [x, y], [x * y + 5e-4])   # MXNet's float32 atol 1e-3
    with pytest.raises(AssertionError, match='EXPECTED__mul.*FORWARD__mul'):
        test_utils.check_symbolic_forward(sym, [x, y], [x * y * 1.01])
    with pytest.raises(ValueError, match=r"location names \['a'\].*\['a', 'b'\]"):
        test_utils.check_symbolic_forward(sym, {'a': x}, [x * y])
    with pytest.raises(ValueError, match='gives 1 arrays but the symbol has 2'):
        test_utils.check_symbolic_forward(sym, [x], [x * y])


def test_check_symbolic_backward_honours_each_grad_req():
    sym, x, y = _product()
    head = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]])
    grads = test_utils.check_symbolic_backward(sym, [x, y], [head], [y * head, x * head])
    assert sorted(grads) == ['a', 'b']
    # 'add' adds to the (random) gradient there was; 'null' leaves it alone
    test_utils.check_symbolic_backward(sym, [x, y], [head], {'a': y * head, 'b': x},
                                       grad_req={'a': 'add', 'b': 'null'})
    with pytest.raises(AssertionError, match='EXPECTED_b.*BACKWARD_b'):
        test_utils.check_symbolic_backward(sym, [x, y], [head], [y * head, x],
                                           grad_req=['write', 'write'])
    with pytest.raises(mx.MXNetError, match='dense storage only'):
        test_utils.check_symbolic_backward(sym, [x, y], [head], [y * head, x * head],
                                           grad_stypes={'a': 'row_sparse'})


def test_check_numeric_gradient_of_a_symbol_passes_and_catches_a_missing_gradient():
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    x = np.array([[0.3, -0.8], [1.1, 0.6]])
    y = np.array([[1.2, 0.7], [-0.9, 1.5]])
    test_utils.check_numeric_gradient(mx.sym.sin(a) / b, [x, y])
    test_utils.check_numeric_gradient(mx.sym.sin(a) / b, {'a': x, 'b': y}, numeric_eps=1e-6,
                                      rtol=1e-6, atol=1e-9, dtype=np.float64,
                                      grad_nodes={'a': 'add', 'b': 'null'})
    # BlockGrad's backward sends nothing to `a`, which the differences see
    with pytest.raises(AssertionError, match='NUMERICAL_a.*BACKWARD_a'):
        test_utils.check_numeric_gradient(mx.sym.BlockGrad(a) * b, [x, y], grad_nodes=['a'])
    with pytest.raises(ValueError, match='not arguments of the symbol'):
        test_utils.check_numeric_gradient(a * b, [x, y], grad_nodes=['c'])


def test_check_numeric_gradient_resets_auxiliary_states_and_requires_them():
    data = mx.sym.Variable('data')
    bn = mx.sym.BatchNorm(data, fix_gamma=False, name='bn')
    x = np.array([[[0.1, 0.9], [0.4, -0.3]], [[0.7, 0.2], [-0.5, 0.8]]])
    args = [x, np.array([1.5, 0.5]), np.array([0.1, -0.2])]
    test_utils.check_numeric_gradient(bn, args, aux_states=[np.zeros(2), np.ones(2)],
                                      dtype=np.float64, numeric_eps=1e-5, rtol=1e-4, atol=1e-7)
    with pytest.raises(ValueError, match="auxiliary states.*bn_moving_mean.*aux_states"):
        test_utils.check_symbolic_forward(bn, args, [x])


def test_numeric_grad_of_an_executor_steps_half_eps_either_side():
    a = mx.sym.Variable('a')
    exe = (a * a * a).bind(mx.cpu(), args={'a': nd.zeros((2,), dtype='float64')},
                           grad_req='null')
    grads = test_utils.numeric_grad(exe, {'a': np.array([1.0, 2.0])}, eps=0.5, dtype=np.float64)
    # ((x + e/2)^3 - (x - e/2)^3) / e = 3x^2 + e^2/4
    np.testing.assert_allclose(grads['a'], [3.0625, 12.0625], rtol=1e-12)


def test_simple_forward_check_speed_and_the_tolerance_tables():
    sym, x, y = _product()
    np.testing.assert_allclose(test_utils.simple_forward(sym, a=x, b=y), x * y, rtol=1e-6)
    assert test_utils.check_speed(sym, {'a': x, 'b': y}, N=2) > 0
    assert test_utils.check_speed(sym, N=1, typ='forward', a=(2, 3), b=(2, 3)) > 0
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert (test_utils.default_rtols()[f32], test_utils.default_atols()[f32]) == (1e-4, 1e-3)
    assert test_utils.default_numeric_eps()[f64] == 2.0 ** -14
    assert test_utils.get_tols(np.float32(1), np.float64(1), None, None) == (1e-4, 1e-3)
    assert test_utils.get_tols(np.ones(1), np.ones(1), {f64: 0.5}, 0.25) == (0.5, 0.25)
    test_utils.assert_almost_equal_ignore_nan(np.array([np.nan, 1.0]), np.array([2.0, 1.0]))
    assert not test_utils.almost_equal_ignore_nan(np.array([np.nan, 1.0]), np.array([2.0, 3.0]))
    with pytest.raises(AssertionError):
        test_utils.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))


SYMBOL_CHECKS_SCRIPT = '''
import json, sys
import numpy as np
import mxnet as mx
tu = mx.test_utils

a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
x = np.array([[0.02, -0.5], [1.25, 0.75]])
y = np.array([[1.5, -0.25], [0.5, 2.0]])
head = np.array([[1.0, 2.0], [-1.0, 0.5]])
checks = {
    'forward near zero, off 6e-4': lambda: tu.check_symbolic_forward(
        a * b, [x, y], [x * y + 6e-4]),
    'forward, off 3e-3': lambda: tu.check_symbolic_forward(a * b, [x, y], [x * y + 3e-3]),
    'forward float64 off 1e-6 relative': lambda: tu.check_symbolic_forward(
        a * b, [x, y], [x * y * (1 + 1e-6)], dtype=np.float64),
    'forward, a list longer than the arguments': lambda: tu.check_symbolic_forward(
        a * b, [x, y, y], [x * y]),
    'backward add and null': lambda: tu.check_symbolic_backward(
        a * b, [x, y], [head], {'a': y * head, 'b': x}, grad_req={'a': 'add', 'b': 'null'}),
    'backward wrong': lambda: tu.check_symbolic_backward(
        a * b, [x, y], [head], [y * head * 1.01, x * head]),
    'numeric gradient': lambda: tu.check_numeric_gradient(mx.sym.tanh(a) * b, [x, y]),
    'numeric gradient, blocked': lambda: tu.check_numeric_gradient(
        mx.sym.BlockGrad(a) * b, [x, y]),
}
answers = {}
for name, check in checks.items():
    try:
        check()
        answers[name] = 'passes'
    except AssertionError:
        answers[name] = 'fails'
exe = mx.sym.sin(a).bind(mx.cpu(), args={'a': mx.nd.zeros((2, 2), dtype='float64')},
                         grad_req='null')
grads = tu.numeric_grad(exe, {'a': x.copy()}, eps=0.25, dtype=np.float64)
answers['numeric_grad'] = np.round(grads['a'], 10).tolist()
json.dump(answers, open(sys.argv[1] + '/answers.json', 'w'))
'''


def test_symbol_checks_pass_and_fail_as_mxnets_do(answers_of_both):
    theirs, ours = answers_of_both(SYMBOL_CHECKS_SCRIPT, 'answers.json')
    assert ours == theirs


# ---- optimizer comparisons, downloads, stderr and environment helpers ----------------

class _SGDOffByOnePercent(mx.optimizer.SGD):
    def step(self, xp, weight, grad, state, lr, wd, t):
        super().step(xp, weight, grad, state, lr * 1.01, wd, t)


def test_compare_optimizer_accepts_equal_and_catches_different_updates():
    test_utils.compare_optimizer(mx.optimizer.SGD(momentum=0.9), mx.optimizer.SGD(momentum=0.9),
                                 (3, 4), np.float32)
    with pytest.raises(AssertionError):
        test_utils.compare_optimizer(mx.optimizer.SGD(momentum=0.9, learning_rate=1.0),
                                     _SGDOffByOnePercent(momentum=0.9, learning_rate=1.0),
                                     (3, 4), np.float32)
    # a list of shapes: the second optimizer updates them all in one call
    test_utils.compare_optimizer(mx.optimizer.Adam(), mx.optimizer.Adam(), [(2, 3), (4,)],
                                 np.float64, ntensors=2)
    with pytest.raises(mx.MXNetError, match='sparse'):
        test_utils.compare_optimizer(mx.optimizer.SGD(), mx.optimizer.SGD(), (2, 2), np.float32,
                                     g_stype='row_sparse')


def test_compare_ndarray_tuple_skips_none_and_compares_nested():
    a = (None, (nd.array([1.0]), nd.array([2.0])))
    test_utils.compare_ndarray_tuple(a, (nd.array([5.0]), (nd.array([1.0]), nd.array([2.0]))))
    test_utils.compare_ndarray_tuple(None, nd.array([3.0]))
    with pytest.raises(AssertionError):
        test_utils.compare_ndarray_tuple(a, (None, (nd.array([1.0]), nd.array([2.5]))))


def test_assert_almost_equal_with_err_allows_a_share_of_mismatches():
    a, b = np.zeros(100), np.zeros(100)
    b[:3] = 1.0
    test_utils.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError, match='3% of the elements differ'):
        test_utils.assert_almost_equal_with_err(a, b, etol=0.02)
    with pytest.raises(AssertionError):   # etol 0 (the default): every element must agree
        test_utils.assert_almost_equal_with_err(a, b)
    assert test_utils.get_etol() == 0 and test_utils.get_etol(0.1) == 0.1
    assert test_utils.default_dtype() == np.float32


def test_download_to_fname_or_dirname_and_skip_existing(tmp_path, http_server):
    served = tmp_path / 'served'
    served.mkdir()
    (served / 'data.txt').write_bytes(b'x' * 500)
    server = http_server(served)
    out = tmp_path / 'out'
    path = test_utils.download(server.url + 'data.txt', dirname=str(out))
    assert path == str(out / 'data.txt') and (out / 'data.txt').read_bytes() == b'x' * 500
    (out / 'data.txt').write_bytes(b'local')
    assert test_utils.download(server.url + 'data.txt', fname=path) == path
    assert (out / 'data.txt').read_bytes() == b'local' and server.requests == 1
    test_utils.download(server.url + 'data.txt', fname=path, overwrite=True)
    assert (out / 'data.txt').read_bytes() == b'x' * 500 and server.requests == 2


def test_download_retries_then_raises(tmp_path, closed_port_url, monkeypatch):
    monkeypatch.setattr(mx.gluon.utils, 'RETRY_DELAY_S', 0.0)
    with pytest.raises(mx.MXNetError, match='after 2 attempt'):
        test_utils.download(closed_port_url + 'f.bin', dirname=str(tmp_path), retries=1)
    assert not (tmp_path / 'f.bin').exists()
    with pytest.raises(ValueError, match='retries'):
        test_utils.download(closed_port_url + 'f.bin', retries=-1)


def test_discard_stderr_silences_file_descriptor_2(capfd):
    import os
    import sys
    with test_utils.discard_stderr():
        os.write(2, b'native noise\n')
        print('python noise', file=sys.stderr)
    os.write(2, b'after\n')
    err = capfd.readouterr().err
    assert 'noise' not in err and 'after' in err


def test_set_env_var_returns_the_previous_value(monkeypatch):
    monkeypatch.delenv('MINIGLUON_TEST_VAR', raising=False)
    assert test_utils.set_env_var('MINIGLUON_TEST_VAR', '1', default_val='unset') == 'unset'
    assert test_utils.set_env_var('MINIGLUON_TEST_VAR', '2') == '1'
    import os
    assert os.environ['MINIGLUON_TEST_VAR'] == '2'


def test_chi_square_p_value_matches_the_closed_forms():
    # 2 degrees of freedom: p = exp(-stat / 2); 1 degree: p = erfc(sqrt(stat / 2))
    import math
    obs, exp = [110, 90, 100], [100, 100, 100]
    assert abs(test_utils.chi_square_p_value(obs, exp) - math.exp(-2.0 / 2)) < 1e-12
    obs, exp = [130, 70], [100, 100]
    assert abs(test_utils.chi_square_p_value(obs, exp) - math.erfc(math.sqrt(18.0 / 2))) < 1e-12
    # large statistics go through the continued fraction: p for 5 dof at 40 is 1.49e-7
    obs, exp = [140, 60, 120, 80, 100, 100], [100.0] * 6
    assert abs(test_utils.chi_square_p_value(obs, exp) / 1.49337e-7 - 1) < 1e-3


def test_verify_generator_accepts_the_right_law_and_rejects_a_wrong_one():
    rng = np.random.RandomState(0)
    buckets, probs = test_utils.gen_buckets_probs_with_ppf(lambda q: q * 2 - 1, 4)
    assert buckets == [(-1.0, -0.5), (-0.5, 0.0), (0.0, 0.5), (0.5, 1.0)] and probs == [0.25] * 4
    p = test_utils.verify_generator(lambda n: rng.uniform(-1, 1, n), buckets, probs,
                                    nsamples=20000, nrepeat=3)
    assert len(p) == 3
    with pytest.raises(AssertionError, match='Generator test fails'):
        test_utils.verify_generator(lambda n: rng.uniform(-1, 0.9, n), buckets, probs,
                                    nsamples=20000, nrepeat=3)
    # discrete buckets are the values themselves
    test_utils.verify_generator(lambda n: rng.choice(3, n, p=[0.2, 0.3, 0.5]), [0, 1, 2],
                                [0.2, 0.3, 0.5], nsamples=20000, nrepeat=3)


def test_np_reduce_random_helpers_and_assert_exception():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(test_utils.np_reduce(x, (0, 2), True, np.sum),
                                  x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(test_utils.np_reduce(x, None, False, np.max), x.max())
    a, b = test_utils.random_arrays((2, 3), ())
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.shape == () and b.dtype == np.float32
    picked = test_utils.random_sample([1, 2, 3, 4], 2)
    assert len(set(picked)) == 2 and set(picked) <= {1, 2, 3, 4}
    assert all(1 <= d <= 3 for d in test_utils.rand_shape_3d(3, 3, 3))
    test_utils.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError):
        test_utils.assert_exception(lambda: None, ZeroDivisionError)


def test_retry_reruns_only_assertion_failures():
    calls = []

    @test_utils.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 2

    flaky()
    assert len(calls) == 2

    @test_utils.retry(2)
    def broken():
        calls.append(1)
        raise AssertionError('always')

    with pytest.raises(AssertionError, match='always'):
        broken()


def test_star_import_gives_mx_as_mxnet_test_utils_does():
    namespace = {}
    exec('from minigluon.test_utils import *', namespace)
    assert namespace['mx'] is mx


def test_chi_square_check_counts_buckets_as_mxnet_does():
    samples = np.array([-5.0, 0.1, 0.5, 1.5, 2.5, 3.5, 9.0, np.nan])
    buckets = [(0.0, 1.0), (2.0, 3.0), (3.0, 4.0)]
    _, obs, expected = test_utils.chi_square_check(lambda n: samples, buckets, [0.25, 0.5, 0.25],
                                                   nsamples=8)
    # a sample left of a bucket (or in the gap before it) counts for it; beyond the last
    # bucket and NaN count nowhere: MXNet's searchsorted over the edges, halved
    edges = np.array(buckets, np.float32).reshape(-1)
    ref = np.bincount(np.searchsorted(edges, samples, side='right') // 2, minlength=4)[:3]
    np.testing.assert_array_equal(obs, ref)
    np.testing.assert_array_equal(obs, [3, 2, 1])
    np.testing.assert_array_equal(expected, [2, 4, 2])


def _zip(path, entries):
    import zipfile
    with zipfile.ZipFile(str(path), 'w') as zf:
        for name, payload in entries.items():
            zf.writestr(name, payload)


def test_get_cifar10_downloads_and_unpacks_once(tmp_path, http_server, monkeypatch):
    served = tmp_path / 'served'
    served.mkdir()
    names = ['train.rec', 'test.rec', 'train.lst', 'test.lst']
    _zip(served / 'cifar10.zip', {'cifar/' + n: n.encode() for n in names})
    server = http_server(served)
    monkeypatch.setattr(test_utils, 'CIFAR10_REC_URL', server.url + 'cifar10.zip')
    work = tmp_path / 'work'
    work.mkdir()
    monkeypatch.chdir(work)
    test_utils.get_cifar10()
    assert [(work / 'data' / 'cifar' / n).read_bytes() for n in names] == \
        [n.encode() for n in names]
    test_utils.get_cifar10()
    assert server.requests == 1


def test_get_cifar10_refuses_an_archive_that_escapes_its_folder(tmp_path, http_server,
                                                                monkeypatch):
    served = tmp_path / 'served'
    served.mkdir()
    _zip(served / 'cifar10.zip', {'cifar/train.rec': b'x', '../evil.txt': b'x'})
    monkeypatch.setattr(test_utils, 'CIFAR10_REC_URL', http_server(served).url + 'cifar10.zip')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mx.MXNetError, match=r"unsafe entry '../evil.txt'"):
        test_utils.get_cifar10()
    assert not (tmp_path / 'evil.txt').exists()


def _idx_files(count):
    """MNIST's four IDX files (as bytes) with ``count`` 28x28 images each."""
    import struct
    images = (np.arange(count * 784) % 256).astype(np.uint8).tobytes()
    labels = (np.arange(count) % 10).astype(np.uint8).tobytes()
    files = {}
    for prefix in ('train', 't10k'):
        files['%s-images-idx3-ubyte' % prefix] = struct.pack('>IIII', 2051, count, 28, 28) \
            + images
        files['%s-labels-idx1-ubyte' % prefix] = struct.pack('>II', 2049, count) + labels
    return files


def test_get_mnist_ubyte_and_iterator_from_the_data_url(tmp_path, http_server, monkeypatch):
    served = tmp_path / 'served'
    (served / 'mxnet' / 'data').mkdir(parents=True)
    _zip(served / 'mxnet' / 'data' / 'mnist.zip', _idx_files(6))
    server = http_server(served)
    monkeypatch.setenv(test_utils.TEST_DATA_URL_VARIABLE, server.url)
    monkeypatch.chdir(tmp_path)
    train, val = test_utils.get_mnist_iterator(batch_size=3, input_shape=(784,),
                                               num_parts=2, part_index=1)
    assert train.provide_data[0].shape == (3, 784) and len(list(val)) == 1
    test_utils.get_mnist_ubyte()
    assert server.requests == 1


def test_get_mnist_reads_the_gz_files(tmp_path, http_server, monkeypatch):
    import gzip
    served = tmp_path / 'data' / 'mnist'
    served.mkdir(parents=True)
    for name, payload in _idx_files(3).items():
        (served / (name + '.gz')).write_bytes(gzip.compress(payload))
    monkeypatch.setenv(test_utils.TEST_DATA_URL_VARIABLE, http_server(tmp_path).url)
    work = tmp_path / 'work'
    work.mkdir()
    monkeypatch.chdir(work)
    mnist = test_utils.get_mnist()
    assert mnist['train_data'].shape == (3, 1, 28, 28) and mnist['test_label'].dtype == np.int8
    np.testing.assert_allclose(mnist['train_data'].reshape(-1)[:3], np.arange(3) / 255.0)


def test_get_mnist_without_network_says_what_to_do(tmp_path, closed_port_url, monkeypatch):
    monkeypatch.setattr(mx.gluon.utils, 'RETRY_DELAY_S', 0.0)
    monkeypatch.setenv(test_utils.TEST_DATA_URL_VARIABLE, closed_port_url)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mx.MXNetError, match='cannot download MNIST.*MINIGLUON_TEST_DATA_URL'):
        test_utils.get_mnist_ubyte()


def test_mnist_iterator_and_cifar10_read_local_files_without_downloading(
        tmp_path, closed_port_url, monkeypatch):
    """With the files in place (MNIST's IDX files, CIFAR-10's RecordIO files), nothing is
    downloaded: the URLs point at a port where nothing listens."""
    monkeypatch.setenv(test_utils.TEST_DATA_URL_VARIABLE, closed_port_url)
    monkeypatch.setattr(test_utils, 'CIFAR10_REC_URL', closed_port_url + 'cifar10.zip')
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'data' / 'cifar').mkdir(parents=True)
    for name, payload in _idx_files(4).items():
        (tmp_path / 'data' / name).write_bytes(payload)
    train, val = test_utils.get_mnist_iterator(batch_size=2, input_shape=(1, 28, 28))
    batch = next(iter(train))
    assert batch.data[0].shape == (2, 1, 28, 28) and len(list(val)) == 2
    for part in ('train', 'test'):
        record = mx.recordio.MXRecordIO(str(tmp_path / 'data' / 'cifar' / (part + '.rec')), 'w')
        record.write(mx.recordio.pack(mx.recordio.IRHeader(0, 3.0, 0, 0), b'image'))
        record.close()
        (tmp_path / 'data' / 'cifar' / (part + '.lst')).write_text('0\t3\timage.png\n')
    test_utils.get_cifar10()
    reader = mx.recordio.MXRecordIO(str(tmp_path / 'data' / 'cifar' / 'train.rec'), 'r')
    header, payload = mx.recordio.unpack(reader.read())
    assert header.label == 3.0 and payload == b'image'


def test_float64_against_float32_is_compared_at_float32_tolerance():
    """As MXNet's ``get_tols``: the looser dtype of the two decides (a float64 reference
    of a float32 result, as test_deconvolution_forward_with_bias compares)."""
    exact, summed = np.array([-0.1573107852441442]), np.array([-0.15731084], np.float32)
    test_utils.assert_almost_equal(exact, summed)
    test_utils.assert_almost_equal(summed, exact)
    with pytest.raises(AssertionError):
        test_utils.assert_almost_equal(exact, exact + 1e-6)  # both float64: tight


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(nd.arange(6).reshape((3, 2)), batch_size=2)
    dummy = test_utils.DummyIter(real)
    assert dummy.batch_size == 2 and dummy.provide_data == real.provide_data
    batches = [next(dummy) for _ in range(4)]  # never runs out
    assert all(b is batches[0] for b in batches)
    assert batches[0].data[0].asnumpy().tolist() == [[0, 1], [2, 3]]
