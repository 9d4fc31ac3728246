"""Several hosts: network namespaces with their own addresses and sshds, joined by veth
pairs to a bridge here (the ``netns_hosts`` fixture, helpers.netns_ssh_hosts), and
jobs across them with --launcher ssh. Needs root and `ip netns`; skips saying why.

To run another job across the hosts, call ``launch_across(netns_hosts, ssh_keys,
folder, command)``; ``test_dist_sync_sums_across_hosts`` is the model.
"""
import os
import time

import pytest

from minigluon.launcher import cli

from .helpers import DIST_SYNC_SUMS, ROOT, check_dist_sync_sums, leftovers, py, run_launcher

# Every process checks that DMLC_NODE_HOST is an address of the host it runs on (it
# can bind to it); the scheduler listens on DMLC_PS_ROOT_URI:PORT and each worker
# connects there and says who it is, so the scheduler sees its real source address.
RENDEZVOUS = '''
import os, socket, time
role, here = os.environ['DMLC_ROLE'], os.environ['DMLC_NODE_HOST']
root = (os.environ['DMLC_PS_ROOT_URI'], int(os.environ['DMLC_PS_ROOT_PORT']))
socket.socket().bind((here, 0))
if role == 'scheduler':
    listener = socket.create_server(root)
    for _ in range(int(os.environ['DMLC_NUM_WORKER'])):
        conn, peer = listener.accept()
        print('heard', conn.recv(64).decode(), 'from', peer[0], flush=True)
        conn.close()
elif role == 'worker':
    deadline = time.monotonic() + 20
    while True:
        try:
            conn = socket.create_connection(root, timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    conn.sendall(('worker%s' % os.environ['DMLC_WORKER_ID']).encode())
    conn.close()
print('ran at', here, flush=True)
'''

def launch_across(netns_hosts, ssh_keys, folder, command, *options, timeout=60):
    """Run ``command`` with --launcher ssh over the namespaces' hosts (one server and
    one worker each), the scheduler here on the bridge address; started in ROOT so
    that ``import minigluon`` works everywhere. The CompletedProcess."""
    _, bridge_address, hosts = netns_hosts
    hostfile = os.path.join(str(folder), 'hosts')
    with open(hostfile, 'w') as f:
        f.write(''.join('%s\n' % host.address for host in hosts))  # ssh's port 22
    return run_launcher(['-n', str(len(hosts)), '-H', hostfile, '--host-ip', bridge_address,
                         *ssh_keys.client_options(), *options, *command],
                        cwd=ROOT, timeout=timeout)


def test_every_role_runs_on_its_host_and_reaches_the_scheduler(netns_hosts, ssh_keys,
                                                               marker, tmp_path):
    _, bridge_address, hosts = netns_hosts
    result = launch_across(netns_hosts, ssh_keys, tmp_path, py(RENDEZVOUS, marker))
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert lines == sorted(
        ['[scheduler] ran at %s' % bridge_address]
        + ['[scheduler] heard worker%d from %s' % (i, host.address)
           for i, host in enumerate(hosts)]
        + ['[%s %d] ran at %s' % (role, i, host.address)
           for role in ('server', 'worker') for i, host in enumerate(hosts)])
    assert 'scheduler at %s:' % bridge_address in result.stderr
    assert leftovers(marker) == []


def test_the_scheduler_address_is_the_one_facing_the_hosts(netns_hosts, tmp_path):
    bridge, bridge_address, hosts = netns_hosts
    hostfile = tmp_path / 'hosts'
    hostfile.write_text(''.join('%s\n' % host.address for host in hosts))
    for options in ([], ['--interface', bridge], ['--host-ip', bridge_address]):
        parser = cli.build_parser()
        args = parser.parse_args(['-n', '3', '-H', str(hostfile), *options, 'true'])
        cli.check_options(args, parser)
        assert cli.plan(args, {}).root_uri == bridge_address


def test_dist_sync_sums_across_hosts(netns_hosts, ssh_keys, marker, tmp_path):
    pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
    result = launch_across(netns_hosts, ssh_keys, tmp_path, py(DIST_SYNC_SUMS, marker),
                           '--env', 'MXNET_KVSTORE_BIGARRAY_BOUND=1000')
    assert result.returncode == 0, result.stdout + result.stderr
    check_dist_sync_sums(result.stdout, len(netns_hosts[2]))
    assert leftovers(marker) == []


def test_an_unreachable_address_is_named_within_the_connect_timeout(netns_hosts, ssh_keys,
                                                                   marker, tmp_path):
    _, bridge_address, hosts = netns_hosts
    dead = bridge_address.rsplit('.', 1)[0] + '.99'  # on the test subnet, nobody there
    (tmp_path / 'hosts').write_text('%s\n%s\n' % (hosts[0].address, dead))
    started = time.monotonic()
    result = run_launcher(['-n', '1', '-H', str(tmp_path / 'hosts'),
                           *ssh_keys.client_options(connect_timeout=1),
                           *py('import time; time.sleep(30)', marker)])
    assert result.returncode == 255
    assert time.monotonic() - started < 1 + 5
    assert 'worker 0 on %s failed first, with exit status 255' % dead in result.stderr
    assert leftovers(marker) == []
