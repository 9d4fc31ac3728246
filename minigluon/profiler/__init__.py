"""``mx.profiler``: a Chrome trace and MXNet's aggregate table of what a process did.

While the profiler runs (``set_state('run')``, not ``pause()``d) it records, as ranges
of the thread that ran them:

- every op run through the op table (``ndarray.dispatch.invoke``), imperative or in a
  bound graph, and every op's backward on the tape (named ``_backward_<op>`` as in
  MXNet); on a GPU the time is taken after waiting for the device;
- optimizer updates (``sgd_update``, ...), ``Trainer.step`` and its two halves;
- kvstore calls (``push``, ``pull``, ``init``) with their keys and bytes, in local and
  distributed stores, and the requests a server handles;
- the batches a ``DataLoader`` hands out;
- the user's ``Domain`` tasks, frames, counters and markers, and ``Event`` ranges.

``dumps()`` returns the aggregate table per category and name (count, total, min, max,
average in ms) laid out as MXNet prints it, or as JSON; ``dump()`` writes the Chrome
trace (``{"traceEvents": [...]}``; open it in https://ui.perfetto.dev or chrome://tracing)
to the configured ``filename``.

One file per process. Its events carry the process id and wall-clock timestamps
(microseconds since the epoch), and the process is named by its role in a distributed
job ('worker 0', 'server 1', 'scheduler'), so the files of every process of a job merge
into one timeline: ``python -m minigluon.profiler merge all.json worker*.json ...`` or
``merge(out, inputs)``. Processes that cannot call ``set_config`` themselves (servers,
the scheduler) profile from start to exit under ``MXNET_PROFILER_AUTOSTART=1``; their
file is ``profile_<role><rank>.json`` in the working directory unless
``MXNET_PROFILER_FILENAME`` names another.

Stopped or paused, the profiler costs one test per op and per instrumented call.
"""
import atexit
import json
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager

from ..backend import is_device_array, synchronize
from ..base import MXNetError
from ..ndarray import dispatch
from .merge import merge, sort_index

__all__ = ['set_config', 'set_state', 'pause', 'resume', 'dump', 'dumps', 'merge',
           'profiler_set_config', 'profiler_set_state', 'dump_profile', 'scope',
           'Domain', 'Task', 'Frame', 'Event', 'Counter', 'Marker']

_DEFAULTS = {
    'filename': 'profile.json', 'profile_all': False, 'profile_symbolic': True,
    'profile_imperative': True, 'profile_memory': True, 'profile_api': True,
    'continuous_dump': False, 'dump_period': 1.0, 'aggregate_stats': False,
    'profile_process': 'worker',
}
_SORT_KEYS = {'total': 'Total', 'avg': 'Avg', 'min': 'Min', 'max': 'Max', 'count': 'Count'}


