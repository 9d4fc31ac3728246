"""How much of MXNet 1.x's own Python unit-test suite passes with ``mxnet`` = minigluon.

Usage::

    python benchmarks/mxnet_unittests.py --mxnet-repo PATH [--branch v1.x] [--keep DIR]
                                         [--files test_symbol,...]
                                         [--mxnet-python PYTHON_WITH_MXNET_1.9.1]
                                         [pytest args, e.g. -k trainer, -n 2]

``PATH`` is a git clone of apache/mxnet (nothing is downloaded). The test files the
Gluon API covers are copied out of ``--branch`` with ``tests/python/common/models.py``
and ``tests/python/unittest/common.py``, a conftest makes ``import mxnet`` (and every
``mxnet.x.y``) import ``minigluon.x.y``, and pytest runs them. Each test is then counted
in scope or out of scope by what its source uses: the parts minigluon leaves out by
design or has not reached yet (sparse storage, the LibSVM iterator, detection, contrib
outside the sequence files, profiler, engine, the C API, ``mx.np``/``mx.npx``, GPUs;
symbols, executors and Module outside ``SYMBOL_FILES``) put a test out of scope. With
``--mxnet-python`` the same files also run under real MXNet 1.9.1, and a test that fails
there too (its own code broken by numpy 1.23, for instance) is counted apart, as one MXNet
skips is.

The files MXNet's tests download from data.mxnet.io (``test_images.tar.gz``,
``cifar10.zip``, ``mnist.zip``) cannot be fetched here: pytest runs with ``http_proxy``
pointing at a local server that answers for them with stand-ins in the same layout (16 JPEG photos of
noise; CIFAR-10's 50,000 + 10,000 records as 32x32 JPEGs in ``.rec`` files written by
minigluon, 5,000 of each class in the training set; MNIST's 60,000 + 10,000 digits in its
IDX files, one pattern per class), and 404 for anything else.

Needs pytest, pytest-timeout and the test files' own imports (nose or pynose, scipy,
requests): ``pip install -r benchmarks/requirements.txt``.
"""
import argparse
import ast
import functools
import http.server
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import urllib.parse
import xml.etree.ElementTree as ET
import zipfile

import numpy as np

TEST_FILES = ['test_autograd', 'test_ndarray', 'test_gluon', 'test_gluon_trainer',
              'test_gluon_data', 'test_gluon_data_vision', 'test_gluon_utils',
              'test_gluon_model_zoo', 'test_loss', 'test_metric', 'test_init',
              'test_optimizer', 'test_kvstore', 'test_random', 'test_test_utils',
              'test_recordio', 'test_io', 'test_image',
              'test_symbol', 'test_infer_shape', 'test_executor', 'test_module',
              'test_gluon_rnn', 'test_rnn', 'test_contrib_control_flow',
              'test_operator', 'test_higher_order_grad', 'test_contrib_operator']
# The files of symbols and executors: there symbols, ``bind`` and the like are the subject,
# in scope (the other files' tests that use them stay counted apart until those parts of
# them are reached).
SYMBOL_FILES = frozenset(['test_symbol', 'test_infer_shape', 'test_executor', 'test_module',
                          'test_gluon_rnn', 'test_rnn', 'test_contrib_control_flow',
                          'test_operator', 'test_higher_order_grad', 'test_contrib_operator'])
# The files of recurrent cells and control flow: there ``rnn`` and ``contrib`` (its rnn
# cells, foreach, while_loop, cond) are the subject, and graphs leave through export.
SEQUENCE_FILES = frozenset(['test_gluon_rnn', 'test_rnn', 'test_contrib_control_flow'])
# The files where ``contrib`` is the subject: the sequence files and the operator files,
# whose contrib operators (detection, attention, deformable convolution ...) are built.
CONTRIB_FILES = SEQUENCE_FILES | {'test_operator', 'test_contrib_operator'}

# What a test's own source mentions when it exercises a part left out by design.
LEFT_OUT = (r'stype|sparse|row_sparse|\bcsr\b|mxsps|mx\.np\b|_mx_np|\bnpx\b|use_np|'
            r'LibSVMIter|profiler|mx\.engine|_LIB|ctypes|mx\.gpu\(|gpu_device|cudnn|'
            r'_api_internal|ImageDetIter|DetAugmenter|det_augmenters')
