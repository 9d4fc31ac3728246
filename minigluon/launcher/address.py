"""The scheduler's address as the other hosts reach it, and a free port for it."""
import random
import socket

from ..network import address_towards as _address_towards
from ..network import interface_address
from . import LaunchError
from .job import LOCAL_ADDRESS


def address_towards(host):
    """The local address this host uses to reach ``host`` (sends no packet)."""
    try:
        return _address_towards(host.reached_at, host.port or 22)
    except socket.gaierror as e:
        raise LaunchError('cannot resolve host %s (%s), so the scheduler address is '
                          'unknown; give it with --host-ip or --interface'
                          % (host.reached_at, e.strerror)) from None
    except OSError as e:
        raise LaunchError('no route to host %s: %s; give the scheduler address with '
                          '--host-ip or --interface' % (host.reached_at, e.strerror)) from None


def scheduler_address(host_ip=None, interface=None, first_host=None):
    """DMLC_PS_ROOT_URI: ``host_ip``, else the address of ``interface``, else the
    address towards the first remote host, else 127.0.0.1."""
    if host_ip:
        return host_ip
    if interface:
        try:
            return interface_address(interface)
        except OSError as e:
            raise LaunchError('--interface %s: %s' % (interface, e)) from None
    if first_host is not None:
        return address_towards(first_host)
    return LOCAL_ADDRESS


# Where the OS takes the local ports of outgoing connections when none is read from
# /proc (Linux's default; below IANA's 49152-65535 that other systems use).
_EPHEMERAL_DEFAULT = (32768, 60999)
# The lowest port free_port offers (above most services' fixed ports).
_LOWEST = 10000


def ephemeral_ports(path='/proc/sys/net/ipv4/ip_local_port_range'):
    """``(low, high)``: the ports the OS gives outgoing connections."""
    try:
        with open(path) as f:
            low, high = (int(v) for v in f.read().split())
        return low, high
    except (OSError, ValueError):
        return _EPHEMERAL_DEFAULT


def free_port(rng=random):
    """A TCP port that nothing on this host listens on now, below the ports the OS gives
    outgoing connections. A port from that range (what binding port 0 returns) can be
    taken before the scheduler binds it: by any connection, and even by a node's own
    retries to reach the scheduler, which may connect to themselves (a TCP self-connect)
    when the kernel picks that very port as their source."""
    low = ephemeral_ports()[0]
    for _ in range(100 if low - _LOWEST >= 1000 else 0):
        port = rng.randrange(_LOWEST, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(('', port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('', 0))
        return s.getsockname()[1]
