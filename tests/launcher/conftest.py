"""Fixtures: a unique marker per test (whose processes must all be gone when it ends),
generated ssh keys, a real sshd on 127.0.0.1, network namespaces as hosts, and a
Slurm cluster whose nodes are network namespaces."""
import os

import pytest

from .helpers import (Sshd, SshKeys, kill_leftovers, netns_missing_reason, netns_ssh_hosts,
                      network_namespaces, new_marker, ssh_missing_reason)
from .slurm_cluster import SlurmCluster, slurm_missing_reason


@pytest.fixture
def marker():
    """A string to put on every command line the test starts; stragglers die after it."""
    value = new_marker()
    yield value
    kill_leftovers(value)  # a safety net only: tests assert there is nothing to kill


@pytest.fixture(scope='module')
def ssh_keys(tmp_path_factory):
    reason = ssh_missing_reason()
    if reason:
        pytest.skip(reason)
    return SshKeys(str(tmp_path_factory.mktemp('ssh')))


@pytest.fixture(scope='module')
def sshd(ssh_keys):
    """An OpenSSH server on 127.0.0.1 (a free port) accepting ``ssh_keys``' client key."""
    try:
        server = Sshd(ssh_keys)
    except AssertionError as e:
        if os.geteuid() == 0:
            raise
        pytest.skip('sshd would not start for a user other than root: %s' % e)
    yield server
    server.stop()


@pytest.fixture(scope='module')
def netns_hosts(ssh_keys):
    """Three network namespaces as hosts, each with its address and sshd:
    (bridge name, bridge address, [NetnsHost]); see helpers.netns_ssh_hosts."""
    reason = netns_missing_reason()
    if reason:
        pytest.skip(reason)
    with netns_ssh_hosts(ssh_keys, 3) as hosts:
        yield hosts


@pytest.fixture(scope='module')
def slurm_cluster():
    """A Slurm cluster of three nodes, n0, n1, n2, each a network namespace with its own
    address and slurmd; slurmctld and munged run here. See slurm_cluster.SlurmCluster."""
    reason = slurm_missing_reason() or netns_missing_reason()
    if reason:
        pytest.skip(reason)
    with network_namespaces(3, tag='mgs') as (_, bridge_address, hosts):
        try:
            cluster = SlurmCluster(bridge_address, hosts)
        except RuntimeError as e:
            pytest.skip('Slurm would not start here: %s' % e)
        try:
            yield cluster
        finally:
            cluster.stop()
