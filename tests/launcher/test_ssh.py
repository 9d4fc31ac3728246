"""--launcher ssh against a real OpenSSH server that the tests start on 127.0.0.1,
with generated host and client keys (see helpers.Sshd)."""
import os
import re
import shutil
import signal
import socket
import sys
import time

from .helpers import (DIES_ONCE, SHOW_IDENTITY, LiveLauncher, Sshd, command_lines, identities,
                      leftovers, make_key, py, run_launcher, worker_lines)


def _ssh(keys, hostfile, *more, connect_timeout=5, identity=None):
    return ['-H', hostfile, *keys.client_options(connect_timeout, identity), *more]


def test_the_job_runs_over_ssh_with_the_secret_only_on_stdin(ssh_keys, sshd, marker, tmp_path):
    go = tmp_path / 'go'
    code = SHOW_IDENTITY + '''
import sys, time
print('secret', os.environ['MINIGLUON_PS_SECRET'], flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
'''
    launcher = LiveLauncher(_ssh(ssh_keys, sshd.hostfile(tmp_path), '-n', '2', '-s', '2',
                                 *py(code, marker), str(go)), cwd=str(tmp_path))
    lines = launcher.wait_for(lambda line: ' secret ' in line, count=5)
    secrets = {line.split()[-1] for line in lines if ' secret ' in line}
    assert len(secrets) == 1 and re.fullmatch('[0-9a-f]{64}', next(iter(secrets)))
    assert secrets.pop() not in command_lines()  # ssh, sshd, bootstraps, commands
    go.write_text('')
    assert launcher.finish() == 0, launcher.stderr
    found = identities('\n'.join(lines))
    assert sorted(found) == ['scheduler', 'server 0', 'server 1', 'worker 0', 'worker 1']
    for label, env in found.items():
        assert env['DMLC_ROLE'] == label.split()[0]
        assert env['DMLC_NODE_HOST'] == env['DMLC_PS_ROOT_URI'] == '127.0.0.1'
        assert env['cwd'] == str(tmp_path)
    assert found['worker 1']['DMLC_WORKER_ID'] == '1'
    assert found['server 0']['DMLC_SERVER_ID'] == '0'
    assert '(ssh launcher)' in launcher.stderr
    assert leftovers(marker) == []


def test_a_failing_remote_worker_ends_the_job(ssh_keys, sshd, marker, tmp_path):
    code = '''
    import os, sys, time
    if os.environ['DMLC_ROLE'] == 'worker':
        time.sleep(0.5)
        print('remote failure', file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(60)
    '''
    started = time.monotonic()
    result = run_launcher(_ssh(ssh_keys, sshd.hostfile(tmp_path), '-n', '1',
                               *py(code, marker)))
    assert result.returncode == 3
    assert time.monotonic() - started < 10
    assert '[worker 0] remote failure' in result.stderr
    assert ('worker 0 on 127.0.0.1:%d failed first, with exit status 3' % sshd.port
            in result.stderr)
    assert leftovers(marker) == []


