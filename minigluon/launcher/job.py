"""A job ready to start: its command, tasks, scheduler address and secret, and the
environment each of its processes gets.

Every process gets ``DMLC_ROLE``, ``DMLC_PS_ROOT_URI``, ``DMLC_PS_ROOT_PORT``,
``DMLC_NUM_SERVER``, ``DMLC_NUM_WORKER``, ``DMLC_NODE_HOST``, the job secret in
``MINIGLUON_PS_SECRET``, a fresh random job id in ``MINIGLUON_PS_JOB_ID`` (so that
jobs sharing a secret cannot replay into each other), and servers and workers their index in ``DMLC_SERVER_ID``
or ``DMLC_WORKER_ID``. Those names belong to the launcher: a value inherited from
the launcher's own environment is removed, and ``--env`` cannot set them. Where no
one set ``OMP_NUM_THREADS``, the bootstrap sets it from how many workers share the
host (``MINIGLUON_LAUNCH_LOCAL_WORKERS``; see ``bootstrap.share_cores``).
"""
import secrets
from dataclasses import dataclass, field
from typing import Dict, List

from . import LaunchError
from .bootstrap import INDEX_VARIABLES, LOCAL_WORKERS_VARIABLE
from .placement import Task

SECRET_VARIABLE = 'MINIGLUON_PS_SECRET'
JOB_ID_VARIABLE = 'MINIGLUON_PS_JOB_ID'
MANAGED = ('DMLC_ROLE', 'DMLC_PS_ROOT_URI', 'DMLC_PS_ROOT_PORT', 'DMLC_NUM_SERVER',
           'DMLC_NUM_WORKER', 'DMLC_NODE_HOST', *INDEX_VARIABLES.values(), SECRET_VARIABLE,
           JOB_ID_VARIABLE, LOCAL_WORKERS_VARIABLE)
# Passed from the launcher's environment to every process, remote ones too, as
# MXNet's tracker does, so that `PS_VERBOSE=1 minigluon-launch ...` works on every host.
PASSED_ON = ('DMLC_INTERFACE', 'OMP_NUM_THREADS')
PASSED_ON_PREFIXES = ('PS_', 'MXNET_', 'MINIGLUON_PS_')
LOCAL_ADDRESS = '127.0.0.1'


def job_secret(environ):
    """The launcher's MINIGLUON_PS_SECRET if it has one, else a fresh random token."""
    return environ.get(SECRET_VARIABLE) or secrets.token_hex(32)


def passed_on(environ):
    """The variables of ``environ`` that every process of the job gets."""
    return {name: value for name, value in environ.items()
            if (name in PASSED_ON or name.startswith(PASSED_ON_PREFIXES))
            and name not in MANAGED}


def check_user_variables(env, option):
    """Refuse ``--env`` settings of the names the launcher sets for each process."""
    for name in env:
        if name in MANAGED:
            raise LaunchError('%s %s: the launcher sets %s for each process'
                              % (option, name, name))


@dataclass
class Job:
    """What to run, where, and with which scheduler and secret."""
    command: List[str]
    tasks: List[Task]
    root_uri: str
    root_port: int
    secret: str
    env: Dict[str, str] = field(default_factory=dict)         # every process
    env_server: Dict[str, str] = field(default_factory=dict)  # servers only
    env_worker: Dict[str, str] = field(default_factory=dict)  # workers only
    job_id: str = field(default_factory=lambda: secrets.token_hex(16))

    def count(self, role):
        """The number of tasks of ``role`` ('scheduler', 'server' or 'worker')."""
        return sum(task.role == role for task in self.tasks)

    def common_environment(self):
        """The variables every process gets, whatever its role."""
        env = dict(self.env)
        env.update({'DMLC_PS_ROOT_URI': self.root_uri,
                    'DMLC_PS_ROOT_PORT': str(self.root_port),
                    'DMLC_NUM_SERVER': str(self.count('server')),
                    'DMLC_NUM_WORKER': str(self.count('worker')),
                    SECRET_VARIABLE: self.secret, JOB_ID_VARIABLE: self.job_id})
        return env

    def role_environment(self, role):
        """The ``--env-server`` or ``--env-worker`` variables of ``role``."""
        return dict({'server': self.env_server, 'worker': self.env_worker}.get(role, {}))

    def node_host(self, task):
        """DMLC_NODE_HOST: the task's host as the hostfile names it (a Slurm node: its
        NodeAddr); here, the scheduler's address for the scheduler and 127.0.0.1 for
        the others."""
        if task.host is not None:
            return task.host.reached_at
        return self.root_uri if task.role == 'scheduler' else LOCAL_ADDRESS

    def environment(self, task):
        """All variables to set for ``task``; a value None means: remove it."""
        env = dict.fromkeys(MANAGED)
        env.update(self.common_environment())
        env.update(self.role_environment(task.role))
        env['DMLC_ROLE'] = task.role
        env['DMLC_NODE_HOST'] = self.node_host(task)
        if task.role in INDEX_VARIABLES:
            env[INDEX_VARIABLES[task.role]] = str(task.index)
        env[LOCAL_WORKERS_VARIABLE] = str(self.workers_beside(task))
        return env

    def workers_beside(self, task):
        """How many of the job's workers run on ``task``'s host (it included)."""
        return sum(t.role == 'worker' and t.host == task.host for t in self.tasks)
