"""Shared fixtures: ``ctx`` runs a test on cpu(0) and, when one is visible, on gpu(0);
``cpu_kernels`` runs it with numba's compiled CPU kernels (where numba imports) and
with numpy's;
``http_server`` serves a folder on 127.0.0.1 for download tests; ``run_mxnet`` runs a
script under a real MXNet, named by ``MINIGLUON_MXNET_PYTHON`` (e.g. a virtual
environment with ``pip install mxnet==1.9.1 numpy==1.23.5``), or skips saying why;
``run_minigluon`` runs the same script with ``import mxnet as mx`` meaning minigluon;
``answers_of_both`` runs it under both and reads the JSON answer each wrote;
``cifar10_dist_job`` is one small launched examples/cifar10_dist.py job, run once for the
tests that read its output, with the command that runs it again (e.g. to kill a worker)."""
import compileall
import functools
import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
import types

import pytest

try:
    import fcntl
except ImportError:   # (Windows: each xdist worker runs its own cifar10_dist_job)
    fcntl = None

import minigluon as mx
from minigluon.ndarray.ops import compiled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each worker imports every test module; with ``PYTHONDONTWRITEBYTECODE`` set, each would
# rewrite and compile all of them again on every run (9 s of CPU a worker, against 3 s
# from the cached files). The suite keeps its bytecode in the tree's ``__pycache__``
# folders, which git ignores.
sys.dont_write_bytecode = False

# The README runs the suite with ``-n auto`` (pytest-xdist): one worker process per core
# and one more, at most this many (many tests start a whole job of several processes).
MAX_WORKERS = 4
# Thread pools sized by the library for the whole machine, in every worker at once,
# would contend for the cores (measured on 2 cores: 488 s with them, 383 s without).
_THREAD_VARIABLES = ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS')