def test_max_restarts_starts_a_killed_remote_worker_again(ssh_keys, sshd, marker, tmp_path):
    result = run_launcher(_ssh(ssh_keys, sshd.hostfile(tmp_path), '-n', '2', '-s', '1',
                               '--max-restarts', '1', *py(DIES_ONCE, marker), str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert worker_lines(result.stdout) == ['[worker 0] worker 0 first',
                                           '[worker 1] worker 1 again',
                                           '[worker 1] worker 1 first']
    assert ('worker 1 on 127.0.0.1:%d ended with exit status 137 (killed by SIGKILL); starting '
            'it again (restart 1 of 1)' % sshd.port) in result.stderr
    assert leftovers(marker) == []


def test_sigint_ends_the_remote_processes(ssh_keys, sshd, marker, tmp_path):
    code = "import time; print('ready', flush=True); time.sleep(60)"
    launcher = LiveLauncher(_ssh(ssh_keys, sshd.hostfile(tmp_path), '-n', '2', '-s', '1',
                                 *py(code, marker)))
    launcher.wait_for(lambda line: line.endswith('] ready'), count=4)
    started = time.monotonic()
    launcher.proc.send_signal(signal.SIGINT)
    assert launcher.finish() == 128 + signal.SIGINT
    assert time.monotonic() - started < 10
    assert leftovers(marker) == []


def test_sync_dst_dir_copies_the_directory_and_starts_there(ssh_keys, sshd, marker, tmp_path):
    source, destination = tmp_path / 'source', tmp_path / 'copies' / 'job'
    (source / 'data').mkdir(parents=True)
    (source / 'data' / 'numbers.txt').write_text('1 2 3\n')
    (source / 'job.py').write_text(
        'import os, sys\n'
        'print(os.environ["DMLC_ROLE"], os.getcwd(), open("data/numbers.txt").read().strip())\n')
    result = run_launcher(_ssh(ssh_keys, sshd.hostfile(tmp_path), '-n', '1',
                               '--sync-dst-dir', str(destination),
                               sys.executable, 'job.py', marker), cwd=str(source))
    assert result.returncode == 0, result.stderr
    assert (destination / 'data' / 'numbers.txt').read_text() == '1 2 3\n'
    assert sorted(result.stdout.splitlines()) == [
        '[scheduler] scheduler %s 1 2 3' % source,  # the scheduler runs here, in place
        '[server 0] server %s 1 2 3' % destination,
        '[worker 0] worker %s 1 2 3' % destination]


def test_rsync_missing_on_either_side_is_named(ssh_keys, sshd, marker, tmp_path):
    tools = tmp_path / 'bin'
    tools.mkdir()
    os.symlink('/bin/mkdir', str(tools / 'mkdir'))
    no_rsync = Sshd(ssh_keys, settings={'SetEnv': 'PATH=%s' % tools})
    try:
        result = run_launcher(_ssh(ssh_keys, no_rsync.hostfile(tmp_path), '-n', '1',
                                   '--sync-dst-dir', str(tmp_path / 'dst'), 'true', marker))
    finally:
        no_rsync.stop()
    assert result.returncode == 127
    assert 'rsync is not installed on 127.0.0.1; --sync-dst-dir needs it there' in result.stderr
    os.symlink(shutil.which('ssh'), str(tools / 'ssh'))
    result = run_launcher(_ssh(ssh_keys, str(tmp_path / 'hosts'), '-n', '1',
                               '--sync-dst-dir', str(tmp_path / 'dst'), 'true', marker),
                          env=dict(os.environ, PATH=str(tools)))
    assert result.returncode == 1
    assert 'rsync is not installed on this host (it is needed by --sync-dst-dir)' in result.stderr


def test_a_host_that_wants_a_password_fails_at_once(ssh_keys, sshd, marker, tmp_path):
    stranger = tmp_path / 'stranger_key'
    make_key(stranger)  # not in the server's authorized_keys
    password_host = Sshd(ssh_keys, settings={'PasswordAuthentication': 'yes',
                                             'KbdInteractiveAuthentication': 'yes'})
    try:
        started = time.monotonic()
        result = run_launcher(_ssh(ssh_keys, password_host.hostfile(tmp_path), '-n', '1',
                                   'true', marker, identity=str(stranger)))
    finally:
        password_host.stop()
    assert result.returncode == 255
    assert time.monotonic() - started < 10
    assert 'Permission denied' in result.stderr
    assert ("on 127.0.0.1:%d failed first, with exit status 255 (ssh's status when it cannot "
            "connect to or log in to 127.0.0.1:%d)" % (password_host.port, password_host.port)
            in result.stderr)


def test_an_unreachable_host_is_named_within_the_connect_timeout(ssh_keys, sshd, marker,
                                                                tmp_path):
    with socket.socket() as silent:  # accepts connections, never says a word
        silent.bind(('127.0.0.1', 0))
        silent.listen(8)
        silent_host = '127.0.0.1:%d' % silent.getsockname()[1]
        started = time.monotonic()
        result = run_launcher(_ssh(ssh_keys, sshd.hostfile(tmp_path, silent_host), '-n', '2',
                                   *py('import time; time.sleep(30)', marker),
                                   connect_timeout=1))
    assert result.returncode == 255
    assert time.monotonic() - started < 1 + 5
    assert re.search(r'(server|worker) 1 on %s failed first, with exit status 255'
                     % silent_host, result.stderr)
    assert 'timed out' in result.stderr
    assert leftovers(marker) == []
