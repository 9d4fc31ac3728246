"""Options of tools/launch.py / minigluon-launch: parsing, defaults, clear errors."""
import configparser
import os
import subprocess
import sys

import pytest

from minigluon.launcher import LaunchError, cli
from minigluon.launcher.address import interface_address

from .helpers import LAUNCH, ROOT, run_launcher


def _args(*argv):
    parser = cli.build_parser()
    args = parser.parse_args(list(argv))
    cli.check_options(args, parser)
    return args


def _usage_error(capsys, *argv):
    with pytest.raises(SystemExit) as exit:
        _args(*argv)
    assert exit.value.code == 2
    return capsys.readouterr().err


def test_defaults():
    args = _args('-n', '3', 'python', 'train.py')
    assert (args.num_workers, args.num_servers, args.launcher) == (3, 3, 'local')
    assert args.command == ['python', 'train.py']
    assert args.mpirun == 'mpirun'


def test_a_hostfile_makes_ssh_the_default(tmp_path):
    (tmp_path / 'hosts').write_text('a\n')
    args = _args('-n', '1', '-H', str(tmp_path / 'hosts'), 'prog')
    assert args.launcher == 'ssh'


def test_options_after_the_command_belong_to_the_command():
    args = _args('-n', '2', '-s', '1', 'python', 'train.py', '-n', '5', '--lr', '0.1', '--env')
    assert args.num_workers == 2 and args.num_servers == 1
    assert args.command == ['python', 'train.py', '-n', '5', '--lr', '0.1', '--env']
    assert _args('-n', '1', '--', '-weird-program').command == ['-weird-program']


@pytest.mark.parametrize('argv, complaint', [
    (['-n', '2', '--kv-store', 'dist', 'python', 'x.py'], 'unrecognized arguments: --kv-store'),
    (['-n', '2', '--num', '2', 'python'], 'unrecognized arguments: --num'),   # no abbreviations
    (['python', 'x.py'], 'required: -n/--num-workers'),
    (['-n', '2'], 'no command given'),
    (['-n', '0', 'prog'], "'0' is not a whole number >= 1"),
    (['-n', '1', '-s', 'x', 'prog'], "'x' is not a whole number >= 1"),
    (['-n', '1', '-p', '70000', 'prog'], "'70000' is not a port"),
    (['-n', '1', '--launcher', 'yarn', 'prog'], "invalid choice: 'yarn'"),
    (['-n', '1', '--launcher', 'ssh', 'prog'], '--launcher ssh needs a hostfile'),
    (['-n', '1', '--sync-dst-dir', '/tmp/x', 'prog'], '--sync-dst-dir does not apply to '
                                                       '--launcher local'),
    (['-n', '1', '--ssh-option', 'User=x', 'prog'], '--ssh-option does not apply'),
    (['-n', '1', '--mpirun', 'mpiexec', 'prog'], '--mpirun does not apply'),
    (['-n', '1', '-H', 'hosts', '--launcher', 'slurm', 'prog'], '--hostfile does not apply to '
                                                              '--launcher slurm'),
    (['-n', '1', '--host-ip', '1.2.3.4', '--interface', 'lo', 'prog'], 'not allowed with'),
    (['-n', '1', '--max-restarts', '-1', 'prog'], "'-1' is not a whole number >= 0"),
    (['-n', '1', '--launcher', 'mpi', '--max-restarts', '1', 'prog'],
     '--max-restarts does not apply to --launcher mpi: one mpirun runs every server and '
     'worker, and MPI cannot start one rank again'),
])
def test_bad_options_are_usage_errors_naming_the_problem(capsys, argv, complaint):
    assert complaint in _usage_error(capsys, *argv)


def test_unknown_option_is_an_error_and_runs_nothing(marker):
    result = run_launcher(['-n', '1', '--bogus', sys.executable, '-c', 'print(1)', marker])
    assert result.returncode == 2
    assert 'unrecognized arguments: --bogus' in result.stderr and result.stdout == ''


def test_env_options(monkeypatch):
    environ = {'FROM_HERE': 'here', 'OTHER': 'x'}
    assert cli.parse_variables(['A=1', 'B=x=y', 'C:3', 'FROM_HERE', 'D='], '--env', environ) == {
        'A': '1', 'B': 'x=y', 'C': '3', 'FROM_HERE': 'here', 'D': ''}
    with pytest.raises(LaunchError, match="--env NOT_SET: NOT_SET is not set here"):
        cli.parse_variables(['NOT_SET'], '--env', environ)
    with pytest.raises(LaunchError, match="'1BAD' is not a variable name"):
        cli.parse_variables(['1BAD=2'], '--env-server', environ)
    with pytest.raises(LaunchError, match='the launcher sets DMLC_WORKER_ID'):
        cli.parse_variables(['DMLC_WORKER_ID=3'], '--env-worker', environ)
    with pytest.raises(LaunchError, match='the launcher sets MINIGLUON_PS_SECRET'):
        cli.parse_variables(['MINIGLUON_PS_SECRET=x'], '--env', environ)