OUT_OF_SCOPE = re.compile(LEFT_OUT + r'|contrib|export\(|SymbolBlock|\.var\(\)')
OUT_OF_SCOPE_IN_CONTRIB_FILES = re.compile(LEFT_OUT)
# Symbols, executors and Module, out of scope outside SYMBOL_FILES.
SYMBOLIC = re.compile(
    r'mx\.sym\b|mx\.symbol|\bsym\.|symbol\.|\.bind\(|simple_bind|mx\.mod\b|\.Module\(')

ALIAS = '''
import importlib, importlib.abc, importlib.util, sys


class MXNetIsMinigluon(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import mxnet.a.b`` imports ``minigluon.a.b`` under the mxnet name."""

    def find_spec(self, name, path, target=None):
        if name != 'mxnet' and not name.startswith('mxnet.'):
            return None
        if importlib.util.find_spec('minigluon' + name[len('mxnet'):]) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return importlib.import_module('minigluon' + spec.name[len('mxnet'):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, MXNetIsMinigluon())
'''

# What both runs (minigluon's and, with --mxnet-python, MXNet's own) need.
COMMON_CONFTEST = '''
# a helper test_module imports, not a test file of the selection
collect_ignore = ['test_bucketing.py']


import pytest


@pytest.fixture(scope='class', autouse=True)
def nose_class_fixtures(request):
    """nose's ``setupClass``/``teardownClass``, which MXNet's test classes rely on."""
    cls = request.cls
    if cls is not None and hasattr(cls, 'setupClass'):
        cls.setupClass()
    yield
    if cls is not None and hasattr(cls, 'teardownClass'):
        cls.teardownClass()
'''
CONFTEST = ALIAS + COMMON_CONFTEST


def git_show(repo, branch, path):
    return subprocess.run(['git', '-C', repo, 'show', '%s:%s' % (branch, path)],
                          check=True, capture_output=True, text=True).stdout


def test_sources(source):
    """Test name -> its source, for the module-level ``test_*`` functions and the
    ``test_*`` methods of ``Test*`` classes (named ``Class::method``)."""
    tree = ast.parse(source)
    lines = source.splitlines()

    def body(node):
        return '\n'.join(lines[node.lineno - 1:node.end_lineno])
    tests = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith('test_'):
            tests[node.name] = body(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith('Test'):
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and method.name.startswith('test_'):
                    tests['%s::%s' % (node.name, method.name)] = body(method)
    return tests


def _noise_jpeg(rng, width, height):
    from PIL import Image
    pixels = rng.randint(0, 256, size=(height, width, 3)).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, 'JPEG', quality=90)
    return out.getvalue()


def _cifar_rec(folder, name, per_class, rng):
    """``name``.rec/.idx/.lst with ``per_class`` 32x32 JPEG records of each of 10 classes."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from minigluon import recordio
    labels = np.repeat(np.arange(10), per_class)
    rng.shuffle(labels)
    pool = [_noise_jpeg(rng, 32, 32) for _ in range(64)]
    prefix = os.path.join(folder, name)
    writer = recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'w')
    with open(prefix + '.lst', 'w') as lst:
        for i, label in enumerate(labels.tolist()):
            writer.write_idx(i, recordio.pack((0, float(label), i, 0), pool[i % len(pool)]))
            lst.write('%d\t%f\t%d.jpg\n' % (i, label, i))
    writer.close()


def make_stand_ins(folder):
    """The files of data.mxnet.io that MXNet's tests download, as stand-ins (see above)."""
    done = os.path.join(folder, 'complete')
    if os.path.exists(done):
        return
    rng = np.random.RandomState(0)
    os.makedirs(os.path.join(folder, 'data'), exist_ok=True)
    with tarfile.open(os.path.join(folder, 'data', 'test_images.tar.gz'), 'w:gz') as tar:
        for i in range(16):
            payload = _noise_jpeg(rng, int(rng.randint(200, 500)), int(rng.randint(200, 500)))
            info = tarfile.TarInfo('test_images/%02d.jpg' % i)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    cifar = tempfile.mkdtemp(dir=folder)
    os.makedirs(os.path.join(cifar, 'cifar'))
    _cifar_rec(os.path.join(cifar, 'cifar'), 'train', 5000, rng)
    _cifar_rec(os.path.join(cifar, 'cifar'), 'test', 1000, rng)
    os.makedirs(os.path.join(folder, 'mxnet', 'data'), exist_ok=True)
    with zipfile.ZipFile(os.path.join(folder, 'mxnet', 'data', 'cifar10.zip'), 'w') as zf:
        for name in sorted(os.listdir(os.path.join(cifar, 'cifar'))):
            zf.write(os.path.join(cifar, 'cifar', name), 'cifar/' + name)
    shutil.rmtree(cifar)
    with zipfile.ZipFile(os.path.join(folder, 'mxnet', 'data', 'mnist.zip'), 'w',
                         zipfile.ZIP_DEFLATED) as zf:
        for name, count in (('train', 60000), ('t10k', 10000)):
            zf.writestr('%s-images-idx3-ubyte' % name, _mnist_images(count))
            zf.writestr('%s-labels-idx1-ubyte' % name, struct.pack('>II', 2049, count) +
                        (np.arange(count) % 10).astype(np.uint8).tobytes())
    open(done, 'w').close()


