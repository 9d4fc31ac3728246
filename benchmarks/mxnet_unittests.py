"""How much of MXNet 1.x's own Python unit-test suite passes with ``mxnet`` = minigluon.

Usage::

    python benchmarks/mxnet_unittests.py --mxnet-repo PATH [--branch v1.x] [--keep DIR]
                                         [pytest args, e.g. -k trainer]

``PATH`` is a git clone of apache/mxnet (nothing is downloaded). The test files the
Gluon API covers are copied out of ``--branch`` with ``tests/python/common/models.py``
and ``tests/python/unittest/common.py``, a conftest makes ``import mxnet`` (and every
``mxnet.x.y``) import ``minigluon.x.y``, and pytest runs them. Each test is then counted
in scope or out of scope by what its source uses: the parts minigluon leaves out by
design (sparse storage, symbols/Module/executors, ``mx.io``/recordio, contrib, rnn,
profiler, engine, the C API, ``mx.np``/``mx.npx``, GPUs) put a test out of scope.

Needs pytest, pytest-timeout and the test files' own imports (nose or pynose, scipy,
requests): ``pip install -r benchmarks/requirements.txt``.
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

TEST_FILES = ['test_autograd', 'test_ndarray', 'test_gluon', 'test_gluon_trainer',
              'test_gluon_data', 'test_gluon_data_vision', 'test_gluon_utils',
              'test_gluon_model_zoo', 'test_loss', 'test_metric', 'test_init',
              'test_optimizer', 'test_kvstore', 'test_random', 'test_test_utils']

# What a test's own source mentions when it exercises a part left out by design.
OUT_OF_SCOPE = re.compile(
    r'mx\.sym\b|mx\.symbol|\bsym\.|symbol\.|\.bind\(|simple_bind|mx\.mod\b|\.Module\(|'
    r'stype|sparse|row_sparse|\bcsr\b|mxsps|mx\.np\b|_mx_np|\bnpx\b|use_np|mx\.io\b|'
    r'recordio|RecordFile|ImageRecord|contrib|\brnn\b|profiler|mx\.engine|_LIB|ctypes|'
    r'mx\.gpu\(|gpu_device|cudnn|export\(|SymbolBlock|\.var\(\)|_api_internal|'
    r'mx\.image\.ImageIter|ImageDetIter')

CONFTEST = '''
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


def git_show(repo, branch, path):
    return subprocess.run(['git', '-C', repo, 'show', '%s:%s' % (branch, path)],
                          check=True, capture_output=True, text=True).stdout


def test_sources(source):
    """Test function name -> its source, for the module-level ``test_*`` functions."""
    tree = ast.parse(source)
    lines = source.splitlines()
    return {node.name: '\n'.join(lines[node.lineno - 1:node.end_lineno])
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith('test_')}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--mxnet-repo', required=True, help='a git clone of apache/mxnet')
    parser.add_argument('--branch', default='v1.x')
    parser.add_argument('--keep', help='write the tests and the report into this folder')
    parser.add_argument('--timeout', type=int, default=300, help='seconds per test')
    parser.add_argument('--count-only', action='store_true',
                        help="count the report of an earlier run in --keep's folder again")
    args, pytest_args = parser.parse_known_args()

    work = args.keep or tempfile.mkdtemp(prefix='mxnet-unittests-')
    os.makedirs(work, exist_ok=True)
    scope = {}
    for name in TEST_FILES:
        source = git_show(args.mxnet_repo, args.branch, 'tests/python/unittest/%s.py' % name)
        with open(os.path.join(work, name + '.py'), 'w') as f:
            f.write(source)
        for test, body in test_sources(source).items():
            scope['%s::%s' % (name, test)] = OUT_OF_SCOPE.search(body) is None
    for path, target in [('tests/python/unittest/common.py', 'common.py'),
                         ('tests/python/common/models.py', 'models.py')]:
        with open(os.path.join(work, target), 'w') as f:
            f.write(git_show(args.mxnet_repo, args.branch, path))
    with open(os.path.join(work, 'conftest.py'), 'w') as f:
        f.write(CONFTEST)

    report = os.path.join(work, 'report.xml')
    if not args.count_only:
        subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
                        '--timeout', str(args.timeout), '--junitxml', report] + pytest_args
                       + [name + '.py' for name in TEST_FILES], cwd=work)

    outcome = {key: 'failed' for key in scope}   # a file that cannot import fails every test
    for case in ET.parse(report).getroot().iter('testcase'):
        key = '%s::%s' % (case.get('classname').rsplit('.', 1)[-1], case.get('name'))
        if key not in scope:
            continue
        if case.find('skipped') is not None:
            outcome[key] = 'skipped'
        elif case.find('failure') is not None or case.find('error') is not None:
            outcome[key] = 'failed'
        else:
            outcome[key] = 'passed'
    # A test MXNet itself skips (unittest.skip, no GPU) says nothing either way: it is
    # counted apart, and the share is of the tests that ran.
    print('\n%-28s %9s %8s %7s %7s' % ('file', 'in scope', 'skipped', 'passed', 'share'))
    totals = [0, 0, 0]
    for name in TEST_FILES:
        keys = [k for k in scope if k.startswith(name + '::') and scope[k]]
        skipped = sum(outcome[k] == 'skipped' for k in keys)
        passed = sum(outcome[k] == 'passed' for k in keys)
        for i, n in enumerate((len(keys), skipped, passed)):
            totals[i] += n
        print('%-28s %9d %8d %7d %6.0f%%' % (name, len(keys), skipped, passed,
                                             100.0 * passed / max(len(keys) - skipped, 1)))
    print('%-28s %9d %8d %7d %6.0f%%' % ('all', totals[0], totals[1], totals[2],
                                         100.0 * totals[2] / max(totals[0] - totals[1], 1)))
    failing = sorted(k for k in scope if scope[k] and outcome[k] == 'failed')
    with open(os.path.join(work, 'in_scope_not_passing.txt'), 'w') as f:
        f.write('\n'.join(failing) + '\n')
    print('\nin scope and failing: %s' % os.path.join(work, 'in_scope_not_passing.txt'))


if __name__ == '__main__':
    main()
