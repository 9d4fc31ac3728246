"""Training curves from metrics files and logs: ``python -m minigluon.plot FILE... -o curves.png``.

Reads the JSON lines that ``--metrics-file`` (examples) and
``LoggingHandler(metrics_file=...)`` (Estimator) write, and plain text output too: the
launcher's merged output (``[worker 1] ...`` lines), the progress lines
``Epoch[0] Batch [40] Speed: ... samples/sec accuracy=...``, the epoch lines
``Epoch 0: Test_acc 0.4674``, MXNet's ``Epoch[0] Validation-accuracy=...`` and the
Estimator's ``[Epoch 0][Batch 3]...`` and ``[Epoch 0] Finished in ...`` lines, so old
logs can be plotted. Draws accuracy, loss and throughput against time and against
epochs in one PNG, one colour per rank. Needs matplotlib
(``pip install 'minigluon[plot]'``).
"""
import argparse
import json
import math
import os
import re
import sys

from .progress import RECORD_FIELDS

__all__ = ['parse_line', 'read_records', 'render', 'main', 'COLOURS']

# matplotlib's default cycle (tab10): rank r is drawn in COLOURS[r % 10].
COLOURS = ('#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
           '#7f7f7f', '#bcbd22', '#17becf')
PANELS = ('accuracy', 'loss', 'throughput')
_TRAIN_STYLES = ('-', ':', '-.')   # the training metrics of one panel, in name order
_NUMBER = r'[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)'
_PREFIX = re.compile(r'^\[(worker|server|scheduler)(?: (\d+))?\] ')
_SPEEDOMETER = re.compile(r'^Epoch\[(\d+)\] Batch \[(?:\d+-)?(\d+)(?:/(\d+))?\]\s+Speed: (%s) '
                          r'samples/sec(.*)$' % _NUMBER)
_TEST_ACC = re.compile(r'^Epoch (\d+): Test_acc (%s)\s*$' % _NUMBER)
_MODULE_EPOCH = re.compile(r'^Epoch\[(\d+)\] (Train|Validation)-(\S+)=(%s)\s*$' % _NUMBER)
_ESTIMATOR_BATCH = re.compile(r'^\[Epoch (\d+)\]\[Batch (\d+)\]\[Samples \d+\] '
                              r'time/interval: %ss (.*)$' % _NUMBER)
_ESTIMATOR_EPOCH = re.compile(r'^\[Epoch (\d+)\] Finished in (%s)s, (.*)$' % _NUMBER)
_MISSING = ("minigluon.plot needs matplotlib, which is not installed here: "
            "pip install 'minigluon[plot]' (or pip install matplotlib)")


def _float(text):
    try:
        return float(text)
    except ValueError:
        return None


def _pairs(text, separator, assign):
    """{name: value} from 'a=1<sep>b=2' (or 'a: 1, b: 2'); other parts are skipped."""
    out = {}
    for part in text.split(separator):
        name, found, value = part.strip().rpartition(assign)
        value = _float(value.strip()) if found else None
        if name.strip() and value is not None:
            out[name.strip()] = value
    return out


def parse_line(line, rank=None):
    """The record one line of output holds, or None.

    Parameters
    ----------
    line : str
        A JSON record, or a progress or epoch line, with or without the launcher's
        ``[worker N]`` prefix.
    rank : int, optional
        The rank of a line that names none.

    Returns
    -------
    dict or None
        ``kind`` ('batch' or 'epoch'), ``rank``, ``epoch``, and what the line gives of
        ``batch``, ``batches``, ``samples_per_sec``, ``time`` and metric values.
    """
    line = line.rstrip('\r\n')
    prefix = _PREFIX.match(line)
    if prefix:
        if prefix.group(1) != 'worker':
            return None
        rank, line = int(prefix.group(2) or 0), line[prefix.end():]
    line = line.strip()
    record = None
    if line.startswith('{'):
        try:
            record = json.loads(line)
        except ValueError:
            return None
        if not isinstance(record, dict) or record.get('kind') not in ('batch', 'epoch') \
                or not isinstance(record.get('epoch'), int):
            return None
        if record.get('phase', 'train') != 'train':
            return None
    elif _SPEEDOMETER.match(line):
        m = _SPEEDOMETER.match(line)
        record = {'kind': 'batch', 'epoch': int(m.group(1)), 'batch': int(m.group(2)),
                  'batches': int(m.group(3)) if m.group(3) else None,
                  'samples_per_sec': float(m.group(4))}
        record.update(_pairs(m.group(5), '\t', '='))
        time_field = re.search(r'\tTime: (%s)s' % _NUMBER, m.group(5))
        if time_field:
            record['time'] = float(time_field.group(1))
    elif _TEST_ACC.match(line):
        m = _TEST_ACC.match(line)
        record = {'kind': 'epoch', 'epoch': int(m.group(1)), 'Test_acc': float(m.group(2))}
    elif _MODULE_EPOCH.match(line):
        m = _MODULE_EPOCH.match(line)
        record = {'kind': 'epoch', 'epoch': int(m.group(1)),
                  '%s %s' % (m.group(2).lower(), m.group(3)): float(m.group(4))}
    elif _ESTIMATOR_BATCH.match(line):
        m = _ESTIMATOR_BATCH.match(line)
        values = _pairs(m.group(3), ', ', ': ')
        speed = re.search(r'speed: (%s) samples/s' % _NUMBER, m.group(3))
        record = {'kind': 'batch', 'epoch': int(m.group(1)), 'batch': int(m.group(2)) + 1,
                  'samples_per_sec': float(speed.group(1)) if speed else None}
        record.update((k, v) for k, v in values.items() if k != 'speed')
    elif _ESTIMATOR_EPOCH.match(line):
        m = _ESTIMATOR_EPOCH.match(line)
        record = {'kind': 'epoch', 'epoch': int(m.group(1))}
        record.update(_pairs(m.group(3), ', ', ': '))
    if record is None:
        return None
    if record.get('rank') is None:
        record['rank'] = rank if rank is not None else 0
    return record


