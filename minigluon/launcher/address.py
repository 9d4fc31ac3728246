"""The scheduler's address as the other hosts reach it, and a free port for it."""
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


def free_port():
    """A TCP port that nothing on this host listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('', 0))
        return s.getsockname()[1]
