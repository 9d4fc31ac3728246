"""``mx.profiler``: time every op run through the op table, and user-defined ranges.

While the profiler runs (``set_state('run')``, not ``pause()``d), every op that
``ndarray.dispatch.invoke`` runs, imperative or inside a bound graph, is timed (on a GPU
after waiting for the device, so the time is the kernel's). ``dumps()`` returns the
aggregate table per category and name (count, total, min, max, average in ms) as MXNet
prints it, or as JSON; ``dump()`` writes the events as a Chrome trace (``traceEvents``,
open it in chrome://tracing or Perfetto) to the configured ``filename``. Users time their
own ranges with ``Domain``'s ``Task``/``Frame``/``Counter``/``Marker`` and ``Event``.
Stopped, the profiler costs one test per op.
"""
import json
import os
import threading
import time
import warnings
from contextlib import contextmanager

from .backend import synchronize
from .base import MXNetError
from .ndarray import dispatch

__all__ = ['set_config', 'set_state', 'pause', 'resume', 'dump', 'dumps',
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
        self.running = False
        self.paused = False
        self.events = []
        self.stats = {}  # (category, name) -> [count, total, min, max] in ms
        self.pids = {}   # process (track) name -> pid of the trace
        self.origin = time.time() * 1e6 - time.perf_counter() * 1e6
        self.scope = threading.local()

    def now_us(self):
        """Microseconds since the epoch, from the monotonic clock."""
        return self.origin + time.perf_counter() * 1e6

    def active(self):
        """True when events are being recorded."""
        return self.running and not self.paused

    def pid(self, process):
        if process not in self.pids:
            self.pids[process] = len(self.pids)
            self.events.append({'ph': 'M', 'name': 'process_name', 'pid': self.pids[process],
                                'args': {'name': process}})
        return self.pids[process]

    def add_range(self, category, name, process, start_us, end_us):
        """A timed range: a begin/end pair in the trace, a sample in the statistics."""
        ms = (end_us - start_us) / 1e3
        tid = threading.get_ident()
        with self.lock:
            pid = self.pid(process)
            self.events.append({'name': name, 'cat': category, 'ph': 'B', 'ts': start_us,
                                'pid': pid, 'tid': tid})
            self.events.append({'name': name, 'cat': category, 'ph': 'E', 'ts': end_us,
                                'pid': pid, 'tid': tid})
            entry = self.stats.get((category, name))
            if entry is None:
                self.stats[(category, name)] = [1, ms, ms, ms]
            else:
                entry[0] += 1
                entry[1] += ms
                entry[2] = min(entry[2], ms)
                entry[3] = max(entry[3], ms)

    def add_event(self, event, process):
        """An instant or counter event of the trace."""
        with self.lock:
            event['pid'] = self.pid(process)
            event['tid'] = threading.get_ident()
            self.events.append(event)

    def op_done(self, op, ctx, start):
        """``dispatch.invoke``'s report: ``op`` ran on ``ctx`` from ``start``
        (``time.perf_counter()``) until now."""
        if ctx.device_type == 'gpu':
            synchronize(ctx.device_id)
        end = time.perf_counter()
        name = getattr(self.scope, 'name', '') + op.name
        self.add_range('operator', name, '%s/%d' % (ctx.device_type, ctx.device_id),
                       self.origin + start * 1e6, self.origin + end * 1e6)


_RECORDER = _Recorder()


def _update_hook():
    dispatch.set_profiler(_RECORDER if _RECORDER.active() else None)


def _check_process(profile_process):
    if profile_process != 'worker':
        raise MXNetError("profile_process=%r: only the worker's own process can be profiled "
                         "(profile a server by running the profiler in its process)"
                         % (profile_process,))


def set_config(**kwargs):
    """Configure the profiler (keyword arguments only).

    Parameters
    ----------
    filename : str
        Where ``dump()`` writes the trace (``profile.json``).
    profile_all, profile_symbolic, profile_imperative, profile_memory, profile_api : bool
        Accepted for MXNet's scripts; every op (imperative or in a graph) is timed.
    aggregate_stats : bool
        Accepted; the statistics ``dumps()`` shows are always kept.
    continuous_dump : bool
        Also write the trace on every ``set_state('stop')``.
    dump_period : float
        Accepted for MXNet's scripts.
    profile_process : str
        'worker' (the only one that can be profiled from here).
    """
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError('profiler.set_config: unknown options %s; the options are %s'
                         % (unknown, sorted(_DEFAULTS)))
    _check_process(kwargs.get('profile_process', 'worker'))
    _RECORDER.config.update(kwargs)


def set_state(state='stop', profile_process='worker'):
    """Start ('run') or stop ('stop') recording."""
    if state not in ('run', 'stop'):
        raise MXNetError("profiler.set_state: state must be 'run' or 'stop', got %r" % (state,))
    _check_process(profile_process)
    was_running = _RECORDER.running
    _RECORDER.running = state == 'run'
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
    """Write the events recorded so far as a Chrome trace (``{"traceEvents": [...]}``) to
    the configured ``filename``; with ``finished`` they are then dropped, so a later dump
    starts afresh."""
    _check_process(profile_process)
    with _RECORDER.lock:
        events = list(_RECORDER.events)
        if finished:
            _RECORDER.events = []
            _RECORDER.pids = {}
    fname = _RECORDER.config['filename']
    tmp = '%s.tmp%d' % (fname, os.getpid())
    with open(tmp, 'w') as f:
        json.dump({'traceEvents': events, 'displayTimeUnit': 'ms'}, f)
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
    category = None

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name
        self._start = None

    def start(self):
        """Begin the range."""
        self._start = _RECORDER.now_us()

    def stop(self):
        """End the range, recording it when the profiler runs."""
        if self._start is None:
            raise MXNetError('%s %r: stop() without start()' % (type(self).__name__, self.name))
        if _RECORDER.active():
            category = self.category or self.domain.name
            _RECORDER.add_range(category, self.name, category, self._start,
                                _RECORDER.now_us())
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
    """A range of ``domain`` (e.g. one training iteration), shown in the trace."""


class Event(_Range):
    """A range of the 'event' category, not tied to a domain."""
    category = 'event'

    def __init__(self, name):
        super().__init__(None, name)


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
                                 'ts': _RECORDER.now_us(), 'args': {self.name: value}},
                                self.domain.name)

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
        how wide the mark is drawn."""
        if _RECORDER.active():
            category = '%s,instant_marker' % self.domain.name
            _RECORDER.add_event({'name': self.name, 'cat': category, 'ph': 'i',
                                 'ts': _RECORDER.now_us(), 's': self._SCOPES.get(scope, 'p')},
                                category)
