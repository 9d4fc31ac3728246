"""Progress of training loops: periodic lines, a bar in a terminal, JSON-lines records.

One :class:`Progress` serves one process. For each pass over a data set (an epoch of
training, a test pass) it hands out a :class:`Loop`; after every batch the loop is
told how many samples it took and the metrics so far, and it reports when a report is
due: every ``interval`` seconds (10 by default, so long epochs are never silent) and,
if asked, every ``log_interval`` batches. A report is a line with the speed, the
metrics and the epoch's ETA, in the format MXNet's ``Speedometer`` prints::

    Epoch[0] Batch [40/157]	Speed: 25.81 samples/sec	accuracy=0.412000	Time: 12.3s	ETA: 1:23

Lines go to stdout, one write each, so the launcher keeps each whole line under its
``[worker N]`` prefix. In a terminal (a single process whose stdout is a tty) a tqdm
bar takes the lines' place when tqdm is installed (``pip install 'minigluon[progress]'``).

With ``metrics_file``, every training report and every epoch summary is also
appended to that file as one JSON object per line (rank, epoch, batch, samples/s, the
metrics, time), which ``python -m minigluon.plot`` draws. Each record is one
``write`` on a file opened for appending, so the workers of a job may share the file.
"""
import json
import math
import os
import sys
import time

__all__ = ['Progress', 'Loop', 'format_duration', 'speedometer_line', 'RECORD_FIELDS']

# Keys of a record that are not metrics; a metric of one of these names is prefixed.
RECORD_FIELDS = ('kind', 'phase', 'rank', 'epoch', 'batch', 'batches', 'samples',
                 'samples_per_sec', 'time', 'timestamp', 'eta')


def format_duration(seconds):
    """``seconds`` as ``M:SS`` or ``H:MM:SS`` ('?' when unknown).

    Parameters
    ----------
    seconds : float or None

    Returns
    -------
    str
    """
    if seconds is None or not math.isfinite(seconds):
        return '?'
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return '%d:%02d:%02d' % (hours, minutes, secs) if hours else '%d:%02d' % (minutes, secs)


def speedometer_line(record):
    """A report as MXNet's ``Speedometer`` prints it, with the time and the ETA added.

    Parameters
    ----------
    record : dict
        A record made by :meth:`Loop.update`.

    Returns
    -------
    str
        e.g. ``Epoch[0] Batch [40/157]\\tSpeed: 25.81 samples/sec\\taccuracy=0.412000\\t
        Time: 12.3s\\tETA: 1:23`` (``Test`` instead of ``Batch`` for a test pass).
    """
    where = '%d/%d' % (record['batch'], record['batches']) if record.get('batches') \
        else '%d' % record['batch']
    parts = ['Epoch[%d] %s [%s]' % (record['epoch'],
                                    'Batch' if record['phase'] == 'train' else 'Test', where),
             'Speed: %.2f samples/sec' % record['samples_per_sec']]
    parts += ['%s=%f' % (name, value) for name, value in _metric_items(record)]
    parts += ['Time: %.1fs' % record['time'], 'ETA: %s' % format_duration(record['eta'])]
    return '\t'.join(parts)


def _metric_items(record):
    return [(k, v) for k, v in record.items() if k not in RECORD_FIELDS]


def _as_pairs(metrics):
    """(name, float) pairs from ``get_name_value()`` output, a dict or EvalMetrics."""
    if isinstance(metrics, dict):
        metrics = list(metrics.items())
    pairs = []
    for item in metrics or ():
        if hasattr(item, 'get_name_value'):
            pairs.extend(item.get_name_value())
        else:
            pairs.append(tuple(item))
    out = []
    for name, value in pairs:
        name = str(name)
        out.append(('metric ' + name if name in RECORD_FIELDS else name, float(value)))
    return out


