"""The distributed store's configuration, read from the environment as MXNet does.

Every variable is parsed once, here; a missing or malformed one raises a single
error naming the variable, the value seen and what is expected. Besides MXNet's
``DMLC_*``/``PS_*`` variables: ``MINIGLUON_PS_SECRET`` (or ``_SECRET_FILE``), the
job's secret; ``MINIGLUON_PS_JOB_ID``, the job's id, which every session is bound
to (the launcher sets a random one; default: the scheduler's address and port);
``MINIGLUON_PS_ENCRYPT``, ``plain`` (default) or ``curve`` (gate.py).

The default job id is the same for a manual launch started again with the same secret
and scheduler address, so it is not what keeps two such jobs apart: sessions between
servers and workers are bound as well to a nonce every scheduler draws at start and
hands out in the address book (van.bind_to_job). Only connections to the scheduler
cannot be: a node reaches it knowing nothing but the environment. A hello recorded
there in an earlier job earns a challenge that only the secret answers (set
MINIGLUON_PS_JOB_ID to a fresh value per job to close even that).
"""
import os
import stat
from dataclasses import dataclass

from ...base import MXNetError

ROLES = ('scheduler', 'server', 'worker')
SECRET_ENV = 'MINIGLUON_PS_SECRET'
SECRET_FILE_ENV = 'MINIGLUON_PS_SECRET_FILE'
# Above 0, a dead worker does not stop the job: the scheduler waits this many seconds
# for a replacement with its rank (the launcher's --max-restarts sets it).
RECOVERY_TIMEOUT_ENV = 'PS_WORKER_RECOVERY_TIMEOUT'
# How arrays travel between two processes of one host (shm.py): 'auto' uses shared
# memory when the peer is on this host and in this network namespace, 'shm' whenever
# the peer can map it, 'tcp' never.
TRANSPORT_ENV = 'MINIGLUON_PS_TRANSPORT'
TRANSPORTS = ('auto', 'shm', 'tcp')
# Binds every session to one job, so that two jobs sharing a secret cannot replay into
# each other: the launcher sets a random one; manual launches may (default: the
# scheduler's address, which no two running jobs share; a job started again there is
# kept apart by its scheduler's nonce, see above).
JOB_ID_ENV = 'MINIGLUON_PS_JOB_ID'
# 'curve': every connection encrypted and authenticated by CurveZMQ (gate.py)
ENCRYPT_ENV = 'MINIGLUON_PS_ENCRYPT'
# 1: every server's keys are also held by the next server (its backup), so a dead server's
# keys live on there and the job goes on (ps/replica.py); needs two servers or more. On
# by default when there are two or more: measured to cost nothing at 1 Gbit/s
# (benchmarks/bench_dist_train.py; 25% at 250 Mbit/s, where PS_REPLICATION=0 helps)
REPLICATION_ENV = 'PS_REPLICATION'


# Arrays of at least this many elements are sliced over every server. MXNet's default
# is 1000000; at that bound ResNet-18's whole arrays fall to the servers by hash and one
# of two servers holds 59% of the bytes, so the workers' pulls from it take longer and
# the workers drift out of step. At 100000 the split is within 3% for ResNet-18/50 and
# VGG. (Optimizers that take a norm per array, LAMB and LBSGD, then see each slice's
# norm on the servers for arrays of 100000 to 1000000 elements, as MXNet's do above its
# bound.)
BIGARRAY_BOUND = 100000


class ConfigError(MXNetError):
    """A DMLC_*/PS_* variable is missing or malformed."""


def _get(env, name, default=None, required=False):
    value = env.get(name)
    if value is None or value == '':
        if required:
            raise ConfigError('environment variable %s is not set; it is required for a '
                              'distributed kvstore (see README: launching by hand)' % name)
        return default
    return value


def _int(env, name, default=None, required=False, minimum=None):
    value = _get(env, name, default, required)
    if value is None or isinstance(value, int):
        return value
    try:
        number = int(value)
    except ValueError:
        raise ConfigError('environment variable %s=%r is not an integer' % (name, value)) from None
    if minimum is not None and number < minimum:
        raise ConfigError('environment variable %s=%r must be at least %d' % (name, value, minimum))
    return number


