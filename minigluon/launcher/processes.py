"""Start, watch and end the processes of a job.

One loop, no threads: it reads every child's stdout and stderr, writes each whole
line to the launcher's own stdout or stderr prefixed with the child's label
(``[worker 1] ...``), and notices when children end. The first child to fail
(non-zero exit status) makes the job's status and starts the stop: every child is
asked to end (its stdin is closed, which a bootstrap or an ssh client takes as the
order to end its process; others get SIGTERM), then gets SIGTERM after TERM_AFTER
seconds and SIGKILL after KILL_AFTER, so that nothing outlives the launcher by more
than 10 s. SIGINT, SIGTERM or SIGHUP to the launcher (``interrupt``) stops the job
the same way; a second one goes straight to SIGKILL.

With ``max_restarts`` above 0, a child that can be started again (its ``restart``)
and fails is started again instead, under the same label, as long as the job has
restarts left; its failure then does not count. ``restart_if(status)`` narrows which
failures those are (the scheduler: only a killed one, since it exits 1 when it ends a
failed job itself).
"""
import collections
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional

from . import LaunchError

PROGRAM = 'minigluon-launch'
TERM_AFTER = 5.0
KILL_AFTER = 8.0
POLL_SECONDS = 0.05
RECENT_LINES = 10


def require(program, why):
    """Refuse to launch without ``program`` on this host's PATH; ``why``: 'by OPTION'."""
    if shutil.which(program) is None:
        raise LaunchError('%s is not installed on this host (it is needed %s)' % (program, why))


def _signal_name(status):
    """'SIGKILL' for exit status 137; None for a status that is no signal's."""
    try:
        return signal.Signals(status - 128).name if status > 128 else None
    except ValueError:
        return None


def killed(status):
    """Whether exit status ``status`` is a signal's (128 + N)."""
    return _signal_name(status) is not None


