"""Where a job's processes run: the hosts of a hostfile and the placement over them.

A hostfile lists one host per line as ``host[:port]`` (the port is ssh's; an IPv6
address with a port is written ``[addr]:port``); ``#`` starts a comment and blank
lines are skipped. Placement follows MXNet's launch.py: servers first, then
workers, cycling through the hosts, so with exactly n hosts and n servers every
host runs one server and one worker. The scheduler runs on the launching host.
"""
import ipaddress
import re
from dataclasses import dataclass
from typing import Optional

from . import LaunchError

_HOST_NAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]*\Z')
_BRACKETED = re.compile(r'\[([^\]]*)\](?::(.*))?\Z')


@dataclass(frozen=True)
class Host:
    """A host from a hostfile, or a node of a Slurm allocation: its name or address, its
    ssh port (None: ssh's own), and the address it is reached at if not its name (a
    node's NodeAddr)."""
    name: str
    port: Optional[int] = None
    address: Optional[str] = None

    @property
    def reached_at(self):
        """The address other processes use to reach this host: ``address`` if set,
        else ``name``."""
        return self.address or self.name

    def __str__(self):
        if self.port is None:
            return self.name
        return ('[%s]:%d' if ':' in self.name else '%s:%d') % (self.name, self.port)


@dataclass(frozen=True)
class Task:
    """One process of a job: its role, its index within the role, its host (None: here)."""
    role: str
    index: int = 0
    host: Optional[Host] = None

    @property
    def label(self):
        """How its output lines are prefixed: 'scheduler', 'server 0', 'worker 1'."""
        return self.role if self.role == 'scheduler' else '%s %d' % (self.role, self.index)


def parse_host(text, where):
    """A Host from ``host[:port]``; ``where`` (file:line) names the line in errors."""
    name, port = text, None
    bracketed = _BRACKETED.match(text)
    if bracketed:
        name, port = bracketed.groups()
    elif text.count(':') == 1:
        name, port = text.split(':')
    if ':' in name or bracketed:
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            raise LaunchError('%s: %r is not an IPv6 address' % (where, name)) from None
    elif '@' in name:
        raise LaunchError('%s: %r: a hostfile names hosts only; give the ssh user with '
                          '--ssh-option User=NAME or in ~/.ssh/config' % (where, text))
    elif not _HOST_NAME.match(name):
        raise LaunchError("%s: %r is not a host; write one host[:port] per line "
                          "('#' starts a comment)" % (where, text))
    if port is None:
        return Host(name)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise LaunchError('%s: bad port %r in %r; a port is a number from 1 to 65535'
                          % (where, port, text))
    return Host(name, int(port))


def read_hostfile(path):
    """The hosts listed in the file at ``path``, in order."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise LaunchError('cannot read hostfile %s: %s' % (path, e.strerror)) from None
    hosts = []
    for number, line in enumerate(lines, 1):
        text = line.split('#', 1)[0].strip()
        if text:
            hosts.append(parse_host(text, '%s:%d' % (path, number)))
    if not hosts:
        raise LaunchError('hostfile %s lists no hosts; write one host[:port] per line' % path)
    return hosts


def place(num_workers, num_servers, hosts=None):
    """The job's tasks: the scheduler, then servers, then workers, cycling over ``hosts``.

    Without hosts every task runs on the launching host.
    """
    others = ([('server', i) for i in range(num_servers)]
              + [('worker', i) for i in range(num_workers)])
    return [Task('scheduler')] + [
        Task(role, index, hosts[i % len(hosts)] if hosts else None)
        for i, (role, index) in enumerate(others)]
