"""The Supervisor in-process, with real children: line assembly, relabelling, failure
reports, and the SIGTERM-then-SIGKILL escalation (with shortened delays)."""
import io
import signal
import sys
import time

import pytest

from minigluon.launcher import processes
from minigluon.launcher.processes import Supervisor, exit_status

from .helpers import leftovers


def _supervisor():
    out, err = io.BytesIO(), io.BytesIO()
    return Supervisor(out, err), out, err


def _python(code, marker=''):
    return [sys.executable, '-c', code, marker]


def test_exit_status_of_signals():
    assert [exit_status(rc) for rc in (0, 3, -9, -15)] == [0, 3, 137, 143]


def test_lines_from_both_streams_are_prefixed_and_partial_lines_completed():
    supervisor, out, err = _supervisor()
    supervisor.spawn('worker 0', _python(
        "import os; os.write(1, b'par'); os.write(1, b'tial\\nlast'); os.write(2, b'oops\\n')"))
    assert supervisor.wait() == 0
    assert out.getvalue() == b'[worker 0] partial\n[worker 0] last\n'
    assert err.getvalue() == b'[worker 0] oops\n'
    supervisor.report()
    assert err.getvalue() == b'[worker 0] oops\n'  # nothing to report


def test_relabel_splits_one_child_into_several_labels_and_drops_lines():
    supervisor, out, _ = _supervisor()

    def relabel(line):
        label, _, text = line.partition(b': ')
        return label.decode(), (None if text == b'hidden' else text)
    supervisor.spawn('mpirun', _python("print('server 0: a\\nworker 1: hidden\\nworker 1: b')"),
                     relabel=relabel)
    assert supervisor.wait() == 0
    assert out.getvalue() == b'[server 0] a\n[worker 1] b\n'


def test_the_first_failure_is_reported_with_its_last_lines(marker):
    supervisor, _, err = _supervisor()
    supervisor.spawn('worker 1', _python(
        "import sys\nfor i in range(15): print('line', i)\nsys.exit(4)"), where='h1',
        notes={4: 'four means trouble'})
    supervisor.spawn('server 0', _python('import time; time.sleep(30)', marker))
    assert supervisor.wait() == 4
    supervisor.report()
    report = err.getvalue().decode()
    assert 'worker 1 on h1 failed first, with exit status 4 (four means trouble)' in report
    assert '    line 5\n' in report and '    line 14\n' in report and 'line 4\n' not in report
    assert 'ended the 1 other process still running' in report
    assert leftovers(marker) == []


def test_a_child_that_ignores_sigterm_gets_sigkill(monkeypatch, marker):
    monkeypatch.setattr(processes, 'TERM_AFTER', 0.3)
    monkeypatch.setattr(processes, 'KILL_AFTER', 0.6)
    supervisor, out, _ = _supervisor()
    stubborn = _python("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                       "print('ready', flush=True)\ntime.sleep(30)", marker)
    supervisor.spawn('plain', stubborn)                    # asked with SIGTERM
    supervisor.spawn('piped', stubborn, payload=b'spec\n')  # asked by closing stdin
    while out.getvalue().count(b'ready') < 2:
        supervisor._pump(0.05)
    supervisor.interrupt(signal.SIGTERM)
    started = time.monotonic()
    assert supervisor.wait() == 128 + signal.SIGTERM
    assert 0.5 < time.monotonic() - started < 5
    assert leftovers(marker) == []


def test_a_second_interrupt_kills_at_once(marker):
    supervisor, out, _ = _supervisor()
    supervisor.spawn('stubborn', _python(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\ntime.sleep(30)", marker))
    while b'ready' not in out.getvalue():
        supervisor._pump(0.05)
    supervisor.interrupt(signal.SIGINT)
    supervisor._pump(0.05)
    supervisor.stop()
    supervisor.interrupt(signal.SIGINT)
    started = time.monotonic()
    assert supervisor.wait() == 128 + signal.SIGINT
    assert time.monotonic() - started < 2
    assert leftovers(marker) == []


def test_nothing_starts_once_interrupted():
    supervisor, _, _ = _supervisor()
    supervisor.interrupt(signal.SIGINT)
    assert supervisor.spawn('late', ['true']) is None
    assert supervisor.wait() == 128 + signal.SIGINT


def test_a_program_that_cannot_start_is_a_launch_error():
    supervisor, _, _ = _supervisor()
    with pytest.raises(processes.LaunchError, match='cannot start worker 0: /no/such/prog'):
        supervisor.spawn('worker 0', ['/no/such/prog'])
