"""Config.from_env: every missing or malformed variable is one clear error naming it."""
import os
import stat

import pytest

from minigluon.kvstore.ps.config import Config, ConfigError

SECRET = 'x' * 32


def env(**changes):
    base = {'DMLC_ROLE': 'worker', 'DMLC_PS_ROOT_URI': '127.0.0.1', 'DMLC_PS_ROOT_PORT': '9091',
            'DMLC_NUM_SERVER': '2', 'DMLC_NUM_WORKER': '3', 'MINIGLUON_PS_SECRET': SECRET}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def error_of(environ):
    with pytest.raises(ConfigError) as info:
        Config.from_env(environ)
    return str(info.value)


def test_a_complete_environment_parses_with_the_defaults():
    cfg = Config.from_env(env(DMLC_WORKER_ID='2', PS_RESEND='1', PS_RESEND_TIMEOUT='250',
                              PS_HEARTBEAT_INTERVAL='0.5', PS_HEARTBEAT_TIMEOUT='3'))
    assert (cfg.role, cfg.root_uri, cfg.root_port) == ('worker', '127.0.0.1', 9091)
    assert (cfg.num_server, cfg.num_worker, cfg.worker_id) == (2, 3, 2)
    assert cfg.secret == SECRET.encode()
    assert cfg.resend and cfg.resend_timeout == 0.25
    assert (cfg.heartbeat_interval, cfg.heartbeat_timeout) == (0.5, 3.0)
    assert cfg.bigarray_bound == 100000 and cfg.drop_msg == 0 and cfg.verbose == 0


@pytest.mark.parametrize('name', ['DMLC_ROLE', 'DMLC_PS_ROOT_URI', 'DMLC_PS_ROOT_PORT',
                                  'DMLC_NUM_SERVER', 'DMLC_NUM_WORKER'])
@pytest.mark.parametrize('absent', [None, ''])
def test_a_missing_variable_is_named(name, absent):
    message = error_of(env(**{name: absent}))
    assert name in message and 'not set' in message


@pytest.mark.parametrize('name, value', [
    ('DMLC_ROLE', 'boss'),
    ('DMLC_PS_ROOT_PORT', 'http'),
    ('DMLC_PS_ROOT_PORT', '0'),
    ('DMLC_PS_ROOT_PORT', '70000'),
    ('DMLC_NUM_SERVER', '0'),
    ('DMLC_NUM_WORKER', 'abc'),
    ('DMLC_NUM_WORKER', '2.5'),
    ('DMLC_WORKER_ID', '-1'),
    ('DMLC_WORKER_ID', '3'),          # out of range for DMLC_NUM_WORKER=3
    ('DMLC_SERVER_ID', '5'),
    ('PS_VERBOSE', 'loud'),
    ('PS_RESEND', 'yes'),
    ('PS_RESEND_TIMEOUT', '1.5'),
    ('PS_HEARTBEAT_INTERVAL', 'often'),
    ('PS_HEARTBEAT_TIMEOUT', '-4'),
    ('PS_DROP_MSG', '101'),
    ('MXNET_KVSTORE_BIGARRAY_BOUND', '1e6'),
    ('MINIGLUON_PS_CHUNK_BYTES', '10'),
    ('MINIGLUON_PS_CONNECT_TIMEOUT', 'never'),
    ('PS_WORKER_RECOVERY_TIMEOUT', 'soon'),
    ('PS_WORKER_RECOVERY_TIMEOUT', '-1'),
    ('MINIGLUON_PS_TRANSPORT', 'udp'),
    ('MINIGLUON_PS_SHM_BYTES', '4096'),
])
def test_a_malformed_variable_is_named_with_its_value(name, value):
    message = error_of(env(**{name: value}))
    assert name in message, message
    assert value in message, message


def test_worker_recovery_is_off_unless_a_timeout_is_given():
    assert Config.from_env(env()).recovery_timeout == 0
    assert Config.from_env(env(PS_WORKER_RECOVERY_TIMEOUT='0')).recovery_timeout == 0
    assert Config.from_env(env(PS_WORKER_RECOVERY_TIMEOUT='45')).recovery_timeout == 45


def test_heartbeat_timeout_must_exceed_the_interval():
    message = error_of(env(PS_HEARTBEAT_INTERVAL='5', PS_HEARTBEAT_TIMEOUT='2'))
    assert 'PS_HEARTBEAT_TIMEOUT' in message and 'PS_HEARTBEAT_INTERVAL' in message


def test_the_secret_is_required_and_long_enough():
    assert 'MINIGLUON_PS_SECRET' in error_of(env(MINIGLUON_PS_SECRET=None))
    assert 'too short' in error_of(env(MINIGLUON_PS_SECRET='short'))


def test_the_secret_file_must_be_private(tmp_path):
    path = tmp_path / 'secret'
    path.write_text(SECRET + '\n')
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    cfg = Config.from_env(env(MINIGLUON_PS_SECRET=None, MINIGLUON_PS_SECRET_FILE=str(path)))
    assert cfg.secret == SECRET.encode()
    os.chmod(path, 0o644)
    message = error_of(env(MINIGLUON_PS_SECRET=None, MINIGLUON_PS_SECRET_FILE=str(path)))
    assert 'MINIGLUON_PS_SECRET_FILE' in message and 'chmod 600' in message
    message = error_of(env(MINIGLUON_PS_SECRET=None,
                           MINIGLUON_PS_SECRET_FILE=str(tmp_path / 'absent')))
    assert 'MINIGLUON_PS_SECRET_FILE' in message and 'absent' in message


def test_replication_is_on_by_default_with_two_servers_or_more_and_can_be_turned_off():
    env = {'DMLC_ROLE': 'worker', 'DMLC_PS_ROOT_URI': '127.0.0.1', 'DMLC_PS_ROOT_PORT': '9000',
           'DMLC_NUM_WORKER': '1', 'MINIGLUON_PS_SECRET': 'x' * 32}
    assert not Config.from_env(dict(env, DMLC_NUM_SERVER='1')).replication
    assert Config.from_env(dict(env, DMLC_NUM_SERVER='2')).replication
    assert not Config.from_env(dict(env, DMLC_NUM_SERVER='3', PS_REPLICATION='0')).replication
