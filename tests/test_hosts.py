"""Ports a launcher picks for processes that listen later (`cluster.hosts.free_port`)."""

import socket

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
