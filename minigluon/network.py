"""This host's network addresses, for the kvstore nodes and the launcher alike.

Standard library only, so both can import it without pulling in each other.
"""
import socket
import struct

_SIOCGIFADDR = 0x8915  # Linux ioctl: the IPv4 address of a network interface


def interface_address(name):
    """The IPv4 address of the network interface ``name`` (Linux).

    Parameters
    ----------
    name : str
        An interface name such as ``'eth0'``.

    Returns
    -------
    str
        The address in dotted-quad form.

    Raises
    ------
    OSError
        Saying why there is none and which interfaces exist.
    """
    try:
        import fcntl
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            answer = fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                 struct.pack('256s', name.encode()[:15]))
    except (ImportError, OSError) as e:
        known = ', '.join(n for _, n in socket.if_nameindex())
        reason = getattr(e, 'strerror', None) or str(e)
        raise OSError('no IPv4 address found (%s); interfaces here: %s'
                      % (reason, known)) from None
    return socket.inet_ntoa(answer[20:24])


def address_towards(host, port):
    """The local address this host uses to reach ``host``:``port`` (IPv4 preferred).

    Connecting a UDP socket picks the route without sending a packet.

    Parameters
    ----------
    host : str
        A host name or address.
    port : int
        A port on it (only the route matters).

    Returns
    -------
    str
        The local address of the route.

    Raises
    ------
    socket.gaierror
        When ``host`` cannot be resolved.
    OSError
        When there is no route to it.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.connect(address)
        return s.getsockname()[0]
