"""Running the scheduler and server roles, as ``import minigluon`` does in MXNet.

A process whose ``DMLC_ROLE`` is ``scheduler`` or ``server`` serves that role when
minigluon is imported and exits when the job ends (0 on a normal end, 1 when the job
failed), so one command line can be launched for every role.
"""
import ctypes
import os
import sys

from .config import Config, ConfigError


def run_role(cfg):
    """Serve ``cfg.role`` until the job ends; returns the exit status."""
    if cfg.role == 'scheduler':
        from .scheduler import Scheduler
        return Scheduler(cfg).run()
    if cfg.role == 'server':
        from .server import Server
        from ...ndarray.ops.updates import warm_up
        _keep_freed_memory()
        warm_up()  # (before serving: not on the I/O thread that sends heartbeats)
        return Server(cfg).run()
    raise ConfigError('run_role: %r is not a scheduler or server role' % cfg.role)


def _keep_freed_memory():
    """A server gets and sums megabytes of new buffers every round. glibc hands each
    freed one back to the kernel and page-faults it in again next time, which costs
    about a tenth of a round's CPU (benchmarks/bench_kvstore.py); this process only
    serves, so keep freed memory in the heap instead."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks up to 32 MiB come from the heap
    mallopt(-1, 1 << 30)   # M_TRIM_THRESHOLD: freed heap memory is kept


def serve_if_asked():
    """Called by ``import minigluon``: serve and exit when DMLC_ROLE says so."""
    role = os.environ.get('DMLC_ROLE')
    if role not in ('scheduler', 'server'):
        return
    if sys.argv[:1] == ['-m']:
        return  # `python -m minigluon.kvstore` is starting: its __main__ serves the role
    if os.path.basename(sys.argv[0] if sys.argv else '') == 'minigluon-launch':
        return  # the launcher is no role: it gives each process it starts its own
    sys.exit(_serve_from_env())


def _serve_from_env():
    try:
        cfg = Config.from_env()
    except ConfigError as exc:
        sys.stderr.write('minigluon: %s\n' % exc)
        return 2
    try:
        return run_role(cfg)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        sys.stderr.write('minigluon %s: %s\n' % (cfg.role, exc))
        return 1
