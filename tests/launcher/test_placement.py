"""Hostfiles, placement over hosts (MXNet's cycling), and each process's environment."""
import pytest

from minigluon.launcher import LaunchError
from minigluon.launcher.job import MANAGED, Job
from minigluon.launcher.placement import Host, Task, place, read_hostfile

HOSTS = [Host('h%d' % i) for i in range(1, 6)]


def _where(tasks, role):
    return [t.host.name if t.host else None for t in tasks if t.role == role]


def test_the_guides_example_five_hosts_three_workers():
    tasks = place(num_workers=3, num_servers=3, hosts=HOSTS)
    assert tasks[0] == Task('scheduler')  # on the launching host
    assert _where(tasks, 'server') == ['h1', 'h2', 'h3']
    assert _where(tasks, 'worker') == ['h4', 'h5', 'h1']
    assert [t.label for t in tasks] == ['scheduler', 'server 0', 'server 1', 'server 2',
                                        'worker 0', 'worker 1', 'worker 2']


@pytest.mark.parametrize('n', [1, 2, 4])
def test_exactly_n_hosts_get_one_server_and_one_worker_each(n):
    tasks = place(n, n, HOSTS[:n])
    for host in HOSTS[:n]:
        assert [t.role for t in tasks if t.host == host] == ['server', 'worker']


def test_more_processes_than_hosts_cycle():
    tasks = place(num_workers=3, num_servers=1, hosts=HOSTS[:2])
    assert _where(tasks, 'server') == ['h1']
    assert _where(tasks, 'worker') == ['h2', 'h1', 'h2']


def test_without_hosts_everything_is_local():
    tasks = place(2, 1)
    assert [t.label for t in tasks] == ['scheduler', 'server 0', 'worker 0', 'worker 1']
    assert all(t.host is None for t in tasks)


def test_hostfile_with_comments_blank_lines_ports_and_ipv6(tmp_path):
    path = tmp_path / 'hosts'
    path.write_text('# the cluster\n\nnode-1\n  10.0.0.2:2222  # a comment\n'
                    '[fe80::1]:22\n::1\nnode_3.example.org\n')
    assert read_hostfile(str(path)) == [
        Host('node-1'), Host('10.0.0.2', 2222), Host('fe80::1', 22), Host('::1'),
        Host('node_3.example.org')]
    assert str(Host('10.0.0.2', 2222)) == '10.0.0.2:2222'
    assert str(Host('fe80::1', 22)) == '[fe80::1]:22'


@pytest.mark.parametrize('line, complaint', [
    ('node1 slots=4', "'node1 slots=4' is not a host"),
    ('node1:ssh', "bad port 'ssh'"),
    ('node1:70000', "bad port '70000'"),
    ('node1:', "bad port ''"),
    ('[node1]:22', "'node1' is not an IPv6 address"),
    ('-oProxyCommand=x', 'is not a host'),
    ('ubuntu@node1', '--ssh-option User=NAME'),
])
def test_malformed_hostfile_lines_are_named_by_file_and_line(tmp_path, line, complaint):
    path = tmp_path / 'hosts'
    path.write_text('good\n# fine\n%s\n' % line)
    with pytest.raises(LaunchError) as error:
        read_hostfile(str(path))
    assert str(error.value).startswith('%s:3: ' % path)
    assert complaint in str(error.value)


def test_empty_or_missing_hostfile(tmp_path):
    path = tmp_path / 'hosts'
    path.write_text('# nobody\n\n')
    with pytest.raises(LaunchError, match='lists no hosts'):
        read_hostfile(str(path))
    with pytest.raises(LaunchError, match='cannot read hostfile .*nothere'):
        read_hostfile(str(tmp_path / 'nothere'))


def _job(hosts=None):
    return Job(command=['prog'], tasks=place(2, 2, hosts), root_uri='10.0.0.1',
               root_port=9000, secret='s3cret', env={'OMP_NUM_THREADS': '2'},
               env_server={'ROLE_VAR': 'server'}, env_worker={'ROLE_VAR': 'worker'})


def test_each_process_gets_its_identity_and_only_its_roles_variables():
    job = _job([Host('a'), Host('b', 2222)])
    envs = {t.label: job.environment(t) for t in job.tasks}
    for env in envs.values():
        assert set(MANAGED) <= set(env)  # set or explicitly removed
        assert env['DMLC_PS_ROOT_URI'] == '10.0.0.1' and env['DMLC_PS_ROOT_PORT'] == '9000'
        assert env['DMLC_NUM_SERVER'] == '2' and env['DMLC_NUM_WORKER'] == '2'
        assert env['MINIGLUON_PS_SECRET'] == 's3cret' and env['OMP_NUM_THREADS'] == '2'
    assert envs['scheduler']['DMLC_ROLE'] == 'scheduler'
    assert envs['scheduler']['DMLC_NODE_HOST'] == '10.0.0.1'
    assert 'ROLE_VAR' not in envs['scheduler']
    assert envs['scheduler']['DMLC_WORKER_ID'] is None  # removed if inherited
    assert [envs['server %d' % i]['DMLC_SERVER_ID'] for i in range(2)] == ['0', '1']
    assert [envs['worker %d' % i]['DMLC_WORKER_ID'] for i in range(2)] == ['0', '1']
    assert envs['server 1']['DMLC_WORKER_ID'] is None
    assert envs['server 0']['ROLE_VAR'] == 'server' and envs['worker 1']['ROLE_VAR'] == 'worker'
    assert [envs[label]['DMLC_NODE_HOST'] for label in ('server 0', 'server 1', 'worker 0',
                                                          'worker 1')] == ['a', 'b', 'a', 'b']


def test_local_processes_live_at_127_0_0_1():
    job = _job()
    assert {job.environment(t)['DMLC_NODE_HOST'] for t in job.tasks[1:]} == {'127.0.0.1'}
