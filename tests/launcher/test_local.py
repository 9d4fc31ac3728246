"""--launcher local with real processes: identities, output, exit statuses, shutdown."""
import json
import os
import re
import signal
import subprocess
import time

from minigluon import nd, optimizer

from .helpers import (DIES_ONCE, SHOW_IDENTITY, LiveLauncher, command_lines, identities,
                      leftovers, new_marker, py, run_launcher, worker_lines)

LABEL = re.compile(r'\[(scheduler|server \d+|worker \d+)\] ')
# Prints "ready", then waits; ignores SIGTERM and has a child in its session, so
# ending it takes the bootstrap's SIGKILL, which must reach the whole session.
STUBBORN = '''
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]])
print('ready', flush=True)
time.sleep(60)
'''


def test_two_workers_two_servers(marker, tmp_path):
    result = run_launcher(['-n', '2', '-s', '2', '--launcher', 'local',
                           *py(SHOW_IDENTITY, marker)], cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    found = identities(result.stdout)
    assert sorted(found) == ['scheduler', 'server 0', 'server 1', 'worker 0', 'worker 1']
    port = found['scheduler']['DMLC_PS_ROOT_PORT']
    for label, env in found.items():
        role = label.split()[0]
        assert env['DMLC_ROLE'] == role
        assert env['DMLC_WORKER_ID'] == (label.split()[1] if role == 'worker' else '-')
        assert env['DMLC_SERVER_ID'] == (label.split()[1] if role == 'server' else '-')
        assert (env['DMLC_NUM_WORKER'], env['DMLC_NUM_SERVER']) == ('2', '2')
        assert env['DMLC_PS_ROOT_URI'] == env['DMLC_NODE_HOST'] == '127.0.0.1'
        assert env['DMLC_PS_ROOT_PORT'] == port
        assert env['cwd'] == str(tmp_path)
    assert all(LABEL.match(line) for line in result.stdout.splitlines())
    assert 'scheduler at 127.0.0.1:%s; 2 servers and 2 workers' % port in result.stderr
    assert leftovers(marker) == []


def test_variables_reach_their_roles_and_stale_ones_are_removed(marker):
    code = '''
    import os
    print(os.environ['DMLC_ROLE'], os.environ.get('ALL'), os.environ.get('ROLE_ONLY'),
          os.environ.get('DMLC_WORKER_ID'), os.environ.get('PS_VERBOSE'))
    '''
    env = dict(os.environ, DMLC_WORKER_ID='7', DMLC_ROLE='server', PS_VERBOSE='1')
    result = run_launcher(['-n', '1', '--env', 'ALL=a', '--env-server', 'ROLE_ONLY=s',
                           '--env-worker', 'ROLE_ONLY=w', *py(code, marker)], env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        '[scheduler] scheduler a None None 1', '[server 0] server a s None 1',
        '[worker 0] worker a w 0 1']


SHOW_THREADS = '''
import os
print(os.environ['DMLC_ROLE'], os.environ.get('OMP_NUM_THREADS'),
      os.environ.get('MINIGLUON_LAUNCH_LOCAL_WORKERS'))
'''


def _threads_by_role(result):
    assert result.returncode == 0, result.stderr
    rows = [line.split('] ', 1)[1].split() for line in result.stdout.splitlines()]
    return {row[0]: row[1:] for row in rows}


def test_workers_share_the_cores_unless_told_their_thread_count(marker):
    """As torchrun: with OMP_NUM_THREADS unset each worker's BLAS gets its share of the
    host's cores and servers and the scheduler one thread; a count the user gives (in
    the launcher's environment or with --env) is kept; the helper variable is gone."""
    env = {k: v for k, v in os.environ.items() if k != 'OMP_NUM_THREADS'}
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    got = _threads_by_role(run_launcher(['-n', '2', '-s', '1', *py(SHOW_THREADS, marker)],
                                        env=env))
    assert got == {'scheduler': ['1', 'None'], 'server': ['1', 'None'],
                   'worker': [share, 'None']}
    got = _threads_by_role(run_launcher(['-n', '2', '-s', '1', *py(SHOW_THREADS, marker)],
                                        env=dict(env, OMP_NUM_THREADS='3')))
    assert {role: values[0] for role, values in got.items()} == dict.fromkeys(
        ('scheduler', 'server', 'worker'), '3')
    got = _threads_by_role(run_launcher(['-n', '1', '--env-worker', 'OMP_NUM_THREADS=5',
                                         *py(SHOW_THREADS, marker)], env=env))
    assert got['worker'][0] == '5' and got['server'][0] == '1'


def test_a_failing_worker_sets_the_status_and_ends_the_rest(marker):
    code = '''
    import os, sys, time
    if os.environ.get('DMLC_WORKER_ID') == '1':
        time.sleep(0.5)
        print('about to fail', flush=True)
        sys.exit(3)
    time.sleep(60)
    '''
    started = time.monotonic()
    result = run_launcher(['-n', '2', '-s', '2', *py(code, marker)])
    assert result.returncode == 3
    assert time.monotonic() - started < 10
    assert '[worker 1] about to fail' in result.stdout
    assert 'worker 1 on this host failed first, with exit status 3' in result.stderr
    assert 'its last lines of output:\n    about to fail' in result.stderr
    assert 'ended the 4 other processes still running' in result.stderr
    assert leftovers(marker) == []


def test_statuses_a_signal_and_a_missing_command(marker):
    killed = run_launcher(['-n', '1', *py('import os; os.kill(os.getpid(), 9)', marker)])
    assert killed.returncode == 128 + 9
    missing = run_launcher(['-n', '1', 'no-such-program-' + marker])
    assert missing.returncode == 127
    assert 'command not found: no-such-program-' in missing.stderr


def test_sigint_ends_every_process_and_its_children(marker):
    launcher = LiveLauncher(['-n', '2', '-s', '1', *py(STUBBORN, marker)])
    launcher.wait_for(lambda line: line.endswith('] ready'), count=4)
    expected = 1 + 4 * 2  # the launcher, 4 commands and their children
    deadline = time.monotonic() + 5  # (pgrep once missed a process that had printed 'ready')
    while len(leftovers(marker)) < expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(leftovers(marker)) == expected
    started = time.monotonic()
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.finish(timeout=15) == 128 + signal.SIGINT
    assert time.monotonic() - started < 10
    assert 'stopped by SIGINT' in launcher.stderr
    assert leftovers(marker) == []


def test_a_killed_launcher_leaves_nothing_behind(marker):
    code = "import time; print('ready', flush=True); time.sleep(60)"
    launcher = LiveLauncher(['-n', '1', *py(code, marker)])
    launcher.wait_for(lambda line: line.endswith('] ready'), count=3)
    launcher.proc.kill()  # no chance to clean up: the bootstraps see their stdin close
    launcher.finish()
    assert leftovers(marker, wait=8) == []


def test_lines_are_whole_and_prefixed_even_when_written_in_pieces(marker):
    code = '''
    import os, sys, time
    me = os.environ['DMLC_ROLE'] + os.environ.get('DMLC_WORKER_ID',
                                                  os.environ.get('DMLC_SERVER_ID', ''))
    for i in range(40):
        for piece in ('<%s' % me, ' line %d ' % i, 'x' * 3000, '%s>\\n' % me):
            os.write(1, piece.encode())
            time.sleep(0.0005)
    os.write(1, b'no newline at the end')
    '''
    result = run_launcher(['-n', '3', '-s', '1', *py(code, marker)])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 5 * 41
    for line in lines:
        match = re.fullmatch(r'\[(\w+)(?: (\d))?\] (?:<(\w+) line \d+ x{3000}(\w+)>|'
                             r'no newline at the end)', line)
        assert match, line[:80]
        if match.group(3):
            assert match.group(3) == match.group(4) == match.group(1) + (match.group(2) or '')


def test_the_secret_is_in_the_environment_but_on_no_command_line(marker, tmp_path):
    go = tmp_path / 'go'
    code = '''
    import os, sys, time
    print('secret', os.environ['MINIGLUON_PS_SECRET'], flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
    '''
    for given in ('', 'chosen-by-the-user-' + new_marker()):
        env = dict(os.environ, MINIGLUON_PS_SECRET=given)
        launcher = LiveLauncher(['-n', '2', *py(code, marker), str(go)], env=env)
        lines = launcher.wait_for(lambda line: ' secret ' in line, count=5)
        secrets = {line.split()[-1] for line in lines if ' secret ' in line}
        assert len(secrets) == 1
        secret = secrets.pop()
        assert secret == given if given else re.fullmatch('[0-9a-f]{64}', secret)
        assert secret not in command_lines()
        go.write_text('')
        assert launcher.finish() == 0
        go.unlink()


def test_ps_shows_each_process_by_its_label_not_the_bootstrap_source(marker, tmp_path):
    go = tmp_path / 'go'
    code = '''
    import os, sys, time
    print('up', flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
    '''
    launcher = LiveLauncher(['-n', '2', '-s', '1', *py(code, marker), str(go)])
    launcher.wait_for(lambda line: line.endswith(' up'), count=3)
    table = subprocess.run(['ps', '-eww', '-o', 'pid=,ppid=,args='], capture_output=True,
                           text=True).stdout
    rows = [line.split(None, 2) for line in table.splitlines()]
    parent = {int(pid): int(ppid) for pid, ppid, *_ in rows}
    args = {int(row[0]): row[2] if len(row) > 2 else '' for row in rows}

    def descends(pid):
        while pid in parent and pid != launcher.proc.pid:
            pid = parent[pid]
        return pid == launcher.proc.pid

    mine = [args[pid] for pid in args if pid != launcher.proc.pid and descends(pid)]
    shown = sorted(line.split('minigluon-launch ', 1)[1] for line in mine
                   if ' minigluon-launch ' in line)
    go.write_text('')
    assert launcher.finish() == 0
    assert shown == ['scheduler', 'server 0', 'worker 0', 'worker 1']
    assert max(len(line) for line in mine) < 300, mine


def test_max_restarts_starts_a_killed_worker_again_with_its_rank(marker, tmp_path):
    result = run_launcher(['-n', '2', '-s', '1', '--max-restarts', '1',
                           *py(DIES_ONCE, marker), str(tmp_path)])
    assert result.returncode == 0, result.stderr
    assert worker_lines(result.stdout) == ['[worker 0] worker 0 first',
                                           '[worker 1] worker 1 again',
                                           '[worker 1] worker 1 first']
    assert ('worker 1 on this host ended with exit status 137 (killed by SIGKILL); starting it '
            'again (restart 1 of 1)') in result.stderr
    assert '1 restart in this job (of --max-restarts 1): worker 1 after exit status 137' in \
        result.stderr
    assert leftovers(marker) == []


def test_when_the_restarts_are_spent_the_next_failure_stops_the_job(marker, tmp_path):
    started = time.monotonic()
    result = run_launcher(['-n', '2', '-s', '1', '--max-restarts', '1',
                           *py(DIES_ONCE, marker), str(tmp_path), 'always'])
    assert result.returncode == 137, result.stderr
    assert time.monotonic() - started < 10
    assert 'restart 1 of 1' in result.stderr
    assert 'worker 1 on this host failed first, with exit status 137' in result.stderr
    assert leftovers(marker) == []


# Every process prints its role and pid first (a scheduler or server then serves on
# `import minigluon`); each worker pushes and pulls a step at a time, with a barrier.
TRAINS = '''
import json, os, time
print('PID', os.environ['DMLC_ROLE'], os.getpid(), flush=True)
import minigluon
from minigluon import kv, nd
store = kv.create('dist_sync')
store.init('w', nd.zeros((3,)))
for step in range(30):
    store.push('w', nd.ones((3,)) * (store.rank + 1) * (step + 1))
    w = nd.zeros((3,))
    store.pull('w', out=w)
    print('STEP', step, flush=True)
    store.barrier()
    time.sleep(0.05)
print('RESULT', json.dumps(w.asnumpy().tolist()), flush=True)
store.close()
'''


def test_max_restarts_starts_a_killed_scheduler_again_and_the_job_finishes(marker):
    launcher = LiveLauncher(['-n', '2', '-s', '1', '--max-restarts', '1',
                             '--env', 'PS_HEARTBEAT_INTERVAL=0.2',
                             '--env', 'PS_HEARTBEAT_TIMEOUT=2', *py(TRAINS, marker)])
    seen = launcher.wait_for(lambda line: line.startswith('[scheduler] PID '))
    scheduler = int(next(line for line in seen
                         if line.startswith('[scheduler] PID ')).split()[-1])
    launcher.wait_for(lambda line: line.startswith('[worker 1] STEP 5'))
    os.kill(scheduler, signal.SIGKILL)
    lines = launcher.wait_for(lambda line: ' RESULT ' in line, count=2, timeout=60)
    assert launcher.finish(30) == 0, launcher.stderr
    # the last round's sum, (1 + 2) * 30, on both workers
    assert sorted(line for line in lines if ' RESULT ' in line) == \
        ['[worker 0] RESULT [90.0, 90.0, 90.0]', '[worker 1] RESULT [90.0, 90.0, 90.0]']
    assert ('scheduler on this host ended with exit status 137 (killed by SIGKILL); starting '
            'it again (restart 1 of 1)') in launcher.stderr
    assert leftovers(marker) == []


# As TRAINS, with the optimizer on the servers (its momentum lives only there).
TRAINS_SGD = TRAINS.replace(
    "store.init('w', nd.zeros((3,)))",
    "store.init('w', nd.zeros((3,)))\n"
    "store.set_optimizer(minigluon.optimizer.SGD(learning_rate=0.1, momentum=0.9))")


def test_with_replication_a_killed_server_is_survived_with_the_weights_of_an_undisturbed_run(
        marker):
    launcher = LiveLauncher(['-n', '2', '-s', '2', '--max-restarts', '1', '--replication',
                             '--env', 'PS_HEARTBEAT_INTERVAL=0.2',
                             '--env', 'PS_HEARTBEAT_TIMEOUT=2', *py(TRAINS_SGD, marker)])
    seen = launcher.wait_for(lambda line: line.startswith('[server 0] PID '))
    server = int(next(line for line in seen if line.startswith('[server 0] PID ')).split()[-1])
    launcher.wait_for(lambda line: line.startswith('[worker 1] STEP 5'))
    os.kill(server, signal.SIGKILL)
    lines = launcher.wait_for(lambda line: ' RESULT ' in line, count=2, timeout=60)
    assert launcher.finish(30) == 0, launcher.stderr
    # what the servers' SGD makes of the 30 rounds' sums, (1 + 2) * (step + 1)
    updater, weight = optimizer.Updater(optimizer.SGD(learning_rate=0.1, momentum=0.9)), \
        nd.zeros((3,))
    for step in range(30):
        updater(0, nd.ones((3,)) * 3 * (step + 1), weight)
    expected = json.dumps(weight.asnumpy().tolist())
    assert sorted(line for line in lines if ' RESULT ' in line) == \
        ['[worker 0] RESULT ' + expected, '[worker 1] RESULT ' + expected]
    assert 'starting it again (restart 1 of 1)' in launcher.stderr
    assert 'takes over its keys' in launcher.stderr
    assert leftovers(marker) == []
