"""Merging the Chrome traces of several processes into one timeline.

Every process of a job writes its own trace; their timestamps are wall-clock
microseconds, so merging only has to keep each file's processes apart (two hosts may
reuse a pid) and order them: workers by rank, then servers, then the scheduler.
"""
import json
import os

_ROLE_ORDER = {'worker': 0, 'server': 1000, 'scheduler': 2000}


def sort_index(process_name):
    """Where a process goes in the merged timeline: 'worker 1' -> 1, 'server 0' -> 1000,
    'scheduler' -> 2000, anything else after them."""
    role, _, rank = process_name.partition(' ')
    base = _ROLE_ORDER.get(role)
    if base is None:
        return 3000
    return base + (int(rank) if rank.isdigit() else 0)


def _events_of(fname):
    with open(fname) as f:
        try:
            content = json.load(f)
        except ValueError as exc:
            raise ValueError('profiler.merge: %s is no JSON trace: %s' % (fname, exc)) from None
    events = content.get('traceEvents') if isinstance(content, dict) else content
    if not isinstance(events, list):
        raise ValueError('profiler.merge: %s has no "traceEvents" list; give it files that '
                         'profiler.dump() wrote' % fname)
    return events


def merge(out, inputs):
    """Write one Chrome trace ``out`` holding every event of the traces ``inputs``
    (file names, e.g. the files of all workers and servers of a job).

    A pid that two files use is renumbered in the second, and each process gets a sort
    index from its name, so Perfetto shows 'worker 0', 'worker 1', ... 'server 0', ...
    one above the other on a common time axis. Returns the number of events written.
    """
    if isinstance(inputs, str):
        inputs = [inputs]
    merged, used, sorted_pids = [], set(), set()
    for fname in inputs:
        events = _events_of(fname)
        mapping = {}
        for pid in sorted({e.get('pid', 0) for e in events}, key=str):
            new = pid
            while new in used or not isinstance(new, int):
                new = max([p for p in used if isinstance(p, int)] + [0]) + 1
            mapping[pid] = new
            used.add(new)
        for event in events:
            event = dict(event, pid=mapping[event.get('pid', 0)])
            if event.get('ph') == 'M' and event.get('name') == 'process_sort_index':
                sorted_pids.add(event['pid'])
            merged.append(event)
    names = {e['pid']: e.get('args', {}).get('name', '') for e in merged
             if e.get('ph') == 'M' and e.get('name') == 'process_name'}
    for pid, name in names.items():
        if pid not in sorted_pids:
            merged.append({'ph': 'M', 'name': 'process_sort_index', 'pid': pid, 'tid': 0,
                           'args': {'sort_index': sort_index(name)}})
    tmp = '%s.tmp%d' % (out, os.getpid())
    with open(tmp, 'w') as f:
        json.dump({'traceEvents': merged, 'displayTimeUnit': 'ms'}, f)
    os.replace(tmp, out)
    return len(merged)
