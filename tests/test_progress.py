"""Progress reports: lines by time and by count, the ETA, JSON records, the terminal bar."""
import io
import json
import sys
import time

import pytest

from minigluon import metric, nd
from minigluon import progress as progress_module
from minigluon.progress import Progress, format_duration, speedometer_line


class Lines(list):
    """Collects emitted lines."""

    def __call__(self, line):
        self.append(line)


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_a_slow_loop_reports_every_interval_seconds_without_a_batch_count():
    lines = Lines()
    progress = Progress(interval=0.05, emit=lines, bar=False)
    loop = progress.loop(epoch=2, total=6)
    for _ in range(6):
        time.sleep(0.03)
        loop.update(10, [('accuracy', 0.5)])
    # at least 0.18 s at one report per 0.05 s: a report about every second batch (more
    # where the machine is slow)
    assert 2 <= len(lines) <= 6, lines
    fields = lines[0].split('\t')
    assert fields[0].startswith('Epoch[2] Batch [') and fields[0].endswith('/6]')
    assert fields[1].startswith('Speed: ') and fields[1].endswith(' samples/sec')
    assert 20 < float(fields[1].split()[1]) < 340   # 10 samples per 0.03 s or more
    assert fields[2] == 'accuracy=0.500000'
    assert fields[3].startswith('Time: ') and fields[4].startswith('ETA: 0:0')


class _SteadyClock:
    """A clock on which each reading is one second after the last: every batch takes
    the same time, whatever the machine's load (the ETA's arithmetic is what is tested)."""

    def __init__(self):
        self.now = 1000.0

    def time(self):
        self.now += 1.0
        return self.now


def test_log_interval_reports_every_n_batches_and_eta_counts_down(monkeypatch):
    monkeypatch.setattr(progress_module, 'time', _SteadyClock())
    lines = Lines()
    progress = Progress(interval=None, log_interval=2, emit=lines, bar=False)
    loop = progress.loop(0, total=5)
    records = [loop.update(4, {'loss': 1.0 / (i + 1)}) for i in range(5)]
    assert [r is not None for r in records] == [False, True, False, True, False]
    assert [line.split('\t')[0] for line in lines] == ['Epoch[0] Batch [2/5]',
                                                      'Epoch[0] Batch [4/5]']
    assert records[1]['eta'] >= records[3]['eta'] >= 0
    assert records[3]['loss'] == 0.25 and records[3]['samples'] == 16


def test_report_can_be_forced_or_held_back():
    lines = Lines()
    loop = Progress(interval=1e-9, emit=lines, bar=False).loop(0)
    assert loop.update(1, report=False) is None
    assert loop.update(1, report=True)['batch'] == 2
    assert lines[0].startswith('Epoch[0] Batch [2]\t')   # no total known: no '/N'
    assert lines[0].endswith('ETA: ?')


def test_metrics_file_gets_one_json_object_per_report_and_per_epoch(tmp_path):
    path = str(tmp_path / 'm-{rank}.jsonl')
    acc = metric.Accuracy()
    acc.update([nd.array([1, 0])], [nd.array([[0.1, 0.9], [0.8, 0.2]])])
    with Progress(rank=3, interval=None, log_interval=1, metrics_file=path, emit=Lines(),
                  bar=False) as progress:
        loop = progress.loop(1, total=2)
        loop.update(8, [acc])
        loop.update(8, [acc])
        test = progress.loop(1, total=1, phase='test')
        test.update(4)
        test.close()
        summary = loop.summary(Test_acc=0.75)
    with open(str(tmp_path / 'm-3.jsonl')) as f:
        records = [json.loads(line) for line in f]
    assert [r['kind'] for r in records] == ['batch', 'batch', 'epoch']   # test passes: no records
    assert all(r['rank'] == 3 and r['epoch'] == 1 and r['phase'] == 'train' for r in records)
    assert records[1]['batch'] == 2 and records[1]['accuracy'] == 1.0
    assert records[2] == json.loads(json.dumps(summary))
    assert records[2]['Test_acc'] == 0.75 and records[2]['samples'] == 16
    assert records[2]['samples_per_sec'] > 0 and records[2]['time'] >= records[1]['time']
    # appended, never truncated: a resumed run continues the file
    with Progress(rank=3, metrics_file=path, emit=Lines(), bar=False) as progress:
        progress.loop(2).summary({'accuracy': float('nan')})
    with open(str(tmp_path / 'm-3.jsonl')) as f:
        last = [json.loads(line) for line in f]
    assert len(last) == 4 and last[3]['epoch'] == 2 and last[3]['accuracy'] is None


def test_a_metric_named_like_a_record_field_is_kept_apart():
    loop = Progress(interval=None, emit=Lines(), bar=False).loop(0)
    record = loop.update(1, [('time', 5.0)], report=True)
    assert record['metric time'] == 5.0 and record['time'] < 5.0


def test_no_bar_unless_a_single_process_writes_to_a_terminal(monkeypatch):
    pytest.importorskip('tqdm', reason='tqdm is not installed (minigluon[progress])')
    monkeypatch.delenv('DMLC_ROLE', raising=False)
    monkeypatch.setattr(sys, 'stdout', io.StringIO())
    assert not Progress().bar
    monkeypatch.setattr(sys, 'stdout', TTY())
    assert Progress().bar
    monkeypatch.setenv('DMLC_ROLE', 'worker')   # under the launcher: lines, prefixed
    assert not Progress().bar


def test_in_a_terminal_the_bar_replaces_the_lines(monkeypatch):
    pytest.importorskip('tqdm', reason='tqdm is not installed (minigluon[progress])')
    out = TTY()
    monkeypatch.setattr(sys, 'stdout', out)
    lines = Lines()
    progress = Progress(interval=1e-9, emit=lines, bar=True)
    loop = progress.loop(0, total=3)
    for _ in range(3):
        loop.update(5, [('accuracy', 0.25)])
    loop.close()
    progress.emit('Epoch 0: Test_acc 0.5')
    assert lines == ['Epoch 0: Test_acc 0.5']
    drawn = out.getvalue()
    assert '3/3' in drawn and 'accuracy=0.2500' in drawn and 'samples/s' in drawn


def test_bar_without_tqdm_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, 'tqdm', None)
    with pytest.raises(ImportError, match=r"minigluon\[progress\]"):
        Progress(bar=True)
    assert not Progress(emit=Lines()).bar


def test_durations_and_the_speedometer_line():
    assert [format_duration(s) for s in (0, 59.4, 61, 3600 * 2 + 5, None, float('inf'))] == \
        ['0:00', '0:59', '1:01', '2:00:05', '?', '?']
    record = {'kind': 'batch', 'phase': 'train', 'epoch': 0, 'batch': 40, 'batches': 157,
              'samples_per_sec': 25.814, 'time': 12.34, 'eta': 83, 'accuracy': 0.412}
    assert speedometer_line(record) == ('Epoch[0] Batch [40/157]\tSpeed: 25.81 samples/sec\t'
                                        'accuracy=0.412000\tTime: 12.3s\tETA: 1:23')