def _cores():
    """The cores this process may run on (a container's or taskset's, not the host's)."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@pytest.hookimpl(optionalhook=True)   # (a hook of pytest-xdist, when it is installed)
def pytest_xdist_auto_num_workers(config):
    # One worker more than cores: many tests spend seconds waiting (for timeouts, resends,
    # child processes), and the extra worker keeps the cores busy meanwhile (measured on
    # 2 cores: 258 s with 3 workers, 294 s with 2).
    cores = _cores()
    return 0 if cores < 2 else min(cores + 1, MAX_WORKERS)


def _compile_the_package():
    """Write the package's bytecode once. The suite starts several hundred processes that
    import minigluon (launched jobs' roles, examples, scripts); where bytecode is not
    written (``PYTHONDONTWRITEBYTECODE``, an editable install) each would compile every
    module from source, about 0.4 s of CPU apiece (measured: 466 s of CPU instead of 643 s
    for the whole suite on 2 cores). Python checks each file's source time, so a stale
    file is never used; an unwritable tree is left as it is."""
    compileall.compile_dir(os.path.dirname(os.path.abspath(mx.__file__)), quiet=2)


def pytest_configure(config):
    if hasattr(config, 'workerinput'):
        return      # (a worker: its threads were set, and the bytecode written, before)
    _compile_the_package()
    workers = getattr(config.option, 'numprocesses', None)
    if not workers:
        return
    if getattr(config.option, 'dist', None) == 'load':
        # xdist's default hands out fixed chunks, so one worker can sit idle for a minute
        # while the other works through its queue; an idle worker steals instead
        config.option.dist = 'worksteal'
    if isinstance(workers, str):   # ('auto' or 'logical', where not yet resolved)
        workers = pytest_xdist_auto_num_workers(config)
    threads = max(1, _cores() // max(1, int(workers)))
    for name in _THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))  # (read by each worker as numpy loads)


# Tests that start whole jobs of processes, or train whole models, run first, so that no
# worker is left with one of them at the end while the others have finished.
_LONG_FIRST = ('tests/kvstore/', 'tests/examples/', 'tests/launcher/',
               'tests/gluon/model_zoo/', 'tests/benchmarks/')


def pytest_collection_modifyitems(items):
    def long_first(item):
        path = os.path.relpath(str(item.path), ROOT).replace(os.sep, '/')
        return not path.startswith(_LONG_FIRST)
    items.sort(key=long_first)   # (stable: the order within each group is kept)


_NO_GPU = 'no GPU: CuPy with a visible CUDA device is needed'


@pytest.fixture(params=[
    pytest.param(mx.cpu(0), id='cpu0'),
    pytest.param(mx.gpu(0), id='gpu0',
                 marks=pytest.mark.skipif(mx.num_gpus() == 0, reason=_NO_GPU)),
])
def ctx(request):
    """The device a test runs on: cpu(0), and gpu(0) where CuPy sees a GPU."""
    return request.param


def _numba_missing():
    try:
        import numba  # noqa: F401
    except Exception as exc:
        return 'numba does not import (%s); `pip install numba` to test the compiled ' \
               'kernels' % exc
    return None


@pytest.fixture(params=[
    pytest.param('numba', marks=pytest.mark.skipif(_numba_missing() is not None,
                                                   reason=str(_numba_missing()))),
    'numpy',
])
def cpu_kernels(request, monkeypatch):
    """The test runs with ``MINIGLUON_CPU_KERNELS`` set to numba, then to numpy."""
    monkeypatch.setenv(compiled.VARIABLE, request.param)
    compiled.reset()
    yield request.param
    monkeypatch.undo()
    compiled.reset()


class LocalHTTPServer:
    """Serves ``folder`` over HTTP on 127.0.0.1 from a thread; counts GET requests."""

    def __init__(self, folder):
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                server.requests += 1
                super().do_GET()

            def log_message(self, *args):  # keep test output clean
                pass

        self.requests = 0
        self.httpd = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), functools.partial(Handler, directory=str(folder)))
        self.url = 'http://127.0.0.1:%d/' % self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def http_server():
    """``http_server(folder)`` starts a LocalHTTPServer, stopped after the test."""
    servers = []

    def start(folder):
        servers.append(LocalHTTPServer(folder))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


@pytest.fixture
def closed_port_url():
    """The URL of a 127.0.0.1 port where nothing listens (a server that is down)."""
    server = LocalHTTPServer('.')
    server.close()
    return server.url


@functools.lru_cache(maxsize=None)
def _mxnet_import_failure(python):
    """Why ``python`` cannot import mxnet, or None; asked once per test session."""
    probe = subprocess.run([python, '-c', 'import mxnet'], capture_output=True, text=True,
                           timeout=120)
    return probe.stderr.strip()[-300:] if probe.returncode != 0 else None


@pytest.fixture
def run_mxnet():
    """``run(folder, script)``: ``script`` under the Python named by MINIGLUON_MXNET_PYTHON,
    with ``folder`` as its ``sys.argv[1]``; the test skips, saying why, without one that
    imports mxnet. minigluon itself never imports MXNet."""
    python = os.environ.get('MINIGLUON_MXNET_PYTHON')
    if not python:
        pytest.skip('set MINIGLUON_MXNET_PYTHON to a Python that can import mxnet to '
                    'compare with a real MXNet')
    failure = _mxnet_import_failure(python)
    if failure is not None:
        pytest.skip('MINIGLUON_MXNET_PYTHON=%s cannot import mxnet: %s' % (python, failure))

    def run(folder, script):
        done = subprocess.run([python, '-c', textwrap.dedent(script), str(folder)],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    return run


@pytest.fixture
def run_minigluon():
    """``run(folder, script)``: a ``run_mxnet`` script in a fresh minigluon process, its
    ``import mxnet as mx`` made ``import minigluon as mx``, so one script gives both
    sides of a comparison."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def run(folder, script):
        source = textwrap.dedent(script).replace('import mxnet as mx', 'import minigluon as mx')
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get('PYTHONPATH', ''))
        done = subprocess.run([sys.executable, '-c', source, str(folder)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    return run


@pytest.fixture
def answers_of_both(tmp_path, run_mxnet, run_minigluon):
    """``answers(script, filename)`` -> ``(mxnet's, minigluon's)``: the JSON file
    ``filename`` that ``script`` writes into the folder it gets as ``sys.argv[1]``."""
    def answers(script, filename):
        results = []
        for side, run in (('mxnet', run_mxnet), ('minigluon', run_minigluon)):
            folder = tmp_path / side
            folder.mkdir()
            run(folder, script)
            results.append(json.loads((folder / filename).read_text()))
        return tuple(results)
    return answers


def example_env(folder):
    """The environment of an example run as a user runs it: minigluon from this checkout,
    its data sets under ``folder``/home, one BLAS thread, no DMLC_ROLE inherited."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''),
               MINIGLUON_HOME=os.path.join(str(folder), 'home'), OMP_NUM_THREADS='1')
    env.pop('DMLC_ROLE', None)
    return env


def cifar10_dist_command(folder, launcher_flags=()):
    """The launcher command of a small examples/cifar10_dist.py job: two workers and two
    servers (one dead worker may be replaced), 120 synthetic images, so 3 batches of 20
    per worker and epoch, for 2 epochs, a line per batch; its metrics file and checkpoints
    go to ``folder``."""
    return [sys.executable, os.path.join(ROOT, 'tools', 'launch.py'), '-n', '2', '-s', '2',
            '--launcher', 'local', '--max-restarts', '1', *launcher_flags, sys.executable,
            'examples/cifar10_dist.py', '--model', 'cifar_resnet20_v1', '--synthetic', '120',
            '--num-epochs', '2', '--batch-size', '20', '--log-interval', '1',
            '--progress-interval', '600',
            '--metrics-file', os.path.join(str(folder), 'metrics.jsonl'),
            '--checkpoint-dir', os.path.join(str(folder), 'ckpt')]


def _run_cifar10_dist_job(folder):
    log = folder / 'job.log'
    if not log.exists():
        folder.mkdir(exist_ok=True)
        proc = subprocess.run(cifar10_dist_command(folder), cwd=ROOT, env=example_env(folder),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=240, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout
        log.write_text(proc.stdout)
    return log.read_text()


@pytest.fixture(scope='session')
def cifar10_dist_job(request, tmp_path_factory):
    """``cifar10_dist_command`` run once (a launched job costs seconds): ``folder`` (its
    metrics file, checkpoints and ``job.log``), ``output`` (stdout and stderr merged), and
    ``command`` and ``env``, ``cifar10_dist_command`` and ``example_env``, to run it
    again. Under pytest-xdist the first worker to need it runs it in the session's shared
    temporary folder, and the others read its results there (tests only read them)."""
    if hasattr(request.config, 'workerinput') and fcntl is not None:
        shared = tmp_path_factory.getbasetemp().parent   # (this session's, every worker's)
        with open(str(shared / 'cifar10_dist_job.lock'), 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)   # (released when the file closes)
            folder = shared / 'cifar10_dist_job'
            output = _run_cifar10_dist_job(folder)
    else:
        folder = tmp_path_factory.mktemp('cifar10_dist_job')
        output = _run_cifar10_dist_job(folder)
    return types.SimpleNamespace(folder=folder, output=output,
                                 command=cifar10_dist_command, env=example_env)