def _tqdm_class():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _json_safe(value):
    """JSON has no NaN or infinity: those become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Progress:
    """Reports the training loops of one process.

    Parameters
    ----------
    rank : int, default 0
        This worker's rank, written into every record.
    interval : float, default 10
        Seconds after which a loop reports even if ``log_interval`` batches have not
        passed; ``None`` or 0: never by time.
    log_interval : int, optional
        Also report every ``log_interval`` batches.
    metrics_file : str, optional
        Append JSON records (one per training report and per epoch) to this file,
        opened with the first record. ``{rank}`` in the name is replaced by the rank.
    bar : bool, optional
        Draw a tqdm bar instead of printing lines. Default: when tqdm is installed,
        stdout is a terminal and the process is not part of a launched job.
    emit : callable, optional
        Called with each line (default: print to stdout and flush).
    line : callable, optional
        Makes a report's line from its record (default: :func:`speedometer_line`).
    """

    def __init__(self, rank=0, interval=10.0, log_interval=None, metrics_file=None, bar=None,
                 emit=None, line=None):
        self.rank = int(rank)
        self.interval = interval
        self.log_interval = log_interval
        self.metrics_file = metrics_file
        self._tqdm = _tqdm_class()
        if bar is None:
            bar = (self._tqdm is not None and 'DMLC_ROLE' not in os.environ
                   and hasattr(sys.stdout, 'isatty') and sys.stdout.isatty())
        elif bar and self._tqdm is None:
            raise ImportError("a progress bar needs tqdm: pip install 'minigluon[progress]'")
        self.bar = bool(bar)
        self._emit = emit
        self.line = line or speedometer_line
        self.start = time.time()
        self._fd = None   # opened with the first record, when the rank is surely known

    def loop(self, epoch, total=None, phase='train'):
        """Start timing a pass over a data set.

        Parameters
        ----------
        epoch : int
            The epoch it belongs to.
        total : int, optional
            Batches the pass will take (``len(data_loader)``), for the ETA.
        phase : str, default 'train'
            'train' passes write JSON records; others ('test') only report.

        Returns
        -------
        Loop
        """
        return Loop(self, epoch, total, phase)

    def emit(self, text):
        """Print one line (above the bar, when one is drawn).

        Parameters
        ----------
        text : str
        """
        if self._emit is not None:
            writer = self._emit
        else:
            def writer(line):
                sys.stdout.write(line + '\n')
                sys.stdout.flush()
        if self.bar:
            with self._tqdm.external_write_mode(file=sys.stdout):
                writer(text)
        else:
            writer(text)

    def write_record(self, record):
        """Append ``record`` to the metrics file (if any) as one JSON line.

        Parameters
        ----------
        record : dict
            Numbers and strings; NaN and infinities are written as null.
        """
        if not self.metrics_file:
            return
        if self._fd is None:
            path = self.metrics_file.format(rank=self.rank)
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        line = json.dumps({k: _json_safe(v) for k, v in record.items()}) + '\n'
        os.write(self._fd, line.encode())

    def close(self):
        """Close the metrics file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Loop:
    """One pass over a data set, made by :meth:`Progress.loop`."""

    def __init__(self, progress, epoch, total, phase):
        self.progress = progress
        self.epoch = int(epoch)
        self.total = int(total) if total else None
        self.phase = phase
        self.batch = 0
        self.samples = 0
        self.begin = self.last_time = time.time()
        self._last_report = (self.begin, 0)   # (time, samples) of the last report
        self.metrics = []
        self._bar = None
        if progress.bar:
            self._bar = progress._tqdm(total=self.total, file=sys.stdout, dynamic_ncols=True,
                                       leave=phase == 'train', unit='batch',
                                       desc='Epoch %d%s' % (epoch, '' if phase == 'train'
                                                            else ' ' + phase))

    def update(self, samples, metrics=(), report=None):
        """Count a batch of ``samples``; report if due.

        Parameters
        ----------
        samples : int
            Samples in the batch just done.
        metrics : list of (name, value), dict, or list of EvalMetric
            The metrics so far (e.g. ``metric.get_name_value()``).
        report : bool, optional
            True: report now; False: not now; default: when ``interval`` seconds
            have passed since the last report or ``log_interval`` batches are done.

        Returns
        -------
        dict or None
            The record of the report, or None when there was none.
        """
        now = time.time()
        self.batch += 1
        self.samples += int(samples)
        self.last_time = now
        self.metrics = _as_pairs(metrics)
        progress = self.progress
        if report is None:
            every = progress.log_interval
            report = bool((progress.interval and now - self._last_report[0] >= progress.interval)
                          or (every and self.batch % every == 0))
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(self._postfix(now), refresh=False)
        if not report:
            return None
        last_time, last_samples = self._last_report
        speed = (self.samples - last_samples) / max(now - last_time, 1e-9)
        self._last_report = (now, self.samples)
        record = self._record('batch', now, speed)
        if self.total:
            record['eta'] = (self.total - self.batch) * (now - self.begin) / self.batch
        if self.phase == 'train':
            progress.write_record(record)
        if self._bar is None:
            progress.emit(progress.line(record))
        return record

    def _postfix(self, now):
        speed = self.samples / max(now - self.begin, 1e-9)
        shown = ['%.1f samples/s' % speed]
        shown += ['%s=%.4f' % (name, value) for name, value in self.metrics]
        return ', '.join(shown)

    def _record(self, kind, now, speed):
        record = {'kind': kind, 'phase': self.phase, 'rank': self.progress.rank,
                  'epoch': self.epoch, 'batch': self.batch, 'batches': self.total,
                  'samples': self.samples, 'samples_per_sec': speed,
                  'time': now - self.progress.start, 'timestamp': now, 'eta': None}
        record.update(self.metrics)
        return record

    def close(self):
        """Close the bar (if any). Idempotent."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def summary(self, metrics=None, **extra):
        """Close the loop and write its epoch record.

        Parameters
        ----------
        metrics : list of (name, value), dict, or list of EvalMetric, optional
            The epoch's final metrics (default: those of the last update).
        **extra : float
            More values for the record, e.g. ``Test_acc=0.47``.

        Returns
        -------
        dict
            The record: samples/s over the whole pass (until its last batch), the
            metrics and ``extra``; written to the metrics file for a training pass.
        """
        self.close()
        if metrics is not None:
            self.metrics = _as_pairs(metrics)
        speed = self.samples / max(self.last_time - self.begin, 1e-9)
        record = self._record('epoch', time.time(), speed)
        record['batches'] = self.batch
        record.update(_as_pairs(extra))
        if self.phase == 'train':
            self.progress.write_record(record)
        return record
