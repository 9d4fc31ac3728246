"""The bootstrap's thread share: OMP_NUM_THREADS from the workers beside a task, kept
when given, and under mpi counted from the ranks placed on the same host."""
from minigluon.launcher import bootstrap


def test_share_cores_divides_the_hosts_cores_among_its_workers(monkeypatch):
    monkeypatch.setattr(bootstrap, 'host_cores', lambda: 8)
    for role, local, expected in (('worker', '3', '2'), ('worker', '16', '1'),
                                  ('worker', '1', '8'), ('server', '3', '1'),
                                  ('scheduler', '3', '1')):
        env = {'DMLC_ROLE': role, bootstrap.LOCAL_WORKERS_VARIABLE: local}
        bootstrap.share_cores(env)
        assert env == {'DMLC_ROLE': role, 'OMP_NUM_THREADS': expected}
    env = {'DMLC_ROLE': 'worker', 'OMP_NUM_THREADS': '6', bootstrap.LOCAL_WORKERS_VARIABLE: '4'}
    bootstrap.share_cores(env)
    assert env == {'DMLC_ROLE': 'worker', 'OMP_NUM_THREADS': '6'}
    env = {'DMLC_ROLE': 'worker'}  # not started by the launcher: left alone
    bootstrap.share_cores(env)
    assert env == {'DMLC_ROLE': 'worker'}


def test_an_mpi_rank_counts_the_workers_on_its_host(monkeypatch):
    spec = {'role': 'worker', 'first_rank': 2,
            'tasks': [[0, 'node-a'], [1, 'node-a'], [2, 'node-b']]}
    monkeypatch.setenv('OMPI_COMM_WORLD_RANK', '3')
    label, env = bootstrap.mpi_task(spec)
    assert label == 'worker 1'
    assert env[bootstrap.LOCAL_WORKERS_VARIABLE] == '2'
    monkeypatch.setenv('OMPI_COMM_WORLD_RANK', '4')
    assert bootstrap.mpi_task(spec)[1][bootstrap.LOCAL_WORKERS_VARIABLE] == '1'