def read_records(paths):
    """Every record in the files ``paths`` (JSON lines or text output, mixed freely).

    Parameters
    ----------
    paths : list of str

    Returns
    -------
    list of dict
        The records in file order, each with ``source``: the index of its file.
    """
    records = []
    for index, path in enumerate(paths):
        with open(path, errors='replace') as f:
            for line in f:
                record = parse_line(line)
                if record is not None:
                    record['source'] = index
                    records.append(record)
    return records


def _metric_names(record):
    return [k for k, v in record.items()
            if k not in RECORD_FIELDS and k != 'source' and not k.startswith('_')
            and isinstance(v, (int, float))
            and not isinstance(v, bool)]


def _panel_of(metric):
    return 'accuracy' if re.search(r'acc|f1|mcc', metric, re.I) else 'loss'


def _is_evaluation(metric):
    return bool(re.search(r'test|val', metric, re.I))


def _series(records, paths):
    """{(source, rank): (label, colour)}: 'rank N' in COLOURS[N]; when ranks repeat over
    files, the file name joins the label and each series gets the next colour."""
    keys = sorted({(r['source'], r['rank']) for r in records}, key=str)
    ranks = [rank for _, rank in keys]
    unique = len(set(ranks)) == len(ranks) and all(isinstance(rank, int) for rank in ranks)
    out = {}
    for index, key in enumerate(keys):
        if unique:
            out[key] = ('rank %d' % key[1], COLOURS[key[1] % len(COLOURS)])
        else:
            name = os.path.basename(paths[key[0]]) if paths else 'file %d' % key[0]
            out[key] = ('%s rank %s' % (name, key[1]), COLOURS[index % len(COLOURS)])
    return out


def _x_values(records):
    """Adds ``_t`` (seconds since its file's first process began) and ``_e`` (epochs)."""
    start = {}
    for r in records:
        if isinstance(r.get('timestamp'), (int, float)):
            began = r['timestamp'] - (r['time'] if isinstance(r.get('time'), (int, float))
                                      else 0)
            start[r['source']] = min(start.get(r['source'], began), began)
    most = {}
    for r in records:
        if r['kind'] == 'batch' and isinstance(r.get('batch'), int):
            key = (r['source'], r['rank'], r['epoch'])
            most[key] = max(most.get(key, 0), r['batch'])
    for r in records:
        if isinstance(r.get('timestamp'), (int, float)):
            r['_t'] = r['timestamp'] - start[r['source']]
        elif isinstance(r.get('time'), (int, float)):
            r['_t'] = r['time']
        else:
            r['_t'] = None
        if r['kind'] == 'epoch':
            r['_e'] = r['epoch'] + 1
        else:
            total = r.get('batches') or most.get((r['source'], r['rank'], r['epoch']))
            r['_e'] = r['epoch'] + r['batch'] / total if total and r.get('batch') else None


def _curves(records):
    """{(panel, series key, name): (kind, [records])}: what each line of each panel draws.

    A metric is drawn from the progress records when it has any, else from the epoch
    records (the test accuracy, or a run too short for progress lines).
    """
    found = {}
    for r in records:
        key = (r['source'], r['rank'])
        for name in _metric_names(r):
            found.setdefault((_panel_of(name), key, name), {}).setdefault(r['kind'], []).append(r)
        if isinstance(r.get('samples_per_sec'), (int, float)):
            found.setdefault(('throughput', key, 'samples/s'), {}).setdefault(
                r['kind'], []).append(r)
    return {k: ('batch', v['batch']) if 'batch' in v else ('epoch', v['epoch'])
            for k, v in found.items()}


def _import_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ImportError(_MISSING) from None
    matplotlib.use('Agg', force=True)
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    return Figure, FigureCanvasAgg


