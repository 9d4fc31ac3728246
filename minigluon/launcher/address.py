"""The scheduler's address as the other hosts reach it, and a free port for it."""
import socket
import struct

from . import LaunchError
from .job import LOCAL_ADDRESS

_SIOCGIFADDR = 0x8915  # Linux ioctl: the IPv4 address of a network interface


def interface_address(name):
    """The IPv4 address of the network interface ``name`` (Linux)."""
    try:
        import fcntl
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            answer = fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                 struct.pack('256s', name.encode()[:15]))
    except (ImportError, OSError) as e:
        known = ', '.join(n for _, n in socket.if_nameindex())
        reason = getattr(e, 'strerror', None) or str(e)
        raise LaunchError('--interface %s: no IPv4 address found (%s); interfaces here: %s'
                          % (name, reason, known)) from None
    return socket.inet_ntoa(answer[20:24])


def address_towards(host):
    """The local address this host uses to reach ``host`` (sends no packet)."""
    try:
        infos = socket.getaddrinfo(host.name, host.port or 22, type=socket.SOCK_DGRAM)
    except socket.gaierror as e:
        raise LaunchError('cannot resolve host %s from the hostfile (%s), so the scheduler '
                          'address is unknown; give it with --host-ip or --interface'
                          % (host.name, e.strerror)) from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)  # IPv4 first
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        try:
            s.connect(address)
        except OSError as e:
            raise LaunchError('no route to host %s (%s): %s; give the scheduler address with '
                              '--host-ip or --interface' % (host.name, address[0], e.strerror)
                              ) from None
        return s.getsockname()[0]


def scheduler_address(host_ip=None, interface=None, first_host=None):
    """DMLC_PS_ROOT_URI: ``host_ip``, else the address of ``interface``, else the
    address towards the first remote host, else 127.0.0.1."""
    if host_ip:
        return host_ip
    if interface:
        return interface_address(interface)
    if first_host is not None:
        return address_towards(first_host)
    return LOCAL_ADDRESS


def free_port():
    """A TCP port that nothing on this host listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('', 0))
        return s.getsockname()[1]
