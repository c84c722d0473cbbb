"""Ports a launcher picks for processes that listen later (`cluster.hosts.free_port`, `free_ports`)."""

import socket
from contextlib import ExitStack

import pytest

from distgraph.cluster import hosts


def test_a_listening_port_is_free_and_outside_the_range_of_outgoing_connections():
    start = int(hosts.EPHEMERAL_RANGE.read_text().split()[0])
    port = hosts.free_port("127.0.0.1")
    assert start - hosts.LISTEN_PORTS_BELOW <= port < start
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free


def test_the_os_chooses_when_no_port_below_the_range_is_free(tmp_path, monkeypatch):
    real_start, real_end = (int(v) for v in hosts.EPHEMERAL_RANGE.read_text().split())
    fake = tmp_path / "range"
    fake.write_text("1024\t60999\n")  # nothing below it may be drawn
    monkeypatch.setattr(hosts, "EPHEMERAL_RANGE", fake)
    port = hosts.free_port("127.0.0.1")
    assert real_start <= port <= real_end  # bind(0)'s choice
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def _bind_all(ports):
    """Bind every port at once (fails if any is taken or two are the same)."""
    with ExitStack() as stack:
        for port in ports:
            stack.enter_context(socket.socket()).bind(("127.0.0.1", port))


def test_blocks_of_consecutive_ports_are_free_below_the_range_and_never_overlap():
    start = int(hosts.EPHEMERAL_RANGE.read_text().split()[0])
    bases = hosts.free_ports("127.0.0.1", 5, 4)
    assert len(bases) == 5
    ports = [b + i for b in bases for i in range(4)]
    assert len(set(ports)) == 20  # no two blocks share a port
    assert all(start - hosts.LISTEN_PORTS_BELOW <= p < start for p in ports)
    _bind_all(ports)


def test_a_block_skips_ports_that_are_taken(monkeypatch):
    start = int(hosts.EPHEMERAL_RANGE.read_text().split()[0])
    monkeypatch.setattr(hosts, "LISTEN_PORTS_BELOW", 30)  # ports drawn from start-30 .. start-1
    window = range(start - 30, start)
    with ExitStack() as stack:  # every third port of the window is taken: 10 room for a block of 2
        taken = set(window[::3])
        for port in window[::3]:
            try:
                stack.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                pass  # taken by another process: just as good
        bases = hosts.free_ports("127.0.0.1", 3, 2)
    ports = [b + i for b in bases for i in range(2)]
    assert all(p in window and p not in taken for p in ports)
    assert len(set(ports)) == 6
    _bind_all(ports)


def test_blocks_come_from_the_os_when_none_fits_below_the_range(tmp_path, monkeypatch):
    real_start, real_end = (int(v) for v in hosts.EPHEMERAL_RANGE.read_text().split())
    fake = tmp_path / "range"
    fake.write_text("1024\t60999\n")
    monkeypatch.setattr(hosts, "EPHEMERAL_RANGE", fake)
    bases = hosts.free_ports("127.0.0.1", 2, 3)
    ports = [b + i for b in bases for i in range(3)]
    assert len(set(ports)) == 6
    assert all(real_start <= b <= real_end for b in bases)  # bind(0)'s choice
    _bind_all(ports)


def test_no_room_for_the_blocks_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(hosts, "_hold_block", lambda *args: [])  # every port taken
    with pytest.raises(hosts.DistGraphError, match="no 2 blocks of 3 consecutive free TCP ports on 127.0.0.1"):
        hosts.free_ports("127.0.0.1", 2, 3)