def render(records, output, title=None, paths=None, dpi=100):
    """Draw ``records`` into the PNG ``output``.

    Six panels: accuracy, loss and throughput (columns) against time and against
    epochs (rows). Each rank has one colour (``COLOURS[rank]``); training metrics are
    solid lines, test and validation metrics dashed with markers.

    Parameters
    ----------
    records : list of dict
        From :func:`read_records` (or :func:`parse_line`, with ``source`` set).
    output : str
        The PNG to write.
    title : str, optional
        The figure's title.
    paths : list of str, optional
        The files the records came from, to label series when ranks repeat.
    dpi : int, default 100

    Returns
    -------
    list of dict
        One per panel: ``panel`` (accuracy, loss, throughput), ``x`` (time, epoch),
        ``bbox`` (left, top, right, bottom in the image's pixels) and ``lines``
        ({legend label: colour}).
    """
    Figure, FigureCanvasAgg = _import_matplotlib()
    records = [dict(r, source=r.get('source', 0)) for r in records]
    _x_values(records)
    series = _series(records, paths)
    fig = Figure(figsize=(15, 8.5), dpi=dpi)
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3)
    fig.subplots_adjust(left=0.06, right=0.98, top=0.92, bottom=0.2, hspace=0.35, wspace=0.25)
    fig.suptitle(title or 'Training curves')
    curves = _curves(records)
    legend, panels = {}, []
    for row, (axis, xlabel) in enumerate((('_t', 'time (s)'), ('_e', 'epoch'))):
        for col, panel in enumerate(PANELS):
            ax = axes[row][col]
            lines = {}
            for (which, key, name), (kind, rows) in sorted(curves.items(), key=str):
                if which != panel:
                    continue
                field = 'samples_per_sec' if panel == 'throughput' else name
                points = sorted((r[axis], r[field]) for r in rows
                                if r[axis] is not None and isinstance(r.get(field), (int, float))
                                and math.isfinite(r[field]))
                if not points:
                    continue
                label, colour = series[key]
                label = '%s %s' % (label, name)
                evaluation = _is_evaluation(name)
                names = sorted(n for p, k, n in curves
                               if p == panel and k == key and not _is_evaluation(n))
                style = '--' if evaluation else _TRAIN_STYLES[names.index(name) % 3]
                legend[label] = ax.plot([p[0] for p in points], [p[1] for p in points],
                                        color=colour, linestyle=style, linewidth=2,
                                        marker='o' if evaluation or kind == 'epoch' else None,
                                        markersize=5, label=label)[0]
                lines[label] = colour
            ax.set_title(panel if panel != 'throughput' else 'throughput (samples/s)')
            ax.set_xlabel(xlabel)
            ax.grid(True, color='#dddddd', linewidth=0.8)
            if not lines:
                missing = 'times' if axis == '_t' and any(p == panel for p, _, _ in curves) \
                    else 'values'
                ax.text(0.5, 0.5, 'no %s in these records' % missing, ha='center',
                        va='center', transform=ax.transAxes, color='#777777')
            panels.append({'panel': panel, 'x': 'time' if axis == '_t' else 'epoch',
                           'lines': lines, 'ax': ax})
    if legend:
        fig.legend(list(legend.values()), list(legend.keys()), loc='lower center',
                   ncol=min(4, len(legend)), frameon=False)
    fig.savefig(output, dpi=dpi)
    height = fig.bbox.height
    for panel in panels:
        box = panel.pop('ax').get_window_extent()
        panel['bbox'] = (int(round(box.x0)), int(round(height - box.y1)),
                         int(round(box.x1)), int(round(height - box.y0)))
    return panels


def main(argv=None):
    """The command line: ``python -m minigluon.plot FILE... [-o curves.png] [--title T]``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0, or 1 when nothing could be drawn (matplotlib missing, no records found).
    """
    parser = argparse.ArgumentParser(
        prog='python -m minigluon.plot',
        description='Draw accuracy, loss and throughput against time and epochs from '
                    'metrics files (--metrics-file, JSON lines) or training output '
                    '(the launcher\'s merged lines included).')
    parser.add_argument('files', nargs='+', metavar='FILE')
    parser.add_argument('-o', '--output', default='curves.png', help='the PNG to write')
    parser.add_argument('--title', help='title of the figure')
    args = parser.parse_args(argv)
    try:
        _import_matplotlib()
    except ImportError as exc:
        print(exc, file=sys.stderr)
        return 1
    records = read_records(args.files)
    if not records:
        print('minigluon.plot: no metrics found in %s: expected JSON lines written by '
              '--metrics-file or LoggingHandler(metrics_file=...), or progress lines '
              '("Epoch[0] Batch [20] Speed: ...", "Epoch 0: Test_acc ...")'
              % ', '.join(args.files), file=sys.stderr)
        return 1
    render(records, args.output, args.title, paths=args.files)
    ranks = sorted({r['rank'] for r in records}, key=str)
    print('wrote %s: %d records from %d file(s), rank(s) %s'
          % (args.output, len(records), len(args.files), ', '.join(map(str, ranks))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
