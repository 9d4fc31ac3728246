"""benchmarks/mxnet_unittests.py counts a small test file in MXNet's layout (a git repository
made here, so no clone of apache/mxnet is needed): what is in scope, what passes with
``mxnet`` aliased to minigluon, and, with --mxnet-python, what fails under "MXNet" too."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TESTS = '''import numpy as np
import mxnet as mx


def test_passes():
    assert mx.nd.ones((2,)).sum().asscalar() == 2


def test_fails_only_with_minigluon():
    assert mx.__name__ == 'mxnet'


def test_sparse_is_out_of_scope():
    assert mx.nd.zeros((2,), stype='row_sparse') is None


def test_fails_everywhere():
    np.zeros((2, 2))[[slice(None), slice(None)]]  # a list index, which numpy 1.23 rejects


def test_not_selected():
    assert False
'''


def _git(folder, *args):
    subprocess.run(['git', '-C', folder] + list(args), check=True, capture_output=True)


@pytest.fixture
def mxnet_like_repo(tmp_path):
    """A repository with the files the script copies, on branch v1.x."""
    repo = str(tmp_path / 'mxnet')
    files = {'tests/python/unittest/test_operator.py': TESTS,
             'tests/python/unittest/common.py': '',
             'tests/python/common/models.py': '',
             'tests/python/train/test_bucketing.py': ''}
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(repo, path)), exist_ok=True)
        with open(os.path.join(repo, path), 'w') as f:
            f.write(text)
    _git(str(tmp_path), 'init', '-q', '-b', 'v1.x', repo)
    _git(repo, 'add', '.')
    _git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'tests')
    return repo


def _count(repo, work, *extra):
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, os.path.join(REPO, 'benchmarks', 'mxnet_unittests.py'),
                           '--mxnet-repo', repo, '--files', 'test_operator', '--keep', work,
                           '--timeout', '0', '-k', 'not test_not_selected'] + list(extra),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()
            if line.startswith(('test_operator ', 'all '))}
    return rows, open(os.path.join(work, 'in_scope_not_passing.txt')).read()


def test_counts_what_is_in_scope_and_selected(mxnet_like_repo, tmp_path):
    rows, failing = _count(mxnet_like_repo, str(tmp_path / 'work'))
    # in scope: 3 (sparse is left out, the deselected test not counted); 1 of 3 passes
    assert rows['test_operator'] == ['3', '0', '0', '1', '33%'], rows
    assert failing.split() == ['test_operator::test_fails_everywhere',
                               'test_operator::test_fails_only_with_minigluon']


def test_tests_failing_under_mxnet_too_are_counted_apart(mxnet_like_repo, tmp_path):
    # a stand-in "MXNet": a Python that imports a package named mxnet built on minigluon
    fake = tmp_path / 'fake'
    (fake / 'mxnet').mkdir(parents=True)
    (fake / 'mxnet' / '__init__.py').write_text('from minigluon import nd\n')
    python = tmp_path / 'mxnet-python'
    python.write_text('#!/bin/sh\nPYTHONPATH=%s:%s exec %s "$@"\n' % (fake, REPO, sys.executable))
    python.chmod(0o755)
    rows, failing = _count(mxnet_like_repo, str(tmp_path / 'work'),
                           '--mxnet-python', str(python))
    # test_fails_everywhere fails under "MXNet" too: counted apart, so 1 of 2 passes
    assert rows['test_operator'] == ['3', '0', '1', '1', '50%'], rows
    assert 'test_operator::test_fails_everywhere  (fails in MXNet too)' in failing
