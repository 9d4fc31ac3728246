"""The scheduler's port (launcher/address.py)."""
import random
import socket

from minigluon.launcher import address


def test_the_port_is_free_and_below_the_ports_of_outgoing_connections():
    low, high = address.ephemeral_ports()
    assert 0 < low <= high
    for _ in range(50):
        port = address.free_port()
        assert port < low, (port, low)
        with socket.socket() as s:
            s.bind(('', port))    # (nothing listens there)


def test_a_taken_port_is_passed_over(monkeypatch):
    with socket.socket() as taken:
        taken.bind(('', 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(address, '_LOWEST', busy)
        monkeypatch.setattr(address, 'ephemeral_ports', lambda: (busy + 1000, 65535))
        # the first guess is the port in use: the next is taken instead
        guesses = iter([busy, busy + 1])
        rng = random.Random()
        monkeypatch.setattr(rng, 'randrange', lambda a, b: next(guesses))
        assert address.free_port(rng) == busy + 1


def test_without_the_range_file_the_usual_range_is_assumed(tmp_path):
    assert address.ephemeral_ports(str(tmp_path / 'missing')) == (32768, 60999)
    (tmp_path / 'range').write_text('40000\t50000\n')
    assert address.ephemeral_ports(str(tmp_path / 'range')) == (40000, 50000)