class _Recorder:
    """The events and the aggregate statistics of a profiling run."""

    def __init__(self):
        self.lock = threading.Lock()
        self.config = dict(_DEFAULTS)
        self.filename_set = False     # (an autostarted profile names its file by role)
        self.running = False
        self.paused = False
        self.events = []
        self.stats = {}   # (category, name) -> [count, total, min, max] in ms
        self.threads = {}  # tid -> thread name, for the trace's thread_name records
        self.process_name = None
        self.async_ids = 0
        # wall clock at perf_counter() == 0: timestamps of different processes line up
        self.origin = time.time() * 1e6 - time.perf_counter() * 1e6
        self.scope = threading.local()

    def now_us(self):
        """Microseconds since the epoch, from the monotonic clock."""
        return self.origin + time.perf_counter() * 1e6

    def active(self):
        """True when events are being recorded."""
        return self.running and not self.paused

    def _tid(self):
        thread = threading.current_thread()
        tid = thread.native_id
        if tid not in self.threads:
            self.threads[tid] = thread.name
        return tid

    def add_range(self, category, name, start_us, end_us, args=None):
        """A timed range: a complete ('X') event in the trace, a sample in the statistics."""
        ms = (end_us - start_us) / 1e3
        event = {'name': name, 'cat': category, 'ph': 'X', 'ts': start_us,
                 'dur': end_us - start_us, 'tid': self._tid()}
        if args:
            event['args'] = args
        with self.lock:
            self.events.append(event)
            entry = self.stats.get((category, name))
            if entry is None:
                self.stats[(category, name)] = [1, ms, ms, ms]
            else:
                entry[0] += 1
                entry[1] += ms
                entry[2] = min(entry[2], ms)
                entry[3] = max(entry[3], ms)

    def add_event(self, event):
        """An instant or counter event of the trace."""
        event['tid'] = self._tid()
        with self.lock:
            self.events.append(event)

    def op_done(self, op, ctx, start):
        """``dispatch.invoke``'s report: ``op`` ran on ``ctx`` from ``start``
        (``time.perf_counter()``) until now."""
        if ctx.device_type == 'gpu':
            synchronize(ctx.device_id)
        end = time.perf_counter()
        category, name = 'operator', getattr(self.scope, 'name', '') + op.name
        custom = getattr(self.scope, 'custom_op', None)
        if custom is not None:  # an op a custom operator's Python code ran
            category, name = 'Custom Operator', '%s::%s' % (custom, op.name)
        self.add_range(category, name, self.origin + start * 1e6, self.origin + end * 1e6,
                       {'device': '%s/%d' % (ctx.device_type, ctx.device_id)})

    def backward_done(self, node, grads, start):
        """The tape's report: ``node``'s backward ran from ``start`` until now and gave
        the input gradients ``grads``."""
        device = 'cpu'
        for g in grads:
            g = getattr(g, '_data', g)  # (an NDArray when backward is recorded)
            if g is not None and is_device_array(g):
                synchronize(g.device.id)
                device = 'gpu/%d' % g.device.id
                break
        end = time.perf_counter()
        self.add_range('operator', '_backward_' + node.name, self.origin + start * 1e6,
                       self.origin + end * 1e6, {'device': device})

    def trace(self, events):
        """The trace file's content: ``events`` with this process's pid and names."""
        pid = os.getpid()
        name = _process_name()
        meta = [{'ph': 'M', 'name': 'process_name', 'pid': pid, 'tid': 0,
                 'args': {'name': name}},
                {'ph': 'M', 'name': 'process_sort_index', 'pid': pid, 'tid': 0,
                 'args': {'sort_index': sort_index(name)}}]
        for tid, thread in sorted(self.threads.items()):
            meta.append({'ph': 'M', 'name': 'thread_name', 'pid': pid, 'tid': tid,
                         'args': {'name': thread}})
            meta.append({'ph': 'M', 'name': 'thread_sort_index', 'pid': pid, 'tid': tid,
                         'args': {'sort_index': 0 if thread == 'MainThread' else 1}})
        for event in events:
            event['pid'] = pid
        return {'traceEvents': meta + events, 'displayTimeUnit': 'ms',
                'otherData': {'process': name, 'clock': 'microseconds since the epoch'}}


_RECORDER = _Recorder()


def _forget_in_child():
    """A forked child (e.g. a DataLoader worker) neither records nor keeps the parent's
    events: it would never write them."""
    _RECORDER.running = False
    _RECORDER.events = []
    _RECORDER.lock = threading.Lock()
    _update_hook()


os.register_at_fork(after_in_child=_forget_in_child)


def _process_name():
    """The name of this process in the trace: its role in a distributed job, else the
    script and the pid."""
    if _RECORDER.process_name:
        return _RECORDER.process_name
    role = os.environ.get('DMLC_ROLE')
    if role:
        rank = os.environ.get('DMLC_WORKER_ID') if role == 'worker' else None
        return role if rank is None else '%s %s' % (role, rank)
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else 'python'
    return '%s (pid %d)' % (script, os.getpid())


def set_process_name(name):
    """Name this process in the trace (a distributed store calls it with 'worker 0',
    'server 1', 'scheduler' once the rank is known)."""
    _RECORDER.process_name = name


def now_if_recording():
    """The time in microseconds when the profiler records, else None: how instrumented
    code starts a range (``record_range`` ends it) at the cost of one test when off."""
    rec = _RECORDER
    return rec.now_us() if rec.running and not rec.paused else None