def exit_status(returncode):
    """A Popen return code as a shell exit status (killed by signal N: 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class Failure:
    """The first process of the job that failed; ``where`` names its host, if any."""
    label: str
    status: int
    where: Optional[str] = None
    note: str = ''


class Child:
    """A started process: its label, host, and how its output is read and labelled."""

    def __init__(self, label, popen, where, notes, relabel, restart, restart_if=None):
        self.label = label
        self.restart = restart
        self.restart_if = restart_if
        self.popen = popen
        self.where = where
        self.notes = notes or {}
        self.relabel = relabel
        self.status = None
        self.partial = {}   # stream fd -> bytes of an unfinished line
        self.signals_sent = set()

    def signal_group(self, signum):
        """Send ``signum``, once, to the child's process group (it leads its own session)."""
        if signum not in self.signals_sent:
            self.signals_sent.add(signum)
            try:
                os.killpg(self.popen.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def ask_to_stop(self):
        """Ask the child to end: close its stdin when it has one (a bootstrap ends its
        command then), else send SIGTERM to its process group."""
        if self.popen.stdin is not None:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
        else:
            self.signal_group(signal.SIGTERM)


class Supervisor:
    """Runs children with prefixed output until they end; see the module docstring."""

    def __init__(self, stdout=None, stderr=None, max_restarts=0):
        self._out = {1: stdout or sys.stdout.buffer, 2: stderr or sys.stderr.buffer}
        self.max_restarts = max_restarts
        self.restarts = []  # (label, exit status) of each child started again
        self._selector = selectors.DefaultSelector()
        self._children = []
        self._recent = {}
        self.failure = None
        self.signal = None
        self._stop_started = None
        self._ended = 0
        self._reported = False
        self._restarts_reported = False

    @property
    def stopping(self):
        """Whether ``stop`` has been called: the job is ending, no new child starts."""
        return self._stop_started is not None

    def spawn(self, label, argv, *, payload=None, env=None, where=None, notes=None,
              relabel=None, restart=None, restart_if=None):
        """Start ``argv`` in its own session; return its Child, or None once stopping.

        where: the host it stands for, named in the failure report.
        payload: bytes written to its stdin, which then stays open until the job
        stops (a bootstrap's spec); without one its stdin is /dev/null.
        notes: {exit status: explanation} for the failure report.
        relabel: line -> (label, text or None) for a child that speaks for several
        processes (mpirun); text None drops the line.
        restart: () -> Child, starting it again (see ``max_restarts``).
        restart_if: exit status -> whether that failure is one to start it again after
        (default: any).
        """
        if self.stopping or self.signal is not None:
            return None
        try:
            popen = subprocess.Popen(
                argv, env=env, start_new_session=True,
                stdin=subprocess.PIPE if payload is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise LaunchError('cannot start %s: %s: %s' % (label, argv[0], e.strerror)) from None
        child = Child(label, popen, where, notes, relabel, restart, restart_if)
        self._children.append(child)
        for fd, stream in ((1, popen.stdout), (2, popen.stderr)):
            os.set_blocking(stream.fileno(), False)
            child.partial[fd] = b''
            self._selector.register(stream, selectors.EVENT_READ, (child, fd))
        if payload is not None:
            try:
                popen.stdin.write(payload)
                popen.stdin.flush()
            except BrokenPipeError:
                pass
        return child

    def interrupt(self, signum, frame=None):
        """Signal handler: stop the job; a second signal kills at once."""
        if self.signal is not None and self.stopping:
            self._stop_started -= KILL_AFTER
        self.signal = signum

    def fail(self, label, status, where=None, note=''):
        """Record a failure (the first one counts) and stop the job."""
        if self.failure is None and not self.stopping:
            self.failure = Failure(label, status, where, note)
        self.stop()

    def wait(self):
        """Run until every child has ended; return the job's exit status: the first
        failure's, else 128 + the signal that stopped it, else 0."""
        while any(child.status is None for child in self._children):
            if self.signal is not None:
                self.stop()
            self._pump(POLL_SECONDS)
            self._reap()
            self._escalate()
        if self.failure is not None:
            return self.failure.status
        return 128 + self.signal if self.signal is not None else 0

    def report(self):
        """Print, once, why the job stopped: the first failure and its last lines (and
        which children were started again)."""
        if self.restarts and not self._restarts_reported:
            self._restarts_reported = True
            self.say('%s: %d restart%s in this job (of --max-restarts %d): %s' % (
                PROGRAM, len(self.restarts), '' if len(self.restarts) == 1 else 's',
                self.max_restarts, ', '.join('%s after exit status %d' % r
                                             for r in self.restarts)))
        if self._reported or not self.stopping:
            return
        self._reported = True
        if self.failure is not None:
            f = self.failure
            lines = ['%s: %s%s failed first, with exit status %d%s'
                     % (PROGRAM, f.label, ' on %s' % f.where if f.where else '', f.status,
                        ' (%s)' % f.note if f.note else '')]
            recent = self._recent.get(f.label)
            lines.append('%s: its last lines of output:' % PROGRAM if recent else
                         '%s: it printed nothing' % PROGRAM)
            lines += ['    %s' % line.decode(errors='replace') for line in recent or ()]
        else:
            lines = ['%s: stopped by %s' % (PROGRAM, signal.Signals(self.signal).name)]
        if self._ended:
            lines.append('%s: ended the %d %sprocess%s still running' % (
                PROGRAM, self._ended, 'other ' if self.failure is not None else '',
                '' if self._ended == 1 else 'es'))
        self.say('\n'.join(lines))

    def say(self, text):
        """A message of the launcher's own, on its stderr."""
        self._write(2, text.encode() + b'\n')

    def stop(self):
        """Ask every running child to end (see the module docstring)."""
        if self.stopping:
            return
        self._stop_started = time.monotonic()
        running = [child for child in self._children if child.status is None]
        self._ended = len(running)
        for child in running:
            child.ask_to_stop()

    def _escalate(self):
        if not self.stopping:
            return
        waited = time.monotonic() - self._stop_started
        for after, signum in ((KILL_AFTER, signal.SIGKILL), (TERM_AFTER, signal.SIGTERM)):
            if waited >= after:
                for child in self._children:
                    if child.status is None:
                        child.signal_group(signum)
                return

    def _pump(self, timeout):
        if not self._selector.get_map():
            time.sleep(timeout)
            return
        for key, _ in self._selector.select(timeout):
            self._read(key.fileobj, *key.data)

    def _read(self, stream, child, fd, final=False):
        """Read what ``stream`` has now; at its end (or when ``final``), close it."""
        while True:
            try:
                data = os.read(stream.fileno(), 65536)
            except BlockingIOError:
                if not final:
                    return
                break
            if not data:
                break
            *lines, child.partial[fd] = (child.partial[fd] + data).split(b'\n')
            for line in lines:
                self._emit(child, fd, line)
        if child.partial[fd]:
            self._emit(child, fd, child.partial[fd])
            child.partial[fd] = b''
        self._selector.unregister(stream)
        stream.close()

    def _reap(self):
        for child in self._children:
            if child.status is None and child.popen.poll() is not None:
                for key in list(self._selector.get_map().values()):
                    if key.data[0] is child:  # what it wrote before it ended
                        self._read(key.fileobj, *key.data, final=True)
                if child.popen.stdin is not None:
                    child.ask_to_stop()  # closes our end of its stdin
                child.status = exit_status(child.popen.returncode)
                if child.status and not self._restart(child):
                    self.fail(child.label, child.status, child.where,
                              child.notes.get(child.status, ''))

    def _restart(self, child):
        """Start a failed child again if it can be and the job has restarts left."""
        if child.restart is None or len(self.restarts) >= self.max_restarts or \
                self.stopping or self.signal is not None or \
                (child.restart_if is not None and not child.restart_if(child.status)):
            return False
        self.restarts.append((child.label, child.status))
        killed = _signal_name(child.status)
        self.say('%s: %s%s ended with exit status %d%s; starting it again (restart %d of %d)'
                 % (PROGRAM, child.label, ' on %s' % child.where if child.where else '',
                    child.status, ' (killed by %s)' % killed if killed else '',
                    len(self.restarts), self.max_restarts))
        return child.restart() is not None

    def _emit(self, child, fd, line):
        label = child.label
        if child.relabel is not None:
            label, line = child.relabel(line)
            if line is None:
                return
        self._recent.setdefault(label, collections.deque(maxlen=RECENT_LINES)).append(line)
        self._write(fd, b'[%s] %s\n' % (label.encode(), line))

    def _write(self, fd, data):
        out = self._out.get(fd)
        if out is None:
            return
        try:
            out.write(data)
            out.flush()
        except (BrokenPipeError, ValueError):
            self._out[fd] = None  # nobody reads it any more; the job goes on