def _mnist_images(count):
    """MNIST's image file for ``count`` 28x28 digits, each class one stroke pattern (a
    repeating pattern, so the archive stays small)."""
    patterns = (np.random.RandomState(1).rand(10, 28, 28) > 0.8).astype(np.uint8) * 255
    images = patterns[np.arange(count) % 10]
    return struct.pack('>IIII', 2051, count, 28, 28) + images.tobytes()


# What a test file mentions when it downloads MXNet's data (then the stand-ins are made).
DOWNLOADS = re.compile(r'mnist|cifar|download|data\.mxnet\.io', re.I)


class StandInProxy(http.server.SimpleHTTPRequestHandler):
    """An HTTP proxy that answers ``http://data.mxnet.io/<path>`` from its folder."""

    def translate_path(self, path):
        url = urllib.parse.urlsplit(path)
        if url.hostname != 'data.mxnet.io':
            return os.path.join(self.directory, 'not-served', 'x')
        return super().translate_path(url.path)

    def log_message(self, *args):
        pass


def start_proxy(folder):
    server = http.server.ThreadingHTTPServer(
        ('127.0.0.1', 0), functools.partial(StandInProxy, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--mxnet-repo', required=True, help='a git clone of apache/mxnet')
    parser.add_argument('--branch', default='v1.x')
    parser.add_argument('--keep', help='write the tests and the report into this folder')
    parser.add_argument('--timeout', type=int, default=300,
                        help='seconds per test (0: no limit, and no need of pytest-timeout)')
    parser.add_argument('--mxnet-python',
                        help='a Python with MXNet 1.9.1 (and pytest, pytest-timeout, pynose, '
                             'scipy): the same tests run there too, and those that fail '
                             'under MXNet itself are counted apart')
    parser.add_argument('--count-only', action='store_true',
                        help="count the report of an earlier run in --keep's folder again")
    parser.add_argument('--files', help='run only these test files (comma-separated names '
                                        'of TEST_FILES, e.g. test_symbol,test_executor)')
    args, pytest_args = parser.parse_known_args()
    files = TEST_FILES
    if args.files:
        files = args.files.split(',')
        unknown = sorted(set(files) - set(TEST_FILES))
        if unknown:
            parser.error('--files: %s are not among %s' % (unknown, TEST_FILES))

    work = args.keep or tempfile.mkdtemp(prefix='mxnet-unittests-')
    scope = {}
    sources = {name: git_show(args.mxnet_repo, args.branch,
                              'tests/python/unittest/%s.py' % name) for name in files}
    for name, source in sources.items():
        for test, body in test_sources(source).items():
            left_out = (OUT_OF_SCOPE_IN_CONTRIB_FILES if name in CONTRIB_FILES
                        else OUT_OF_SCOPE)
            scope['%s::%s' % (name, test)] = left_out.search(body) is None and (
                name in SYMBOL_FILES or SYMBOLIC.search(body) is None)
    write_tests(args.mxnet_repo, args.branch, sources, work, CONFTEST)
    runs = [(work, sys.executable)]
    if args.mxnet_python:
        # the same files under real MXNet, in a folder of their own without the alias
        write_tests(args.mxnet_repo, args.branch, sources, os.path.join(work, 'mxnet'),
                    COMMON_CONFTEST)
        runs.append((os.path.join(work, 'mxnet'), args.mxnet_python))
    if not args.count_only:
        served = os.path.join(work, 'stand-ins')
        if any(DOWNLOADS.search(source) for source in sources.values()):
            make_stand_ins(served)
        proxy = start_proxy(served)
        env = dict(os.environ, http_proxy='http://127.0.0.1:%d' % proxy.server_address[1])
        env.pop('no_proxy', None)
        env.pop('NO_PROXY', None)
        for folder, python in runs:
            limit = ['--timeout', str(args.timeout)] if args.timeout else []
            subprocess.run([python, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
                            '--junitxml', 'report.xml'] + limit
                           + pytest_args + [name + '.py' for name in files],
                           cwd=folder, env=env)
        proxy.shutdown()

    outcome = outcomes(os.path.join(work, 'report.xml'), files, scope)
    in_mxnet = (outcomes(os.path.join(work, 'mxnet', 'report.xml'), files, scope)
                if args.mxnet_python else {})
    # A test MXNet itself skips (unittest.skip, no GPU) says nothing either way, and
    # neither does one that fails under MXNet 1.9.1 in its own environment (with
    # --mxnet-python; e.g. test code that numpy 1.23 rejects): both are counted apart,
    # and the share is of the rest that ran. A test -k deselected is not counted.
    print('\n%-28s %9s %8s %8s %7s %7s' % ('file', 'in scope', 'skipped', 'MXNet too',
                                           'passed', 'share'))
    totals = [0, 0, 0, 0]
    for name in files:
        keys = [k for k in scope if k.startswith(name + '::') and scope[k]
                and outcome[k] != 'not run']
        skipped = sum(outcome[k] == 'skipped' for k in keys)
        broken = sum(outcome[k] != 'skipped' and in_mxnet.get(k) == 'failed' for k in keys)
        passed = sum(outcome[k] == 'passed' and in_mxnet.get(k) != 'failed' for k in keys)
        counts = (len(keys), skipped, broken, passed)
        totals = [t + n for t, n in zip(totals, counts)]
        print_row(name, counts)
    print_row('all', totals)
    failing = sorted(k for k in scope if scope[k] and outcome[k] == 'failed')
    with open(os.path.join(work, 'in_scope_not_passing.txt'), 'w') as f:
        f.write(''.join('%s%s\n' % (k, '  (fails in MXNet too)' if in_mxnet.get(k) == 'failed'
                                     else '') for k in failing))
    print('\nin scope and failing: %s' % os.path.join(work, 'in_scope_not_passing.txt'))


def write_tests(repo, branch, sources, folder, conftest):
    """The test files, their helper modules and ``conftest`` into ``folder``."""
    os.makedirs(folder, exist_ok=True)
    for name, source in sources.items():
        with open(os.path.join(folder, name + '.py'), 'w') as f:
            f.write(source)
    for path, target in [('tests/python/unittest/common.py', 'common.py'),
                         ('tests/python/common/models.py', 'models.py')]:
        with open(os.path.join(folder, target), 'w') as f:
            f.write(git_show(repo, branch, path))
    # test_module imports two helpers from ../train/test_bucketing.py (found beside it
    # here), whose mixed-precision import (contrib.amp) is out of scope: made optional
    bucketing = git_show(repo, branch, 'tests/python/train/test_bucketing.py')
    with open(os.path.join(folder, 'test_bucketing.py'), 'w') as f:
        f.write(bucketing.replace('from mxnet.contrib.amp import amp',
                                  'try:\n    from mxnet.contrib.amp import amp\n'
                                  'except ImportError:\n    amp = None'))
    with open(os.path.join(folder, 'conftest.py'), 'w') as f:
        f.write(conftest)


def outcomes(report, files, scope):
    """Test key -> 'passed', 'failed', 'skipped' or 'not run' from a JUnit ``report``. A
    file that cannot be collected fails every one of its tests."""
    outcome = {key: 'not run' for key in scope}
    for case in ET.parse(report).getroot().iter('testcase'):
        failed = case.find('failure') is not None or case.find('error') is not None
        if not case.get('classname') and case.get('name') in files and failed:
            for key in scope:
                if key.startswith(case.get('name') + '::'):
                    outcome[key] = 'failed'
            continue
        key = '%s::%s' % (case.get('classname').replace('.', '::'), case.get('name'))
        if key in scope:
            outcome[key] = ('skipped' if case.find('skipped') is not None
                            else 'failed' if failed else 'passed')
    return outcome


def print_row(name, counts):
    total, skipped, broken, passed = counts
    print('%-28s %9d %8d %8d %7d %6.0f%%' % (
        name, total, skipped, broken, passed,
        100.0 * passed / max(total - skipped - broken, 1)))

if __name__ == '__main__':
    main()