def test_plan_scheduler_address_port_and_passed_on_variables():
    environ = {'PS_VERBOSE': '1', 'UNRELATED': 'x', 'MINIGLUON_PS_SECRET': 'given',
               'MXNET_KVSTORE_BIGARRAY_BOUND': '9', 'MINIGLUON_PS_CONNECT_TIMEOUT': '5',
               'DMLC_INTERFACE': 'eth1', 'DMLC_ROLE': 'server', 'OMP_NUM_THREADS': '2'}
    job = cli.plan(_args('-n', '2', '--host-ip', '10.1.2.3', '-p', '9091', '--env', 'A=1', 'p'),
                   environ)
    assert (job.root_uri, job.root_port, job.secret) == ('10.1.2.3', 9091, 'given')
    assert job.env == {'PS_VERBOSE': '1', 'MXNET_KVSTORE_BIGARRAY_BOUND': '9', 'A': '1',
                       'MINIGLUON_PS_CONNECT_TIMEOUT': '5', 'DMLC_INTERFACE': 'eth1',
                       'OMP_NUM_THREADS': '2'}
    job = cli.plan(_args('-n', '1', '--interface', 'lo', 'p'), {})
    assert job.root_uri == '127.0.0.1' == interface_address('lo')
    assert 0 < job.root_port < 65536
    assert len(job.secret) == 64 and int(job.secret, 16) >= 0
    assert cli.plan(_args('-n', '1', 'p'), {}).secret != job.secret  # fresh per job


def test_max_restarts_tells_every_process_to_wait_for_a_restarted_worker():
    assert 'PS_WORKER_RECOVERY_TIMEOUT' not in cli.plan(_args('-n', '2', 'p'), {}).env
    job = cli.plan(_args('-n', '2', '--max-restarts', '3', 'p'), {})
    assert job.env['PS_WORKER_RECOVERY_TIMEOUT'] == '60'
    job = cli.plan(_args('-n', '2', '--max-restarts', '1', 'p'),
                   {'PS_WORKER_RECOVERY_TIMEOUT': '300'})
    assert job.env['PS_WORKER_RECOVERY_TIMEOUT'] == '300'
    with pytest.raises(LaunchError, match="--max-restarts 1 needs PS_WORKER_RECOVERY_TIMEOUT "
                                          "to be a number of seconds above 0 .*, not '0'"):
        cli.plan(_args('-n', '2', '--max-restarts', '1', '--env',
                       'PS_WORKER_RECOVERY_TIMEOUT=0', 'p'), {})


def test_plan_errors_name_the_problem(tmp_path):
    with pytest.raises(LaunchError, match='--interface nosuch0: no IPv4 address found'):
        cli.plan(_args('-n', '1', '--interface', 'nosuch0', 'p'), {})
    (tmp_path / 'hosts').write_text('no-such-host.invalid\n')
    with pytest.raises(LaunchError, match='cannot resolve host no-such-host.invalid'):
        cli.plan(_args('-n', '1', '-H', str(tmp_path / 'hosts'), 'p'), {})


def test_help_documents_usage():
    result = subprocess.run([sys.executable, LAUNCH, '--help'], capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 0
    for text in ('-n N, --num-workers N', '--sync-dst-dir', '--env KEY[=VALUE]', 'DMLC_WORKER_ID',
                 'MINIGLUON_PS_SECRET', 'servers go to hosts 1, 2, 3', '--ssh-option',
                 '--max-restarts N', 'PS_WORKER_RECOVERY_TIMEOUT'):
        assert text in result.stdout


def test_console_script_is_declared_and_works_when_installed():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'setup.cfg'))
    scripts = config['options.entry_points']['console_scripts']
    assert 'minigluon-launch = minigluon.launcher.cli:main' in scripts
    script = os.path.join(os.path.dirname(sys.executable), 'minigluon-launch')
    if not os.path.exists(script):
        pytest.skip('minigluon-launch is not installed next to %s (pip install -e .)'
                    % sys.executable)
    result = subprocess.run([script, '--help'], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and 'minigluon-launch' in result.stdout


@pytest.mark.parametrize('line', ['127.0.0.1:1x', 'two words'])
def test_a_malformed_hostfile_line_is_named_by_the_launcher(tmp_path, line):
    (tmp_path / 'hosts').write_text('localhost\n%s\n' % line)
    result = run_launcher(['-n', '1', '-H', str(tmp_path / 'hosts'), 'true'])
    assert result.returncode == 2
    assert '%s:2: ' % (tmp_path / 'hosts') in result.stderr