def record_range(start_us, category, name, args=None):
    """End a range that ``now_if_recording()`` started at ``start_us``; ``args`` (a dict
    of JSON values) is shown with it in the trace."""
    _RECORDER.add_range(category, name, start_us, _RECORDER.now_us(), args)


def record_async(start_us, category, name, args=None):
    """Like ``record_range``, for a transfer in flight from ``start_us`` until now,
    ended on another thread than it began: an async ('b'/'e') pair of the trace, drawn
    on a track of its own beside the threads."""
    rec = _RECORDER
    end_us = rec.now_us()
    with rec.lock:
        rec.async_ids += 1
        ident = rec.async_ids
    begin = {'name': name, 'cat': category, 'ph': 'b', 'ts': start_us, 'id': ident}
    if args:
        begin['args'] = args
    rec.add_event(begin)
    rec.add_event({'name': name, 'cat': category, 'ph': 'e', 'ts': end_us, 'id': ident})


class _NoRange:
    """What ``custom_op`` returns while the profiler does not record."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_RANGE = _NoRange()


class _CustomOpRange:
    def __init__(self, op_type, backward):
        self.op_type = op_type
        self.name = '%s%s::pure_python' % ('_backward_' if backward else '', op_type)
        self.prev = self.start = None

    def __enter__(self):
        self.prev = getattr(_RECORDER.scope, 'custom_op', None)
        _RECORDER.scope.custom_op = self.op_type
        self.start = _RECORDER.now_us()
        return self

    def __exit__(self, *exc):
        _RECORDER.scope.custom_op = self.prev
        if _RECORDER.active():
            _RECORDER.add_range('Custom Operator', self.name, self.start, _RECORDER.now_us())
        return False


def custom_op(op_type, backward=False):
    """A ``with`` block around a custom operator's Python ``forward`` (or ``backward``):
    timed as MXNet shows it, '<op_type>::pure_python' ('_backward_<op_type>::pure_python')
    in the 'Custom Operator' category, where the ops it runs appear too, named
    '<op_type>::<op>'. Costs one test when the profiler does not record."""
    rec = _RECORDER
    if not (rec.running and not rec.paused):
        return _NO_RANGE
    return _CustomOpRange(op_type, backward)


def _update_hook():
    dispatch.set_profiler(_RECORDER if _RECORDER.active() else None)


def _check_process(profile_process):
    if profile_process != 'worker':
        raise MXNetError(
            "profile_process=%r: a process can only profile itself. To profile the servers "
            "(and the scheduler) of a job, start them with MXNET_PROFILER_AUTOSTART=1 (e.g. "
            "tools/launch.py --env MXNET_PROFILER_AUTOSTART=1): each writes "
            "profile_<role><rank>.json when it exits; merge the files with "
            "`python -m minigluon.profiler merge`" % (profile_process,))


def set_config(**kwargs):
    """Configure the profiler (keyword arguments only).

    Parameters
    ----------
    filename : str
        Where ``dump()`` writes the trace (``profile.json``).
    profile_all, profile_symbolic, profile_imperative, profile_memory, profile_api : bool
        Accepted for MXNet's scripts; every op (imperative or in a graph) is timed, and
        memory is not profiled.
    aggregate_stats : bool
        Accepted; the statistics ``dumps()`` shows are always kept.
    continuous_dump : bool
        Also write the trace on every ``set_state('stop')``.
    dump_period : float
        Accepted for MXNet's scripts.
    profile_process : str
        'worker' (a process profiles itself; see the module's docstring for servers).
    """
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError('profiler.set_config: unknown options %s; the options are %s'
                         % (unknown, sorted(_DEFAULTS)))
    _check_process(kwargs.get('profile_process', 'worker'))
    _RECORDER.config.update(kwargs)
    if 'filename' in kwargs:
        _RECORDER.filename_set = True


def set_state(state='stop', profile_process='worker'):
    """Start ('run') or stop ('stop') recording; either ends a ``pause()``, as in MXNet."""
    if state not in ('run', 'stop'):
        raise MXNetError("profiler.set_state: state must be 'run' or 'stop', got %r" % (state,))
    _check_process(profile_process)
    was_running = _RECORDER.running
    _RECORDER.running = state == 'run'
    _RECORDER.paused = False
    _update_hook()
    if was_running and state == 'stop' and _RECORDER.config['continuous_dump']:
        dump(finished=False)


def pause(profile_process='worker'):
    """Stop recording until ``resume()`` (the state stays 'run')."""
    _check_process(profile_process)
    _RECORDER.paused = True
    _update_hook()


def resume(profile_process='worker'):
    """Record again after ``pause()``."""
    _check_process(profile_process)
    _RECORDER.paused = False
    _update_hook()


def dump(finished=True, profile_process='worker'):
    """Write the events recorded so far as a Chrome trace to the configured ``filename``
    (atomically); with ``finished`` they are then dropped, so a later dump starts afresh.
    """
    _check_process(profile_process)
    with _RECORDER.lock:
        events = [dict(e) for e in _RECORDER.events]
        if finished:
            _RECORDER.events = []
    _write_json(_RECORDER.config['filename'], _RECORDER.trace(events))


def _write_json(fname, content):
    tmp = '%s.tmp%d' % (fname, os.getpid())
    with open(tmp, 'w') as f:
        json.dump(content, f)
    os.replace(tmp, fname)


def dumps(reset=False, format='table', sort_by='total', ascending=False):  # noqa: A002
    """The aggregate statistics per category and name, as MXNet's table or as JSON
    (``{"Time": {category: {name: {"Count", "Total", "Min", "Max", "Avg"}}}, "Memory":
    {}, "Unit": {...}}``), sorted by ``sort_by`` ('total', 'avg', 'min', 'max',
    'count'); ``reset`` clears them afterwards."""
    # pylint: disable=redefined-builtin
    if format not in ('table', 'json'):
        raise MXNetError("profiler.dumps: format must be 'table' or 'json', got %r" % (format,))
    if sort_by not in _SORT_KEYS:
        raise MXNetError('profiler.dumps: sort_by must be one of %s, got %r'
                         % (sorted(_SORT_KEYS), sort_by))
    with _RECORDER.lock:
        by_category = {}
        for (category, name), (count, total, low, high) in _RECORDER.stats.items():
            by_category.setdefault(category, {})[name] = {
                'Count': count, 'Total': total, 'Min': low, 'Max': high, 'Avg': total / count}
        if reset:
            _RECORDER.stats = {}
    key = _SORT_KEYS[sort_by]
    for category, items in by_category.items():
        by_category[category] = dict(sorted(items.items(), key=lambda kv: kv[1][key],
                                            reverse=not ascending))
    if format == 'json':
        return json.dumps({'Time': by_category, 'Memory': {},
                           'Unit': {'Time': 'ms', 'Memory': 'kB'}}, indent=4)
    lines = ['', 'Profile Statistics:', '\tNote the difference in units for different entries.']
    for category in sorted(by_category):
        lines += [category, '=================',
                  '%-30s%11s%17s%17s%17s%17s' % ('Name', 'Total Count', 'Time (ms)',
                                                 'Min Time (ms)', 'Max Time (ms)',
                                                 'Avg Time (ms)'),
                  '%-30s%11s%17s%17s%17s%17s' % ('----', '-----------', '---------',
                                                 '-------------', '-------------',
                                                 '-------------')]
        for name, s in by_category[category].items():
            lines.append('%-30s%11d%17.4f%17.4f%17.4f%17.4f'
                         % (name, s['Count'], s['Total'], s['Min'], s['Max'], s['Avg']))
        lines.append('')
    return '\n'.join(lines) + '\n'


def profiler_set_config(mode='symbolic', filename='profile.json'):
    """Deprecated form of ``set_config(profile_<mode>=True, filename=filename)``."""
    warnings.warn('profiler.profiler_set_config() is deprecated. Please use '
                  'profiler.set_config() instead')
    set_config(**{'profile_' + mode: True, 'filename': filename})


def profiler_set_state(state='stop'):
    """Deprecated form of ``set_state``."""
    warnings.warn('profiler.profiler_set_state() is deprecated. Please use '
                  'profiler.set_state() instead')
    set_state(state)


def dump_profile():
    """Deprecated form of ``dump(True)``."""
    warnings.warn('profiler.dump_profile() is deprecated. Please use profiler.dump() instead')
    dump(True)


@contextmanager
def scope(name='<unk>:', append_mode=False):
    """Ops run inside are named ``<name><op>`` in the profile (``with scope('fc1:')``);
    ``append_mode`` appends ``name`` to the enclosing scope's."""
    prev = getattr(_RECORDER.scope, 'name', '')
    _RECORDER.scope.name = prev + name if append_mode else name
    try:
        yield
    finally:
        _RECORDER.scope.name = prev


class Domain:
    """A category grouping tasks, frames, counters and markers in the profile."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A ``Task`` of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A ``Frame`` of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A ``Counter`` of this domain."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A ``Marker`` of this domain."""
        return Marker(self, name)


class _Range:
    """A named range of time: ``start()`` ... ``stop()``, or a ``with`` block."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name
        self._start = None

    def _category(self):
        return self.domain.name

    def start(self):
        """Begin the range."""
        self._start = _RECORDER.now_us()

    def stop(self):
        """End the range, recording it when the profiler runs."""
        if self._start is None:
            raise MXNetError('%s %r: stop() without start()' % (type(self).__name__, self.name))
        if _RECORDER.active():
            _RECORDER.add_range(self._category(), self.name, self._start, _RECORDER.now_us())
        self._start = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Range):
    """A unit of work of ``domain``; the passes through it are aggregated together."""


class Frame(_Range):
    """A range of ``domain`` (e.g. one training iteration); its category is
    '<domain>,frame' as in MXNet."""

    def _category(self):
        return '%s,frame' % self.domain.name


class Event(_Range):
    """A range of the 'event' category, not tied to a domain."""

    def __init__(self, name):
        super().__init__(None, name)

    def _category(self):
        return 'event'


class Counter:
    """A value of ``domain`` over time, a counter track in the trace."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = name
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        """Set the counter to ``value``."""
        self.value = value
        if _RECORDER.active():
            _RECORDER.add_event({'name': self.name, 'cat': self.domain.name, 'ph': 'C',
                                 'ts': _RECORDER.now_us(), 'args': {self.name: value}})

    def increment(self, delta=1):
        """Add ``delta``."""
        self.set_value(self.value + delta)

    def decrement(self, delta=1):
        """Subtract ``delta``."""
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant of ``domain`` marked in the trace."""
    _SCOPES = {'global': 'g', 'process': 'p', 'thread': 't'}

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name

    def mark(self, scope='process'):  # pylint: disable=redefined-outer-name
        """Mark now; ``scope`` ('global', 'process', 'thread', 'task', 'marker') says
        how wide the mark is drawn (the last two as 'thread')."""
        if _RECORDER.active():
            _RECORDER.add_event({'name': self.name, 'cat': '%s,instant_marker' % self.domain.name,
                                 'ph': 'i', 'ts': _RECORDER.now_us(),
                                 's': self._SCOPES.get(scope, 't')})


def _autostart():
    """``MXNET_PROFILER_AUTOSTART=1``: profile this whole process, dump at exit."""
    if os.environ.get('MXNET_PROFILER_AUTOSTART', '0') in ('', '0'):
        return
    set_config(profile_all=os.environ.get('MXNET_PROFILER_MODE', '0') not in ('', '0'))
    fname = os.environ.get('MXNET_PROFILER_FILENAME')
    if fname:
        set_config(filename=fname)
    set_state('run')
    atexit.register(_dump_at_exit)


def _dump_at_exit():
    if not _RECORDER.running:
        return
    set_state('stop')
    if not _RECORDER.filename_set and os.environ.get('DMLC_ROLE'):
        _RECORDER.config['filename'] = 'profile_%s.json' % _process_name().replace(' ', '')
    dump()


_autostart()