def _float(env, name, default):
    value = _get(env, name, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError('environment variable %s=%r is not a number' % (name, value)) from None
    if number <= 0:
        raise ConfigError('environment variable %s=%r must be positive' % (name, value))
    return number


def _seconds(env, name, default):
    """A duration that may be 0 (switched off)."""
    value = _get(env, name, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError('environment variable %s=%r is not a number of seconds'
                          % (name, value)) from None
    if not number >= 0:
        raise ConfigError('environment variable %s=%r must be 0 or more' % (name, value))
    return number


def _flag(env, name, default='0'):
    value = _get(env, name, default)
    if value not in ('0', '1'):
        raise ConfigError('environment variable %s=%r must be 0 or 1' % (name, value))
    return value == '1'


def read_secret(env):
    """The job secret: $MINIGLUON_PS_SECRET, or the content of a 0600 file named by
    $MINIGLUON_PS_SECRET_FILE."""
    secret = env.get(SECRET_ENV)
    path = env.get(SECRET_FILE_ENV)
    if not secret and path:
        try:
            mode = os.stat(path).st_mode
            with open(path, 'rb') as f:
                secret = f.read().strip().decode('utf-8', 'replace')
        except OSError as exc:
            raise ConfigError('%s=%r cannot be read: %s' % (SECRET_FILE_ENV, path, exc)) from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError('%s=%r is readable by others (mode %o); make it private with '
                              'chmod 600' % (SECRET_FILE_ENV, path, stat.S_IMODE(mode)))
    if not secret:
        raise ConfigError(
            'no job secret: set %s (the launcher does this for you) or %s to a file with mode '
            '0600, identical for every process of the job' % (SECRET_ENV, SECRET_FILE_ENV))
    if len(secret) < 16:
        raise ConfigError('the job secret in %s is too short (%d characters); use at least 16, '
                          'e.g. python -c "import secrets; print(secrets.token_hex(32))"'
                          % (SECRET_ENV, len(secret)))
    return secret.encode('utf-8')


@dataclass
class Config:
    """Settings of one process of a distributed job."""
    role: str
    root_uri: str
    root_port: int
    num_server: int
    num_worker: int
    secret: bytes
    interface: str = None
    node_host: str = None
    worker_id: int = None
    server_id: int = None
    verbose: int = 0
    resend: bool = False
    resend_timeout: float = 1.0          # seconds
    heartbeat_interval: float = 1.0      # seconds
    heartbeat_timeout: float = 10.0      # seconds
    drop_msg: int = 0                    # percent of received messages dropped (testing)
    bigarray_bound: int = BIGARRAY_BOUND  # elements
    chunk_bytes: int = 4 << 20           # largest data part in one message
    connect_timeout: float = 60.0        # seconds to wait for the whole cluster
    wait_timeout: float = 600.0          # seconds any other blocking wait may take
    recovery_timeout: float = 0.0        # seconds to wait for a dead worker's replacement
    transport: str = 'auto'              # MINIGLUON_PS_TRANSPORT
    shm_bytes: int = 128 << 20           # each shared-memory ring (sparse: used pages only)
    # key parts one server holds at most: what each costs besides its values (about 1 KB
    # of bookkeeping) stays bounded whatever a client creates; real models need hundreds
    max_keys: int = 100000               # MINIGLUON_PS_MAX_KEYS
    job_id: str = ''                     # MINIGLUON_PS_JOB_ID, or the scheduler's address
    encrypt: str = 'plain'               # 'plain' or 'curve'
    replication: bool = False            # PS_REPLICATION: keys on a primary and a backup
    # an in-process network (transport/inproc.py) whose nodes are threads of one process
    # (tests); None: ZeroMQ between processes
    hub: object = None

    @classmethod
    def from_env(cls, env=None, role=None):
        """The configuration of this process from the ``DMLC_*``/``PS_*`` variables of ``env``.

        Parameters
        ----------
        env : mapping, optional
            ``os.environ`` by default.
        role : str, optional
            'scheduler', 'server' or 'worker'; ``DMLC_ROLE`` by default.

        Raises
        ------
        MXNetError
            Naming each missing or malformed variable.
        """
        env = os.environ if env is None else env
        role = role or _get(env, 'DMLC_ROLE', required=True)
        if role not in ROLES:
            raise ConfigError('environment variable DMLC_ROLE=%r must be one of %s'
                              % (role, ', '.join(ROLES)))
        cfg = cls(
            role=role,
            root_uri=_get(env, 'DMLC_PS_ROOT_URI', required=True),
            root_port=_int(env, 'DMLC_PS_ROOT_PORT', required=True, minimum=1),
            num_server=_int(env, 'DMLC_NUM_SERVER', required=True, minimum=1),
            num_worker=_int(env, 'DMLC_NUM_WORKER', required=True, minimum=1),
            secret=read_secret(env),
            interface=_get(env, 'DMLC_INTERFACE'),
            node_host=_get(env, 'DMLC_NODE_HOST'),
            worker_id=_int(env, 'DMLC_WORKER_ID', minimum=0),
            server_id=_int(env, 'DMLC_SERVER_ID', minimum=0),
            verbose=_int(env, 'PS_VERBOSE', 0, minimum=0),
            resend=_flag(env, 'PS_RESEND'),
            resend_timeout=_int(env, 'PS_RESEND_TIMEOUT', 1000, minimum=1) / 1000.0,
            heartbeat_interval=_float(env, 'PS_HEARTBEAT_INTERVAL', 1.0),
            heartbeat_timeout=_float(env, 'PS_HEARTBEAT_TIMEOUT', 10.0),
            drop_msg=_int(env, 'PS_DROP_MSG', 0, minimum=0),
            bigarray_bound=_int(env, 'MXNET_KVSTORE_BIGARRAY_BOUND', BIGARRAY_BOUND, minimum=1),
            chunk_bytes=_int(env, 'MINIGLUON_PS_CHUNK_BYTES', 4 << 20, minimum=1024),
            connect_timeout=_float(env, 'MINIGLUON_PS_CONNECT_TIMEOUT', 60.0),
            wait_timeout=_float(env, 'MINIGLUON_PS_WAIT_TIMEOUT', 600.0),
            recovery_timeout=_seconds(env, RECOVERY_TIMEOUT_ENV, 0.0),
            transport=_get(env, TRANSPORT_ENV, 'auto'),
            shm_bytes=_int(env, 'MINIGLUON_PS_SHM_BYTES', 128 << 20, minimum=1 << 20),
            max_keys=_int(env, 'MINIGLUON_PS_MAX_KEYS', 100000, minimum=1),
            job_id=_get(env, JOB_ID_ENV, ''),
            encrypt=_get(env, ENCRYPT_ENV, 'plain'),
            replication=_flag(env, REPLICATION_ENV, '1' if _int(
                env, 'DMLC_NUM_SERVER', required=True, minimum=1) >= 2 else '0'),
        )
        if cfg.transport not in TRANSPORTS:
            raise ConfigError('environment variable %s=%r must be one of %s'
                              % (TRANSPORT_ENV, cfg.transport, ', '.join(TRANSPORTS)))
        if not cfg.job_id:
            cfg.job_id = '%s:%d' % (cfg.root_uri, cfg.root_port)
        if len(cfg.job_id) > 256:
            raise ConfigError('environment variable %s is %d characters long; at most 256'
                              % (JOB_ID_ENV, len(cfg.job_id)))
        if cfg.encrypt not in ('plain', 'curve'):
            raise ConfigError("environment variable %s=%r must be 'plain' or 'curve'"
                              % (ENCRYPT_ENV, cfg.encrypt))
        if cfg.root_port > 65535:
            raise ConfigError('environment variable DMLC_PS_ROOT_PORT=%r is not a valid port'
                              % env.get('DMLC_PS_ROOT_PORT'))
        if cfg.drop_msg > 100:
            raise ConfigError('environment variable PS_DROP_MSG=%r is a percentage (0-100)'
                              % env.get('PS_DROP_MSG'))
        if cfg.worker_id is not None and cfg.worker_id >= cfg.num_worker:
            raise ConfigError('DMLC_WORKER_ID=%d is out of range for DMLC_NUM_WORKER=%d'
                              % (cfg.worker_id, cfg.num_worker))
        if cfg.server_id is not None and cfg.server_id >= cfg.num_server:
            raise ConfigError('DMLC_SERVER_ID=%d is out of range for DMLC_NUM_SERVER=%d'
                              % (cfg.server_id, cfg.num_server))
        if cfg.replication and cfg.num_server < 2:
            raise ConfigError('%s=1 keeps each server\'s keys on a second server as well, so it '
                              'needs DMLC_NUM_SERVER of 2 or more (it is %d)'
                              % (REPLICATION_ENV, cfg.num_server))
        if cfg.heartbeat_timeout <= cfg.heartbeat_interval:
            raise ConfigError('PS_HEARTBEAT_TIMEOUT (%g s) must exceed PS_HEARTBEAT_INTERVAL '
                              '(%g s)' % (cfg.heartbeat_timeout, cfg.heartbeat_interval))
        return cfg
